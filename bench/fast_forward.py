"""How fast `--start-at`/`--start-after` fast-forwards, against a full
profile and against `qemu-x86_64`.

    python3 bench/run.py --fast-forward [--repeats N] [--only LABEL] [--modes two-cpus,one-cpu]

For each program, in alternation: emuprof in its default mode (a full
profile), emuprof with `--start-after 10^15`, a start point no benchmark
reaches, so the whole run is fast-forwarded (the guest runs, counted
exactly, without the call tree) — the same instructions both ways, so the
ratio is per instruction — and, when it is installed, `qemu-x86_64` on the
same program. A fast-forward is the least emuprof's translated code can do
(its blocks count themselves and keep a light call stack, nothing more), so
fast-forward / qemu-x86_64 is the floor that the emulator and its memory
model set for any full profile. In the `one-cpu` mode all run under
`taskset -c 0`. Prints median wall and CPU times and the ratios of each
pair.
"""

import alternate

NEVER = str(10**15)


def compare(cases, repeats, emuprof, qemu, modes, mode_load, run_once, log):
    """Markdown table of median wall and CPU seconds per mode and case."""
    variants = {
        "full profile": alternate.emuprof_variant(emuprof, []),
        "fast-forward": alternate.emuprof_variant(emuprof, ["--start-after", NEVER]),
    }
    if qemu:
        variants["qemu-x86_64"] = lambda _scratch: [qemu]
    return alternate.compare(
        cases, repeats, variants, modes, mode_load, run_once, log,
        lambda mode, first, second, wall, cpu: f"Median over the programs, {mode}: {first} takes {wall:.2f}x "
                                               f"the wall time and {cpu:.2f}x the CPU time of {second}.")
