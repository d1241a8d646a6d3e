"""How fast `--start-at`/`--start-after` fast-forwards, against a full profile.

    python3 bench/run.py --fast-forward [--repeats N] [--only LABEL] [--modes two-cpus,one-cpu]

For each program, in alternation: emuprof in its default mode (a full
profile) and emuprof with `--start-after 10^15`, a start point no benchmark
reaches, so the whole run is fast-forwarded (the guest runs, counted
exactly, without the call tree) — the same instructions both ways, so the
ratio is per instruction. In the `one-cpu` mode both run under
`taskset -c 0`. Prints median wall and CPU times and the ratios full /
fast-forward.
"""

import statistics
import tempfile
from pathlib import Path

NEVER = str(10**15)


def compare(cases, repeats, emuprof, modes, run_once, log):
    """Markdown table of median wall and CPU seconds per mode and case."""
    variants = {
        "full profile": [],
        "fast-forward": ["--start-after", NEVER],
    }
    lines = [f"Median of {repeats} runs (seconds), wall / CPU:", "",
             "| mode | program | full profile | fast-forward | full / fast-forward (wall) | (CPU) |",
             "|---|---|---:|---:|---:|---:|"]
    ratios = {mode: [] for mode in modes}
    for mode in modes:
        pin = ["taskset", "-c", "0"] if mode == "one-cpu" else []
        for case in cases:
            wall = {name: [] for name in variants}
            cpu = {name: [] for name in variants}
            for _ in range(repeats):
                for name, flags in variants.items():
                    with tempfile.TemporaryDirectory(prefix="emuprof-bench-ff-") as scratch:
                        argv = [*pin, emuprof, "-q", "-o", str(Path(scratch) / "p.json"), *flags, *case.argv]
                        code, seconds, cpu_seconds, _, stderr = run_once(argv, scratch, capture_stderr=True)
                        if code != 0:
                            log(f"{name} on {case.label} exited {code}: {stderr.strip()[-300:]}")
                        wall[name].append(seconds)
                        cpu[name].append(cpu_seconds)
            full_wall, ff_wall = (statistics.median(wall[name]) for name in variants)
            full_cpu, ff_cpu = (statistics.median(cpu[name]) for name in variants)
            ratios[mode].append((full_wall / ff_wall, full_cpu / ff_cpu))
            lines.append(f"| {mode} | {case.label} | {full_wall:.3f} / {full_cpu:.3f} | {ff_wall:.3f} / {ff_cpu:.3f}"
                         f" | {full_wall / ff_wall:.2f} | {full_cpu / ff_cpu:.2f} |")
            log(f"{mode} {case.label}: fast-forward {full_cpu / ff_cpu:.2f}x less CPU")
    lines.append("")
    for mode in modes:
        walls = [wall for wall, _ in ratios[mode]]
        cpus = [cpu for _, cpu in ratios[mode]]
        lines.append(f"Median over the programs, {mode}: a full profile takes {statistics.median(walls):.2f}x the "
                     f"wall time and {statistics.median(cpus):.2f}x the CPU time of fast-forwarding.")
    return "\n".join(lines)
