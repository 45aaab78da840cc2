"""Transformations applied inline inside transformed code: `grad(energy)(x, p)`,
`vmap(f, in_axes=(0, None))(xs, p)`, `jacfwd(f)(x)`, ... as JAX users write them.

Oracles: the analytic force of the energy, central differences of the same function run
as plain Python (where the inline transformation runs eagerly), and JAX where installed.
"""
import numpy as np
import pytest

from transformer import (TransformError, grad, hessian, jacfwd, jit, jvp, value_and_grad,
                         vjp, vmap)
from transformer.test_util import numerical_grad, numerical_jacobian


def energy(x, p):
    return np.sum(p * np.sin(x) * x ** 2)


def analytic_force(x, p):
    return -p * (np.cos(x) * x ** 2 + 2.0 * x * np.sin(x))


def force_loss(p, x, F):
    return np.sum((-grad(energy)(x, p) - F) ** 2)


BATCH_AXIS = 0      # a module constant inside in_axes is read when transforming


def energy_of_batch(p, xs):
    return np.sum(vmap(energy, in_axes=(BATCH_AXIS, None))(xs, p))


def with_value(x, p):
    e, g = value_and_grad(energy, argnums=1)(x, p)
    return e + np.sum(g * g)


def curvature(x, p):
    return np.sum(hessian(energy)(x, p) * x) + np.sum(jacfwd(energy)(x, p) * p)


def analytic_curvature(x, p):
    diagonal = p * (2.0 * np.sin(x) + 4.0 * x * np.cos(x) - x ** 2 * np.sin(x))
    return np.sum(diagonal * x) - np.sum(analytic_force(x, p) * p)


def directional(x, p):
    out, dout = jvp(energy)(x, p, p, np.zeros(3))
    return out * dout


def directional_jax_style(x, p):
    out, dout = jvp(energy, (x, p), (p, np.zeros(3)))
    return out * dout


def inline_vjp(x, p):
    out, pullback = vjp(energy, x, p)
    return pullback(1.0)[0]


def jvp_missing_primal(x, p):
    return jvp(energy, (x,), (p,))[1]


def nested(p, xs):
    return np.sum(vmap(grad(energy), in_axes=(0, None))(xs, p) ** 2)


def local_argnums(x, p):
    k = 1
    return np.sum(grad(energy, argnums=k)(x, p))


def local_function(x, p):
    h = energy
    return np.sum(grad(h)(x, p))


X = np.array([0.3, -1.1, 2.0])
P = np.array([0.5, 0.2, -0.4])
F = np.array([0.1, -0.3, 0.7])
XS = np.array([[0.3, -1.1, 2.0], [1.5, 0.2, -0.7]])


def test_inline_grad_value_matches_analytic_force_under_jit():
    expected = np.sum((analytic_force(X, P) - F) ** 2)
    assert np.isclose(force_loss(P, X, F), expected)
    assert np.isclose(jit(force_loss)(P, X, F), expected)


@pytest.mark.parametrize("wrap", [lambda g: g, jit], ids=["grad", "jit_grad"])
def test_grad_of_force_matching_loss_matches_finite_differences(wrap):
    got = wrap(grad(force_loss))(P, X, F)
    np.testing.assert_allclose(got, numerical_grad(force_loss, (P, X, F)), rtol=1e-6,
                               atol=1e-7)


@pytest.mark.slow
def test_vmap_over_a_loss_with_inline_grad_matches_a_loop():
    got = vmap(force_loss, in_axes=(None, 0, None))(P, XS, F)
    np.testing.assert_allclose(got, [force_loss(P, xs, F) for xs in XS], rtol=1e-12)
    got = jit(vmap(grad(force_loss), in_axes=(None, 0, None)))(P, XS, F)
    expected = [numerical_grad(force_loss, (P, xs, F)) for xs in XS]
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-7)


