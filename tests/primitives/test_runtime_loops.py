"""The compiled runtime helpers written as direct loops per rank (cheap to compile) give
NumPy's numbers for every shape they take: broadcasting, tiling, strided operands, and the
identity batches jacfwd builds, whose reference is the pure-Python form."""
import numba
import numpy as np
import pytest

from transformer.helper_rules import broadcast_like_of_batch
from transformer.runtime.batching import (from_front, identity_batch, identity_batch_last, to_front,
                                        transpose_examples)
from transformer.runtime.broadcasting import broadcast_like, broadcast_reduced
from transformer.runtime.examples import unbroadcast_examples, unbroadcast_to_shared

RNG = np.random.default_rng(7)


@numba.njit
def _broadcast_like(t, z):
    return broadcast_like(t, z)


@numba.njit
def _identities(d, basis):
    return identity_batch(d, basis), identity_batch_last(d, basis)


@pytest.mark.parametrize("t_shape, z_shape", [
    ((5,), (5,)), ((1,), (5,)), ((2,), (6,)),              # rank 1: copy, spread, tile
    ((3, 4), (3, 4)), ((1, 4), (3, 4)), ((3, 1), (3, 4)), ((1, 1), (3, 4)),
    ((4,), (3, 4)), ((1,), (3, 4)),                         # rank 1 into rank 2
    ((4,), (2, 3, 4)), ((3, 1), (2, 3, 4)),                 # the generic gather
])
def test_broadcast_like_matches_numpy_for_every_rank(t_shape, z_shape):
    t, z = RNG.normal(size=t_shape), np.zeros(z_shape)
    got = _broadcast_like(t, z)
    reps = [n // m for n, m in zip(z_shape, (1,) * (len(z_shape) - len(t_shape)) + t_shape)]
    expected = np.tile(t, reps) if reps else t
    assert got.shape == z_shape and got.flags.c_contiguous
    np.testing.assert_array_equal(got, np.broadcast_to(expected, z_shape))


def test_broadcast_like_reads_strided_operands_and_owns_its_result():
    base = RNG.normal(size=(4, 6))
    t = base[:, ::2]
    got = _broadcast_like(t, np.zeros((4, 3)))
    np.testing.assert_array_equal(got, t)
    got[0, 0] = 99.0
    assert base[0, 0] != 99.0
    np.testing.assert_array_equal(_broadcast_like(base[0, ::3], np.zeros(2)), base[0, ::3])


@pytest.mark.parametrize("d_shape, basis_shape", [
    ((3,), (3,)), ((2, 3), (2, 3)),                        # diagonal
    ((2, 3), (3,)), ((2, 3), (1, 3)), ((2, 3), (2, 1)),    # one column per basis vector
    ((4, 2, 3), (2, 3)), ((1, 1, 2, 3), (1, 3)), ((5,), (1,)), ((2,), ()), ((0, 3), (3,)),
])
def test_identity_batches_match_the_python_form(d_shape, basis_shape):
    d, basis = RNG.normal(size=d_shape), np.ones(basis_shape)
    batch, last = _identities(d, basis)
    expected = identity_batch(d, basis)
    assert batch.shape == expected.shape
    np.testing.assert_array_equal(batch, expected)
    np.testing.assert_array_equal(last, identity_batch_last(d, basis))
    strided = np.repeat(d, 2, axis=-1)[..., ::2] if d.ndim else d
    np.testing.assert_array_equal(_identities(strided, basis)[1], identity_batch_last(d, basis))


def test_identity_batch_of_a_scalar_is_the_scaled_identity():
    batch, last = _identities(2.5, np.ones((2, 2)))
    np.testing.assert_array_equal(batch, 2.5 * np.eye(4).reshape(4, 2, 2))
    np.testing.assert_array_equal(last, 2.5 * np.eye(4).reshape(2, 2, 4))


def test_identity_batch_refuses_a_basis_that_widens_the_value():
    with pytest.raises(ValueError, match="larger shape"):
        _identities(np.ones((1, 3)), np.ones((2, 1)))
    with pytest.raises(ValueError, match="broadcast together"):
        _identities(np.ones((2, 3)), np.ones((4,)))


@numba.njit
def _unbroadcast_batches(g, x_batched, x_shared):
    return unbroadcast_examples(g, x_batched), unbroadcast_to_shared(g, x_shared)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("g_shape, x_shape", [
    ((4, 6), (1,)), ((4, 6), (6,)),                         # vector examples
    ((3, 4, 6), (1, 6)), ((3, 4, 6), (4, 1)), ((3, 4, 6), (1, 1)), ((3, 4, 6), (4, 6)),
])
def test_per_example_unbroadcast_sums_each_example_like_numpy(g_shape, x_shape, dtype):
    g = RNG.normal(size=g_shape).astype(dtype)
    x_batched, x_shared = np.zeros((g_shape[0],) + x_shape, dtype), np.zeros(x_shape, dtype)
    batched, shared = _unbroadcast_batches(g, x_batched, x_shared)
    axes = tuple(1 + a for a, n in enumerate(x_shape) if n == 1 and g_shape[1 + a] != 1)
    expected = g.sum(axis=axes, keepdims=True, dtype=np.float64)
    for got in (batched, shared):
        assert got.dtype == dtype and got.shape == expected.shape
        np.testing.assert_allclose(got, expected, rtol=1e-5 if dtype == np.float32 else 1e-12)


@numba.njit
def _broadcast_reduced(g, x, axis, keepdims):
    return broadcast_reduced(g, x, axis, keepdims)


@pytest.mark.parametrize("x_shape, axis, keepdims", [
    ((5,), 0, True), ((3, 4), 0, False), ((3, 4), 1, False), ((3, 4), -1, False),
    ((3, 4), -2, True), ((3, 4), 1, True), ((2, 3, 4), 1, False), ((2, 3, 4), 2, True),
])
def test_broadcast_reduced_spreads_a_reduction_back_like_numpy(x_shape, axis, keepdims):
    x = RNG.normal(size=x_shape)
    g = x.sum(axis=axis, keepdims=keepdims)
    got = _broadcast_reduced(g, x, axis, keepdims)
    expected = np.broadcast_to(g if keepdims else np.expand_dims(g, axis), x_shape)
    assert got.shape == x_shape and got.flags.c_contiguous
    np.testing.assert_array_equal(got, expected)
    strided = np.repeat(g, 2, axis=-1)[..., ::2]
    np.testing.assert_array_equal(_broadcast_reduced(strided, x, axis, keepdims), expected)


@pytest.mark.parametrize("shape", [pytest.param((3,), marks=pytest.mark.slow), (3, 4), (2, 3, 4),
                                   pytest.param((2, 3, 4, 5), marks=pytest.mark.slow)])
def test_batch_axis_moves_are_numpys_views_for_every_axis(shape):
    base = RNG.normal(size=shape[:-1] + (2 * shape[-1],))
    x = base[..., ::2]                                     # strided: the view keeps strides
    for axis in range(-len(shape), len(shape)):
        front = numba.njit(lambda x: to_front(x, axis))(x)  # noqa: B023 (compiled here)
        np.testing.assert_array_equal(front, np.moveaxis(x, axis, 0))
        back = numba.njit(lambda x: from_front(x, axis))(x)  # noqa: B023 (compiled here)
        np.testing.assert_array_equal(back, np.moveaxis(x, 0, axis))
    reversed_examples = numba.njit(lambda x: transpose_examples(x))(x)
    np.testing.assert_array_equal(reversed_examples, transpose_examples(x))
    assert np.shares_memory(reversed_examples, base)


@pytest.mark.parametrize("t_shape, z_shape", [
    ((4,), (3,)), ((4, 1), (3,)), ((4, 1, 3), (2, 3)), ((4, 3), (2, 3)), ((4, 2, 3), (2, 3)),
])
def test_broadcast_like_of_a_batch_spreads_every_example(t_shape, z_shape):
    t, z = RNG.normal(size=t_shape), np.zeros(z_shape)
    got = numba.njit(lambda t, z: broadcast_like_of_batch(t, z))(t, z)
    expected = np.stack([np.broadcast_to(example, z_shape) for example in t])
    assert got.shape == expected.shape and got.flags.c_contiguous
    np.testing.assert_array_equal(got, expected)
