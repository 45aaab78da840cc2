"""An int to a negative int power under jit. Python gives a float (`2 ** -1` is 0.5) and
NumPy refuses integer arrays to negative integer powers, but Numba computed an int: 0,
silently (`x * n ** -1` was 0, and its gradient too). A literal exponent now gives
Python's float; an exponent known only at run time, or an integer array, is a located
ValueError whose hint works."""
import inspect

import numpy as np
import pytest

from transformer import grad, jit


def literal_exponent(x):
    n = 4
    return x * n ** -2 + x ** 2 + x ** -1


def exponent_argument(x, k):
    return x * 2 ** k


def written_as_the_hint_says(x, k):
    return x * float(2) ** k


def builtin_pow(x, k):
    return x * pow(3, k) + pow(x, 2)


def augmented(x, k):
    n = 4
    n **= k
    return x * n


def integer_array(x, k):
    a = np.arange(1, 4)
    return x * np.sum(a ** k)


def float_bases(x, k):
    return x ** k + (x * 0.5) ** (k - 1)


@pytest.mark.every_case
@pytest.mark.parametrize("function, args", [
    (literal_exponent, (1.5,)),
    (exponent_argument, (1.5, 3)),
    (written_as_the_hint_says, (1.5, -2)),
    (builtin_pow, (1.5, 2)),
    (augmented, (1.5, 2)),
    (integer_array, (1.5, 2)),
    (float_bases, (1.5, -2)),
    (float_bases, (1.5, 3)),
])
def test_values_are_pythons(function, args):
    want = function(*args)
    got = jit(function)(*args)
    assert got == pytest.approx(want, rel=1e-15)
    assert isinstance(got, float) == isinstance(want, float)     # an int stays an int


def test_the_gradient_through_an_int_power_is_pythons():
    assert jit(grad(literal_exponent))(1.5) == pytest.approx(grad(literal_exponent)(1.5))
    assert grad(literal_exponent)(1.5) == pytest.approx(4 ** -2 + 3.0 - 1.5 ** -2)


def _line_of(function, text):
    lines, first = inspect.getsourcelines(function)
    row = next(k for k, line in enumerate(lines) if text in line)
    return f"{__file__}:{first + row}:"


@pytest.mark.every_case
@pytest.mark.parametrize("function, text, message", [
    (exponent_argument, "2 ** k", "an int to a negative int power is a float in Python"),
    (builtin_pow, "pow(3, k)", "an int to a negative int power is a float in Python"),
    (augmented, "n **= k", "an int to a negative int power is a float in Python"),
    (integer_array, "a ** k", "Integers to negative integer powers are not allowed"),
])
def test_a_negative_power_known_at_run_time_is_refused_at_the_users_line(function, text,
                                                                           message):
    with pytest.raises(ValueError) as caught:
        jit(function)(1.5, -1)
    assert str(caught.value).startswith(_line_of(function, text))
    assert message in str(caught.value)
