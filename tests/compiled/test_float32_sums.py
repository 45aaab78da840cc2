"""Whole-array sums of float32 arrays under jit are added in float64. Numba's `np.sum`
adds in float32, one element after another: for 10^6 values of 0.1 it gave 100958.8 where
NumPy gives 100000.0, and the mean of 10^5 copies of 1.7 was 1.7017. `np.sum`, `np.mean`,
`np.var` and `np.std` of a float32 array (also `np.sum(x, axis=None)`) are now at least as
near the exact value as NumPy's pairwise float32 sums."""
import numpy as np
import pytest

from transformer import jit


def total(x):
    return np.sum(x)


def total_no_axis(x):
    return np.sum(x, axis=None)


def mean(x):
    return np.mean(x)


def variance(x):
    return np.var(x)


def deviation(x):
    return np.std(x)


def _exact(f, x):
    return f(x.astype(np.float64))


def test_the_many_small_values_numba_summed_badly():
    x = np.full(10 ** 6, np.float32(0.1))
    assert abs(jit(total)(x) - _exact(total, x)) <= abs(np.sum(x) - _exact(total, x))
    y = np.full(10 ** 5 + 1, np.float32(1.7))
    assert abs(jit(mean)(y) - _exact(mean, y)) <= abs(np.mean(y) - _exact(mean, y))


def test_sums_agree_with_numpy_within_its_rounding():
    rng = np.random.default_rng(3)
    for shape in [(1,), (9,), (129,), (1000,), (123457,), (300, 41)]:
        x = (rng.standard_normal(shape) + 2.0).astype(np.float32)
        for f in (total, total_no_axis, mean, variance, deviation):
            got = jit(f)(x)
            assert got == pytest.approx(_exact(f, x), rel=2e-7), (f.__name__, shape)
            assert got == pytest.approx(f(x), rel=1e-5), (f.__name__, shape)
        if x.ndim == 2:
            assert jit(total)(x.T) == pytest.approx(_exact(total, x), rel=2e-7)
    assert jit(total)(np.zeros(0, np.float32)) == 0.0


def test_float64_and_integer_sums_are_unchanged():
    x = np.arange(10 ** 5)
    assert jit(total)(x) == np.sum(x) and jit(mean)(x) == np.mean(x)
    y = np.linspace(-1.0, 3.0, 1001)
    assert jit(total)(y) == pytest.approx(np.sum(y), rel=1e-13)
