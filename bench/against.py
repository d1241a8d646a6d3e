"""This emuprof against another build of it, program by program.

    python3 bench/run.py --against OTHER_EMUPROF [--repeats N] [--only LABEL] [--modes two-cpus,one-cpu,loaded]

For each program, in alternation: this emuprof (`--emuprof`, default the
release build) and OTHER_EMUPROF (e.g. a build of `main` before a change),
both in their default full-profile mode, so a change's cost or saving is
measured on the same host at the same moment. In the `one-cpu` mode both
run under `taskset -c 0`, in the `loaded` mode beside a busy loop on every
CPU. Prints median wall and CPU times and the ratios
this / other; below 1 means this build is faster.
"""

import alternate


def compare(cases, repeats, emuprof, other, modes, mode_load, run_once, log):
    """Markdown table of median wall and CPU seconds per mode and case."""
    variants = {
        "this emuprof": alternate.emuprof_variant(emuprof, []),
        "other": alternate.emuprof_variant(other, []),
    }
    return alternate.compare(
        cases, repeats, variants, modes, mode_load, run_once, log,
        lambda mode, _first, _second, wall, cpu: f"Median over the programs, {mode}: this emuprof takes "
                                                 f"{wall:.2f}x the wall time and {cpu:.2f}x the CPU time of "
                                                 f"the other.")
