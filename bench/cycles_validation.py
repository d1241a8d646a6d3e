#!/usr/bin/env python3
"""Validate emuprof's cycle estimate against native time, in one command.

    python3 bench/cycles_validation.py [--repeats N] [--emuprof PATH] [--only LABEL,...]

Runs a suite of programs (bench/programs/cyclesuite.c kernels: divisions,
additions, pointer chasing in and out of the caches, random and predictable
branches, qsort, matrix multiply, floating division, CRC, string functions,
hashing, a sieve; the fib test program; the Rust benchmark program; BusyBox
gzip, bzip2, sort, md5sum and awk on generated text) natively N times (median
wall time, empty environment) and once under emuprof (its totals are
deterministic), and once more with `--cache-sim --branch-sim`. For each metric
(`instructions` alone, the cost model's `cycles`, and `cycles+sim`: the cost
model's cycles with the simulation's miss and misprediction penalties) it fits
one rate through the origin, metric per second, minimising
the squared relative errors, and prints per program the native median, the
metric, the time the fit predicts and its relative error, then the suite's
Spearman rank correlation between metric and native time, and the median
and largest absolute relative error. Markdown, ready for the README.

Needs gcc (static), target/release/emuprof (cargo build --release) and the
test programs in target/testprogs (the integration tests build them, or
`make -C testprogs OUT=../target/testprogs all rust`); BusyBox cases are
skipped, with a note, when /bin/busybox is missing.
"""

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
METRICS = ["instructions", "cycles", "cycles+sim"]
SIMULATION = ["--cache-sim", "--branch-sim"]


def build_suite(scratch: Path) -> Path:
    binary = scratch / "cyclesuite"
    subprocess.run(
        ["gcc", "-O2", "-g", "-static", "-o", str(binary), str(REPO / "bench/programs/cyclesuite.c")],
        check=True,
    )
    return binary


def write_text(path: Path, words: int) -> None:
    """Deterministic English-like text: compressible, sortable lines."""
    rng = random.Random(20)
    vocabulary = ["".join(rng.choice("etaoinshrdlucmfwyp") for _ in range(rng.randint(2, 9))) for _ in range(3000)]
    lines, line = [], []
    for _ in range(words):
        line.append(rng.choice(vocabulary))
        if len(line) >= rng.randint(6, 14):
            lines.append(" ".join(line))
            line = []
    path.write_text("\n".join(lines) + "\n")


def cases(scratch: Path):
    """(label, argv) of every program in the suite."""
    suite = str(build_suite(scratch))
    kernels = [
        ("div", 1), ("add", 2), ("chase", 2), ("chase-big", 1), ("branchy", 1), ("sorted", 1),
        ("qsort", 1), ("matmul", 2), ("fdiv", 1), ("crc", 1), ("strings", 1), ("hash", 1), ("sieve", 1),
    ]
    out = [(f"cyclesuite {k}", [suite, k, str(n)]) for k, n in kernels]
    testprogs = REPO / "target/testprogs"
    for label, name, args in [("fib 30 (C)", "fib.glibc.O2", ["30"]), ("rustheavy (Rust)", "rustheavy.pie.O2", ["1"])]:
        if (testprogs / name).exists():
            out.append((label, [str(testprogs / name)] + args))
        else:
            print(f"note: {testprogs / name} missing, {label} skipped", file=sys.stderr)
    busybox = "/bin/busybox"
    if os.access(busybox, os.X_OK):
        text = scratch / "words.txt"
        write_text(text, 60_000)
        awk = "{ for (i = 1; i <= NF; i++) n[$i]++ } END { for (w in n) s += n[w] * length(w); print s }"
        out += [
            ("busybox gzip", [busybox, "gzip", "-c", str(text)]),
            ("busybox bzip2", [busybox, "bzip2", "-c", str(text)]),
            ("busybox sort", [busybox, "sort", str(text)]),
            ("busybox md5sum", [busybox, "md5sum", str(text)]),
            ("busybox awk", [busybox, "awk", awk, str(text)]),
        ]
    else:
        print("note: /bin/busybox missing, BusyBox cases skipped", file=sys.stderr)
    return out


