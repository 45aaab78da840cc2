"""Items of a list or tuple of tuples the function builds, read at constant indices
(`pairs = [(x, 2.0), (np.sin(x), 3.0)]`, then `a, b = pairs[0]` or `pairs[1][0]`), carry
their derivative. Reverse mode took an item that is itself a tuple for a constant and gave
a zero gradient with no error (`grad`, `jacrev`, `vmap(grad)`, under `jit` too). Oracles:
central differences, jacfwd."""
import numpy as np
import pytest

from transformer import grad, hessian, jacfwd, jacrev, jit, vmap
from transformer.test_util import numerical_grad, numerical_jacobian

X = np.array([0.1, 0.2, 0.3])
BATCH = np.stack([X, X + 0.5])


def unpacked_item(x):
    pairs = [(x, 2.0), (np.sin(x), 3.0)]
    a, b = pairs[0]
    return b * np.sum(a * a)


def item_then_its_items(x):
    pairs = ((x, 2.0), (np.sin(x), 3.0))
    t = pairs[1]
    return t[1] * np.sum(t[0] * t[0])


def chained_indices(x):
    pairs = ((x, 2.0), (np.sin(x), 3.0))
    return pairs[1][1] * np.sum(pairs[1][0] ** 2) + np.sum(pairs[0][0])


def three_levels(x):
    tree = ((x, (np.cos(x), 0.5)), 2.0)
    inner = tree[0][1]
    return np.sum(inner[0] * tree[0][0]) * inner[1] * tree[1]


def loop_over_pairs(x):
    s = 0.0
    for a, b in [(x, 2.0), (np.sin(x), 3.0)]:
        s = s + b * np.sum(a * a)
    return s


PROGRAMS = [unpacked_item, item_then_its_items, chained_indices, three_levels,
            loop_over_pairs]


@pytest.mark.every_case
@pytest.mark.parametrize("f", PROGRAMS, ids=lambda f: f.__name__)
def test_reverse_mode_against_differences(f):
    expected = numerical_grad(f, (X,))
    assert np.abs(expected).max() > 0.1
    np.testing.assert_allclose(grad(f)(X), expected, rtol=1e-6)
    np.testing.assert_allclose(jacrev(f)(X), expected, rtol=1e-6)
    np.testing.assert_allclose(jacfwd(f)(X), expected, rtol=1e-6)
    np.testing.assert_allclose(vmap(grad(f))(BATCH),
                               [numerical_grad(f, (row,)) for row in BATCH], rtol=1e-6)


@pytest.mark.parametrize("f", PROGRAMS, ids=lambda f: f.__name__)
def test_hessian(f):
    np.testing.assert_allclose(hessian(f)(X), numerical_jacobian(grad(f), X), rtol=1e-5,
                               atol=1e-7)


@pytest.mark.parametrize("f", [unpacked_item, three_levels], ids=lambda f: f.__name__)
def test_compiled(f):
    np.testing.assert_allclose(jit(grad(f))(X), numerical_grad(f, (X,)), rtol=1e-6)
