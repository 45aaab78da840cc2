"""Second derivatives through ``np.einsum``: the reverse sweep's ``einsum_grad`` has a tangent
rule (it is linear in the cotangent and in every operand but the one it is the adjoint of), so
``hessian``, ``jacfwd(jacrev(f))`` and ``jvp`` of a ``grad`` differentiate it, also under
``jit``. The oracle is JAX in float64 where it is installed (the bench extra), and
second central differences of the function itself."""
import numpy as np
import pytest

from transformer import grad, hessian, jacfwd, jacrev, jit, jvp

try:
    import jax
    import jax.numpy as jnp
    jax.config.update("jax_enable_x64", True)
except ImportError:
    jax = None
needs_jax = pytest.mark.skipif(jax is None, reason="JAX is not installed")

X = np.array([0.3, -0.7, 1.1])
V = np.array([0.5, 0.2, -0.4])
A = np.arange(9.0).reshape(3, 3) / 7 + np.diag(np.cos(np.arange(3.0)))
A_CLOSED = np.array([[1.0, -0.5, 0.25], [0.3, 2.0, -1.0], [0.7, 0.1, 1.5]])


def matvec_dot(A, x):
    return np.einsum("ij,j->i", A, x) @ x


def matvec_dot_jax(A, x):
    return jnp.einsum("ij,j->i", A, x) @ x


def closed_matvec(x):
    return np.einsum("ij,j->i", A_CLOSED, np.sin(x)) @ x


def closed_matvec_jax(x):
    return jnp.einsum("ij,j->i", A_CLOSED, jnp.sin(x)) @ x


def inner_tanh(x):
    return np.einsum("i,i->", x, np.tanh(x))


def inner_tanh_jax(x):
    return jnp.einsum("i,i->", x, jnp.tanh(x))


def outer_trace(x):
    return np.einsum("ii->", np.outer(x, x)) * np.sum(np.sin(x))


def outer_trace_jax(x):
    return jnp.einsum("ii->", jnp.outer(x, x)) * jnp.sum(jnp.sin(x))


def three_operands(x):
    return np.einsum("i,ij,j->", np.exp(x), A_CLOSED, x * x)


def three_operands_jax(x):
    return jnp.einsum("i,ij,j->", jnp.exp(x), A_CLOSED, x * x)


ONE_ARGUMENT = [(closed_matvec, closed_matvec_jax), (inner_tanh, inner_tanh_jax),
                (outer_trace, outer_trace_jax), (three_operands, three_operands_jax)]


def _close(got, want):
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-11, atol=1e-12)


@needs_jax
@pytest.mark.every_case
@pytest.mark.parametrize("f, f_jax", ONE_ARGUMENT, ids=lambda f: f.__name__)
@needs_jax
def test_hessian(f, f_jax):
    _close(hessian(f)(X), jax.hessian(f_jax)(X))


@pytest.mark.slow
@needs_jax
@pytest.mark.every_case
@pytest.mark.parametrize("f, f_jax", ONE_ARGUMENT, ids=lambda f: f.__name__)
@needs_jax
def test_jacfwd_of_jacrev(f, f_jax):
    _close(jacfwd(jacrev(f))(X), jax.hessian(f_jax)(X))


@needs_jax
@pytest.mark.every_case
@pytest.mark.parametrize("f, f_jax", ONE_ARGUMENT, ids=lambda f: f.__name__)
@needs_jax
def test_jvp_of_grad(f, f_jax):
    _close(jvp(grad(f), (X,), (V,))[1], jax.jvp(jax.grad(f_jax), (X,), (V,))[1])


@needs_jax
def test_hessian_in_both_arguments():
    got = hessian(matvec_dot, argnums=(0, 1))(A, X)
    want = jax.hessian(matvec_dot_jax, argnums=(0, 1))(A, X)
    for i in range(2):
        for j in range(2):
            _close(got[i][j], want[i][j])


@needs_jax
def test_jvp_of_grad_in_the_matrix():
    dA = np.outer(V, X) - np.eye(3)
    got = jvp(grad(matvec_dot, argnums=(0, 1)), (A, X), (dA, V))[1]
    want = jax.jvp(jax.grad(matvec_dot_jax, argnums=(0, 1)), (A, X), (dA, V))[1]
    _close(got[0], want[0])
    _close(got[1], want[1])


@pytest.mark.slow
@needs_jax
def test_jit_hessian_one_operand():
    # a lone operand: the tangent of its adjoint is zeros (compiled: einsum_zeros)
    _close(jit(hessian(outer_trace))(X), jax.hessian(outer_trace_jax)(X))


@needs_jax
@pytest.mark.slow
@pytest.mark.parametrize("f, f_jax", ONE_ARGUMENT[:2] + ONE_ARGUMENT[3:],
                         ids=lambda f: f.__name__)
@needs_jax
def test_jit_hessian(f, f_jax):
    _close(jit(hessian(f))(X), jax.hessian(f_jax)(X))


@pytest.mark.slow
@needs_jax
def test_jit_hessian_in_both_arguments():
    got = jit(hessian(matvec_dot, argnums=(0, 1)))(A, X)
    want = jax.hessian(matvec_dot_jax, argnums=(0, 1))(A, X)
    for i in range(2):
        for j in range(2):
            _close(got[i][j], want[i][j])


def _second_differences(f, x, h=1e-4):
    """The Hessian of scalar `f` at `x` by second central differences of `f` itself."""
    n, eye = x.size, np.eye(x.size) * h
    return np.array([[(f(x + eye[i] + eye[j]) - f(x + eye[i] - eye[j])
                       - f(x - eye[i] + eye[j]) + f(x - eye[i] - eye[j])) / (4 * h * h)
                      for j in range(n)] for i in range(n)])


@pytest.mark.parametrize("f", [closed_matvec, inner_tanh, outer_trace, three_operands],
                         ids=lambda f: f.__name__)
def test_hessian_matches_second_differences(f):
    np.testing.assert_allclose(hessian(f)(X), _second_differences(f, X), rtol=1e-6,
                               atol=1e-6)
