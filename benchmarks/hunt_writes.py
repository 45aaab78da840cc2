"""Hunt for wrong numbers in programs that write in place through views, aliases and
containers, under every transformation.

    python benchmarks/hunt_writes.py --examples 200 --seed 1
    python benchmarks/hunt_writes.py --checks grad,vmap_shared --examples 2000

Each example is a program drawn by tests/write_program_generator.py and checked by
tests/write_checks.py against finite differences, the per-example loop or the plain run
(arguments' final contents included). Every finding is printed as it is found, then a count
per check and outcome. jit_cpu costs a Numba compile per example (seconds); the others run
in well under a second. `--show-refused` prints the program of each distinct refusal.
Exits 1 when something was found.
"""
from __future__ import annotations

import argparse
import collections
import sys
import tempfile
import warnings
from pathlib import Path

from hunting import checks_argument, prepare  # noqa: E402  (benchmarks/, the script's folder)

prepare("secant-hunt-cache-")

from hypothesis import HealthCheck, Phase, given, seed, settings  # noqa: E402
from write_checks import CHECKS, COMPILED, check_program  # noqa: E402
from write_program_generator import write_programs  # noqa: E402


def _arguments(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--examples", type=int, default=100, help="programs to draw")
    parser.add_argument("--seed", type=int, default=0, help="seed of the program sequence")
    parser.add_argument("--checks", default=",".join(c for c in CHECKS if c not in COMPILED),
                        help=f"comma-separated, from {','.join(CHECKS)}")
    parser.add_argument("--refusals", action="store_true",
                        help="also list the refusals, most frequent first")
    parser.add_argument("--show-refused", action="store_true",
                        help="print the program of each refusal the first time it is met")
    args = parser.parse_args(argv)
    args.checks = checks_argument(parser, args, CHECKS)
    return args


def hunt(args) -> int:
    outcomes, found, refusals = {}, [], []
    directory = Path(tempfile.mkdtemp(prefix="secant-hunt-writes-"))
    sys.path.insert(0, str(directory))
    counter = iter(range(10 ** 9))

    @seed(args.seed)
    @settings(max_examples=args.examples, database=None, deadline=None,
              phases=(Phase.generate,), suppress_health_check=list(HealthCheck))
    @given(write_programs())
    def run(program):
        number, seen = next(counter), set(refusals)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            findings = check_program(program, args.checks, directory, number, outcomes,
                                     refusals)
        for finding in findings:
            print(f"--- example {number}", finding, sep="\n", flush=True)
        for check, message in dict.fromkeys(refusals) if args.show_refused else ():
            if (check, message) not in seen:
                seen.add((check, message))
                print(f"--- example {number} refused {check}: {message}\n{program.listing()}",
                      flush=True)
        found.extend(findings)

    run()
    print("\noutcomes:")
    for (check, outcome), count in sorted(outcomes.items()):
        print(f"  {check:12s} {outcome:10s} {count}")
    if args.refusals:
        print("\nrefusals:")
        for (check, message), count in collections.Counter(refusals).most_common():
            print(f"  {count:4d} {check:12s} {message[:150]}")
    print(f"{len(found)} findings in {args.examples} programs")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(hunt(_arguments()))
