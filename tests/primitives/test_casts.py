"""Dtype casts under every transformation: `x.astype(t)` (a dtype object, a string, a
builtin, `y.dtype`), `np.asarray(x, dtype=t)` and `np.array([a, b], dtype=t)`.

A cast to a float type passes the derivative back in the type of `x` and forward in `t`;
a cast to an integer or bool type passes none. Before, `.astype` of a differentiated array
was refused, and `np.asarray(x, dtype=np.int64)` and `np.array([a, b], dtype=int)` passed
the derivative through the rounding (wrong gradients). Oracles: central finite differences
in float64 (a cast to float32 is checked through the same function casting to float64, to
float32 accuracy), hand derivations, and a loop over examples for vmap.
"""
import numpy as np
import pytest

import transformer
from transformer import grad, hessian, jacfwd, jacrev, jit, jvp, vmap
from transformer.test_util import numerical_grad


def to_single(x):
    return np.sum(np.sin(x.astype(np.float32)) * x)


def to_double(x):                     # to_single's float64 twin: the finite-difference oracle
    return np.sum(np.sin(x.astype(np.float64)) * x)


def to_single_string(x):
    return np.sum(np.sin(x.astype("float32")) * x)


def to_float_builtin(x):
    return np.sum(np.sin(x.astype(float)) * x)


def to_dtype_of(x, y):
    return np.sum(np.sin(x.astype(y.dtype)) * x)


def to_int(x):
    return np.sum(x.astype(np.int64) * x * x)


def to_bool(x):
    return np.sum(np.cos(x) * (x > 0.0).astype(np.float64) + x.astype(bool) * x)


def asarray_int(x):
    return np.sum(np.asarray(x, dtype=np.int64) * x)


def asarray_single(x):
    return np.sum(np.asarray(x, np.float32) * np.tanh(x))


def array_of_items(a, b):
    v = np.array([a, b * 2.0], dtype=np.int64)
    return np.sum(v * a)


def vector(x):
    return np.tanh(x.astype(np.float32)) * x


X = np.array([0.35, 1.7, -2.4, 2.9])


def _finite(f, x):
    return numerical_grad(f, (x,))


# ---------------------------------------------------------------- reverse and forward mode


@pytest.mark.parametrize("f", [to_single, to_single_string, to_float_builtin, asarray_single])
def test_grad_through_a_float_cast_matches_finite_differences(f):
    twin = to_double if f is not asarray_single else \
        (lambda x: np.sum(np.asarray(x, np.float64) * np.tanh(x)))
    got = grad(f)(X)
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, _finite(twin, X), rtol=1e-6, atol=1e-6)


def test_grad_in_float32_stays_float32():
    x = X.astype(np.float32)
    got = grad(to_single)(x)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, _finite(to_double, X), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(grad(to_dtype_of)(X, x), got, rtol=1e-6)


@pytest.mark.parametrize("f, hand", [
    (to_int, lambda x: 2.0 * np.trunc(x) * x),
    (asarray_int, lambda x: np.trunc(x)),
    (to_bool, lambda x: -np.sin(x) * (x > 0) + (x != 0)),
])
def test_no_derivative_flows_through_an_integer_or_bool_cast(f, hand):
    got = grad(f)(X)
    np.testing.assert_allclose(got, hand(X), rtol=1e-12)
    np.testing.assert_allclose(got, _finite(f, X), rtol=1e-6, atol=1e-6)
    _, tangent = jvp(f, (X,), (np.ones(4),))
    assert tangent == pytest.approx(np.sum(hand(X)), rel=1e-12)


def test_an_array_of_items_cast_to_int_passes_no_derivative_to_them():
    # sum(int([a, 2b]) * a) = (int(a) + int(2b)) * a: d/da = int(a) + int(2b), d/db = 0
    ga, gb = grad(array_of_items, argnums=(0, 1))(1.7, 2.3)
    assert (ga, gb) == (5.0, 0.0) and isinstance(ga, float)
    assert jvp(array_of_items, (1.7, 2.3), (1.0, 0.0))[1] == 5.0
    assert jvp(array_of_items, (1.7, 2.3), (0.0, 1.0))[1] == 0.0


