"""Collectives under vmap(axis_name=...): psum, pmean, pmax, pmin, all_gather, axis_index
with JAX's semantics, nested axis names, and the errors. Oracle: NumPy over the stack."""
import numpy as np
import pytest

from transformer import (TransformError, all_gather, axis_index, jit, pmax, pmean, pmin, psum,
                         vmap)


def every_collective(x):
    return (psum(x, "i"), pmean(x, "i"), pmax(x, "i"), pmin(x, "i"), all_gather(x, "i"),
            axis_index("i") * 1.0)


def normalize(x):
    return x / psum(x, "i")


def centered(x, c):
    return x - pmean(x, axis_name="i") + psum(c, "i")


def two_axes(x):
    return x / psum(x, "i") + psum(x, "j")


def branch_then_sum(x):
    if np.sum(x) > 0:
        x = x * 2.0
    return psum(x, "i")


X = np.random.default_rng(0).normal(size=(4, 3))


def expected(xs):
    n = xs.shape[0]
    tile = np.broadcast_to
    return (tile(xs.sum(0), xs.shape), tile(xs.mean(0), xs.shape), tile(xs.max(0), xs.shape),
            tile(xs.min(0), xs.shape), tile(xs, (n,) + xs.shape), np.arange(n) * 1.0)


@pytest.fixture(scope="module")
def compiled_collectives():
    return jit(vmap(every_collective, axis_name="i"))


@pytest.mark.parametrize("backend", ["python", pytest.param("numba", marks=pytest.mark.slow)])
def test_collectives_follow_jax_semantics(compiled_collectives, backend):
    fn = vmap(every_collective, axis_name="i") if backend == "python" \
        else compiled_collectives
    for got, want in zip(fn(X), expected(X)):
        np.testing.assert_allclose(got, want)


def test_psum_normalizes_over_the_batch():
    got = vmap(normalize, axis_name="i")(X[:, 0])
    np.testing.assert_allclose(got, X[:, 0] / X[:, 0].sum())


def test_collective_of_an_unmapped_value_counts_every_example():
    got = vmap(centered, in_axes=(0, None), axis_name="i")(X, 2.0)
    np.testing.assert_allclose(got, X - X.mean(0) + 2.0 * X.shape[0])


def test_nested_axis_names():
    fn = vmap(vmap(two_axes, axis_name="j"), axis_name="i")
    want = X / X.sum(0, keepdims=True) + X.sum(1, keepdims=True)
    np.testing.assert_allclose(fn(X), want)


def test_collective_outside_vmap_is_an_error():
    with pytest.raises(TransformError, match="outside a vmap"):
        normalize(X[0])


def test_collective_in_loop_strategy_is_an_error_at_the_line():
    with pytest.raises(TransformError, match="loop strategy") as info:
        vmap(branch_then_sum, axis_name="i")(X)
    assert "test_vmap_collectives.py" in str(info.value)
