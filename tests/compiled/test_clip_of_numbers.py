"""`np.clip` of a number under jit: Numba's clips arrays only, so `np.clip(x, 0.0, 1.0)` of
a float failed to compile (reported inside Numba's own source). It now gives NumPy's
value: the lower bound first, then the upper (which wins where the bounds cross), a bound
of None no bound, NaN kept; also of an int, with array bounds, and under grad and vmap."""
import numpy as np
import pytest

from transformer import grad, jit, vmap


def clipped(x):
    return np.clip(x, 0.0, 1.0) * 3.0


def crossed_bounds(x):
    return np.clip(x, 2.0, 1.0)


def one_sided(x):
    return np.clip(x, 0.5, None) + np.clip(x, None, 0.25)


def of_an_int(n):
    return np.clip(n, 0, 3) * 2


def array_bounds(x):
    return np.clip(x, np.array([0.1, 0.6]), 0.9)


@pytest.mark.every_case
@pytest.mark.parametrize("function, argument", [
    (clipped, 0.3), (clipped, 1.7), (clipped, -2.0), (clipped, np.nan),
    (crossed_bounds, 1.5), (one_sided, 0.7), (one_sided, 0.1),
    (of_an_int, 7), (of_an_int, -2), (array_bounds, 0.4),
])
def test_values_are_numpys(function, argument):
    np.testing.assert_array_equal(jit(function)(argument), function(argument))


def test_derivatives_and_batches_of_a_clipped_number():
    for x in (0.3, 1.7):
        assert jit(grad(clipped))(x) == grad(clipped)(x)
    for x in (0.7, 0.1):
        assert jit(grad(one_sided))(x) == grad(one_sided)(x)
    xs = np.array([0.3, 1.7, -1.0])
    np.testing.assert_array_equal(jit(vmap(clipped))(xs), [clipped(x) for x in xs])
