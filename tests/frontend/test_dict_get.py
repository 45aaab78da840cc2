"""`d.get(key)` and `d.get(key, default)` with a constant key, on a dict built in the
function: read as `d[key]` (or the default, for a key the dict lacks), so every
transformation follows it. It was refused under jacfwd ("no tangent rule for the method
.get() of an array") and grad ("a dict built in a differentiated function"), where `d[key]`
was differentiated. Oracles: the function itself and central differences."""
import numpy as np
import pytest

from transformer import grad, jacfwd, jit, vmap
from transformer.test_util import numerical_grad

X = np.array([0.5, 1.5, -0.25])
BATCH = np.array([[0.5, 1.5, -0.25], [1.0, -2.0, 0.75]])


def get_present(x):
    d = {"a": x * 2.0, "b": np.sin(x)}
    return np.sum(d.get("a") * d["b"])


def get_with_default(x):
    d = {"a": np.tanh(x)}
    scale = d.get("scale", 3.0)
    return np.sum(d.get("a", x) ** 2) * scale + np.sum(d.get("b", np.cos(x)))


CASES = [get_present, get_with_default]


@pytest.mark.every_case
@pytest.mark.parametrize("f", CASES, ids=[f.__name__ for f in CASES])
def test_get_is_followed_by_every_transformation(f):
    expected = numerical_grad(f, (X,))
    np.testing.assert_allclose(grad(f)(X), expected, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(jacfwd(f)(X), expected, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(vmap(f)(BATCH), [f(x) for x in BATCH], rtol=1e-12)


def test_jit_of_get():
    np.testing.assert_allclose(jit(grad(get_with_default))(X),
                               numerical_grad(get_with_default, (X,)), rtol=1e-6)


def get_none(x):
    d = {"a": x}
    if d.get("missing") is None:
        return np.sum(d["a"] ** 2)
    return np.sum(d["a"])


def test_a_missing_key_without_a_default_is_none():
    np.testing.assert_allclose(grad(get_none)(X), 2.0 * X, rtol=1e-12)
