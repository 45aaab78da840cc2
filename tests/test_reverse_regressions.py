"""Regression tests for reverse-mode bugs, each checked against finite differences."""
import numpy as np
import pytest

from transformer import grad, jit
from transformer.test_util import check_grads


def reads_array_items(xi):
    return xi[0] * xi[1] + np.sin(xi[2])


grad_items = grad(reads_array_items)


def gradient_step(xi, bparams):
    f_grads = grad_items(xi)
    return bparams + f_grads


@pytest.fixture(scope="module")
def compiled_step():
    return jit(gradient_step)


def test_grad_of_array_read_with_constant_indices_is_an_array():
    xi = np.array([0.4, -1.3, 0.9])
    g = grad(reads_array_items)(xi)
    assert isinstance(g, np.ndarray) and g.shape == xi.shape
    np.testing.assert_allclose(g, [xi[1], xi[0], np.cos(xi[2])])
    check_grads(reads_array_items, (xi,))


def test_jit_grad_of_array_read_with_constant_indices(compiled_step):
    xi, bparams = np.array([0.4, -1.3, 0.9]), np.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(compiled_step(xi, bparams),
                               bparams + np.array([xi[1], xi[0], np.cos(xi[2])]))


def reads_local_array_items(x):
    a = np.sin(x)
    return a[0] * a[1] + a[2]


def test_grad_of_local_array_read_with_constant_indices():
    x = np.array([0.4, -1.3, 0.9])
    g = grad(reads_local_array_items)(x)
    c, s = np.cos(x), np.sin(x)
    np.testing.assert_allclose(g, [c[0] * s[1], s[0] * c[1], c[2]])
    check_grads(reads_local_array_items, (x,))


def test_jit_grad_of_local_array_read_with_constant_indices():
    x = np.array([0.4, -1.3, 0.9])
    np.testing.assert_allclose(jit(grad(reads_local_array_items))(x),
                               grad(reads_local_array_items)(x))
