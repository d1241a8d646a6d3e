#!/usr/bin/env python3
"""Benchmark emuprof against native, qemu-x86_64 and Callgrind on the same work.

    python3 bench/run.py [--repeats N] [--no-build] [--scaling] [--modes two-cpus,one-cpu,loaded]
    python3 bench/run.py --serve [--repeats N] [--only LABEL]   # --serve with a slow viewer (bench/serve.py)
    python3 bench/run.py --cache-sim [--repeats N] [--only LABEL] [--modes ...]   # cost of --cache-sim beside Cachegrind and Callgrind (bench/cache_sim.py)
    python3 bench/run.py --fast-forward [--repeats N] [--modes two-cpus,one-cpu]   # --start-at speed, and the floor against qemu-x86_64 (bench/fast_forward.py)
    python3 bench/run.py --against OTHER_EMUPROF [--repeats N] [--modes one-cpu]   # against another build (bench/against.py)
    python3 bench/run.py --suite real   # Debian's own dynamically linked tools instead of the static suite (--suite all: both)

Builds release emuprof and the benchmark test programs, then runs every program
natively, under `qemu-x86_64`, under `valgrind --tool=callgrind` and under emuprof
in its default full-profile mode (`emuprof -o <tmp>/p.json prog args`), each N times
with an empty environment in a scratch directory (emuprof's guest gets the five
variables Valgrind adds for its client, so the instruction totals are comparable). Prints Markdown tables, ready to
paste into docs/performance.md: median wall time and median CPU time (user + system,
of the tool and every process it waited for), the ratios emuprof/Callgrind,
emuprof/native and emuprof/qemu for both, peak memory (`/usr/bin/time -f %M`; install the
`time` package if it is missing) and the total instruction counts of Callgrind
(`summary:` line) and emuprof (`totals.instructions`) side by side.

Suites (`--suite`): `static` (default) is the test programs, mostly statically
linked, and three BusyBox/GNU tools; `real` is what users profile: Debian's own
dynamically linked tools (`xz -T2`, `jq`, `pigz -p2`, `perl`, `python3`, the
`sqlite3` shell, `file`) and a Rust program with threads, with the work in
shared libraries, started through `ld.so`; `all` runs both.

Modes (`--modes`, default all three), each with its own tables:
- `two-cpus`: the machine as it is (every CPU the script may use);
- `one-cpu`: every tool under `taskset -c 0`, as on a CI runner or container
  with one CPU;
- `loaded`: a CPU-bound competitor process on every CPU while the tools run,
  as on a shared, busy CI runner.

A tool that is missing or fails on a program is shown as "n/a" with a note; in
particular emuprof is skipped until `target/release/emuprof` builds and runs.
"""

import argparse
import contextlib
import json
import multiprocessing
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
GNU_TIME = "/usr/bin/time" if os.access("/usr/bin/time", os.X_OK) else None
TOOLS = ["native", "qemu", "callgrind", "emuprof"]
TOOL_TITLES = {"native": "native", "qemu": "qemu-x86_64", "callgrind": "Callgrind", "emuprof": "emuprof"}
# The executable each tool needs (a key of the `tools` dict built in main).
TOOL_EXECUTABLE = {"qemu": "qemu", "callgrind": "valgrind", "emuprof": "emuprof"}
MODES = {
    "two-cpus": "every CPU available",
    "one-cpu": "every tool pinned to CPU 0 (`taskset -c 0`)",
    "loaded": "a CPU-bound competitor on every CPU",
}


@dataclass
class Case:
    """One benchmarked command: a label and argv (the binary first)."""

    label: str
    argv: list


@dataclass
class Measurement:
    """All runs of one tool on one case."""

    seconds: list = field(default_factory=list)
    cpu_seconds: list = field(default_factory=list)
    peak_kib: list = field(default_factory=list)
    instructions: int | None = None
    exit_code: int | None = None
    failure: str | None = None

    def median_seconds(self):
        return statistics.median(self.seconds) if self.seconds and not self.failure else None

    def median_cpu_seconds(self):
        return statistics.median(self.cpu_seconds) if self.cpu_seconds and not self.failure else None

    def fastest_seconds(self):
        return min(self.seconds) if self.seconds and not self.failure else None

    def fastest_cpu_seconds(self):
        return min(self.cpu_seconds) if self.cpu_seconds and not self.failure else None

    def peak_mib(self):
        return max(self.peak_kib) / 1024 if self.peak_kib and not self.failure else None


