"""Forward mode and vmap through names that share an array written in place.

`z = y; z[0] = v` changes `y` too. Each program below writes through one name and reads
through another; jvp and jacfwd must agree with central differences of the program as
NumPy runs it, and vmap with NumPy per example, or the transformation refuses at the
user's line.
"""
from __future__ import annotations

import inspect
import os

os.environ.setdefault("NUMBA_OPT", "0")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from gradcheck import assert_gradient_close, central_differences  # noqa: E402

from transformer import TransformError, jacfwd, jit, jvp, vmap  # noqa: E402


def plain_alias(x):
    y = np.ones(3)
    z = y
    z[0] = x[1] * x[2]
    return np.sum(y * x)


def plain_alias_of_active(x):
    y = x * 2.0
    z = y
    z[0] = x[1] * x[2]
    return np.sum(y * x)


def slice_view(x):
    y = np.ones(3)
    z = y[1:]
    z[0] = x[1] * x[2]
    return np.sum(y * x)


def loop_rows(x):
    Y = np.ones((2, 3))
    for row in Y:
        row[0] = x[1] * x[2]
    return np.sum(Y[0] * x) + np.sum(Y[1] * x * x)


def enumerated_rows(x):
    Y = np.ones((2, 3))
    for i, row in enumerate(Y):
        row[i] = x[1] * x[i]
    return np.sum(Y * Y)


def augmented_through_alias(x):
    y = np.ones(3)
    z = y
    z += x * x
    return np.sum(y * x)


def augmented_through_view(x):
    y = np.ones(3)
    z = y[1:]
    z += x[1:] * x[1:]
    return np.sum(y * x)


def augmented_loop_rows(x):
    Y = np.ones((2, 3))
    for row in Y:
        row += x
    return np.sum(Y * Y)


def element_write_through_row(x):
    Y = np.zeros((2, 3))
    row = Y[1]
    row[2] = np.sin(x[0]) * x[2]
    return np.sum(Y @ x)


def held_in_a_tuple(x):
    y = np.ones(3)
    t = (y, x)
    z = t[0]
    z[1] = x[0] * x[2]
    return np.sum(y * x)


def constant_written_through_alias(x):
    y = x * 1.0
    z = y
    z[0] = 5.0
    return np.sum(y * x)


def number_through_alias(x):
    s = x[2] * 1.0
    t = s
    t += x[0] * x[1]              # a number is rebound, not written: s keeps its value
    return s * x[2] + t


def view_of_the_array_a_copy_replaced(x):
    g = x * 1.0
    f = g[0:3]                     # keeps viewing the first array
    g = g.copy()                   # `g` is a new array from here ...
    g[1] += x[0] * x[2]            # ... written here (its tangent was `dg`, shared with df)
    return np.sum(g * g) + np.sum(f * x)


def view_of_a_view_of_the_array_a_copy_replaced(x):
    g = x[::-1].copy()
    f = g[None][0]
    g = g.copy()
    g[1] += np.tanh(x[0])
    return np.sum(g * g) + np.sum(f * x)


FORMS = [number_through_alias, plain_alias, plain_alias_of_active, slice_view, loop_rows,
         enumerated_rows, augmented_through_alias, augmented_through_view, augmented_loop_rows,
         element_write_through_row, held_in_a_tuple, constant_written_through_alias,
         view_of_the_array_a_copy_replaced, view_of_a_view_of_the_array_a_copy_replaced]

X = np.array([0.7, -1.3, 2.1])
V = np.array([1.0, 0.5, -2.0])


def fresh(f):
    """f on a copy of its argument: the programs write in place, the oracle must not see it."""
    return lambda x: f(np.array(x, copy=True))


@pytest.mark.parametrize("fn", FORMS)
def test_jvp_through_aliases_matches_finite_differences(fn):
    expected = central_differences(fresh(fn), (X,), 0) @ V
    out, tangent = jvp(fn, (X.copy(),), (V.copy(),))
    np.testing.assert_allclose(out, fn(X.copy()))
    assert_gradient_close(tangent, expected, fn.__name__)


@pytest.mark.parametrize("fn", FORMS)
def test_jacfwd_through_aliases_matches_finite_differences(fn):
    expected = central_differences(fresh(fn), (X,), 0)
    assert_gradient_close(jacfwd(fn)(X.copy()), expected, fn.__name__)


@pytest.mark.parametrize("fn", FORMS)
def test_vmap_through_aliases_matches_numpy_per_example(fn):
    batch = np.stack([X, X + 0.5, -X])
    expected = np.array([fn(row.copy()) for row in batch])
    np.testing.assert_allclose(vmap(fn)(batch.copy()), expected, rtol=1e-12)


def write_on_this_line(fn) -> int:
    lines, first = inspect.getsourcelines(fn)
    return first + next(i for i, line in enumerate(lines) if "# written" in line)


def reshaped_view(x):
    y = np.ones(4)
    z = np.reshape(y, (2, 2))
    z[0, 1] = x[1] * x[2]          # written
    return np.sum(y[:3] * x)


def transposed_view(x):
    Y = np.ones((3, 3))
    Z = Y.T
    Z[0, 1] = x[0] * x[1]          # written
    return np.sum(Y @ x)


def augmented_transposed_view(x):
    Y = np.ones((3, 3))
    Z = np.transpose(Y)
    Z += np.outer(x, x)            # written
    return np.sum(Y @ x)


