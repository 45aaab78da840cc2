"""Integers carried through user helper calls under reverse mode.

An integer a helper hands back (`i, x = step(i, x)`, `k = bump(k, x)`) carries no
derivative: it must not be asked for a gradient (the helper's vjp refused its integer
argument), and it must come back from the tape as an integer (a float `k` cannot index).
A helper with several `return a, b` statements gives one cotangent per item (only the first
item's was passed: gradients were silently zero). Oracle: central differences.
"""
import numpy as np
import pytest

from gradcheck import assert_gradient_close, central_differences
from transformer import grad, jit, value_and_grad, vmap
from transformer.errors import TransformError


def step(i, x):
    return i + 1, x * 2.0


def counter_through_helper(x):
    i = 0
    for _ in range(3):
        i, x = step(i, x)
    return x.sum() + i


def bump(k, x):
    return k + 1


def while_counter_from_helper(x):
    k = 0
    s = 0.0
    while k < 3:
        s = s + x[k] * x[k]
        k = bump(k, x)
    return s


def outward(i, x):
    if x[i] > 0.0:
        return i + 1, x[i]
    return i + 2, -x[i]


def branches_return_int_and_float(x):
    i = 0
    acc = 0.0
    while i < 3:
        i, v = outward(i, x)
        acc = acc + v * v
    return acc + i


def shifted(i):
    return i + 2


def nested_helpers(i, x):
    j = shifted(i)
    return j, x[j] * x[0]


def index_from_nested_helpers(x):
    k, v = nested_helpers(0, x)
    return v + x[k - 1]


def accumulate(s, x):
    return s + x[0]


def starts_int_becomes_float(x):
    s = 0
    for _ in range(2):
        s = accumulate(s, x)
    return s * x[1]


def doubled(x):
    return x * 2.0


def array_result_indexed(x):
    y = doubled(x)
    return y[0] + 3.0 * y[1]


def built_tuple(x):
    t = (x[0] * 2.0, x[1])
    x = x * 1.0
    return t


def tuple_built_before_return_indexed(x):
    y = built_tuple(x)
    return y[0] + 3.0 * y[1]


CASES = [counter_through_helper, while_counter_from_helper, branches_return_int_and_float,
         index_from_nested_helpers, starts_int_becomes_float, array_result_indexed]
X = np.array([1.0, -4.0, 2.0, 0.5])


@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_integers_through_helpers_give_finite_difference_gradients(f):
    assert_gradient_close(grad(f)(X), central_differences(f, (X,)), f.__name__)
    value, g = value_and_grad(f)(X)
    assert value == pytest.approx(f(X))
    assert_gradient_close(g, central_differences(f, (X,)), f.__name__)


@pytest.mark.slow
def test_integer_counter_through_helper_compiled_and_batched():
    xs = np.stack([X, X + 1.5])
    expected = np.stack([central_differences(branches_return_int_and_float, (x,))
                         for x in xs])
    assert_gradient_close(jit(grad(branches_return_int_and_float))(X), expected[0])
    assert_gradient_close(vmap(grad(branches_return_int_and_float))(xs), expected)


def test_a_helper_tuple_not_returned_as_a_literal_is_refused_with_its_location():
    with pytest.raises(TransformError, match="must be unpacked") as caught:
        grad(tuple_built_before_return_indexed)(X)
    assert caught.value.line.strip() == "y = built_tuple(x)"
    assert "return a, b" in caught.value.hint


def one_tuple(x):
    return (x * x,)


def one_tuple_read(x):
    (y,) = one_tuple(x)
    return np.sum(y * x)


def test_a_helper_returning_a_one_item_tuple_is_followed():
    assert_gradient_close(grad(one_tuple_read)(X), central_differences(one_tuple_read, (X,)))