def log(message):
    print(f"bench: {message}", file=sys.stderr, flush=True)


def target_dir():
    return Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target"))


def build_emuprof():
    log("scripts/build-unicorn.sh (emuprof's patched Unicorn; a no-op when up to date)")
    if subprocess.run(["bash", str(REPO / "scripts" / "build-unicorn.sh")], cwd=REPO).returncode != 0:
        log("patched Unicorn build failed; cargo will link stock Unicorn (slower)")
    log("cargo build --release")
    result = subprocess.run(["cargo", "build", "--release", "--bin", "emuprof"], cwd=REPO)
    if result.returncode != 0:
        log("cargo build failed; emuprof will be skipped")


def build_testprogs(out_dir, names):
    targets = [str(out_dir / name) for name in names]
    log(f"make -C testprogs OUT={out_dir} " + " ".join(names))
    subprocess.run(["make", "-s", "-j2", "-C", str(REPO / "testprogs"), f"OUT={out_dir}", *targets], check=True)


def make_data(path, megabytes):
    """Deterministic word salad: compressible like text, the same on every run."""
    words = ("emulator call tree profile instruction block return stack frame recursion cost "
             "inclusive self graph musl glibc static binary kernel syscall page busybox gzip").split()
    rng = random.Random(20240607)
    size = megabytes * 1024 * 1024
    with open(path, "w") as out:
        written = 0
        while written < size:
            line = " ".join(rng.choice(words) for _ in range(12)) + f" {rng.randrange(10**6)}\n"
            out.write(line)
            written += len(line)


def dynamically_linked(path):
    """`path` when it is an ELF program with a dynamic linker (a PT_INTERP
    segment), else None: the suite's one program that goes through `ld.so`
    and a shared libc, as most programs users profile do."""
    if not path:
        return None
    with open(path, "rb") as elf:
        header = elf.read(64)
        if header[:4] != b"\x7fELF" or header[4] != 2:
            return None
        phoff = int.from_bytes(header[32:40], "little")
        phentsize = int.from_bytes(header[54:56], "little")
        phnum = int.from_bytes(header[56:58], "little")
        elf.seek(phoff)
        table = elf.read(phentsize * phnum)
    types = (int.from_bytes(table[i:i + 4], "little") for i in range(0, len(table), phentsize))
    return path if 3 in types else None  # PT_INTERP


def make_json(path, records):
    """A JSON array of `records` objects `{"k": ..., "v": ...}`, the same on every run."""
    rng = random.Random(20261127)
    items = [f'{{"k":"key{i}","v":{rng.random():.6f},"tags":["a","b"]}}' for i in range(records)]
    path.write_text("[" + ",\n".join(items) + "]\n")


def real_cases(data, data_dir, out_dir, rust):
    """The real-program suite: Debian's dynamically linked tools on the same
    inputs (each skipped with a note when not installed; scripts/install-deps.sh
    installs them all)."""
    json_file = Path(data_dir) / "records.json"
    make_json(json_file, 24000)
    wanted = [
        ("xz -T2 -3 -c", "xz", ["-T2", "-3", "-c", str(data)]),
        ("jq select", "jq", ["-c", "[.[]|select(.v>0.5)|.k]|length", str(json_file)]),
        ("pigz -p2 -c", "pigz", ["-p2", "-c", str(data)]),
        ("perl -ne length", "perl", ["-ne", "$n+=length; END{print $n}", str(data)]),
        ("python3 json", "/usr/bin/python3",
         ["-c", "import json; d=[{'k':i,'v':i%7} for i in range(60000)]; print(len(json.dumps(d)))"]),
        ("sqlite3 recursive sum", "sqlite3",
         [":memory:", "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c WHERE x<100000) "
                      "SELECT sum(x*x%7) FROM c;"]),
        ("file", "file", ["-b", "/usr/bin/perl", "/usr/bin/xz", str(data), str(json_file)]),
    ]
    cases = []
    for label, program, args in wanted:
        path = shutil.which(program)
        if path is None:
            log(f"{program} not found (scripts/install-deps.sh installs it); skipping {label}")
            continue
        cases.append(Case(f"{label} (dynamic)", [path, *args]))
    if rust:
        cases.append(Case("rustthreads.pie.O2 (Rust std threads, mpsc) 4", [str(out_dir / "rustthreads.pie.O2"), "4"]))
    return cases