def reshaped_in_place_of_itself(x):
    y = np.ones(4)
    z = y
    y = np.reshape(y, (2, 2))
    y[0, 1] = x[0] * x[1]          # written
    return np.sum(z[:3] * x)


REFUSED = [reshaped_view, transposed_view, augmented_transposed_view,
           reshaped_in_place_of_itself]


@pytest.mark.parametrize("fn", REFUSED)
@pytest.mark.parametrize("transform", [lambda f: jvp(f, (X.copy(),), (V.copy(),)),
                                       lambda f: jacfwd(f)(X.copy())])
def test_forward_refuses_a_written_view_it_cannot_follow(fn, transform):
    with pytest.raises(TransformError, match="may be a view of .* written in place") as info:
        transform(fn)
    assert info.value.lineno == write_on_this_line(fn)
    assert info.value.filename.endswith("test_forward_aliases.py")


@pytest.mark.parametrize("fn", REFUSED)
def test_vmap_of_a_written_view_matches_numpy_per_example(fn):
    batch = np.stack([X, X + 0.5, -X])
    expected = np.array([fn(row.copy()) for row in batch])
    np.testing.assert_allclose(vmap(fn)(batch.copy()), expected, rtol=1e-12)


def test_vmap_loops_where_an_unbatched_argument_is_written_through_an_alias():
    def write_into_argument(x, w):
        z = w
        z[0] = x[0]
        return np.sum(w * x)
    w = np.ones(3)
    batch = np.stack([X, -X])
    expected = [write_into_argument(row, np.ones(3)) for row in batch]
    np.testing.assert_allclose(vmap(write_into_argument, (0, None))(batch, w), expected)


# ---------------------------------------------------------------- compiled


COMPILED = [plain_alias, slice_view, loop_rows, augmented_through_alias, number_through_alias]


@pytest.fixture(scope="module")
def compiled_jacobians():
    return {fn.__name__: jit(jacfwd(fn)) for fn in COMPILED}


# one compile in the quick set, the others with --runslow
@pytest.mark.parametrize("fn", [
    pytest.param(fn, marks=() if fn is number_through_alias else pytest.mark.slow)
    for fn in COMPILED])
@pytest.mark.slow
def test_jit_jacfwd_through_aliases(compiled_jacobians, fn):
    expected = central_differences(fresh(fn), (X,), 0)
    assert_gradient_close(compiled_jacobians[fn.__name__](X.copy()), expected, fn.__name__)


# ---------------------------------------------------------------- calls


def write_first(a, x):
    a[0] = x[1] * x[2]
    return np.sum(a)


def write_first_through_alias(a, x):
    b = a
    b[0] = x[1] * x[2]
    return np.sum(a)


def write_own_copy(a, x):
    a = a.copy()
    a[0] = x[1] * x[2]
    return np.sum(a * a)


def calls_write_first(x):
    y = np.ones(3)
    s = write_first(y, x)           # written
    return np.sum(y * x) + s


def calls_write_first_through_alias(x):
    y = np.ones(3)
    s = write_first_through_alias(y, x)           # written
    return np.sum(y * x) + s


def calls_write_own_copy(x):
    y = np.ones(3)
    s = write_own_copy(y, x)
    return np.sum(y * x) + s


@pytest.mark.parametrize("fn", [calls_write_first, calls_write_first_through_alias])
def test_forward_refuses_a_call_that_writes_into_its_argument(fn):
    with pytest.raises(TransformError, match="writes into its argument 'a'") as info:
        jvp(fn, (X.copy(),), (V.copy(),))
    assert info.value.lineno == write_on_this_line(fn)


@pytest.mark.parametrize("fn", [calls_write_first, calls_write_first_through_alias,
                                calls_write_own_copy])
def test_vmap_of_a_call_writing_into_its_argument_matches_numpy(fn):
    batch = np.stack([X, X + 0.5, -X])
    expected = np.array([fn(row.copy()) for row in batch])
    np.testing.assert_allclose(vmap(fn)(batch.copy()), expected, rtol=1e-12)


def test_jvp_of_a_call_writing_into_its_own_copy():
    expected = central_differences(fresh(calls_write_own_copy), (X,), 0) @ V
    _, tangent = jvp(calls_write_own_copy, (X.copy(),), (V.copy(),))
    assert_gradient_close(tangent, expected)


# ---------------------------------------------------------------- other arguments, branches


def write_into_other_argument(x, w):
    z = w
    z[0] = x[0] * x[1]
    return np.sum(w * x)


def alias_in_one_branch(x, c):
    y = np.ones(3)
    if c > 0:
        z = y
    else:
        z = np.zeros(3)
    z[1] = x[0] * x[2]
    return np.sum(y * x) + np.sum(z)


@pytest.mark.parametrize("c", [1.0, -1.0])
def test_jacfwd_of_an_alias_bound_in_one_branch(c):
    expected = central_differences(lambda x: alias_in_one_branch(x.copy(), c), (X,), 0)
    assert_gradient_close(jacfwd(alias_in_one_branch)(X.copy(), c), expected)


def test_jacfwd_of_a_write_into_an_argument_not_differentiated():
    expected = central_differences(lambda x: write_into_other_argument(x.copy(), np.ones(3)),
                                   (X,), 0)
    assert_gradient_close(jacfwd(write_into_other_argument)(X.copy(), np.ones(3)), expected)
