"""The light compiled forms of secant's runtime helpers agree with NumPy bit for bit.

`runtime.allocation` (new arrays allocated inside the calling helper instead of Numba's
`np.empty` / `np.zeros` / `np.full` functions) and `runtime.rounding` (`np.round` of a
number without Numba's any-decimals algorithm) exist to cut the cold compile of `jit(grad(f))`;
these tests hold them, and the helpers rewritten on them, to NumPy's results and dtypes,
and the three benchmark cases' derivatives to finite differences.
"""
from __future__ import annotations

import math

import numba
import numpy as np
import pytest

from benchmarks import workloads
from transformer import basis, grad, hessian, jit, runtime, tape, vmap
from transformer.reverse.seeds import float_zeros
from transformer.runtime.allocation import empty_array, full_array, zeros_array
from transformer.runtime.batching import (broadcast_batch, identity_batch, identity_batch_last,
                                          max_examples, min_examples, sum_examples)
from transformer.runtime.kernels import axis_mask
from transformer.runtime.rounding import rounded

DTYPES = [np.float32, np.float64]


# ---------------------------------------------------------------- allocation


@numba.njit
def _allocations(n, m, value):
    return (zeros_array((n, m), np.float32), zeros_array(n, np.int64),
            zeros_array((n, m, 2), np.dtype(np.bool_)), full_array(n, value, np.float64),
            full_array((n, m), value, np.float32), full_array((m,), 3, np.int32),
            full_array(n, True, np.bool_), empty_array((n, m), np.float64))


def test_allocations_match_numpy_shapes_dtypes_and_values():
    got = _allocations(3, 4, 2.5)
    want = (np.zeros((3, 4), np.float32), np.zeros(3, np.int64), np.zeros((3, 4, 2), np.bool_),
            np.full(3, 2.5, np.float64), np.full((3, 4), 2.5, np.float32),
            np.full(4, 3, np.int32), np.full(3, True, np.bool_), np.empty((3, 4), np.float64))
    for ours, theirs in zip(got[:-1], want[:-1]):
        assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
        assert ours.flags.c_contiguous
        np.testing.assert_array_equal(ours, theirs)
    assert got[-1].dtype == want[-1].dtype and got[-1].shape == want[-1].shape


def test_allocations_refuse_negative_shapes_as_numpy_does():
    with pytest.raises(ValueError, match="negative dimensions"):
        np.zeros((-1, 2))
    with pytest.raises(ValueError, match="negative dimensions"):
        _allocations(-1, 2, 0.0)


def test_zero_size_allocations_are_empty_arrays():
    got = _allocations(0, 5, 1.0)
    assert got[0].shape == (0, 5) and got[3].shape == (0,) and got[5].shape == (5,)


# ---------------------------------------------------------------- helpers rewritten on them


@numba.njit
def _helpers(x, scalar, flag):
    return (runtime.zeros_like(x), runtime.broadcast_like(scalar, x),
            runtime.broadcast_like(flag, x), runtime.broadcast_reduced(scalar, x),
            basis.basis_ones(x), basis.basis_matrix(x), basis.basis_vector(x, 1),
            basis.jacobian_alloc(x, x), broadcast_batch(scalar, 3), identity_batch(scalar, x),
            axis_mask(x.ndim, None))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(4,), (2, 3)])
@pytest.mark.every_case
def test_rewritten_helpers_match_their_numpy_forms(dtype, shape):
    x = np.arange(np.prod(shape), dtype=dtype).reshape(shape) + dtype(0.5)
    scalar = dtype(1.25)
    got = _helpers(x, scalar, True)
    want = (runtime.zeros_like(x), runtime.broadcast_like(scalar, x),
            runtime.broadcast_like(True, x), runtime.broadcast_reduced(scalar, x),
            basis.basis_ones(x), basis.basis_matrix(x), basis.basis_vector(x, 1),
            basis.jacobian_alloc(x, x), broadcast_batch(scalar, 3), identity_batch(scalar, x),
            axis_mask(x.ndim, None))
    for ours, theirs in zip(got, want):
        theirs = np.asarray(theirs)
        assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
        np.testing.assert_array_equal(ours, theirs)
    assert got[5].dtype == dtype and got[4].dtype == dtype     # float32 stays float32


@numba.njit
def _int_helpers(x, k):
    return runtime.broadcast_like(k, x), broadcast_batch(k, 2), runtime.zeros_like(x)


def test_int_scalars_broadcast_as_ints_and_int_arrays_get_float_zeros():
    x = np.arange(6, dtype=np.int64).reshape(2, 3)
    got = _int_helpers(x, 7)
    want = (runtime.broadcast_like(7, x), broadcast_batch(7, 2), runtime.zeros_like(x))
    for ours, theirs in zip(got, want):
        assert ours.dtype == np.asarray(theirs).dtype
        np.testing.assert_array_equal(ours, theirs)