def run_once(argv, cwd, capture_stderr):
    """Runs argv with an empty environment; returns (exit code, wall seconds, CPU
    seconds, peak KiB, stderr). CPU time is user + system time of the process and
    every descendant it waited for (wait4's rusage).

    Peak memory comes from `/usr/bin/time -f %M` when it exists: the maxrss that
    wait4 reports for a direct child of this script would include Python's own
    memory, inherited across fork and exec.
    """
    with tempfile.TemporaryFile() as err, tempfile.NamedTemporaryFile(mode="r") as peak_file:
        wrapped = [GNU_TIME, "-f", "%M", "-o", peak_file.name, *argv] if GNU_TIME else argv
        start = time.perf_counter()
        process = subprocess.Popen(wrapped, cwd=cwd, env={}, stdin=subprocess.DEVNULL,
                                   stdout=subprocess.DEVNULL, stderr=err if capture_stderr else subprocess.DEVNULL)
        _, status, usage = os.wait4(process.pid, 0)
        seconds = time.perf_counter() - start
        cpu_seconds = usage.ru_utime + usage.ru_stime
        process.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        stderr = err.read().decode(errors="replace")
        peak = usage.ru_maxrss
        if GNU_TIME:
            reported = peak_file.read().split()
            peak = int(reported[-1]) if reported and reported[-1].isdigit() else None
    return process.returncode, seconds, cpu_seconds, peak, stderr


def tool_argv(tool, case, workdir, tools, pin):
    """The command line for `tool` (under `taskset -c 0` when `pin`), and the file
    it leaves its profile in (or None)."""
    argv, profile = unpinned_argv(tool, case, workdir, tools)
    return (["taskset", "-c", "0", *argv] if pin else argv), profile


def unpinned_argv(tool, case, workdir, tools):
    if tool == "native":
        return case.argv, None
    if tool == "qemu":
        return [tools["qemu"], *case.argv], None
    if tool == "callgrind":
        out = workdir / "callgrind.out"
        return [tools["valgrind"], "--tool=callgrind", f"--callgrind-out-file={out}", *case.argv], out
    out = workdir / "p.json"
    env_flags = [flag for kv in valgrind_client_env(tools, workdir) for flag in ("--env", kv)]
    return [tools["emuprof"], "-o", str(out), *env_flags, *case.argv], out


_VALGRIND_ENV = None


def valgrind_client_env(tools, workdir):
    """The variables Valgrind puts in its client's environment even when its own
    is empty (LD_PRELOAD, PWD, ...), with PWD set to `workdir`. emuprof gets the
    same ones, so both tools run the same startup code and the instruction totals
    can be compared exactly (the guest environment is empty by default). Probed
    once with BusyBox's `env`; empty when Valgrind or BusyBox is missing."""
    global _VALGRIND_ENV
    if _VALGRIND_ENV is None:
        _VALGRIND_ENV = []
        busybox = tools.get("busybox")
        if tools.get("valgrind") and busybox:
            with tempfile.TemporaryDirectory() as scratch:
                probe = subprocess.run([tools["valgrind"], "-q", "--tool=none", busybox, "env"], cwd=scratch, env={},
                                       capture_output=True, text=True)
            _VALGRIND_ENV = [line for line in probe.stdout.splitlines() if "=" in line] if probe.returncode == 0 else []
    return [f"PWD={workdir}" if kv.startswith("PWD=") else kv for kv in _VALGRIND_ENV]


