"""A global read by a function while a nested scope (comprehension, lambda, inner def)
binds the same name is captured: every transformation crashed with `KeyError` from inside
secant before (the free names counted a binding anywhere in the tree)."""
import gast
import numpy as np
import pytest

from transformer import TransformError, grad, jit, vmap
from transformer.names import free_names, outer_names
from transformer.test_util import numerical_grad

i = 2
S = 3.0
X = np.arange(5.0) + 1.0


def comprehension_shadows(x):
    z = [i * S for i in range(5)]
    return np.sum(x * x[i]) + z[1] * x[0]


def lambda_shadows(x):
    h = lambda i: x[i] * S  # noqa: E731
    return h(1) + x[i] ** 2


def inner_def_shadows(x):
    def inner(i):
        return x[i] * 2.0
    return inner(0) + x[i]


CASES = [comprehension_shadows, lambda_shadows, inner_def_shadows]


@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_transformations_read_the_global(f):
    np.testing.assert_allclose(grad(f)(X), numerical_grad(f, (X,)), rtol=1e-6)
    np.testing.assert_allclose(jit(f)(X), f(X), rtol=1e-12)
    batch = np.stack([X, 2.0 * X])
    np.testing.assert_allclose(vmap(f)(batch), [f(X), f(2.0 * X)], rtol=1e-12)


@pytest.mark.slow
@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_compiled_gradient_reads_the_global(f):
    np.testing.assert_allclose(jit(grad(f))(X), numerical_grad(f, (X,)), rtol=1e-6)


def _outer(source: str) -> set:
    return outer_names(gast.parse(source).body[0])


def test_outer_names_follow_python_scopes():
    assert _outer("def f(x):\n    z = [i for i in range(n)]\n    return x[i]") == \
        {"i", "n", "range"}
    # the first iterable is read outside the comprehension, the others inside
    assert _outer("def f(x):\n    return [j for i in x for j in i]") == set()
    assert _outer("def f(x):\n    return [i for i in i]") == {"i"}
    assert _outer("def f(x):\n    g = lambda a=d: a + c\n    return g()") == {"c", "d"}
    assert _outer("def f(x):\n    y = [(k := v) for v in x]\n    return k") == set()
    assert _outer("def f(x):\n    def h(y):\n        return y + w\n    return h(x)") == {"w"}
    assert _outer("def f(x):\n    return {a: b for a, b in x.items()}") == set()


def test_outer_names_hold_the_free_names():
    for f in CASES:
        node = gast.parse(__import__("inspect").getsource(f)).body[0]
        assert free_names(node) <= outer_names(node)


def only_bound_inside(x):
    z = [undefined_here for undefined_here in range(3)]
    return x * undefined_here + z[0]  # noqa: F821


def test_a_name_bound_only_in_a_nested_scope_is_not_defined_at_its_line():
    with pytest.raises(TransformError) as raised:
        grad(lambda x: np.sum(only_bound_inside(x)))(X)
    assert "undefined_here" in str(raised.value) and "not defined" in str(raised.value)
