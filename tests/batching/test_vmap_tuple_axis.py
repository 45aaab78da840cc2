"""A reduction over a tuple of axes under jit(vmap): the batched code moves each axis past
the batch axis (`batch_axis`), which took an int only, so `np.sum(x, axis=(0, 1))` was
refused under jit(vmap) while it ran under vmap alone."""
import numpy as np
import pytest

from transformer import jit, vmap


def summed(x):
    return np.sum(x, axis=(0, 1))


def mean_kept(x):
    return x.mean(axis=(0, 1), keepdims=True)


def max_negative(x):
    return np.max(x, axis=(-1, 0))


def std_of_product(x):
    return np.std(x * x, axis=(1,))


X = np.random.default_rng(3).normal(size=(4, 2, 3, 5))


@pytest.mark.every_case
@pytest.mark.parametrize("function", [summed, mean_kept, max_negative, std_of_product])
def test_matches_the_loop_over_examples(function):
    want = np.stack([function(x) for x in X])
    got = jit(vmap(function))(X)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-12)
