"""Hunt for silent wrong answers: many random programs through jit, grad and vmap.

    python benchmarks/hunt_silent_errors.py --examples 200 --seed 1
    python benchmarks/hunt_silent_errors.py --checks grad,vmap,jit_python --examples 2000
    python benchmarks/hunt_silent_errors.py --known-bugs --isolate --examples 50

The larger run of tests/corpus/test_differential.py. Each example is a program drawn by
tests/program_generator.py (loops, branches on values, early return, in-place writes,
aliases updated in place, indices at and past the bounds, decorators, keyword-only
arguments and defaults, module attributes, names that start as an int or a bool and
later hold floats, `//`, `%` and integer powers) and checked by tests/differential.py against
its plain Python run and central finite differences. Every mismatch is printed as it is
found (the program, the inputs, expected and got), then a count per check and reason.

By default the constructs of `KNOWN_BUGS` are left out of the checks they break, as in
the test; `--known-bugs` puts them back. An out-of-range index under jit can crash the
process today: `--isolate` runs each example in a forked child (POSIX only) and reports a
child killed by a signal as a crash of that program. The compiled checks (jit, jit_grad,
jit_vmap) cost a Numba compile each, seconds per example; the others run in milliseconds.
Exits 1 when a mismatch was found.
"""
from __future__ import annotations

import argparse
import collections
import os
import pickle
import signal
import sys
import tempfile
import warnings
from pathlib import Path

from hunting import checks_argument, prepare  # noqa: E402  (benchmarks/, the script's folder)

prepare("secant-hunt-cache-")

from differential import CHECKS, KNOWN_BUGS, allowed_features, check_program  # noqa: E402
from hypothesis import HealthCheck, Phase, given, seed, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from program_generator import whole_programs  # noqa: E402


def _arguments(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--examples", type=int, default=100, help="programs to draw")
    parser.add_argument("--seed", type=int, default=0, help="seed of the program sequence")
    parser.add_argument("--checks", default=",".join(CHECKS),
                        help=f"comma-separated, from {','.join(CHECKS)}")
    parser.add_argument("--points", type=int, default=4, help="inputs per program")
    parser.add_argument("--features", default=None,
                        help="comma-separated subset of the program features to draw")
    parser.add_argument("--known-bugs", action="store_true",
                        help="also generate the constructs of KNOWN_BUGS")
    parser.add_argument("--isolate", action="store_true",
                        help="run each example in a forked child, so a crash is reported")
    args = parser.parse_args(argv)
    args.checks = checks_argument(parser, args, CHECKS)
    return args


def _check(program, args, directory, example_seed):
    known = {} if args.known_bugs else KNOWN_BUGS
    return [(m.check, m.why, str(m)) for m in
            check_program(program, args.checks, directory, example_seed, args.points, known)]


def _check_isolated(program, args, directory, example_seed):
    """`_check` in a forked child; a child killed by a signal is reported as a crash."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:                                  # child: report and leave at once
        os.close(read)
        try:
            payload = pickle.dumps(_check(program, args, directory, example_seed))
        except BaseException as error:  # noqa: BLE001 - reported by the parent
            payload = pickle.dumps([("harness", type(error).__name__, repr(error))])
        with os.fdopen(write, "wb") as out:
            out.write(payload)
        os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as source:
        data = source.read()
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        name = signal.Signals(os.WTERMSIG(status)).name
        return [("crash", name, f"crash: killed by {name}\n{program.listing()}")]
    return pickle.loads(data)


def main(argv=None) -> int:
    args = _arguments(argv)
    # as in setup.cfg: under NUMBA_OPT=0 Numba cannot disk-cache a function calling another
    warnings.filterwarnings("ignore", message=".*Cannot cache compiled function")
    known = {} if args.known_bugs else KNOWN_BUGS
    features = allowed_features(args.checks, known)
    if args.features is not None:
        features = tuple(f for f in features if f in args.features.split(","))
    directory = Path(tempfile.mkdtemp(prefix="secant-hunt-programs-"))
    tally, drawn = collections.Counter(), []
    check = _check_isolated if args.isolate else _check

    @seed(args.seed)
    @settings(max_examples=args.examples, database=None, deadline=None,
              phases=[Phase.generate], suppress_health_check=list(HealthCheck))
    @given(program=whole_programs(features), example_seed=st.integers(0, 2 ** 16))
    def hunt(program, example_seed):
        drawn.append(program)
        for name, why, text in check(program, args, directory, example_seed):
            tally[(name, why)] += 1
            print(f"--- mismatch {sum(tally.values())} (example {len(drawn)})\n{text}\n",
                  flush=True)

    hunt()
    print(f"{len(drawn)} programs, checks {','.join(args.checks)}, features "
          f"{','.join(features)}; known bugs {'included' if args.known_bugs else 'left out'}")
    print(f"{sum(tally.values())} mismatches")
    for (name, why), count in sorted(tally.items()):
        print(f"  {count:5d}  {name:10s} {why}")
    return 1 if tally else 0


if __name__ == "__main__":
    sys.exit(main())
