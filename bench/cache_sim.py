"""What `--cache-sim --branch-sim` costs, beside Cachegrind doing the same.

    python3 bench/run.py --cache-sim [--repeats N] [--only LABEL]

For each program, in alternation: emuprof in its default mode, emuprof with
`--cache-sim --branch-sim` (Unicorn memory hooks on every load and store, the
caches and predictors simulated on the call-tree thread), and
`valgrind --tool=cachegrind --cache-sim=yes --branch-sim=yes`, all with the
default cache geometry of each (emuprof: Skylake; Cachegrind: the host's).
Prints median wall and CPU times and the ratios simulation / default and
simulation / Cachegrind.
"""

import statistics
import tempfile
from pathlib import Path


def compare(cases, repeats, emuprof, valgrind, run_once, log):
    """Markdown table of median wall and CPU seconds per case and tool."""
    tools = {
        "emuprof": lambda out: [emuprof, "-q", "-o", str(out / "p.json")],
        "emuprof --cache-sim --branch-sim": lambda out: [
            emuprof, "-q", "-o", str(out / "p.json"), "--cache-sim", "--branch-sim"],
    }
    if valgrind:
        tools["Cachegrind"] = lambda out: [
            valgrind, "--tool=cachegrind", "--cache-sim=yes", "--branch-sim=yes",
            f"--cachegrind-out-file={out / 'cg.out'}"]
    lines = [f"Median of {repeats} runs (seconds), wall / CPU:", "",
             "| program | " + " | ".join(tools) + " | simulation / default | simulation / Cachegrind |",
             "|---|" + "---:|" * (len(tools) + 2)]
    slowdowns = []
    for case in cases:
        wall = {tool: [] for tool in tools}
        cpu = {tool: [] for tool in tools}
        for _ in range(repeats):
            for tool, argv in tools.items():
                with tempfile.TemporaryDirectory(prefix="emuprof-bench-cachesim-") as scratch:
                    code, seconds, cpu_seconds, _, stderr = run_once(
                        [*argv(Path(scratch)), *case.argv], scratch, capture_stderr=True)
                    if code != 0:
                        log(f"{tool} on {case.label} exited {code}: {stderr.strip()[-300:]}")
                    wall[tool].append(seconds)
                    cpu[tool].append(cpu_seconds)
        med = {tool: (statistics.median(wall[tool]), statistics.median(cpu[tool])) for tool in tools}
        plain = med["emuprof"][0]
        sim = med["emuprof --cache-sim --branch-sim"][0]
        slowdowns.append(sim / plain)
        versus = f"{sim / med['Cachegrind'][0]:.2f}" if "Cachegrind" in med else "n/a"
        cells = " | ".join(f"{w:.3f} / {c:.3f}" for w, c in med.values())
        lines.append(f"| {case.label} | {cells} | {sim / plain:.2f} | {versus} |")
        log(f"{case.label}: {sim / plain:.2f}x with simulation")
    lines += ["", f"Median slowdown of --cache-sim --branch-sim: {statistics.median(slowdowns):.2f}x (wall)."]
    return "\n".join(lines)
