"""np.moveaxis with tuples of axes under jit: secant's compiled moveaxis took int axes
only, and a tuple failed inside it with a message naming the pass that failed. It now
gives NumPy's order (each source axis at its destination, the others in their order),
also under jit(grad)."""
import numpy as np
import pytest

from transformer import grad, jit

W = np.arange(12.0).reshape(2, 2, 3) - 5.0


def pairs(x):
    return np.sum(np.moveaxis(x.reshape(3, 2, 2), (0, 1), (2, 0)) * W)


def negative_pairs(x):
    return np.sum(np.moveaxis(x.reshape(3, 2, 2), (-1, 0), (0, -1)) * W)


def one_axis(x):
    return np.sum(np.moveaxis(x.reshape(3, 2, 2), 0, -1) * W)


@pytest.mark.every_case
@pytest.mark.parametrize("function", [pairs, negative_pairs, one_axis])
def test_values_and_gradients_are_numpys(function):
    x = np.random.default_rng(0).normal(size=(3, 4))
    assert jit(function)(x) == pytest.approx(function(x), rel=1e-12)
    np.testing.assert_allclose(jit(grad(function))(x), grad(function)(x), rtol=1e-12)
