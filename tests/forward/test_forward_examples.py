"""examples/newton.py: Newton's method with the generated Hessian converges quadratically."""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "examples"))

import newton  # noqa: E402

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)


def rosenbrock_jax(x):
    return jax.numpy.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


@pytest.mark.slow
def test_hessian_of_the_chain_matches_jax():
    from transformer import hessian
    x = 1.0 + 0.3 * np.cos(np.arange(6))
    np.testing.assert_allclose(hessian(newton.rosenbrock)(x),
                               jax.hessian(rosenbrock_jax)(x), rtol=1e-12)


def test_newton_converges_in_a_few_steps_with_quadratic_rate():
    start = 1.0 + 0.1 * np.cos(np.arange(6))
    x, norms = newton.newton(newton.rosenbrock, start, backend="python")
    np.testing.assert_allclose(x, 1.0, atol=1e-9)
    assert len(norms) <= 10
    assert norms[-1] <= 10.0 * norms[-2] ** 2          # quadratic convergence