def native_median(argv, repeats: int, cwd: Path) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run(argv, env={}, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def emuprof_totals(emuprof: str, argv, scratch: Path, flags=()) -> dict:
    """The profile's totals, and emuprof's wall time as `seconds`."""
    profile = scratch / "profile.json"
    start = time.perf_counter()
    subprocess.run(
        [emuprof, "--quiet", "-o", str(profile), *flags, "--"] + argv,
        env={}, cwd=scratch, stdout=subprocess.DEVNULL, check=True,
    )
    seconds = time.perf_counter() - start
    return {**json.loads(profile.read_text())["totals"], "seconds": seconds}


def ranks(values):
    order = sorted(range(len(values)), key=lambda i: values[i])
    r = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            r[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return r


def spearman(xs, ys) -> float:
    rx, ry = ranks(xs), ranks(ys)
    mx, my = statistics.mean(rx), statistics.mean(ry)
    cov = sum((a - mx) * (b - my) for a, b in zip(rx, ry))
    var = (sum((a - mx) ** 2 for a in rx) * sum((b - my) ** 2 for b in ry)) ** 0.5
    return cov / var if var else 0.0


def fit_rate(metric, seconds) -> float:
    """Metric per second minimising sum((metric / rate / seconds - 1)^2)."""
    q = [m / s for m, s in zip(metric, seconds)]
    inverse = sum(q) / sum(x * x for x in q)
    return 1 / inverse


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=11, help="native runs per program (median)")
    parser.add_argument("--emuprof", default=str(REPO / "target/release/emuprof"))
    parser.add_argument("--only", default="", help="comma-separated labels (substring match)")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="cycles-validation-") as tmp:
        scratch = Path(tmp)
        rows = []
        for label, argv in cases(scratch):
            if args.only and not any(o in label for o in args.only.split(",")):
                continue
            totals = emuprof_totals(args.emuprof, argv, scratch)
            simulated = emuprof_totals(args.emuprof, argv, scratch, SIMULATION)
            totals["cycles+sim"] = simulated["cycles"]
            totals["slowdown"] = simulated["seconds"] / totals["seconds"]
            seconds = native_median(argv, args.repeats, scratch)
            rows.append((label, seconds, totals))
            print(f"{label}: {seconds * 1000:.1f} ms, {totals['instructions']:,} instructions, "
                  f"{totals['cycles']:,} cycles, {totals['cycles+sim']:,} with simulation "
                  f"({totals['slowdown']:.1f}x the time)", file=sys.stderr)

    seconds = [r[1] for r in rows]
    summary = []
    print(f"\n{len(rows)} programs, native median of {args.repeats} runs; "
          f"host: {cpu_name()}\n")
    print("| program | native ms | instructions | cycles | cycles with --cache-sim --branch-sim "
          "| cycles/instr | error (instructions fit) | error (cycles fit) | error (cycles+sim fit) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    errors = {}
    rates = {}
    for metric in METRICS:
        values = [r[2][metric] for r in rows]
        rates[metric] = fit_rate(values, seconds)
        errors[metric] = [v / rates[metric] / s - 1 for v, s in zip(values, seconds)]
        summary.append((metric, spearman(values, seconds), rates[metric],
                        statistics.median(abs(e) for e in errors[metric]),
                        max(abs(e) for e in errors[metric])))
    for i, (label, s, totals) in enumerate(rows):
        print(f"| {label} | {s * 1000:.1f} | {totals['instructions']:,} | {totals['cycles']:,} "
              f"| {totals['cycles+sim']:,} | {totals['cycles'] / totals['instructions']:.2f} "
              f"| {errors['instructions'][i]:+.0%} | {errors['cycles'][i]:+.0%} "
              f"| {errors['cycles+sim'][i]:+.0%} |")
    print("\n| metric | Spearman ρ with native time | fitted rate (per second) "
          "| median abs. error | largest abs. error |")
    print("|---|---:|---:|---:|---:|")
    for metric, rho, rate, median_error, max_error in summary:
        print(f"| {metric} | {rho:.3f} | {rate / 1e9:.2f} G | {median_error:.0%} | {max_error:.0%} |")
    slowdowns = [r[2]["slowdown"] for r in rows]
    print(f"\nemuprof with --cache-sim --branch-sim took {statistics.median(slowdowns):.1f}x the time "
          f"of its default mode (median; {min(slowdowns):.1f}x to {max(slowdowns):.1f}x).")
    return 0


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"


if __name__ == "__main__":
    sys.exit(main())
