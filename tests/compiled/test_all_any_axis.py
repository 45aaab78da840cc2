"""`np.all` and `np.any` with an axis under jit: Numba's take no axis, so `np.all(m,
axis=1)` was refused. They now give NumPy's value for an int or a tuple axis, with
keepdims, of booleans and of numbers (NaN counts as true), on empty axes, also under
jit(vmap) and inside a function jit(grad) differentiates."""
import numpy as np
import pytest

from transformer import grad, jit, vmap


def rows_all(x):
    return np.all(x > 0.1, axis=1)


def columns_any(x):
    return np.any(x > 0.9, axis=0)


def tuple_axis(x):
    return np.all(x > 0.2, axis=(0, 1))


def kept_last(x):
    return np.any(x > 0.5, axis=-1, keepdims=True)


def methods(x):
    return (x > 0.3).all(axis=0), (x > 0.3).any(1)


def of_numbers_with_nan(x):
    y = x.copy()
    y[0, 0] = np.nan
    y[1, 1] = 0.0
    return np.all(y, axis=1), np.any(y - y, axis=1)


def empty_axis(x):
    return np.all(x[:, :0], axis=1), np.any(x[:, :0], axis=1)


X = np.random.default_rng(0).uniform(size=(5, 3, 4))


@pytest.mark.every_case
@pytest.mark.parametrize("function", [rows_all, columns_any, tuple_axis, kept_last,
                                      methods, of_numbers_with_nan, empty_axis])
def test_values_are_numpys(function):
    for x in X[:3]:
        got, want = jit(function)(x), function(x)
        if not isinstance(want, tuple):
            got, want = (got,), (want,)
        assert len(got) == len(want)
        for one, expected in zip(got, want):
            np.testing.assert_array_equal(one, expected)


@pytest.mark.parametrize("function", [rows_all, kept_last])
def test_batched_under_jit(function):
    np.testing.assert_array_equal(jit(vmap(function))(X), [function(x) for x in X])


def masked(x):
    return np.sum(np.where(np.all(x > 0.2, axis=1, keepdims=True), x * x, np.sin(x)))


def test_gradient_through_a_mask_with_an_axis():
    x = X[0]
    want = np.where(np.all(x > 0.2, axis=1, keepdims=True), 2 * x, np.cos(x))
    np.testing.assert_allclose(jit(grad(masked))(x), want, rtol=1e-12)