@pytest.mark.slow
def test_inline_vmap_with_in_axes_under_jacfwd_and_jit_grad():
    np.testing.assert_allclose(energy_of_batch(P, XS), sum(energy(xs, P) for xs in XS))
    expected = numerical_grad(energy_of_batch, (P, XS))
    np.testing.assert_allclose(jacfwd(energy_of_batch)(P, XS), expected, rtol=1e-6)
    np.testing.assert_allclose(jit(grad(energy_of_batch))(P, XS), expected, rtol=1e-6)


@pytest.mark.slow
def test_inline_hessian_and_jacfwd_match_the_analytic_derivatives():
    assert np.isclose(curvature(X, P), analytic_curvature(X, P))
    assert np.isclose(jit(curvature)(X, P), analytic_curvature(X, P))


@pytest.mark.slow
def test_inline_value_and_grad_jvp_and_nested_vmap_of_grad():
    for fun in (with_value, directional):
        assert np.isclose(jit(fun)(X, P), fun(X, P)), fun.__name__
        np.testing.assert_allclose(grad(fun)(X, P), numerical_grad(fun, (X, P)),
                                   rtol=1e-5, atol=1e-6, err_msg=fun.__name__)
    expected = np.sum(np.square([analytic_force(xs, P) for xs in XS]))
    assert np.isclose(jit(nested)(P, XS), expected)


@pytest.mark.slow
def test_inline_jvp_with_primals_and_tangents_matches_the_analytic_derivative():
    expected = energy(X, P) * np.sum(-analytic_force(X, P) * P)
    assert np.isclose(jit(directional_jax_style)(X, P), expected)
    np.testing.assert_allclose(grad(directional_jax_style)(X, P),
                               numerical_grad(directional_jax_style, (X, P)), rtol=1e-5)


@pytest.mark.parametrize("fun, message, hint", [
    (inline_vjp, "vjp inside a transformed function is not supported", "use grad(f)"),
    (jvp_missing_primal, "jvp: 1 primals for a function of 2 parameters",
     "one primal and one tangent for every parameter")])
def test_inline_vjp_and_a_short_jvp_are_located_errors(fun, message, hint):
    with pytest.raises(TransformError) as info:
        jit(fun)(X, P)
    text = str(info.value)
    assert message in text and hint in text
    assert f"test_inline_transforms.py:{fun.__code__.co_firstlineno + 1}:" in text


@pytest.mark.slow
def test_hessian_of_force_loss_matches_finite_differences_of_its_gradient():
    got = hessian(force_loss)(P, X, F)
    expected = numerical_jacobian(lambda p: grad(force_loss)(p, X, F), P)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("fun, where", [(local_argnums, "argnums=k"),
                                        (local_function, "grad(h)")])
def test_inline_transformation_of_non_constant_is_a_located_error(fun, where):
    with pytest.raises(TransformError) as info:
        grad(fun)(X, P)
    text = str(info.value)
    assert "test_inline_transforms.py" in text
    assert "bind it at module level: g = grad(" in text
    lines = text.splitlines()
    line = next(ln for ln in lines if where in ln)
    caret = lines[lines.index(line) + 1]
    assert caret.strip() == "^"
    argument = where.split("=")[-1].strip("grad()")
    assert line.index(argument, line.index(where)) == caret.index("^")


@pytest.mark.slow
def test_force_matching_gradient_matches_jax():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy

    def jax_energy(x, p):
        return jnp.sum(p * jnp.sin(x) * x ** 2)

    def jax_loss(p, x, f):
        return jnp.sum((-jax.grad(jax_energy)(x, p) - f) ** 2)

    expected = np.asarray(jax.grad(jax_loss)(P, X, F))
    np.testing.assert_allclose(jit(grad(force_loss))(P, X, F), expected, rtol=1e-10)
    expected = np.asarray(jax.vmap(jax.grad(jax_loss), in_axes=(None, 0, None))(P, XS, F))
    got = vmap(grad(force_loss), in_axes=(None, 0, None))(P, XS, F)
    np.testing.assert_allclose(got, expected, rtol=1e-10)
