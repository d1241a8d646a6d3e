"""Two emuprof runs of each benchmark program, in alternation, compared.

Shared by `--fast-forward` (a full profile against a fast-forwarded run,
bench/fast_forward.py) and `--against OTHER` (this emuprof against another
build, bench/against.py): each variant is an emuprof binary and the flags
it gets before the program; both see the same programs, modes and repeats,
one after the other, so a busy host slows both alike.
"""

import statistics
import tempfile
from pathlib import Path


def compare(cases, repeats, variants, modes, mode_load, run_once, log, summary):
    """Markdown table of median wall and CPU seconds of the two `variants`
    ({name: (binary, flags)}) per mode and case, each row's ratios first /
    second, and per mode `summary(mode, wall, cpu)` of the median ratios
    over the programs. `mode_load(mode)` is what runs beside them in a mode
    (a context manager: the `loaded` mode's busy loops)."""
    (first, _), (second, _) = variants.items()
    lines = [f"Median of {repeats} runs (seconds), wall / CPU:", "",
             f"| mode | program | {first} | {second} | {first} / {second} (wall) | (CPU) |",
             "|---|---|---:|---:|---:|---:|"]
    ratios = {mode: [] for mode in modes}
    for mode in modes:
        with mode_load(mode):
            compare_mode(mode, cases, repeats, variants, run_once, log, lines, ratios[mode])
    lines.append("")
    for mode in modes:
        walls = [wall for wall, _ in ratios[mode]]
        cpus = [cpu for _, cpu in ratios[mode]]
        lines.append(summary(mode, statistics.median(walls), statistics.median(cpus)))
    return "\n".join(lines)


def compare_mode(mode, cases, repeats, variants, run_once, log, lines, ratios):
    """One mode's rows (appended to `lines`) and ratios (to `ratios`)."""
    (first, _), (second, _) = variants.items()
    pin = ["taskset", "-c", "0"] if mode == "one-cpu" else []
    for case in cases:
        wall = {name: [] for name in variants}
        cpu = {name: [] for name in variants}
        for _ in range(repeats):
            for name, (binary, flags) in variants.items():
                with tempfile.TemporaryDirectory(prefix="emuprof-bench-ab-") as scratch:
                    argv = [*pin, binary, "-q", "-o", str(Path(scratch) / "p.json"), *flags, *case.argv]
                    code, seconds, cpu_seconds, _, stderr = run_once(argv, scratch, capture_stderr=True)
                    if code != 0:
                        log(f"{name} on {case.label} exited {code}: {stderr.strip()[-300:]}")
                    wall[name].append(seconds)
                    cpu[name].append(cpu_seconds)
        a_wall, b_wall = (statistics.median(wall[name]) for name in variants)
        a_cpu, b_cpu = (statistics.median(cpu[name]) for name in variants)
        ratios.append((a_wall / b_wall, a_cpu / b_cpu))
        lines.append(f"| {mode} | {case.label} | {a_wall:.3f} / {a_cpu:.3f} | {b_wall:.3f} / {b_cpu:.3f}"
                     f" | {a_wall / b_wall:.2f} | {a_cpu / b_cpu:.2f} |")
        log(f"{mode} {case.label}: {first} / {second} CPU {a_cpu / b_cpu:.2f}")
