"""A constant index into a tuple bound once selects one item for the alias analysis.

`t = (A[0], A[1], x); r = t[1]; r[2] = v` writes into `A`'s row, never into `x`: a tuple
cannot change its items, so `r` holds only what its second item holds. Forward mode used to
take the write for one that may reach `x` (a reshaped view of the input) and refused it,
naming `x`. Checked against central differences of the program as NumPy runs it (and vmap
against NumPy per example); a real alias (`r = t[2]`, the view of the input) keeps being
refused at the user's line, and so does a tuple bound twice (either binding may be read).
"""
from __future__ import annotations

import inspect
import os

os.environ.setdefault("NUMBA_OPT", "0")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from gradcheck import assert_gradient_close, central_differences  # noqa: E402

from transformer import TransformError, jacfwd, jvp, vmap  # noqa: E402

# no case compiles: every one runs in the quick set
pytestmark = pytest.mark.every_case


def row_of_a_tuple(A, y):
    x = np.reshape(y, (4,))
    t = (A[0], A[1], x)
    r = t[1]
    r[2] = x[0] * 3.0 * A[2, 1]
    return np.sum(t[0] * r) + np.sum(x * x * A[2])


def row_of_a_tuple_from_the_end(A, y):
    x = np.reshape(y, (4,))
    t = (x, A[0], A[1])
    r = t[-1]
    r[0] = np.sin(x[1]) * A[0, 3]
    return np.sum(t[1] * r) + np.sum(t[0] * x)


ALLOWED = [row_of_a_tuple, row_of_a_tuple_from_the_end]

A0 = np.arange(12.0).reshape(3, 4) / 7.0 - 0.4
Y0 = np.linspace(0.5, 1.5, 4).reshape(2, 2)
DA = np.linspace(-1.0, 1.0, 12).reshape(3, 4)
DY = np.array([[0.3, -1.2], [0.7, 2.0]])


def fresh(f):
    """f on copies of its arguments: the programs write in place, the oracle must not see it."""
    return lambda *a: f(*[np.array(b, copy=True) for b in a])


@pytest.mark.parametrize("fn", ALLOWED)
def test_jvp_through_a_tuple_item_matches_finite_differences(fn):
    expected = central_differences(fresh(fn), (A0, Y0), 0).reshape(-1) @ DA.reshape(-1) + \
        central_differences(fresh(fn), (A0, Y0), 1).reshape(-1) @ DY.reshape(-1)
    out, tangent = jvp(fn, (A0.copy(), Y0.copy()), (DA.copy(), DY.copy()))
    np.testing.assert_allclose(out, fn(A0.copy(), Y0.copy()))
    assert_gradient_close(tangent, expected, fn.__name__)


@pytest.mark.parametrize("argnum", [0, 1])
@pytest.mark.parametrize("fn", ALLOWED)
def test_jacfwd_through_a_tuple_item_matches_finite_differences(fn, argnum):
    expected = central_differences(fresh(fn), (A0, Y0), argnum)
    assert_gradient_close(jacfwd(fn, argnum)(A0.copy(), Y0.copy()), expected, fn.__name__)


@pytest.mark.parametrize("fn", ALLOWED)
def test_vmap_through_a_tuple_item_matches_numpy_per_example(fn):
    ys = np.stack([Y0, Y0 + 0.5, -Y0])
    expected = np.array([fn(A0.copy(), y.copy()) for y in ys])
    got = vmap(fn, in_axes=(None, 0))(A0.copy(), ys.copy())
    np.testing.assert_allclose(got, expected, rtol=1e-12)


# ---------------------------------------------------------------- real aliases stay refused


def item_that_is_the_view(A, y):
    x = np.reshape(y, (4,))        # forward refuses
    t = (A[0], A[1], x)
    r = t[2]
    r[0] = A[0, 1] * 2.0
    return np.sum(t[0] * r) + np.sum(x * y.reshape(4))


def tuple_bound_twice(A, y):
    x = np.reshape(y, (4,))        # forward refuses
    t = (A[0], A[1], x)
    if A[0, 0] > 5.0:
        t = (A[0], x, A[1])
    r = t[1]
    r[2] = A[0, 1] * 2.0
    return np.sum(t[0] * r) + np.sum(x * x)


def line_marked(fn, mark: str) -> int:
    lines, first = inspect.getsourcelines(fn)
    return first + next(i for i, line in enumerate(lines) if mark in line)


@pytest.mark.parametrize("fn", [item_that_is_the_view, tuple_bound_twice])
def test_forward_refuses_a_write_into_the_view_through_a_tuple_item(fn):
    with pytest.raises(TransformError, match="'x' may be a view of 'y'") as info:
        jvp(fn, (A0.copy(), Y0.copy()), (DA.copy(), DY.copy()))
    assert info.value.lineno == line_marked(fn, "forward refuses")


def item_that_is_the_argument(A, y):
    t = (A[0], A[1], y)
    r = t[2]
    r[0] = A[0, 1] * y[1] * 2.0
    return np.sum(t[0] * r) + np.sum(y * y)


@pytest.mark.parametrize("argnum", [0, 1])
def test_write_into_an_argument_through_a_tuple_item_matches_finite_differences(argnum):
    y = Y0.reshape(4)
    expected = central_differences(fresh(item_that_is_the_argument), (A0, y), argnum)
    got = jacfwd(item_that_is_the_argument, argnum)(A0.copy(), y.copy())
    assert_gradient_close(got, expected)