def callgrind_total(path):
    events, summary, totals = ["Ir"], None, None
    for line in path.read_text(errors="replace").splitlines():
        if line.startswith("events:"):
            events = line.split()[1:]
        elif line.startswith("summary:"):
            summary = line.split()[1:]
        elif line.startswith("totals:"):
            totals = line.split()[1:]
    numbers = totals or summary
    index = events.index("Ir") if "Ir" in events else 0
    return int(numbers[index]) if numbers and len(numbers) > index else None


def emuprof_total(path):
    return json.loads(path.read_text())["totals"]["instructions"]


def measure(tool, case, repeats, tools, expected_code, pin=False):
    """`repeats` runs of one tool on one case, one after the other."""
    measurement = Measurement()
    for _ in range(repeats):
        if not measure_once(measurement, tool, case, tools, expected_code, pin):
            break
    return measurement


def measure_once(measurement, tool, case, tools, expected_code, pin=False):
    """Adds one run of `tool` on `case` to `measurement`; False once the tool
    cannot be measured (not installed, another exit status than
    `expected_code`, no usable profile: `measurement.failure` says which)."""
    if measurement.failure:
        return False
    if tool in TOOL_EXECUTABLE and tools.get(TOOL_EXECUTABLE[tool]) is None:
        measurement.failure = "not installed or not runnable"
        return False
    with tempfile.TemporaryDirectory(prefix="emuprof-bench-") as scratch:
        workdir = Path(scratch)
        argv, profile = tool_argv(tool, case, workdir, tools, pin)
        code, seconds, cpu_seconds, peak, stderr = run_once(argv, workdir, capture_stderr=tool == "emuprof")
        measurement.exit_code = code
        if expected_code is not None and code != expected_code:
            detail = stderr.strip().splitlines()[-1] if stderr.strip() else ""
            measurement.failure = f"exit status {code} (native: {expected_code}) {detail}".strip()
            return False
        try:
            if tool == "callgrind":
                measurement.instructions = callgrind_total(profile)
            elif tool == "emuprof":
                measurement.instructions = emuprof_total(profile)
        except (OSError, ValueError, KeyError, TypeError) as error:
            measurement.failure = f"no usable profile ({error})"
            return False
        measurement.seconds.append(seconds)
        measurement.cpu_seconds.append(cpu_seconds)
        if peak is not None:
            measurement.peak_kib.append(peak)
    return True


def fmt_seconds(value):
    return "n/a" if value is None else f"{value:.3f}"


def fmt_ratio(a, b):
    return "n/a" if a is None or b is None or b == 0 else f"{a / b:.2f}"


def fmt_mib(value):
    return "n/a" if value is None else f"{value:.1f}"


def fmt_count(value):
    return "n/a" if value is None else f"{value:,}"


def difference(emuprof, callgrind):
    if emuprof is None or callgrind is None:
        return "n/a"
    if emuprof == callgrind:
        return "identical"
    delta = emuprof - callgrind
    return f"{delta:+,} ({100 * delta / callgrind:+.3f} %)"


def suite_ratios(cases, results, time_of):
    """The suite's median of emuprof's ratio to each other tool, with each
    tool's time picked by `time_of` (a Measurement method)."""
    ratios = {"callgrind": [], "native": [], "qemu": []}
    for case in cases:
        times = {tool: time_of(results[case.label][tool]) for tool in TOOLS}
        for other in ratios:
            if times["emuprof"] is not None and times[other]:
                ratios[other].append(times["emuprof"] / times[other])
    summary = ", ".join(f"emuprof/{TOOL_TITLES[o]} {statistics.median(r):.2f}" for o, r in ratios.items() if r)
    return summary or "n/a (emuprof did not run)"


