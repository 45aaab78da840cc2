"""Drawn programs with in-place writes through views, aliases and containers
(tests/write_program_generator.py) give the right numbers under grad, jvp, hessian,
jacrev, jacfwd, vmap and jit - or a located refusal. The oracles never come from secant:
central finite differences of the plain function, the per-example loop, the plain run with
its arguments' final contents (tests/write_checks.py). The slow hunts are sized for CI's
hour on a slow 2-core machine; benchmarks/hunt_writes.py runs the long hunts."""
import os
import warnings

import pytest
from hypothesis import HealthCheck, Phase, given, seed, settings
from write_checks import CHECKS, COMPILED, check_program
from write_program_generator import write_programs

QUICK = ("grad", "grad_constant_a", "jvp", "jacrev", "vmap", "vmap_shared", "jit_python")


def _hunt(tmp_path, examples, checks, start):
    import sys
    sys.path.insert(0, str(tmp_path))
    found, counter = [], iter(range(10 ** 6))

    @seed(start)
    @settings(max_examples=examples, database=None, deadline=None, phases=(Phase.generate,),
              suppress_health_check=list(HealthCheck))
    @given(write_programs())
    def run(program):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            found.extend(check_program(program, checks, tmp_path, next(counter)))

    run()
    assert not found, "\n\n".join(str(f) for f in found[:3])


def test_drawn_write_programs_quick(tmp_path):
    _hunt(tmp_path, 6, QUICK, 20261204)


@pytest.mark.slow
def test_drawn_write_programs_every_check(tmp_path):
    # grad_constant_a runs in the quick hunt and in benchmarks/hunt_writes.py; the slow
    # hunt keeps to the checks it had, within CI's time
    _hunt(tmp_path, 25, [c for c in CHECKS if c not in COMPILED + ("grad_constant_a",)], 7)


@pytest.mark.slow
@pytest.mark.skipif(os.environ.get("NUMBA_DISABLE_JIT") == "1", reason="compiles with Numba")
def test_drawn_write_programs_compiled(tmp_path):
    _hunt(tmp_path, 5, COMPILED, 8)
