"""A Numba implementation that refuses its arguments (`np.linalg.inv` of a vector) fails
inside Numba's own source; the TransformError pointed there, at a line of
`numba/np/linalg.py`. It is now at the user's call, with the generated line in the hint."""
import inspect

import numpy as np
import pytest

from transformer import TransformError, jit


def inverse_of_a_vector(x):
    y = x * 2.0
    return np.linalg.inv(y)


def test_the_refusal_is_at_the_users_call():
    with pytest.raises(TransformError) as caught:
        jit(inverse_of_a_vector)(np.ones(3))
    lines, first = inspect.getsourcelines(inverse_of_a_vector)
    assert (caught.value.filename, caught.value.lineno) == (__file__, first + 2)
    assert "only supported on 2-D arrays" in str(caught.value)
    assert "generated module" in str(caught.value)


def dot_of_a_number(x):
    return np.sum(np.dot(2.0, x))


def test_numbas_dot_of_a_number_says_what_to_write():
    with pytest.raises(TransformError) as caught:
        jit(dot_of_a_number)(np.ones(3))
    assert caught.value.filename == __file__
    assert "write a * x for a number" in str(caught.value)


def repeated_by_counts(x):
    y = x * 2.0
    return np.repeat(y, np.array([1, 2, 0]))


def test_a_refusal_inside_secants_runtime_form_is_at_the_users_call():
    # jit lowers np.repeat to secant's `repeat`, which takes an int count
    with pytest.raises(TransformError) as caught:
        jit(repeated_by_counts)(np.ones(3))
    first = inspect.getsourcelines(repeated_by_counts)[1]
    assert (caught.value.filename, caught.value.lineno) == (__file__, first + 2)


def sorted_rows(x):
    return np.argsort(x, axis=1) * 1.0


def test_the_reason_is_the_line_under_numbas_resolution_header():
    # Numba's report puts "- Resolution failure for literal arguments:" above the reason
    with pytest.raises(TransformError) as caught:
        jit(sorted_rows)(np.ones((2, 3)))
    assert "Unsupported keywords: ['axis']" in str(caught.value).splitlines()[0]