def time_table(title, cases, results, median, fastest):
    """One table of median times per tool and the emuprof ratios, and the
    suite's median ratios, of the medians and of each tool's fastest run
    (this host's speed drifts between runs); `median` and `fastest` pick
    wall or CPU time of a Measurement."""
    lines = [title, "",
             "| program | native | qemu-x86_64 | Callgrind | emuprof | emuprof/Callgrind | emuprof/native | emuprof/qemu |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for case in cases:
        medians = {tool: median(results[case.label][tool]) for tool in TOOLS}
        lines.append(f"| {case.label} | " + " | ".join(fmt_seconds(medians[t]) for t in TOOLS) + " | "
                     + " | ".join(fmt_ratio(medians["emuprof"], medians[o]) for o in ("callgrind", "native", "qemu")) + " |")
    lines += ["", f"Median ratios over the suite: {suite_ratios(cases, results, median)}.",
              f"The same of each tool's fastest run: {suite_ratios(cases, results, fastest)}."]
    return lines


def tables(cases, results, repeats, mode):
    lines = [f"### Mode `{mode}`: {MODES[mode]}", ""]
    lines += time_table(f"Wall time, median of {repeats} runs (seconds):", cases, results,
                        Measurement.median_seconds, Measurement.fastest_seconds)
    lines += [""]
    lines += time_table(f"CPU time (user + system), median of {repeats} runs (seconds):", cases, results,
                        Measurement.median_cpu_seconds, Measurement.fastest_cpu_seconds)
    lines += ["", "Peak memory (MiB) and total instructions:", "",
              "| program | native | qemu-x86_64 | Callgrind | emuprof | Callgrind Ir | emuprof instructions | emuprof − Callgrind |",
              "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for case in cases:
        row = results[case.label]
        cg, ep = row["callgrind"].instructions, row["emuprof"].instructions
        cg = None if row["callgrind"].failure else cg
        ep = None if row["emuprof"].failure else ep
        lines.append(f"| {case.label} | " + " | ".join(fmt_mib(row[t].peak_mib()) for t in TOOLS)
                     + f" | {fmt_count(cg)} | {fmt_count(ep)} | {difference(ep, cg)} |")
    notes = [f"- {case.label}, {TOOL_TITLES[tool]}: {results[case.label][tool].failure}"
             for case in cases for tool in TOOLS if results[case.label][tool].failure]
    if notes:
        lines += ["", "Not measured:", *notes]
    return "\n".join(lines)


class Competitors:
    """CPU-bound busy loops, one per CPU, for the `loaded` mode."""

    def __init__(self, count):
        self.count = count
        self.processes = []

    def __enter__(self):
        for _ in range(self.count):
            process = multiprocessing.Process(target=busy_loop, daemon=True)
            process.start()
            self.processes.append(process)
        return self

    def __exit__(self, *exc):
        for process in self.processes:
            process.terminate()
        for process in self.processes:
            process.join()


def busy_loop():
    value = 0
    while True:
        value = (value * 1103515245 + 12345) & 0xFFFFFFFF


def mode_load(mode):
    """What runs beside the tools in `mode`: a busy loop on every CPU while
    `loaded`, nothing otherwise (a context manager)."""
    if mode == "loaded":
        return Competitors(len(os.sched_getaffinity(0)))
    return contextlib.nullcontext()


def run_mode(mode, cases, tools, repeats):
    """Measures every tool on every case in one mode. The tools take turns,
    one run each per round, so that the host slowing down or speeding up
    (a shared virtual machine drifts by up to 1.5 times within minutes)
    touches every tool's runs alike instead of one tool's five."""
    pin = mode == "one-cpu"
    results = {}
    with mode_load(mode):
        for case in cases:
            runs = results[case.label] = {tool: Measurement() for tool in TOOLS}
            for round_number in range(1, repeats + 1):
                log(f"[{mode}] {case.label}: round {round_number} of {repeats}")
                for tool in TOOLS:
                    # Every tool must end the program with the exit status it has natively.
                    expected = None if tool == "native" else runs["native"].exit_code
                    measure_once(runs[tool], tool, case, tools, expected, pin)
    return results


def machine_description(tools):
    cpu = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    versions = []
    for name, argv in (("valgrind", [tools.get("valgrind"), "--version"]), ("qemu", [tools.get("qemu"), "--version"])):
        if argv[0]:
            out = subprocess.run(argv, capture_output=True, text=True).stdout.strip().splitlines()
            versions.append(out[0] if out else name)
    return f"{cpu}, {os.cpu_count()} CPUs, {platform.system()} {platform.release()}; " + ", ".join(versions)


def emuprof_usable(path):
    if not path.is_file():
        log(f"{path} does not exist; emuprof will be skipped")
        return False
    try:
        subprocess.run([str(path), "--help"], capture_output=True, timeout=30, check=True)
    except (OSError, subprocess.SubprocessError) as error:
        log(f"{path} does not run ({error}); emuprof will be skipped")
        return False
    return True


def scaling(tools, binary, rounds_list, repeats):
    """Time and peak memory of emuprof at growing run lengths (cpuheavy ROUNDS fib)."""
    lines = ["emuprof scaling on `cpuheavy ROUNDS fib` (musl -O2):", "",
             "| rounds | instructions | native s | emuprof s | emuprof peak MiB | ns per instruction |",
             "|---:|---:|---:|---:|---:|---:|"]
    for rounds in rounds_list:
        case = Case(f"cpuheavy {rounds} fib", [str(binary), str(rounds), "fib"])
        native = measure("native", case, repeats, tools, None)
        emu = measure("emuprof", case, repeats, tools, 0)
        seconds, count = emu.median_seconds(), emu.instructions
        per = "n/a" if seconds is None or not count else f"{1e9 * seconds / count:.2f}"
        lines.append(f"| {rounds} | {fmt_count(None if emu.failure else count)} | {fmt_seconds(native.median_seconds())}"
                     f" | {fmt_seconds(seconds)} | {fmt_mib(emu.peak_mib())} | {per} |")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5, help="runs per tool and program (default 5)")
    parser.add_argument("--no-build", action="store_true", help="use the existing release emuprof and test programs")
    parser.add_argument("--emuprof", type=Path, help="emuprof binary (default: <target>/release/emuprof)")
    parser.add_argument("--data-mb", type=int, default=4, help="size of the BusyBox input file (default 4 MB)")
    parser.add_argument("--only", help="comma-separated substrings: run only programs whose label matches")
    parser.add_argument("--scaling", action="store_true",
                        help="also time emuprof at about 1e8, 1e9 and 1e10 instructions")
    parser.add_argument("--serve", action="store_true",
                        help="instead: emuprof without vs with --serve and a slow viewer (bench/serve.py)")
    parser.add_argument("--cache-sim", action="store_true",
                        help="instead: emuprof without vs with --cache-sim --branch-sim, Cachegrind and Callgrind --cache-sim=yes")
    parser.add_argument("--fast-forward", action="store_true",
                        help="instead: emuprof's full profile vs fast-forwarding the whole run vs qemu-x86_64 "
                             "(bench/fast_forward.py)")
    parser.add_argument("--against", type=Path, metavar="OTHER_EMUPROF",
                        help="instead: this emuprof against another build of it, in alternation (bench/against.py)")
    parser.add_argument("--suite", choices=["static", "real", "all"], default="static",
                        help="static: the test programs (default); real: Debian's dynamically linked tools; all: both")
    parser.add_argument("--modes", default=",".join(MODES),
                        help="comma-separated: " + ", ".join(f"{m} ({d})" for m, d in MODES.items())
                        + "; default all")
    args = parser.parse_args()
    modes = [mode for mode in args.modes.split(",") if mode]
    unknown = [mode for mode in modes if mode not in MODES]
    if unknown:
        parser.error(f"unknown mode {unknown[0]!r}; choose from {', '.join(MODES)}")
    if "one-cpu" in modes and shutil.which("taskset") is None:
        parser.error("the one-cpu mode needs taskset (Debian package util-linux)")

    out_dir = target_dir() / "testprogs"
    if not args.no_build:
        build_emuprof()
    musl = shutil.which("musl-gcc") is not None
    libcs = (["musl"] if musl else []) + ["glibc"]
    rust = shutil.which("rustc") is not None
    build_testprogs(out_dir, [f"cpuheavy.{libc}.O2" for libc in libcs] + [f"threads.{libcs[0]}.O2"]
                    + (["rustheavy.pie.O2", "rustthreads.pie.O2"] if rust else []))

    emuprof = args.emuprof or target_dir() / "release" / "emuprof"
    tools = {
        "emuprof": str(emuprof) if emuprof_usable(emuprof) else None,
        "valgrind": shutil.which("valgrind"),
        "qemu": shutil.which("qemu-x86_64"),
    }
    busybox = shutil.which("busybox") or ("/bin/busybox" if Path("/bin/busybox").exists() else None)
    tools["busybox"] = busybox

    with tempfile.TemporaryDirectory(prefix="emuprof-bench-data-") as data_dir:
        data = Path(data_dir) / "input.txt"
        make_data(data, args.data_mb)
        static_cases = []
        cases = static_cases
        for libc in libcs:
            binary = str(out_dir / f"cpuheavy.{libc}.O2")
            cases.append(Case(f"cpuheavy.{libc}.O2", [binary]))
        if musl:
            binary = str(out_dir / "cpuheavy.musl.O2")
            cases.append(Case("cpuheavy.musl.O2 30 fib", [binary, "30", "fib"]))
            cases.append(Case("cpuheavy.musl.O2 10 text", [binary, "10", "text"]))
        threads = out_dir / f"threads.{libcs[0]}.O2"
        cases.append(Case(f"threads.{libcs[0]}.O2 workers 4 (4 threads)",
                          [str(threads), "workers", "4", "10000000"]))
        if rust:
            cases.append(Case("rustheavy.pie.O2 (Rust, crt-static) 3", [str(out_dir / "rustheavy.pie.O2"), "3"]))
        if busybox:
            cases.append(Case(f"busybox gzip -c ({args.data_mb} MB)", [busybox, "gzip", "-c", str(data)]))
            cases.append(Case(f"busybox sha256sum ({args.data_mb} MB)", [busybox, "sha256sum", str(data)]))
        else:
            log("busybox not found (install busybox-static); skipping the BusyBox programs")
        gzip = dynamically_linked(shutil.which("gzip"))
        if gzip:
            cases.append(Case(f"gzip -c ({args.data_mb} MB, dynamically linked)", [gzip, "-c", str(data)]))
        else:
            log("no dynamically linked gzip on PATH; skipping it")
        cases = static_cases if args.suite != "real" else []
        if args.suite != "static":
            cases = cases + real_cases(data, data_dir, out_dir, rust)
        if args.only:
            wanted = args.only.split(",")
            cases = [case for case in cases if any(w in case.label for w in wanted)]

        if args.serve:
            import serve
            if tools["emuprof"] is None:
                sys.exit("bench: --serve needs a working emuprof")
            print(f"Machine: {machine_description(tools)}.\n")
            print(serve.compare(cases, args.repeats, tools["emuprof"], run_once, log))
            return
        if args.cache_sim:
            import cache_sim
            if tools["emuprof"] is None:
                sys.exit("bench: --cache-sim needs a working emuprof")
            print(f"Machine: {machine_description(tools)}.\n")
            print(cache_sim.compare(cases, args.repeats, tools["emuprof"], tools.get("valgrind"), modes, mode_load,
                                    run_once, log))
            return
        if args.fast_forward:
            import fast_forward
            if tools["emuprof"] is None:
                sys.exit("bench: --fast-forward needs a working emuprof")
            print(f"Machine: {machine_description(tools)}.\n")
            print(fast_forward.compare(cases, args.repeats, tools["emuprof"], tools.get("qemu"), modes, mode_load,
                                       run_once, log))
            return
        if args.against:
            import against
            if tools["emuprof"] is None or not emuprof_usable(args.against):
                sys.exit("bench: --against needs this emuprof and the other to work")
            print(f"Machine: {machine_description(tools)}.\n")
            print(against.compare(cases, args.repeats, tools["emuprof"], str(args.against), modes, mode_load,
                                  run_once, log))
            return
        results = {mode: run_mode(mode, cases, tools, args.repeats) for mode in modes}

    print(f"Machine: {machine_description(tools)}.\n")
    print("\n\n".join(tables(cases, results[mode], args.repeats, mode) for mode in modes))
    if args.scaling and musl:
        print()
        print(scaling(tools, out_dir / "cpuheavy.musl.O2", [11, 112, 1123], 1))


if __name__ == "__main__":
    main()
