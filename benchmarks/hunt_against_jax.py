"""Hunt generated array programs checked against JAX: every transformation, values, shapes,
dtypes and pytree structure.

    python benchmarks/hunt_against_jax.py --examples 200 --seed 1
    python benchmarks/hunt_against_jax.py --checks grad0,vmap_grad,jit_python:hessian
    python benchmarks/hunt_against_jax.py --checks all --jit cpu --examples 20

Programs come from tests/array_program_generator.py (NumPy and `jax.numpy` renderings of one
template: elementwise math, broadcasting, reductions, contractions, views and static
indexing, dict/tuple params, static if/for, a helper) and are checked by
tests/array_program_checks.py. A `TransformError` is a refusal, counted apart and listed by
message; anything else that differs from JAX, or any other exception, is printed as a
finding with its program. `--float32` draws float32 arguments (dtype checks included);
`--show-refused` prints the program of each distinct refusal, to minimize it.
Exits 1 when a finding was printed.
"""
from __future__ import annotations

import argparse
import collections
import sys
import tempfile
import warnings
from pathlib import Path

from hunting import prepare  # noqa: E402  (benchmarks/, the script's folder)

prepare("secant-jaxhunt-cache-")

from hypothesis import HealthCheck, Phase, given, settings  # noqa: E402

import array_program_checks as checks  # noqa: E402
from array_program_generator import array_programs  # noqa: E402


def check_names(spec: str, jit: str) -> list[str]:
    if spec != "all":
        return spec.split(",")
    names = list(checks.CHECKS)
    for backend in jit.split(",") if jit else ():
        names += [f"jit_{backend}:{name}" for name in checks.JITTABLE]
    return names


def hunt(examples: int, seed: int, names, float32=False, show_refused=False) -> int:
    directory = Path(tempfile.mkdtemp(prefix="secant-jaxhunt-"))
    counts = collections.Counter()
    refusals = collections.Counter()
    findings = []

    @settings(max_examples=examples, database=None, deadline=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(array_programs())
    def one(program):
        for check, result in checks.check_program(program, names, directory, seed,
                                                  float32).items():
            kind = result if isinstance(result, str) else "FINDING"
            counts[check, kind.split(" ")[0]] += 1
            if kind.startswith("refused"):
                if show_refused and (check, kind[8:]) not in refusals:
                    print(f"--- refused {check}: {kind[8:]}\n{program.numpy_source()}",
                          flush=True)
                refusals[check, kind[8:]] += 1
            if isinstance(result, checks.Finding):
                findings.append(result)
                print(result, flush=True)

    one._hypothesis_internal_use_seed = seed
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        one()
    for (check, kind), n in sorted(counts.items()):
        print(f"{check:32s} {kind:12s} {n}")
    for (check, message), n in refusals.most_common(20):
        print(f"refused {n:4d} {check}: {message}")
    print(f"{len(findings)} finding(s)")
    return 1 if findings else 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=50)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--checks", default="all", help="comma-separated names, or all")
    parser.add_argument("--jit", default="python",
                        help="backends jit goes on top with, for --checks all: python,cpu")
    parser.add_argument("--float32", action="store_true")
    parser.add_argument("--show-refused", action="store_true",
                        help="print the program of each refusal the first time it is met")
    args = parser.parse_args(argv)
    return hunt(args.examples, args.seed, check_names(args.checks, args.jit), args.float32,
                args.show_refused)


if __name__ == "__main__":
    sys.exit(main())
