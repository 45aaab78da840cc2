"""Generated array programs (tests/array_program_generator.py) through secant's
transformations, checked against the same JAX transformations of their `jax.numpy`
rendering (tests/array_program_checks.py): values, shapes, dtypes, pytree structure.

Quick: two programs, fixed seed, the first-order transformations and jit(grad) on the
python backend. Slow: more programs through every transformation, and jit on Numba. The long hunt is
benchmarks/hunt_against_jax.py."""
import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings

pytest.importorskip("jax")

import array_program_checks as checks  # noqa: E402
from array_program_generator import ArrayProgram, array_programs, load  # noqa: E402


def _hunt(tmp_path, examples, seed, names, float32=False):
    findings, outcomes = [], []

    @settings(max_examples=examples, database=None, deadline=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(array_programs(max_statements=4))
    def one(program):
        for result in checks.check_program(program, names, tmp_path, seed, float32).values():
            outcomes.append(result)
            if isinstance(result, checks.Finding):
                findings.append(str(result))

    one._hypothesis_internal_use_seed = seed
    one()
    assert not findings, "\n".join(findings)
    return outcomes


QUICK = ("grad0", "grad01", "value_and_grad_aux", "jvp", "vjp", "vmap0", "vmap1_out1",
         "vmap_grad", "grad_grad", "jit_python:grad0")


@pytest.mark.slow
def test_generated_programs_agree_with_jax(tmp_path):
    outcomes = _hunt(tmp_path, 2, 3, QUICK)
    # the hunt compared something: most outcomes are agreements, not refusals
    assert sum(outcome == "ok" for outcome in outcomes) > len(outcomes) // 2


@pytest.mark.slow
def test_generated_programs_agree_with_jax_every_transformation(tmp_path):
    outcomes = _hunt(tmp_path, 4, 4, list(checks.CHECKS))
    assert sum(outcome == "ok" for outcome in outcomes) > len(outcomes) // 2


@pytest.mark.slow
def test_generated_programs_agree_with_jax_under_numba_jit(tmp_path):
    names = [f"jit_cpu:{name}" for name in ("grad0", "value_and_grad_aux", "vmap_grad",
                                            "hessian")]
    outcomes = _hunt(tmp_path, 3, 5, names)
    assert sum(outcome == "ok" for outcome in outcomes) > len(outcomes) // 2


def test_the_checker_sees_a_wrong_value_a_dtype_and_a_structure():
    assert checks.compare({"w": np.ones(2)}, {"w": np.ones(2)}) is None
    assert "value" in checks.compare(np.ones(2), np.array([1.0, 1.0 + 1e-6]))
    assert "dtype" in checks.compare(np.ones(2), np.ones(2, np.float32))
    assert "shape" in checks.compare(np.ones(2), np.ones((1, 2)))
    assert "structure" in checks.compare({"w": 1.0}, (1.0,))
    assert "structure" in checks.compare((1.0, 2.0), (1.0,))


def test_the_checker_allows_float32_rounding_but_not_a_wrong_float32_value_or_dtype():
    jax32 = np.array([-0.7649381, -0.8658218], np.float32)       # from a drawn program
    ours = np.array([-0.7649381, -0.8658217], np.float32)        # NumPy rounds one ulp apart
    assert checks.compare(jax32, ours) is None
    assert "value" in checks.compare(jax32, ours * np.float32(1.001))
    assert "dtype" in checks.compare(jax32, ours.astype(np.float64))
    assert "value" in checks.compare(jax32.astype(np.float64), ours.astype(np.float64))


@pytest.mark.slow
def test_generated_programs_agree_with_jax_on_float32_arguments(tmp_path):
    outcomes = _hunt(tmp_path, 4, 41, ["vmap0", "jvp", "vjp", "vmap_grad", "grad_grad"], True)
    assert sum(outcome == "ok" for outcome in outcomes) > len(outcomes) // 2


def test_both_renderings_compute_the_same_function(tmp_path):
    import jax.numpy as jnp
    program = ArrayProgram(
        "def helper(a, s):\n    return a\n\n\n"
        "def f(params, x):\n    w, b = params\n    return {np}.sum(w @ x + b[:2])\n", "tuple")
    np_mod, jax_mod = load(tmp_path, program.numpy_source()), load(tmp_path, program.jax_source())
    params, x = (np.ones((2, 3)), np.arange(3.0)), np.ones(3)
    assert np_mod.f(params, x) == float(jax_mod.f(tuple(map(jnp.asarray, params)), x)) == 7.0
