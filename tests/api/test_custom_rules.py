"""custom_jvp and custom_vjp rules are honoured by every transformation and composition.

Each rule deliberately differs from the primal's true derivative (the primal is sin, the
rules are not cos), so a transformation that differentiated the primal instead would give
another number. Expected values are hand derivations of the rules, and JAX's where it is
installed. Reverse mode transposes a custom_jvp rule (as JAX does); forward mode of a
custom_vjp function is refused with a located error (as JAX refuses it).
"""
import numpy as np
import pytest

from transformer import (TransformError, custom_jvp, custom_vjp, grad, hessian, jacfwd, jacrev,
                         jit, jvp, value_and_grad, vjp, vmap)

X = np.array([0.3, -1.2, 2.0])
BATCH = np.array([[0.3, -1.2, 2.0], [1.5, 0.1, -0.4]])


@custom_jvp
def bent_sin(x):
    return np.sin(x)


@bent_sin.defjvp
def bent_sin_jvp(primals, tangents):
    x, = primals
    t, = tangents
    return bent_sin(x), (x * x + 1.0) * t       # not cos(x): d/dx is x**2 + 1 by the rule


def jvp_loss(x):
    return np.sum(bent_sin(x) * 2.0)


@custom_vjp
def scaled_sin(x):
    return np.sin(x)


def scaled_sin_fwd(x):
    return scaled_sin(x), x


def scaled_sin_bwd(x, g):
    return (3.0 * x * g,)                       # not cos(x) * g: d/dx is 3x by the rule


scaled_sin.defvjp(scaled_sin_fwd, scaled_sin_bwd)


def vjp_loss(x):
    return np.sum(scaled_sin(x) * 2.0)


# ---------------------------------------------------------------- custom_jvp


def test_grad_of_custom_jvp_uses_the_transposed_rule():
    np.testing.assert_allclose(grad(jvp_loss)(X), 2.0 * (X * X + 1.0), rtol=1e-14)
    assert grad(bent_sin)(0.5) == pytest.approx(1.25)
    value, g = value_and_grad(jvp_loss)(X)
    assert value == pytest.approx(np.sum(np.sin(X) * 2.0))
    np.testing.assert_allclose(g, 2.0 * (X * X + 1.0), rtol=1e-14)


def test_vjp_and_jacobians_of_custom_jvp_use_the_rule():
    out, pullback = vjp(bent_sin, X)
    np.testing.assert_allclose(out, np.sin(X))
    np.testing.assert_allclose(pullback(np.ones(3))[0], X * X + 1.0, rtol=1e-14)
    np.testing.assert_allclose(jacrev(bent_sin)(X), np.diag(X * X + 1.0), rtol=1e-14)
    np.testing.assert_allclose(jacfwd(bent_sin)(X), np.diag(X * X + 1.0), rtol=1e-14)
    np.testing.assert_allclose(jvp(bent_sin, (X,), (np.ones(3),))[1], X * X + 1.0)


@pytest.mark.slow
def test_hessian_of_custom_jvp_differentiates_the_rule():
    np.testing.assert_allclose(hessian(jvp_loss)(X), np.diag(4.0 * X), rtol=1e-13)


@pytest.mark.slow
def test_jit_and_vmap_of_grad_of_custom_jvp_use_the_rule():
    expected = 2.0 * (BATCH * BATCH + 1.0)
    np.testing.assert_allclose(jit(grad(jvp_loss))(X), 2.0 * (X * X + 1.0), rtol=1e-14)
    np.testing.assert_allclose(vmap(grad(jvp_loss))(BATCH), expected, rtol=1e-14)
    np.testing.assert_allclose(jit(vmap(grad(jvp_loss)))(BATCH), expected, rtol=1e-14)


# ---------------------------------------------------------------- custom_vjp


def test_grad_vjp_and_jacrev_of_custom_vjp_use_the_rule():
    np.testing.assert_allclose(grad(vjp_loss)(X), 6.0 * X, rtol=1e-14)
    _, pullback = vjp(scaled_sin, X)
    np.testing.assert_allclose(pullback(np.ones(3))[0], 3.0 * X, rtol=1e-14)
    np.testing.assert_allclose(jacrev(scaled_sin)(X), np.diag(3.0 * X), rtol=1e-14)
    np.testing.assert_allclose(jacrev(grad(vjp_loss))(X), 6.0 * np.eye(3), rtol=1e-14)


@pytest.mark.slow
def test_jit_and_vmap_of_grad_of_custom_vjp_use_the_rule():
    np.testing.assert_allclose(jit(grad(vjp_loss))(X), 6.0 * X, rtol=1e-14)
    np.testing.assert_allclose(vmap(grad(vjp_loss))(BATCH), 6.0 * BATCH, rtol=1e-14)
    np.testing.assert_allclose(jit(vmap(grad(vjp_loss)))(BATCH), 6.0 * BATCH, rtol=1e-14)


@pytest.mark.parametrize("transform", [
    lambda: jvp(scaled_sin, (X,), (np.ones(3),)),
    lambda: jacfwd(vjp_loss)(X),
    lambda: hessian(vjp_loss)(X),
], ids=["jvp", "jacfwd", "hessian"])
def test_forward_mode_of_custom_vjp_is_refused_with_a_located_error(transform):
    with pytest.raises(TransformError, match="forward-mode autodiff") as info:
        transform()
    assert info.value.filename == __file__ and info.value.lineno is not None
    assert "custom_jvp" in info.value.hint


def test_custom_jvp_without_rule_is_a_located_error():
    @custom_jvp
    def no_rule(x):
        return x * 2.0
    with pytest.raises(TransformError, match="has no rule"):
        grad(no_rule)(1.0)


# ---------------------------------------------------------------- against JAX


@pytest.mark.slow
def test_custom_rules_match_jax():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy

    @jax.custom_jvp
    def j_bent(x):
        return jnp.sin(x)

    @j_bent.defjvp
    def _j_bent_jvp(primals, tangents):
        x, = primals
        t, = tangents
        return j_bent(x), (x * x + 1.0) * t

    @jax.custom_vjp
    def j_scaled(x):
        return jnp.sin(x)
    j_scaled.defvjp(lambda x: (j_scaled(x), x), lambda x, g: (3.0 * x * g,))

    def j_jvp_loss(x):
        return jnp.sum(j_bent(x) * 2.0)

    def j_vjp_loss(x):
        return jnp.sum(j_scaled(x) * 2.0)

    pairs = [(grad(jvp_loss), jax.grad(j_jvp_loss)), (hessian(jvp_loss), jax.hessian(j_jvp_loss)),
             (jacrev(bent_sin), jax.jacrev(j_bent)), (grad(vjp_loss), jax.grad(j_vjp_loss)),
             (jacrev(grad(vjp_loss)), jax.jacrev(jax.grad(j_vjp_loss)))]
    for ours, theirs in pairs:
        np.testing.assert_allclose(ours(X), np.asarray(theirs(X)), rtol=1e-13)
    np.testing.assert_allclose(vmap(grad(jvp_loss))(BATCH),
                               np.asarray(jax.vmap(jax.grad(j_jvp_loss))(BATCH)), rtol=1e-13)
    with pytest.raises(TypeError, match="forward-mode"):
        jax.hessian(j_vjp_loss)(X)
