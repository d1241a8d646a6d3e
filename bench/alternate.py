"""Several runs of each benchmark program, in alternation, compared.

Shared by `--fast-forward` (a full profile against a fast-forwarded run and
`qemu-x86_64`, bench/fast_forward.py) and `--against OTHER` (this emuprof
against another build, bench/against.py): each variant is the command line
that comes before the program, given the run's scratch directory; all see
the same programs, modes and repeats, one after the other, so a busy host
slows them alike.
"""

import itertools
import statistics
import tempfile
from pathlib import Path


def emuprof_variant(binary, flags):
    """A variant that runs `binary` (an emuprof) with `flags`, quietly, its
    profile in the scratch directory."""
    return lambda scratch: [binary, "-q", "-o", str(Path(scratch) / "p.json"), *flags]


def compare(cases, repeats, variants, modes, mode_load, run_once, log, summary, pairs=None):
    """Markdown table of median wall and CPU seconds of `variants`
    ({name: argv before the program, as a function of the scratch
    directory}) per mode and case, with the ratios of every pair (first /
    second, in the variants' order; or of `pairs` of names), and per mode
    and pair `summary(mode, first, second, wall, cpu)` of the median
    ratios over the programs. `mode_load(mode)` is what runs beside them
    in a mode (a context manager: the `loaded` mode's busy loops)."""
    pairs = pairs or list(itertools.combinations(variants, 2))
    lines = [f"Median of {repeats} runs (seconds), wall / CPU:", "",
             "| mode | program | " + " | ".join(variants) + " | "
             + " | ".join(f"{a} / {b} (wall) | (CPU)" for a, b in pairs) + " |",
             "|---|---|" + "---:|" * (len(variants) + 2 * len(pairs))]
    ratios = {mode: {pair: [] for pair in pairs} for mode in modes}
    for mode in modes:
        with mode_load(mode):
            compare_mode(mode, cases, repeats, variants, run_once, log, lines, ratios[mode])
    lines.append("")
    for mode in modes:
        for (first, second), values in ratios[mode].items():
            walls = [wall for wall, _ in values]
            cpus = [cpu for _, cpu in values]
            lines.append(summary(mode, first, second, statistics.median(walls), statistics.median(cpus)))
    return "\n".join(lines)


def compare_mode(mode, cases, repeats, variants, run_once, log, lines, ratios):
    """One mode's rows (appended to `lines`) and ratios (to `ratios`, by pair)."""
    pin = ["taskset", "-c", "0"] if mode == "one-cpu" else []
    for case in cases:
        wall = {name: [] for name in variants}
        cpu = {name: [] for name in variants}
        for _ in range(repeats):
            for name, before in variants.items():
                with tempfile.TemporaryDirectory(prefix="emuprof-bench-ab-") as scratch:
                    argv = [*pin, *before(scratch), *case.argv]
                    code, seconds, cpu_seconds, _, stderr = run_once(argv, scratch, capture_stderr=True)
                    if code != 0:
                        log(f"{name} on {case.label} exited {code}: {stderr.strip()[-300:]}")
                    wall[name].append(seconds)
                    cpu[name].append(cpu_seconds)
        medians = {name: (statistics.median(wall[name]), statistics.median(cpu[name])) for name in variants}
        cells = []
        for pair in ratios:
            (a_wall, a_cpu), (b_wall, b_cpu) = medians[pair[0]], medians[pair[1]]
            ratios[pair].append((a_wall / b_wall, a_cpu / b_cpu))
            cells.append(f"{a_wall / b_wall:.2f} | {a_cpu / b_cpu:.2f}")
            log(f"{mode} {case.label}: {pair[0]} / {pair[1]} CPU {a_cpu / b_cpu:.2f}")
        times = " | ".join(f"{w:.3f} / {c:.3f}" for w, c in medians.values())
        lines.append(f"| {mode} | {case.label} | {times} | " + " | ".join(cells) + " |")
