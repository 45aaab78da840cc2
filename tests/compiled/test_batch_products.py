"""The adjoint of a matrix shared by a vmapped `np.dot`, summed over the batch as one
product (`runtime.batch_products`) under jit: equal to the per-example sum it replaces,
for matrices and for the other ranks, and the form lowering picks in JAX's MLP tutorial."""
import numpy as np
import pytest

from transformer import grad, jit, vmap
from transformer.runtime import batch_products
from transformer.runtime.examples import sum_batch
from transformer.test_util import numerical_grad

RNG = np.random.default_rng(5)


@pytest.mark.parametrize("shapes", [((6, 4), (4, 3), (6, 3)), ((6,), (4,), (6, 4)),
                                    ((6, 4, 2), (4, 3), (6, 3, 2))], ids=str)
def test_sum_left_of_right_equals_the_sum_of_per_example_adjoints(shapes):
    g, a, b = (RNG.normal(size=s) for s in shapes)
    stacked = sum_batch(batch_products.left_of_right()(g, a, b))
    np.testing.assert_allclose(batch_products.sum_left_of_right(g, a, b), stacked,
                               rtol=1e-12, atol=1e-12)
    compiled = jit(_sum_left)(g, a, b)
    np.testing.assert_allclose(compiled, stacked, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("shapes", [((6, 3), (6, 4), (4, 3)), ((6, 3), (6,), (3,))],
                         ids=str)
def test_sum_right_of_left_equals_the_sum_of_per_example_adjoints(shapes):
    g, a, b = (RNG.normal(size=s) for s in shapes)
    stacked = sum_batch(batch_products.right_of_left()(g, a, b))
    np.testing.assert_allclose(batch_products.sum_right_of_left(g, a, b), stacked,
                               rtol=1e-12, atol=1e-12)


def _sum_left(g, a, b):
    return batch_products.sum_left_of_right(g, a, b)


def layer(w, x):
    return np.tanh(np.dot(w, x))


def layer_right(x, w):
    return np.tanh(np.dot(x, w))


layer_each, layer_right_each = vmap(layer, in_axes=(None, 0)), vmap(layer_right,
                                                                     in_axes=(0, None))


def loss(w, xs):
    return np.sum(layer_each(w, xs) ** 2)


def loss_right(w, xs):
    return np.sum(layer_right_each(xs, w) ** 2)


@pytest.mark.slow
@pytest.mark.parametrize("f", [loss, loss_right])
def test_grad_of_a_vmap_sharing_a_matrix_takes_one_product_and_matches_differences(f):
    w, xs = RNG.normal(size=(3, 4)), RNG.normal(size=(5, 4 if f is loss else 3))
    g = jit(grad(f))
    np.testing.assert_allclose(g(w, xs), numerical_grad(f, (w, xs)), rtol=1e-6, atol=1e-8)
    name = "sum_left_of_right" if f is loss else "sum_right_of_left"
    assert any(name in text for text in _generated_texts())


def _generated_texts():
    from codegen import modules
    return [p.read_text() for p in modules.cache_dir().glob("*.py")]