def test_jvp_tangent_is_cast_with_the_value():
    value, tangent = jvp(vector, (X,), (np.ones(4),))
    twin = np.tanh(X.astype(np.float32))
    expected = (1.0 - twin.astype(np.float64) ** 2) * X + twin
    np.testing.assert_allclose(value, vector(X), rtol=1e-7)
    np.testing.assert_allclose(tangent, expected, rtol=1e-6)
    x32 = X.astype(np.float32)
    value, tangent = jvp(vector, (x32,), (np.ones(4, np.float32),))
    assert value.dtype == tangent.dtype == np.float32


# ---------------------------------------------------------------- Jacobians, Hessians, vmap


def test_jacobians_and_hessian_through_casts_match_hand_derivations():
    t = np.tanh(X)
    jacobian = np.diag(1.0 - t * t) * X[:, None] + np.diag(t)
    np.testing.assert_allclose(jacfwd(vector)(X), jacobian, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(jacrev(vector)(X), jacobian, rtol=1e-6, atol=1e-7)
    assert jacfwd(vector)(X.astype(np.float32)).dtype == np.float32
    # to_single: d2/dx2 of sin(x) * x = 2 cos(x) - x sin(x), diagonal
    np.testing.assert_allclose(hessian(to_single)(X), np.diag(2 * np.cos(X) - X * np.sin(X)),
                               rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(hessian(to_int)(X), np.diag(2.0 * np.trunc(X)), atol=1e-12)


def test_vmap_of_grad_through_a_cast_matches_a_loop():
    batch = np.stack([X, 0.5 * X, -X])
    expected = np.stack([grad(to_single)(row) for row in batch])
    np.testing.assert_allclose(vmap(grad(to_single))(batch), expected, rtol=1e-12)
    got = vmap(vector)(batch.astype(np.float32))
    assert got.dtype == np.float32
    assert "prange" not in transformer.source(vmap(vector)), "a rule, not the loop strategy"


# ---------------------------------------------------------------- compiled


def mixed(x):
    return np.sum(np.sin(x.astype(np.float32)) * x + x.astype("float64") ** 2
                  + x.astype(np.int64) * x + np.asarray(x, dtype=np.int32) * x)


def mixed_hand(x):
    return np.cos(x.astype(np.float32)).astype(np.float64) * x + \
        np.sin(x.astype(np.float32)) + 2.0 * x + 2.0 * np.trunc(x)


@pytest.mark.slow
def test_jit_of_grad_and_jvp_through_casts_matches_the_python_run():
    got = jit(grad(mixed))(X)
    np.testing.assert_allclose(got, mixed_hand(X), rtol=1e-6)
    np.testing.assert_allclose(got, grad(mixed)(X), rtol=1e-6)    # float32 sin, cos
    x32 = X.astype(np.float32)
    assert jit(grad(mixed))(x32).dtype == np.float32
    value, tangent = jit(jvp(mixed))(X, np.ones(4))
    assert value == pytest.approx(mixed(X), rel=1e-6)
    assert tangent == pytest.approx(np.sum(mixed_hand(X)), rel=1e-6)


def test_jit_of_a_cast_without_differentiation_keeps_numpys_dtypes():
    def casts(x):
        return x.astype(np.float32) * 2, x.astype("int32"), x.astype(x.dtype)
    got = jit(casts)(X)
    for g, e in zip(got, casts(X)):
        assert g.dtype == e.dtype
        np.testing.assert_array_equal(g, e)


@pytest.mark.slow
def test_jit_of_hessian_and_vmap_of_grad_through_casts():
    np.testing.assert_allclose(jit(hessian(mixed))(X), hessian(mixed)(X), rtol=1e-6)
    batch = np.stack([X, 0.5 * X])
    np.testing.assert_allclose(jit(vmap(grad(mixed)))(batch),
                               np.stack([mixed_hand(row) for row in batch]), rtol=1e-6)
    ga, gb = jit(grad(array_of_items, argnums=(0, 1)))(1.7, 2.3)
    assert (ga, gb) == (5.0, 0.0)