# ---------------------------------------------------------------- rounding


@numba.njit
def _round_scalars(values32, values64, ints):
    out32 = np.empty_like(values32)
    out64 = np.empty_like(values64)
    out_int = np.empty_like(ints)
    for i in range(values32.size):
        out32[i] = rounded(values32[i])
        out64[i] = rounded(values64[i])
    for i in range(ints.size):
        out_int[i] = rounded(ints[i])
    return out32, out64, out_int, rounded(values32[0]), rounded(ints[0])


HALVES = [0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 3.4999, 3.7, -0.2, -0.0, 0.0, 1e300, -7e15 - 0.5,
          4503599627370495.5, np.inf, -np.inf, np.nan]


def test_rounding_numbers_is_numpys_round_half_to_even():
    values64 = np.array(HALVES, np.float64)
    with np.errstate(over="ignore"):                   # 1e300 is inf in float32
        values32 = values64.astype(np.float32)
    ints = np.array([-3, 0, 7, 2**40], np.int64)
    out32, out64, out_int, first32, first_int = _round_scalars(values32, values64, ints)
    for got, x in [(out32, values32), (out64, values64)]:
        want = np.array([np.round(v) for v in x])
        np.testing.assert_array_equal(got, want)
        assert np.array_equal(np.signbit(got), np.signbit(want))      # -0.0 stays -0.0
    np.testing.assert_array_equal(out_int, [np.round(v) for v in ints])
    assert numba.typeof(first_int) == numba.int64
    assert _round_scalars.nopython_signatures[0].return_type[3] == numba.float32


@numba.njit
def _round_other_forms(x, matrix, decimals):
    out = np.empty_like(matrix)
    return (rounded(x, decimals), rounded(matrix), rounded(matrix, 2), rounded(x, 0),
            rounded(matrix, 0, out))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.every_case
def test_rounding_with_decimals_arrays_and_out_is_numpys(dtype):
    """NumPy's results exactly, with any decimals: a float32 is scaled and rounded in float32
    (2.345 -> 2.34, where Numba's own np.round, scaling in float64, gives 2.35)."""
    matrix = (np.arange(12, dtype=dtype).reshape(3, 4) - 5.5) * dtype(0.37)
    x = dtype(2.345)
    got = _round_other_forms(x, matrix, 2)
    want = (np.round(x, 2), np.round(matrix), np.round(matrix, 2), np.round(x, 0),
            np.round(matrix, 0))
    for ours, theirs in zip(got, want):
        np.testing.assert_array_equal(ours, theirs)
    assert got[2].dtype == dtype


@numba.njit
def _round_with(x, decimals):
    return rounded(x, decimals)


@pytest.mark.slow
@pytest.mark.parametrize("dtype", DTYPES)
def test_rounding_half_way_values_with_decimals_is_numpys(dtype):
    """Half-way values at 1-3 decimals, tens and hundreds, large decimals, overflow (NumPy
    gives inf), inf, nan and -0.0, as numbers, strided arrays and 0-d arrays."""
    rng = np.random.default_rng(3)
    for decimals in (1, 2, 3, -1, -2, 12, 25):
        halves = (rng.integers(0, 100000, 400) + 0.5) / 10.0 ** min(decimals, 6)
        with np.errstate(over="ignore"):
            values = np.concatenate([halves, -halves, [0.0, -0.0, np.inf, np.nan, 1e300,
                                                       3e38]]).astype(dtype)
        with np.errstate(over="ignore", invalid="ignore"):
            want = np.round(values, decimals)
            got = _round_with(values, decimals)
            got_strided = _round_with(values[::3], decimals)
            got_numbers = np.array([_round_with(v, decimals) for v in values[:60]], dtype)
        assert got.dtype == want.dtype
        for ours, theirs in [(got, want), (got_strided, want[::3]), (got_numbers, want[:60])]:
            np.testing.assert_array_equal(ours, theirs)
            assert np.array_equal(np.signbit(ours), np.signbit(theirs))
    zero_d = np.array(dtype(84.1355))
    np.testing.assert_array_equal(_round_with(zero_d, 3), np.round(zero_d, 3))


def test_np_round_in_compiled_code_is_the_light_form_and_keeps_ints():
    def f(x, n):
        return np.round(x) * 2.0 + np.round(n) + np.around(x * 3.0)

    source = jit(f).source(2.5, 3)
    assert "rounded(" in source and "np.round(" not in source
    for x, n in [(2.5, 3), (-0.5, -4), (1.4999, 0), (np.float32(3.5), 2)]:
        assert jit(f)(x, n) == f(x, n)
    assert isinstance(jit(lambda n: np.round(n))(7), int)


# ---------------------------------------------------------------- the benchmark cases


