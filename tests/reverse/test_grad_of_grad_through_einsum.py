"""grad of grad through `np.einsum`: the gradient of the einsum line calls `einsum_grad`,
which has no adjoint rule. The refusal names that cause at the einsum line and a hint that
works (forward over reverse), whether the outer grad's argument is an array or a tuple of
arrays; a tuple used to be refused as 'passed on whole', a cause the user cannot act on."""
import numpy as np
import pytest

from transformer import TransformError, grad, jacfwd


def f(params, x):
    w, b = params
    h1 = np.tanh(2.0 * x) + 0.1 * x
    h3 = np.einsum('i,i->', x, h1)
    return np.sum(np.tanh(w @ x + b) * h3)


def f_gg(params, x):
    gx = grad(f, argnums=1)(params, x)
    return np.sum(gx ** 2)


W = np.array([[0.1, 0.2, -0.3], [0.3, -0.4, 0.2]])
B = np.array([0.3, -0.2])
X = np.array([0.5, 0.7, -0.2])
EINSUM_LINE = f.__code__.co_firstlineno + 3


@pytest.mark.parametrize("argnums", [0, 1])
def test_grad_of_grad_through_einsum_names_einsum_grad(argnums):
    with pytest.raises(TransformError) as info:
        grad(f_gg, argnums=argnums)((W, B), X)
    message = str(info.value)
    assert "no adjoint rule for transformer.runtime.contractions.einsum_grad" in message
    assert "passed on whole" not in message
    assert f":{EINSUM_LINE}:" in message
    assert "jacfwd(grad(f))" in message


@pytest.mark.slow
def test_the_hint_forward_over_reverse_matches_jax():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy

    def f_jax(params, x):
        w, b = params
        h1 = jnp.tanh(2.0 * x) + 0.1 * x
        h3 = jnp.einsum('i,i->', x, h1)
        return jnp.sum(jnp.tanh(w @ x + b) * h3)

    expected = jax.hessian(f_jax, argnums=1)((W, B), X)
    got = jacfwd(grad(f, argnums=1), argnums=1)((W, B), X)
    np.testing.assert_allclose(got, np.asarray(expected), rtol=1e-10, atol=1e-12)


def test_a_tuple_handed_to_a_function_without_adjoint_rule_is_still_refused():
    """Only secant's own helpers get the grad-of-grad refusal: a varied tuple handed whole
    to any other function with no adjoint rule would get a zero gradient, so it is refused."""
    def f(x, y):
        t = (x, y)
        if x[0, 0] > 0:
            t = (y, x)
        return np.sum(np.linalg.multi_dot(t))

    with pytest.raises(TransformError, match="passed on whole"):
        grad(f)(W[:, :2], W[:, 1:])
