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

import alternate

NEVER = str(10**15)


def compare(cases, repeats, emuprof, modes, mode_load, run_once, log):
    """Markdown table of median wall and CPU seconds per mode and case."""
    variants = {
        "full profile": (emuprof, []),
        "fast-forward": (emuprof, ["--start-after", NEVER]),
    }
    return alternate.compare(
        cases, repeats, variants, modes, mode_load, run_once, log,
        lambda mode, wall, cpu: f"Median over the programs, {mode}: a full profile takes {wall:.2f}x the "
                                f"wall time and {cpu:.2f}x the CPU time of fast-forwarding.")
