"""Whole-array sums under jit are NumPy's pairwise sums. Numba's `np.sum` adds the
elements one after another in the array's dtype: for 10^6 float32 values of 0.1 it gave
100958.8 where NumPy gives 100000.0, and the mean of 10^5 float32 copies of 1.7 was
1.7017. `np.sum`, `np.mean`, `np.var` and `np.std` of a float array now add as NumPy does
(`runtime.pairwise`), to NumPy's value bit for bit for an array contiguous in C or
Fortran order."""
import numpy as np
import pytest

from transformer import jit
from transformer.runtime.pairwise import whole_sum


def total(x):
    return np.sum(x)


def mean(x):
    return np.mean(x)


def variance(x):
    return np.var(x)


def deviation(x):
    return np.std(x)


def total_no_axis(x):
    return np.sum(x, axis=None)


@pytest.mark.every_case
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_many_small_values_numba_summed_badly(dtype):
    x = np.full(10 ** 6, dtype(0.1))
    assert jit(total)(x) == np.sum(x)
    y = np.full(10 ** 5 + 1, dtype(1.7))
    assert jit(mean)(y) == np.mean(y)


@pytest.mark.every_case
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sums_are_numpys_bit_for_bit(dtype):
    rng = np.random.default_rng(3)
    for shape in [(0,), (1,), (7,), (8,), (9,), (128,), (129,), (1000,), (123457,),
                  (300, 41)]:
        x = (rng.standard_normal(shape) * 10 ** rng.uniform(-3, 3, shape)).astype(dtype)
        for f in (total, total_no_axis, mean, variance, deviation):
            if x.size or f in (total, total_no_axis):
                assert jit(f)(x) == f(x), (f.__name__, shape)
        if x.ndim == 2:                       # summed in the order of its memory, as NumPy
            assert jit(total)(x.T) == np.sum(x.T)
            assert jit(total)(np.asfortranarray(x)) == np.sum(np.asfortranarray(x))


def test_the_pairwise_kernel_is_numpys_in_python_too():
    rng = np.random.default_rng(4)
    for n in (0, 5, 17, 130, 4097):
        x = rng.standard_normal(n).astype(np.float32)
        assert whole_sum(x) == np.sum(x)


def test_integer_sums_stay_exact():
    x = np.arange(10 ** 5)
    assert jit(total)(x) == np.sum(x) and jit(mean)(x) == np.mean(x)
