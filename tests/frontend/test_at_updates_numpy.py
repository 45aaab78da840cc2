"""`x.at[i].<method>(v)` without JAX installed: values against the same update written in
NumPy by hand, gradients against central differences of that NumPy form
(tests/frontend/test_at_updates.py compares with JAX itself where it is installed)."""
import numpy as np
import pytest

from transformer import grad, jit, vmap
from transformer.test_util import numerical_grad

X = np.array([0.7, -1.3, 0.4])


def updates(x):
    y = x.at[0].set(x[1] * x[2]).at[np.array([2, 2])].add(x[0])
    return np.sum(np.sin(y.at[1:].multiply(x[0])) * x)


def updates_by_hand(x):
    y = x.copy()
    y[0] = x[1] * x[2]
    y[2] += 2 * x[0]                        # both updates of the repeated index
    y[1:] = y[1:] * x[0]
    return np.sum(np.sin(y) * x)


def test_values_gradients_vmap_and_jit_match_the_numpy_form():
    x = X.copy()
    want = updates_by_hand(X)
    assert float(jit(updates)(x)) == pytest.approx(want, rel=1e-12)
    np.testing.assert_allclose(grad(updates)(x), numerical_grad(updates_by_hand, (X,)),
                               rtol=1e-6, atol=1e-8)
    batch = np.stack([X, X - 1.0])
    np.testing.assert_allclose(vmap(updates)(batch.copy()),
                               [updates_by_hand(b) for b in batch], rtol=1e-12)
    np.testing.assert_array_equal(x, X)          # the argument is not written
