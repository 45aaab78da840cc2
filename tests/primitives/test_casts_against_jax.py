"""Dtype casts against JAX (float64 enabled): the same source run by jax.numpy gives the
oracle for gradients, tangents, Jacobians and Hessians through `x.astype(t)` and
`np.asarray(x, dtype=t)`, in float64 and float32, values and dtypes. JAX passes the
cotangent of a float cast back in the input's type and none through an integer or bool
cast (a float0 zero). Skipped where JAX is not installed (tests/primitives/test_casts.py
checks the same against finite differences)."""

import numpy as np
import pytest

from tests import gradcheck
from transformer import grad, hessian, jacfwd, jacrev, jvp

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)
jnp = jax.numpy


def on_jax(fun):
    return gradcheck.on_jax(fun, jnp)


def single(x):
    return np.sum(np.sin(x.astype(np.float32)) * x)


def double_string(x):
    return np.sum(np.exp(x.astype("float64")) * x.astype(np.float32))


def integer(x):
    return np.sum(x.astype(np.int32) * x * x + np.asarray(x, dtype=np.int64) * np.cos(x))


def boolean(x):
    return np.sum(x.astype(bool) * np.tanh(x) + x.astype(np.float32) ** 2)


def vector(x):
    return np.tanh(x.astype(np.float32)) * x.astype(np.float64)


SCALARS = [single, double_string, integer, boolean]
X = np.array([0.35, 1.7, -2.4, 2.9, 0.0])


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("f", SCALARS)
def test_grad_and_jvp_match_jax(f, dtype):
    x = X.astype(dtype)
    expected = jax.grad(on_jax(f))(jnp.asarray(x))
    got = grad(f)(x)
    assert got.dtype == expected.dtype == dtype
    np.testing.assert_allclose(got, expected, rtol=2e-6, atol=2e-6)
    t = np.linspace(-1.0, 1.0, 5).astype(dtype)
    _, want = jax.jvp(on_jax(f), (jnp.asarray(x),), (jnp.asarray(t),))
    _, tangent = jvp(f, (x,), (t,))
    assert float(tangent) == pytest.approx(float(want), rel=2e-6, abs=2e-6)


@pytest.mark.slow
@pytest.mark.parametrize("f", SCALARS)
def test_hessian_matches_jax(f):
    np.testing.assert_allclose(hessian(f)(X), jax.hessian(on_jax(f))(jnp.asarray(X)),
                               rtol=2e-6, atol=2e-6)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_jacobians_match_jax(dtype):
    x = X.astype(dtype)
    for transform, oracle in ((jacfwd, jax.jacfwd), (jacrev, jax.jacrev)):
        # the output is float64: jacfwd's columns are float64, jacrev's rows float32
        expected = np.asarray(oracle(on_jax(vector))(jnp.asarray(x)))
        got = transform(vector)(x)
        assert got.dtype == expected.dtype
        np.testing.assert_allclose(got, expected, rtol=2e-6, atol=2e-6)
