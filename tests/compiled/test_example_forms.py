"""Compiled batched code without per-example loops where the types allow (runtime
`example_forms`, batched matrix products): the loop-free forms give the loop's values and
dtypes, bit for bit, and `jit(vmap(...))` through them matches the per-example loop for
weights of every layout. (That NumPy's product compiles once per dtype whatever the layout
is checked at Numba's default level, in tests/batching/test_batched_products_by_opt_level.py.)"""
import numba
import numpy as np
import pytest

from transformer import grad, jit, vmap
from transformer.runtime import broadcast_reduced, example_forms, unbroadcast
from transformer.runtime.examples import over_examples

UNBROADCAST_SHARED = over_examples(unbroadcast, (False, True))
UNBROADCAST_BOTH = over_examples(unbroadcast, (True, True))
SPREAD_REDUCED = over_examples(broadcast_reduced, (True, True, False, False))
SPREAD = over_examples(broadcast_reduced, (True, True))


@numba.njit
def _compiled_forms(g_shared, g_rows, g_numbers, x_numbers, x_rows):
    return (UNBROADCAST_SHARED(g_shared, x_numbers), UNBROADCAST_SHARED(1.5, x_numbers),
            UNBROADCAST_BOTH(g_rows, x_numbers),
            SPREAD_REDUCED(g_numbers, x_rows, None, False), SPREAD(g_numbers, x_rows))


def _loop(helper_flags, *args):
    """The per-example loop in Python: the oracle the direct forms must equal."""
    helper, flags = helper_flags
    size = next(np.shape(a)[0] for a, f in zip(args, flags) if f)
    examples = [helper(*[a[k] if f else a for a, f in zip(args, flags)]) for k in range(size)]
    return np.array(examples)


@pytest.mark.parametrize("x_dtype", [np.float32, np.float64, np.int64])
@pytest.mark.parametrize("g_dtype", [np.float32, np.float64])
def test_direct_forms_equal_the_per_example_loop_bit_for_bit(g_dtype, x_dtype):
    rng = np.random.default_rng(1)
    size = 5
    g_shared = rng.standard_normal((2, 3)).astype(g_dtype)
    g_rows = rng.standard_normal((size, 2, 3)).astype(g_dtype)
    g_numbers = rng.standard_normal(size).astype(g_dtype)
    x_numbers = (rng.standard_normal(size) * 4).astype(x_dtype)
    x_rows = rng.standard_normal((size, 4, 2)).astype(x_dtype)
    got = _compiled_forms(g_shared, g_rows, g_numbers, x_numbers, x_rows)
    want = (_loop((unbroadcast, (False, True)), g_shared, x_numbers),
            _loop((unbroadcast, (False, True)), 1.5, x_numbers),
            _loop((unbroadcast, (True, True)), g_rows, x_numbers),
            _loop((broadcast_reduced, (True, True, False, False)), g_numbers, x_rows, None,
                  False),
            _loop((broadcast_reduced, (True, True)), g_numbers, x_rows))
    for k, (a, b) in enumerate(zip(got, want)):
        assert a.dtype == b.dtype and a.shape == b.shape, k
        np.testing.assert_array_equal(a, b, err_msg=str(k))


def test_an_empty_batch_gives_empty_results():
    got = _compiled_forms(np.ones(3), np.ones((0, 3)), np.ones(0), np.ones(0),
                          np.ones((0, 4, 2)))
    assert [a.shape for a in got] == [(0,), (0,), (0,), (0, 4, 2), (0, 4, 2)]


def test_the_forms_are_chosen_only_for_the_types_they_cover():
    f32 = numba.float32
    assert example_forms._unbroadcast_sums(f32[:, ::1], f32[::1]) is not None
    assert example_forms._unbroadcast_sums(f32[:, ::1], f32[:, ::1]) is None   # rows: loop
    assert example_forms._unbroadcast_sums(f32[::1], f32[::1]) is None
    assert example_forms._unbroadcast_shared(f32, f32[::1]) is not None
    assert example_forms._unbroadcast_shared(f32, f32[:, ::1]) is None
    assert example_forms._spread(f32[::1], f32[:, ::1], numba.types.none,
                                 numba.types.boolean) is not None
    assert example_forms._spread(f32[::1], f32[:, ::1], numba.int64,
                                 numba.types.boolean) is None              # an axis: loop


@numba.njit
def _rows_each(g, x):
    return UNBROADCAST_BOTH(g, x)


def test_types_without_a_form_keep_the_loop():
    g = np.arange(12.0).reshape(3, 4)
    x = np.zeros((3, 4))
    np.testing.assert_array_equal(_rows_each(g, x), g)


# ----------------------------------------------------------------- batched products

def _layer(W, x):
    return np.tanh(W @ x)


def _row_layer(x, W):
    return np.tanh(x @ W)


def _loss(W, x):
    return np.sum(np.tanh(W @ x) ** 2)


@pytest.mark.slow
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_batched_products_of_any_layout_match_each_example(dtype):
    rng = np.random.default_rng(2)
    W = rng.standard_normal((4, 6)).astype(dtype)
    X = rng.standard_normal((5, 6)).astype(dtype)
    right = jit(vmap(_layer, in_axes=(None, 0)))
    left = jit(vmap(_row_layer, in_axes=(0, None)))
    per_example = jit(vmap(grad(_loss), in_axes=(None, 0)))
    tol = 1e-5 if dtype == np.float32 else 1e-12
    for weights in (W, np.asfortranarray(W), np.ascontiguousarray(W.T).T):
        np.testing.assert_allclose(right(weights, X), [_layer(W, x) for x in X], rtol=tol)
        np.testing.assert_allclose(left(X, weights.T), [_row_layer(x, W.T) for x in X],
                                   rtol=tol)
        want = [grad(_loss)(W, x) for x in X]
        np.testing.assert_allclose(per_example(weights, X), want, rtol=tol * 10, atol=tol)
