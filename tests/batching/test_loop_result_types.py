"""vmap's loop strategy stacks each example's result into one batch. In plain Python one
function may return an int on one path and a float on another (`y = 0`, then `y = x * 0.5`
when `x < 0`); the batch took the first example's type and truncated the later ones:
vmap gave [0, 0, 0, 0] for [0, -0.15, 0, -0.45]. Now it takes the type every result fits,
as `np.array` of the results would and as compiled code (one return type per function)
does."""
import numpy as np
import pytest

from gradcheck import central_differences
from transformer import grad, jit, jvp, vmap


def zero_or_half(x):
    y = 0
    if x < 0:
        y = x * 0.5
    return y


def one_or_half(x):
    if x > 0:
        return 1
    return x * 0.5


def pair(x):
    if x > 0:
        return 1, x > 1
    return x * 0.5, True


def index_of_largest(row):
    best = 0
    for k in range(row.shape[0]):
        if row[k] > row[best]:
            best = k
    return best


XS = np.array([0.7, -0.3, 0.2, -0.9])


@pytest.mark.parametrize("transform", [vmap, lambda f: jit(vmap(f))], ids=["vmap", "jit(vmap)"])
@pytest.mark.parametrize("f", [zero_or_half, one_or_half])
def test_an_int_first_result_does_not_truncate_later_float_results(f, transform):
    got = transform(f)(XS)
    np.testing.assert_array_equal(got, np.array([f(x) for x in XS], dtype=float))
    assert got.dtype == np.float64


@pytest.mark.parametrize("transform", [vmap, lambda f: jit(vmap(f))], ids=["vmap", "jit(vmap)"])
def test_each_part_of_a_returned_tuple_takes_its_own_type(transform):
    values, flags = transform(pair)(XS)
    np.testing.assert_array_equal(values, [1.0, -0.15, 1.0, -0.45])
    np.testing.assert_array_equal(flags, [False, True, False, True])
    assert values.dtype == np.float64 and flags.dtype == np.bool_


@pytest.mark.parametrize("transform", [vmap, lambda f: jit(vmap(f))], ids=["vmap", "jit(vmap)"])
def test_integer_results_stay_integers(transform):
    rows = np.array([[0.1, 0.9, 0.3], [0.8, 0.2, 0.1], [0.0, 0.1, 0.7]])
    got = transform(index_of_largest)(rows)
    np.testing.assert_array_equal(got, [1, 0, 2])
    assert got.dtype.kind == "i"


def _weighted_total(xs):
    return np.sum(vmap(zero_or_half)(xs) * xs)


@pytest.mark.slow
def test_derivatives_through_the_widened_batch_are_exact():
    """jvp(vmap(f)) gave the primal [0, 0, 0, 0] and grad of a loss over vmap(f) half the
    derivative: both saw the truncated batch."""
    primal, tangent = jvp(vmap(zero_or_half), (XS,), (np.ones_like(XS),))
    np.testing.assert_array_equal(primal, [0.0, -0.15, 0.0, -0.45])
    np.testing.assert_array_equal(tangent, [0.0, 0.5, 0.0, 0.5])
    expected = central_differences(_weighted_total, (XS,))
    np.testing.assert_allclose(grad(_weighted_total)(XS), expected, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(jit(grad(_weighted_total))(XS), expected, rtol=1e-6,
                               atol=1e-9)
