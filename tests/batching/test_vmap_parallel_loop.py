"""vmap's loop strategy under `jit(..., parallel=True)`: a one-argument `prange` over the
examples (Numba types its index unsigned, so `x[b]` loads and stores stay contiguous and the
loop vectorizes), example 0 skipped in it, every example's value right, and `axis_index`
still an integer."""
import math
import re

import numba
import numpy as np
import pytest

from transformer import axis_index, jit, vmap

ALPHA, SCALE = 1.6732632423543772, 1.0507009873554805


def selu(v):
    return SCALE * v if v > 0 else SCALE * (ALPHA * math.exp(v) - ALPHA)


def positioned(v):
    k = axis_index("i")
    if v > 0:                       # a batched `if`: the loop strategy
        return v * (k * 2 + 1)
    return k * 3 - v


@pytest.fixture(scope="module")
def parallel_selu():
    return jit(vmap(selu), parallel=True)


def test_the_parallel_loop_has_an_unsigned_index(parallel_selu):
    x = np.linspace(-2.0, 2.0, 9)
    text = parallel_selu.source(x)
    assert re.search(r"for (\w+) in prange\(size\):\n\s+if \1 != 0:", text), text


@pytest.mark.parametrize("size", [1, 2, 7, 1000])
def test_every_example_of_the_parallel_loop(parallel_selu, size):
    x = np.random.default_rng(size).normal(size=size)
    np.testing.assert_allclose(parallel_selu(x), [selu(v) for v in x], rtol=1e-12)


def test_axis_index_stays_an_integer_in_the_parallel_loop():
    x = np.array([0.5, -1.0, 2.0, -0.25, 3.0])
    want = [positioned_at(v, k) for k, v in enumerate(x)]
    got = jit(vmap(positioned, axis_name="i"), parallel=True)(x)
    np.testing.assert_array_equal(got, want)
    assert got.dtype == np.float64
    ints = jit(vmap(lambda v: axis_index("i") * 2 if v > 0 else axis_index("i") - 1,
                    axis_name="i"), parallel=True)(x)
    np.testing.assert_array_equal(ints, [0, 0, 4, 2, 8])
    assert ints.dtype.kind == "i"


def positioned_at(v, k):
    return v * (k * 2 + 1) if v > 0 else k * 3 - v


def doubled_at(a, k):
    return a[k] * 2.0


def doubled_where_positive(x, idx):
    out = np.zeros_like(x)
    for i in numba.prange(x.shape[0]):
        if x[i] > 0.0:              # an `if` without `else`: the trips can run twice
            out[i] = doubled_at(x, idx[i])
    return out


def test_a_prange_body_under_an_if_reruns_its_unfinished_trips_and_raises_located():
    compiled = jit(doubled_where_positive, parallel=True)
    x, idx = np.array([1.0, -2.0, 3.0, 4.0, -1.0, 6.0]), np.array([5, 0, 4, 3, 2, 1])
    np.testing.assert_array_equal(compiled(x, idx), [12.0, 0.0, -2.0, 8.0, 0.0, -4.0])
    text = compiled.source(x, idx)
    assert "trip_done[i] = True" in text and "if not trip_done[i]:" in text
    idx[3] = 40
    with pytest.raises(IndexError, match=r"test_vmap_parallel_loop.py:\d+:\d+: index 40 is "
                                         r"out of bounds for axis 0 with size 6"):
        compiled(x, idx)