def _central_difference(f, x, eps=1e-6):
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = eps
        g[i] = (f(x + e) - f(x - e)) / (2 * eps)
    return g


def test_lj_gradient_matches_finite_differences():
    pos, eps, sigma, box, rcut = workloads.lj_inputs(8)
    got = jit(grad(workloads.lj_energy))(pos, eps, sigma, box, rcut)
    want = _central_difference(lambda p: workloads.lj_energy(p, eps, sigma, box, rcut), pos)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6 * np.abs(want).max())
    np.testing.assert_allclose(got, grad(workloads.lj_energy)(pos, eps, sigma, box, rcut),
                               rtol=1e-12, atol=1e-12 * np.abs(want).max())


def test_hessian_of_sum_tanh_matches_finite_differences():
    x, _, _ = workloads.hessian_inputs(6)
    got = jit(hessian(workloads.sum_tanh))(x)
    slope = grad(workloads.sum_tanh)
    want = np.stack([_central_difference(lambda v, i=i: slope(v)[i], x) for i in range(x.size)])
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8)


@pytest.mark.slow
def test_vmapped_mlp_gradient_matches_finite_differences():
    params, X, Y = workloads.mlp_inputs(batch=3, n_in=5, hidden=4, n_out=3)
    params = {k: v.astype(np.float64) for k, v in params.items()}
    X = X.astype(np.float64)
    got = jit(vmap(grad(workloads.mlp_loss), in_axes=(None, 0, 0)))(params, X, Y)
    for name in params:
        def loss(p, b, name=name):
            return workloads.mlp_loss({**params, name: p}, X[b], Y[b])
        for b in range(X.shape[0]):
            want = _central_difference(lambda p, b=b: loss(p, b), params[name])
            np.testing.assert_allclose(got[name][b], want, rtol=1e-5, atol=1e-7)


# ---------------------------------------------------------------- loops written for one case


@numba.njit
def _identity_vectors(d, basis):
    return identity_batch(d, basis), identity_batch_last(d, basis)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.every_case
def test_identity_batches_of_vectors_match_numpy(dtype):
    d = np.arange(1, 5, dtype=dtype)
    for unit in (np.zeros(4, dtype), np.zeros(1, dtype)):
        got, got_last = _identity_vectors(d, unit)
        want = identity_batch(d, unit)
        assert got.dtype == want.dtype == dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(got_last, identity_batch_last(d, unit))
    strided = np.arange(8, dtype=dtype)[::2]
    np.testing.assert_array_equal(_identity_vectors(strided, d)[0], identity_batch(strided, d))


@pytest.mark.parametrize("d, basis, message", [
    (np.ones(1), np.ones(3), "larger shape"), (np.ones(2), np.ones(3), "broadcast together")])
def test_identity_batches_of_unbroadcastable_vectors_raise(d, basis, message):
    with pytest.raises(ValueError, match=message):
        _identity_vectors(d, basis)


@numba.njit
def _extremes(x):
    return max_examples(x), min_examples(x)


@pytest.mark.slow
def test_max_and_min_of_each_example_are_numpys_including_nan_and_ints():
    x = np.array([[1.0, 3.0, -2.0], [np.nan, 1.0, 5.0], [4.0, np.nan, -np.inf],
                  [-0.0, 0.0, -0.0], [2.0, 2.0, 2.0]])
    for array in (x, x.astype(np.float32), np.asfortranarray(x)):
        got_max, got_min = _extremes(array)
        np.testing.assert_array_equal(got_max, np.max(array, axis=1))
        np.testing.assert_array_equal(got_min, np.min(array, axis=1))
        assert got_max.dtype == array.dtype
    ints = np.array([[3, -7, 9], [0, 0, -1]], np.int32)
    np.testing.assert_array_equal(_extremes(ints)[0], np.max(ints, axis=1))
    np.testing.assert_array_equal(_extremes(ints)[1], np.min(ints, axis=1))
    with pytest.raises(ValueError, match="zero-size array"):
        _extremes(np.zeros((2, 0)))


@numba.njit
def _trip_counts(values):
    out = np.empty((values.shape[0], 2), np.int64)
    for k in range(values.shape[0]):
        start, stop, step = values[k, 0], values[k, 1], values[k, 2]
        out[k, 0] = tape.trip_count(start, stop, step)
        out[k, 1] = tape.range_last(start, stop, step)
    return out


def test_trip_counts_and_last_values_of_ranges():
    cases = np.array([(0, 5, 1), (0, 0, 1), (5, 0, 1), (0, 10, 3), (10, 0, -3), (3, 3, -1),
                      (-4, 4, 2), (2, -9, -4), (7, 8, 5)], np.int64)
    got = _trip_counts(cases)
    for (start, stop, step), (count, last) in zip(cases.tolist(), got.tolist()):
        values = list(range(start, stop, step))
        assert count == len(values) == tape.trip_count(start, stop, step)
        assert last == (values[-1] if values else start - step)


