"""`str(x)` and `repr(x)` under jit: Numba writes ints, bools and strings as Python does,
but its text of a float is '<object type:float64>', so `x + len(str(x))` gave 22.5 where
Python gives 4.5, silently. The values Numba formats compile; a float is refused at the
user's line."""
import inspect

import numpy as np
import pytest

from transformer import TransformError, jit


def lengths(x, n, flag, name):
    return x + len(str(n)) + len(repr(n)) + len(str(flag)) + len(repr(name)) + \
        len(str(name) + "!")


def digits_of_a_float(x):
    s = str(x)
    return x + len(s)


def repr_of_an_array(x):
    return len(repr(x))


def test_ints_bools_and_strings_are_written_as_python_writes_them():
    args = (1.5, -123, True, "ab")
    assert jit(lengths)(*args) == lengths(*args)


@pytest.mark.every_case
@pytest.mark.parametrize("function, argument, call", [
    (digits_of_a_float, 1.5, "str(x)"),
    (repr_of_an_array, np.ones(3), "repr(x)"),
])
def test_other_values_are_refused_at_the_users_call(function, argument, call):
    with pytest.raises(TransformError) as caught:
        jit(function)(argument)
    error = caught.value
    lines, first = inspect.getsourcelines(function)
    row = next(k for k, line in enumerate(lines) if call in line)
    assert (error.filename, error.lineno) == (__file__, first + row)
    assert error.col == lines[row].index(call)
    assert "cannot be compiled: Numba has no text form" in str(error)
    assert "<object type:" in str(error)


def test_the_python_backend_writes_a_float_as_python_does():
    assert jit(digits_of_a_float, backend="python")(1.5) == 4.5
