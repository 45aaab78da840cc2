"""Joins of a list literal and np.average with an axis under jit.

A list literal of arrays of different ranks or dtypes (`[x, x[0]]`) is not a list Numba can
index by a variable (its `LiteralList`): np.vstack of one crashed inside secant's runtime
with an AttributeError, np.hstack too (where NumPy raises ValueError), and np.column_stack
of any list was refused (Numba's takes a tuple). np.average with an axis raised Numba's
bare TypeError at run time. Each now gives NumPy's value, NumPy's error, or a refusal at
the user's line.
"""
import inspect

import numpy as np
import pytest

from transformer import TransformError, grad, jit

X = np.random.default_rng(0).uniform(size=(3, 4))
WEIGHTS = np.array([1.0, 2.0, 3.0, 4.0])


def matrix_then_row(x):
    return np.vstack([x, x[0]])


def row_then_matrix(x):
    return np.vstack([x[0], x])


def matrix_row_and_slice(x):
    return np.vstack([x, x[0], x[:1]])


def named_list_of_rows(x):
    rows = [x, x[0]]
    return np.vstack(rows)


def ints_below_floats(x):
    return np.vstack([x[0], x[1].astype(np.int64)])


def floats_beside_ints(x):
    return np.concatenate([x, x.astype(np.int64)])


def columns_of_two_rows(x):
    return np.column_stack([x[0], x[1]])


def columns_of_a_matrix_and_a_row(x):
    return np.column_stack([x.T, x[0]])


def columns_of_two_matrices(x):
    return np.column_stack([x, 2.0 * x])


def weighted_along_rows(x):
    return np.average(x, axis=1, weights=np.array([1.0, 2.0, 3.0, 4.0]))


def unweighted_along_columns(x):
    return np.average(x, axis=0)


def weighted_by_itself_along_the_last_axis(x):
    return np.average(x, axis=-1, weights=x)


def weighted_vector(x):
    return np.average(x[0], axis=0, weights=x[1], returned=False)


@pytest.mark.every_case
@pytest.mark.parametrize("function", [
    matrix_then_row, row_then_matrix, matrix_row_and_slice, named_list_of_rows,
    ints_below_floats, floats_beside_ints, columns_of_two_rows,
    columns_of_a_matrix_and_a_row, columns_of_two_matrices, weighted_along_rows,
    unweighted_along_columns, weighted_by_itself_along_the_last_axis, weighted_vector,
])
def test_values_are_numpys(function):
    got, expected = jit(function)(X), function(X)
    assert np.asarray(got).dtype == np.asarray(expected).dtype
    np.testing.assert_allclose(got, expected, rtol=1e-14)


def squares_of_rows_beside(x):
    return np.sum(np.vstack([x, x[0]]) ** 2)


def test_gradient_through_a_stacked_list_literal():
    expected = 2.0 * X
    expected[0] *= 2.0          # the first row is stacked twice
    np.testing.assert_allclose(jit(grad(squares_of_rows_beside))(X), expected, rtol=1e-14)


# ---------------------------------------------------------------- errors


def zero_weights(x):
    return np.average(x, axis=1, weights=np.zeros(4))


def weights_of_the_other_axis(x):
    return np.average(x, axis=1, weights=np.ones(3))


def weights_of_another_shape(x):
    return np.average(x, axis=1, weights=x[:2])


@pytest.mark.every_case
@pytest.mark.parametrize("function, error", [
    (zero_weights, ZeroDivisionError), (weights_of_the_other_axis, ValueError),
    (weights_of_another_shape, ValueError),
])
def test_weights_numpy_refuses_raise_numpys_error(function, error):
    with pytest.raises(error) as expected:
        function(X)
    with pytest.raises(error) as got:
        jit(function)(X)
    assert str(got.value) == str(expected.value)


def matrix_beside_row(x):
    return np.hstack([x, x[0]])


def average_returned(x):
    return np.average(x, axis=1, returned=True)


def average_keepdims(x):
    return np.average(x, axis=1, keepdims=True)


def average_over_two_axes(x):
    return np.average(x, axis=(0, 1))


@pytest.mark.every_case
@pytest.mark.parametrize("function, said", [
    (matrix_beside_row, "same number of dimensions"),
    (average_returned, "returned=True) cannot be compiled"),
    (average_keepdims, "keepdims=True) cannot be compiled"),
    (average_over_two_axes, "one int axis"),
])
def test_forms_jit_cannot_compile_are_refused_at_the_users_line(function, said):
    if function is matrix_beside_row:
        with pytest.raises(ValueError):         # NumPy refuses it too
            function(X)
    with pytest.raises(TransformError) as caught:
        jit(function)(X)
    _, first = inspect.getsourcelines(function)
    assert (caught.value.filename, caught.value.lineno) == (__file__, first + 1)
    assert said in str(caught.value)