@numba.njit
def _seeds(x):
    return float_zeros(x, "x")


@pytest.mark.parametrize("dtype", DTYPES + [np.int64])
@pytest.mark.every_case
def test_float_zeros_of_arrays_are_float_zeros_of_their_shape(dtype):
    x = np.ones((2, 3), dtype)
    if dtype is np.int64:                  # grad refuses integer arguments, compiled too
        with pytest.raises(numba.core.errors.TypingError, match="real-valued inputs"):
            _seeds(x)
        return
    got = _seeds(x)
    assert got.dtype == dtype and got.shape == (2, 3) and not got.any()


@numba.njit
def _jacobians(columns, out, x):
    return basis.jacobian_from_last(columns, out, x)


def test_jacobian_from_last_reshapes_as_jacobian_result():
    for out, x in [(np.ones((2, 3)), np.ones(4)), (np.ones(6), 1.0), (1.0, np.ones((3, 2)))]:
        columns = np.arange(24.0)[:np.size(out) * np.size(x)].reshape(np.shape(out) + (-1,))
        got = _jacobians(columns, out, x)
        want = basis.jacobian_from_last(columns, out, x)
        assert got.shape == want.shape
        np.testing.assert_array_equal(got, want)


# ---------------------------------------------------------------- np.sum without its wrapper


@numba.njit
def _sums(x):
    return (runtime.sum_all(x), np.sum(x), runtime.unbroadcast(x, 1.0), sum_examples(x),
            runtime.sum_all(x[0]))


@numba.njit
def _numba_row_sums(x):
    out = np.empty(x.shape[0], x.dtype)
    for b in range(x.shape[0]):
        out[b] = np.sum(x[b])
    return out


@pytest.mark.slow
@pytest.mark.parametrize("dtype", DTYPES + [np.int32])
@pytest.mark.every_case
def test_sum_all_is_numbas_own_np_sum_bit_for_bit(dtype):
    """Of float64 and ints; a float32 array is added in float64 (`runtime.wide_sums`),
    Numba's float32 loop being far from NumPy's result for many values."""
    rng = np.random.default_rng(3)
    x = (rng.standard_normal((5, 7)) * 1e3).astype(dtype)
    for array in (x, np.asfortranarray(x), x[:, ::2]):
        ours, numbas, unbroadcast, each, row = _sums(array)
        if dtype is np.float32:
            wide = np.float32(math.fsum(array.astype(np.float64).ravel()))
            assert ours == wide and unbroadcast == np.float64(ours)
            assert row == _sums(array[:1])[0]
        else:
            assert ours == numbas and type(ours) is type(numbas)  # the same loop and type
            assert unbroadcast == np.float64(numbas)
            assert row == _sums(array[:1])[1]
        if dtype is np.float32:
            np.testing.assert_array_equal(
                each, [np.float32(math.fsum(r)) for r in array.astype(np.float64)])
        elif dtype is not np.int32:
            np.testing.assert_array_equal(each, _numba_row_sums(array))
        np.testing.assert_allclose(ours, np.sum(array.astype(np.float64)), rtol=1e-5)


def test_np_sum_of_one_array_in_compiled_code_is_sum_all():
    def f(x):
        return np.sum(x) + np.sum(x, axis=0)[0] + np.sum(x * 2.0)

    source = jit(f).source(np.ones((2, 3)))
    assert source.count("sum_all(") == 2
    x = np.arange(6.0).reshape(2, 3)
    assert jit(f)(x) == f(x)


def test_sum_falls_back_to_numbas_np_sum_without_its_private_loop(monkeypatch):
    import sys
    import types as pytypes
    from transformer.runtime import kernels
    with monkeypatch.context() as patched:      # a Numba whose arraymath lacks the name
        patched.setitem(sys.modules, "numba.np.arraymath", pytypes.ModuleType("arraymath"))
        total = kernels._numba_sum()
    assert total is kernels._public_sum
    x = np.arange(7.0).reshape(7, 1)
    assert numba.njit(lambda a: total(a, None, None))(x) == np.sum(x)


@numba.njit
def _identity_of_numbers(d, basis):
    return identity_batch(d, basis), identity_batch_last(d, basis)


@pytest.mark.parametrize("d", [0.7, np.float32(0.7), 3, True])
def test_identity_batch_of_a_number_on_a_scalar_basis_is_numpys(d):
    """hessian with tuple argnums pushes a scalar's one basis vector through vmap."""
    got, got_last = _identity_of_numbers(d, 1.0)
    want = identity_batch(d, 1.0)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got_last, identity_batch_last(d, 1.0))
    assert got.dtype == want.dtype
