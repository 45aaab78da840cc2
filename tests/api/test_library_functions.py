"""NumPy, SciPy and math functions handed straight to a transformation, as the JAX
tutorials do: `grad(jnp.tanh)`, `vmap(grad(jnp.tanh))`, `vmap(jnp.dot, in_axes=(None, 0))`.

Oracles: the analytic derivative and NumPy.
"""
import math

import numpy as np
import pytest
import scipy.special as special

from transformer import grad, hessian, jacfwd, jacrev, jit, jvp, vmap
from transformer.library_functions import wrapper_for

X = np.linspace(-1.0, 1.0, 5)
M = np.arange(12.0).reshape(3, 4)
V = np.arange(20.0).reshape(5, 4) / 10.0

CASES = {
    "grad tanh": (lambda: grad(np.tanh)(0.5), 1 - np.tanh(0.5) ** 2),
    "vmap grad tanh": (lambda: vmap(grad(np.tanh))(X), 1 - np.tanh(X) ** 2),
    "grad grad sin": (lambda: grad(grad(np.sin))(0.3), -np.sin(0.3)),
    "vmap dot": (lambda: vmap(np.dot, in_axes=(None, 0))(M, V), V @ M.T),
    "jacfwd sin": (lambda: jacfwd(np.sin)(X), np.diag(np.cos(X))),
    "jacrev exp": (lambda: jacrev(np.exp)(X), np.diag(np.exp(X))),
    "grad sum": (lambda: grad(np.sum)(X), np.ones(5)),
    "grad norm": (lambda: grad(np.linalg.norm)(X), X / np.linalg.norm(X)),
    "hessian norm": (lambda: hessian(np.linalg.norm)(X),
                     (np.eye(5) - np.outer(X, X) / (X @ X)) / np.linalg.norm(X)),
    "grad expit": (lambda: grad(special.expit)(0.2),
                   special.expit(0.2) * (1 - special.expit(0.2))),
    "grad math.erf": (lambda: grad(math.erf)(0.2), 2 / np.sqrt(np.pi) * np.exp(-0.04)),
    "grad math.sqrt": (lambda: grad(math.sqrt)(4.0), 0.25),
    "jit len": (lambda: jit(len)(X), 5),
    "vmap where": (lambda: vmap(np.where)(X > 0, X, -X), np.abs(X)),
    "grad maximum": (lambda: grad(np.maximum)(0.5, 0.2), 1.0),
    "jvp cos": (lambda: jvp(np.cos, (X,), (np.ones(5),))[1], -np.sin(X)),
    "vmap outer": (lambda: vmap(np.outer)(V, V), np.einsum("bi,bj->bij", V, V)),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_library_function_handed_to_a_transformation(case):
    run, want = CASES[case]
    assert np.allclose(run(), want)


def test_compiled_forms():
    assert np.allclose(jit(vmap(grad(np.tanh)))(X), 1 - np.tanh(X) ** 2)
    assert np.allclose(jit(vmap(np.dot, in_axes=(None, 0)))(M, V), V @ M.T)
    assert np.isclose(jit(np.sum)(X), np.sum(X))


def test_the_wrapper_is_readable_one_line_source_made_once():
    wrapper = wrapper_for(np.tanh)
    assert wrapper is wrapper_for(np.tanh)
    source = grad(np.tanh).source()
    assert "def grad_tanh(x):" in source and "np.tanh(x)" in source
    assert wrapper_for(np.linalg.norm).__code__.co_varnames[:1] == ("x",)
    assert wrapper_for(np.where).__code__.co_argcount == 3          # condition, x, y


def test_parameters_read_from_the_docstring_where_no_signature_is_kept():
    """Older NumPy keeps a C function's signature only in its docstring's first line."""
    from transformer.library_functions import _documented_parameters

    class Documented:
        def __init__(self, name, doc):
            self.__name__, self.__doc__ = name, doc
    assert _documented_parameters(Documented("dot", "dot(a, b, out=None)\n\nDot.")) == \
        ["a", "b"]
    assert _documented_parameters(Documented("where", "where(condition, [x, y], /)")) == \
        ["condition", "x", "y"]
    assert _documented_parameters(Documented("f", "Computes things.")) == ["x"]
