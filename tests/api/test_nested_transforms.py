"""Every transformation over a function that itself calls a transformation inline: the grid
{grad, jacfwd, jacrev, hessian, vmap, jvp} of programs calling grad, vmap, jacfwd,
hessian, value_and_grad, jvp and vmap(grad) inside them.

Oracles: central differences of the program run as plain Python (its inline transformation
then runs eagerly), a loop over the examples for vmap, and JAX on the same programs where
it is installed. The grid runs under the Python backend; under jit one cell runs in the
quick set and the rest with --runslow.
"""
import numpy as np
import pytest

from transformer import (grad, hessian, jacfwd, jacrev, jit, jvp,
                         value_and_grad, vmap)
from transformer.test_util import numerical_grad, numerical_jacobian, numerical_jvp

SCALES = np.array([1.0, -0.5])
W = np.array([[0.3, -0.2, 0.5], [0.1, 0.4, -0.6], [-0.7, 0.2, 0.9]])


def g(x):
    return np.sum(np.sin(x) * x) * np.sum(x * x)


def gv(x):
    return np.sin(x) * np.sum(x * x)


def with_grad(x):
    return np.sum(grad(g)(x) * np.cos(x))


def with_vmap(x):
    xs = np.outer(SCALES, x)
    return np.sum(vmap(g)(xs) * SCALES)


def with_jacfwd(x):
    return np.sum(jacfwd(gv)(x) * W)


def with_hessian(x):
    return np.sum(hessian(g)(x) * W)


def with_value_and_grad(x):
    v, gr = value_and_grad(g)(x)
    return v * np.sum(gr * x)


def with_jvp(x):
    out, dout = jvp(g, (x,), (np.cos(x),))
    return out * dout


def with_vmap_grad(x):
    xs = np.outer(SCALES, x)
    return np.sum(vmap(grad(g))(xs) ** 2)


INNER = [with_grad, with_vmap, with_jacfwd, with_hessian, with_value_and_grad, with_jvp,
         with_vmap_grad]
OUTER = ["grad", "jacfwd", "jacrev", "hessian", "vmap", "jvp"]
X = np.array([0.3, -1.1, 0.8])
V = np.array([0.5, 0.2, -0.4])
XS = np.array([[0.3, -1.1, 0.8], [0.6, 0.2, -0.7]])


def _transformed(outer: str, f):
    return {"grad": grad, "jacfwd": jacfwd, "jacrev": jacrev, "hessian": hessian,
            "vmap": vmap, "jvp": jvp}[outer](f)


def _call(outer: str, fn):
    """The outer transformation's result at the grid's point."""
    if outer == "vmap":
        return fn(XS)
    if outer == "jvp":
        return fn(X, V)
    return fn(X)


def _expected(outer: str, f):
    """Finite differences (a loop over the examples for vmap) of `f` run as Python."""
    if outer == "vmap":
        return np.array([f(x) for x in XS])
    if outer == "jvp":
        return f(X), numerical_jvp(f, (X,), (V,))
    if outer == "hessian":
        return numerical_jacobian(lambda x: numerical_grad(f, (x,), eps=1e-5), X, eps=1e-4)
    return numerical_grad(f, (X,))


def _assert_close(got, expected, outer):
    tolerance = dict(rtol=1e-5, atol=1e-5) if outer == "hessian" else dict(rtol=1e-6,
                                                                           atol=1e-7)
    if outer == "jvp":
        for a, b in zip(got, expected):
            np.testing.assert_allclose(a, b, **tolerance)
    else:
        np.testing.assert_allclose(got, expected, **tolerance)


@pytest.mark.parametrize("f", INNER, ids=[f.__name__ for f in INNER])
@pytest.mark.parametrize("outer", OUTER)
def test_transformation_of_inline_transformation_matches_finite_differences(outer, f):
    _assert_close(_call(outer, _transformed(outer, f)), _expected(outer, f), outer)


def test_jit_hessian_of_inline_vmap_matches_finite_differences():
    got = jit(hessian(with_vmap))(X)
    _assert_close(got, _expected("hessian", with_vmap), "hessian")


@pytest.mark.slow
@pytest.mark.parametrize("f", INNER, ids=[f.__name__ for f in INNER])
@pytest.mark.parametrize("outer", OUTER)
def test_jit_of_transformation_of_inline_transformation_matches_python(outer, f):
    fn = _transformed(outer, f)
    _assert_close(_call(outer, jit(fn)), _call(outer, fn), "jit")
