"""What `--cache-sim --branch-sim` costs, beside Cachegrind and Callgrind
doing the same.

    python3 bench/run.py --cache-sim [--repeats N] [--only LABEL] [--suite static|real|all] [--modes two-cpus,one-cpu]

For each program, in alternation: emuprof in its default mode, emuprof with
`--cache-sim --branch-sim` (the translated code records every data access,
the caches and predictors are simulated on the call-tree thread),
`valgrind --tool=cachegrind --cache-sim=yes --branch-sim=yes` and
`valgrind --tool=callgrind --cache-sim=yes`, all with the default cache
geometry of each (emuprof: Skylake; Valgrind: the host's), in each mode
asked for (`one-cpu`: every tool under `taskset -c 0`). Prints median wall
and CPU times and the ratios simulation / default, simulation /
Cachegrind and simulation / Callgrind, per program and, per mode, their
medians over the programs.
"""

import statistics
from pathlib import Path

import alternate

SIM = "emuprof --cache-sim --branch-sim"


def compare(cases, repeats, emuprof, valgrind, modes, mode_load, run_once, log):
    """Markdown table of median wall and CPU seconds per mode, case and tool."""
    variants = {
        "emuprof": alternate.emuprof_variant(emuprof, []),
        SIM: alternate.emuprof_variant(emuprof, ["--cache-sim", "--branch-sim"]),
    }
    pairs = [(SIM, "emuprof")]
    if valgrind:
        variants["Cachegrind"] = lambda scratch: [
            valgrind, "--tool=cachegrind", "--cache-sim=yes", "--branch-sim=yes",
            f"--cachegrind-out-file={Path(scratch) / 'cg.out'}"]
        variants["Callgrind --cache-sim=yes"] = lambda scratch: [
            valgrind, "--tool=callgrind", "--cache-sim=yes",
            f"--callgrind-out-file={Path(scratch) / 'callgrind.out'}"]
        pairs += [(SIM, "Cachegrind"), (SIM, "Callgrind --cache-sim=yes")]
    return alternate.compare(
        cases, repeats, variants, modes, mode_load, run_once, log,
        lambda mode, first, second, wall, cpu: f"Median over the programs, {mode}: {first} takes "
                                               f"{wall:.2f}x the wall time and {cpu:.2f}x the CPU time "
                                               f"of {second}.",
        pairs)
