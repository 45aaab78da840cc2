"""runtime.small_products: compiled matrix-vector and vector-matrix products of small float
arrays run as loops; they equal NumPy's product to rounding at every size around the
switch to BLAS, keep float32, propagate nan and inf, and give np.dot's error on mismatched
shapes. Other operands (mixed types, integers, strided views) keep np.dot."""
import numba
import numpy as np
import pytest

from transformer import grad, jit
from transformer.runtime import small_products
from transformer.runtime.linalg import matmul, matmul_grad_left, matmul_grad_right

SHAPES = [(1, 1), (3, 5), (32, 32), (32, 8), (64, 128), (1, small_products.SMALL),
          (2, small_products.SMALL // 2 + 1), (0, 4), (4, 0)]


@numba.njit
def _products(a, b, g):
    return matmul(a, b), matmul(g, a), matmul_grad_right(g, a, b), \
        matmul_grad_left(b, g, a)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_products_equal_numpys_to_rounding_on_both_sides_of_the_switch(dtype):
    rng = np.random.default_rng(0)
    for n, m in SHAPES:
        a = rng.standard_normal((n, m)).astype(dtype)
        b = rng.standard_normal(m).astype(dtype)
        g = rng.standard_normal(n).astype(dtype)
        ab, ga, right, left = _products(a, b, g)
        for got, want in [(ab, a @ b), (ga, g @ a), (right, a.T @ g), (left, a @ b)]:
            assert got.dtype == dtype and got.shape == want.shape
            tol = 1e-4 if dtype == np.float32 else 1e-12
            np.testing.assert_allclose(got, want, rtol=tol, atol=tol * np.sqrt(m + n),
                                       err_msg=f"{(n, m)}")


def test_nan_and_inf_propagate_as_in_numpy():
    a = np.ones((4, 3))
    a[1, 2] = np.nan
    a[2, 0] = np.inf
    b = np.array([1.0, 2.0, 3.0])
    ab, ga, _, _ = _products(a, b, np.ones(4))
    np.testing.assert_array_equal(ab, a @ b)
    np.testing.assert_array_equal(ga, np.ones(4) @ a)


def test_mismatched_shapes_raise_nps_error():
    with pytest.raises(ValueError):
        _products(np.ones((3, 4)), np.ones(5), np.ones(3))


def test_other_operands_keep_np_dot():
    f64, f32 = numba.float64, numba.float32
    assert small_products.matvec_for(f64[:, ::1], f64[::1]) is not None
    assert small_products.matvec_for(f64[:, ::1], f32[::1]) is None
    assert small_products.matvec_for(numba.int64[:, ::1], numba.int64[::1]) is None
    assert small_products.matvec_for(f64[:, :], f64[::1]) is None
    assert small_products.vecmat_for(f32[::1], f32[:, ::1]) is not None


def rnn(W, h, xs):
    for t in range(xs.shape[0]):
        h = np.tanh(W @ h + xs[t])
    return np.sum(h)


def test_a_recurrence_through_the_loops_has_the_finite_difference_gradient():
    rng = np.random.default_rng(1)
    W, h, xs = rng.standard_normal((6, 6)) * 0.4, rng.standard_normal(6), \
        rng.standard_normal((5, 6))
    got = jit(grad(rnn))(W, h, xs)
    eps, want = 1e-6, np.empty_like(W)
    for k in np.ndindex(W.shape):
        d = np.zeros_like(W)
        d[k] = eps
        want[k] = (rnn(W + d, h, xs) - rnn(W - d, h, xs)) / (2 * eps)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8)
