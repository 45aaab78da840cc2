"""vmap of a reverse sweep that takes apart an item write `y[k] = v` into a matrix: the
adjoint reads the row (`bv = bv + unbroadcast(by[k], v)`), then zeroes it (`by[k] = 0.0`).
Vectorized, `bv` once started as the row itself (a view of `by`, as `unbroadcast` returns
its argument where the shapes agree) and the zeroing erased it. Oracles: central
differences, the vjp applied row by row, the per-example loop and vmap(method='loop')."""
import numpy as np
import pytest

from transformer import grad, jacrev, vjp, vmap
from transformer.runtime import unbroadcast
from transformer.test_util import numerical_grad

X = np.array([0.3, -0.7, 1.1])
D = np.array([[0.5, 1.0, -2.0], [1.5, 0.2, 0.7], [-0.3, 0.9, 1.2], [2.0, -1.0, 0.4]])


def row_written(x):
    y = np.outer(x, x)
    y[1] = x * 3.0
    return np.sum(y * x, axis=1)


def row_zeroed_then_written(x):
    y = np.outer(x, x).copy()
    y[0] = 0.0
    y[2] = np.sin(x)
    return np.sum(y * y, axis=0)


def copied_then_written(x):
    y = np.array(np.outer(x, x) * 1.0)
    y[1] = x
    return np.sum(y * y, axis=1)


def row_of_shared_weights(w, d):
    y = np.outer(w, w)
    y[1] = w * 3.0
    return np.sum(y * d)


def central_jacobian(f, x):
    return np.stack([numerical_grad(lambda x, i=i: f(x)[i], (x,)) for i in range(len(f(x)))])


def vjp_row_by_row(f, x):
    out, back = vjp(f, x)
    return np.stack([back(e)[0] for e in np.eye(len(out))])


@pytest.mark.parametrize("f", [row_written, row_zeroed_then_written, copied_then_written],
                         ids=lambda f: f.__name__)
def test_jacrev_of_a_row_write_matches_central_differences_and_the_vjp_row_by_row(f):
    got = jacrev(f)(X)
    np.testing.assert_allclose(got, central_jacobian(f, X), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(got, vjp_row_by_row(f, X), rtol=1e-12, atol=1e-14)


def test_vmap_of_grad_wrt_a_shared_argument_written_by_rows_matches_the_loop():
    got = vmap(grad(row_of_shared_weights), in_axes=(None, 0))(X, D)
    loop = np.stack([grad(row_of_shared_weights)(X, d) for d in D])
    np.testing.assert_allclose(got, loop, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(
        got, vmap(grad(row_of_shared_weights), in_axes=(None, 0), method="loop")(X, D),
        rtol=1e-12, atol=1e-14)
    want = np.stack([numerical_grad(row_of_shared_weights, (X, d)) for d in D])
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8)


# The same statements written out as a reverse sweep writes them, with the row's array
# then changed by an item write or by `+=`: vmap's vectorized form against the loop.

def row_read_then_zeroed(x, g):
    by = g * 2.0
    bv = np.zeros_like(x)
    row = by[1]
    t = unbroadcast(row, x)
    bv = bv + t
    by[1] = 0.0
    return bv + np.sum(by)


def row_read_then_bumped(x, g):
    by = g * 2.0
    bv = np.zeros_like(x)
    row = by[1]
    t = unbroadcast(row, x)
    bv = bv + t
    by += 1.0
    return bv * np.sum(by)


@pytest.mark.parametrize("f", [row_read_then_zeroed, row_read_then_bumped],
                         ids=lambda f: f.__name__)
def test_an_accumulator_started_from_a_row_keeps_the_row_as_it_was_read(f):
    g = np.arange(36.0).reshape(4, 3, 3) / 7.0
    got = vmap(f, in_axes=(None, 0))(X, g)
    np.testing.assert_array_equal(got, np.stack([f(X, e) for e in g]))
    np.testing.assert_array_equal(got, vmap(f, in_axes=(None, 0), method="loop")(X, g))
