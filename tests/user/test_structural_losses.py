"""Losses users write with the structural and linear-algebra functions of the registry,
checked against closed-form gradients (the formulas JAX implements), finite differences,
and JAX itself where it is installed: a Gaussian-process likelihood through a Cholesky
factor, the top eigenvalue, a smoothed signal, and the conventions at ties and knots.
"""
from __future__ import annotations

import numpy as np
import pytest

import transformer
from transformer import grad, jit
from transformer.test_util import numerical_grad


def gp_nll(a, y):
    """Negative log-likelihood of y under N(0, K), K = a a^T + I/2, via its Cholesky."""
    n = y.shape[0]
    k = a @ a.T + 0.5 * np.eye(n)
    low = np.linalg.cholesky(k)
    z = np.linalg.solve(low, y)
    logdet = 0.0
    for i in range(n):
        logdet += 2.0 * np.log(low[i, i])
    return 0.5 * np.dot(z, z) + 0.5 * logdet


@pytest.mark.slow            # a compile of tens of seconds; CI runs it
def test_compiled_gradient_of_a_cholesky_likelihood_is_the_closed_form():
    rng = np.random.default_rng(1)
    a, y = rng.standard_normal((4, 3)), rng.standard_normal(4)
    got = jit(grad(gp_nll))(a, y)
    k = a @ a.T + 0.5 * np.eye(4)
    inv = np.linalg.inv(k)
    dk = 0.5 * (inv - inv @ np.outer(y, y) @ inv)      # d nll / dK, symmetric
    np.testing.assert_allclose(got, 2.0 * dk @ a, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(got, numerical_grad(gp_nll, [a, y]), rtol=1e-6, atol=1e-8)


def top_eigenvalue(a):
    w, v = np.linalg.eigh(a + a.T)
    return w[-1]


def eigenvalue_sum(a):
    return np.sum(np.linalg.eigh(a + a.T)[0] ** 2)


def test_top_eigenvalue_gradient_is_the_outer_product_of_its_eigenvector():
    a = np.random.default_rng(2).standard_normal((4, 4))
    v = np.linalg.eigh(a + a.T)[1][:, -1]
    np.testing.assert_allclose(grad(top_eigenvalue)(a), 2.0 * np.outer(v, v), atol=1e-12)


def test_eigenvalue_gradient_stays_finite_at_repeated_eigenvalues():
    a = np.eye(3) * 0.5        # a + a.T = I: one eigenvalue three times
    np.testing.assert_allclose(grad(eigenvalue_sum)(a), 4.0 * np.eye(3), atol=1e-12)


def signed_total(a):
    return np.linalg.slogdet(a)[0] * np.sum(a)


def test_a_tuple_result_read_at_its_first_item_only_differentiates():
    # the rule reads item 1 too (slogdet's logabsdet, eigh's eigenvectors)
    a = np.eye(3) + 0.1
    np.testing.assert_allclose(grad(signed_total)(a), np.ones((3, 3)))
    b = np.random.default_rng(5).standard_normal((3, 3))
    np.testing.assert_allclose(grad(eigenvalue_sum)(b), numerical_grad(eigenvalue_sum, [b]),
                               rtol=1e-6, atol=1e-8)


def weighted_sort(x):
    return np.sum(np.sort(x) * np.array([1.0, 2.0, 3.0]))


def test_sort_at_ties_passes_derivatives_through_the_stable_order_as_jax():
    x = np.array([1.0, 1.0, 0.0])
    expected = [2.0, 3.0, 1.0]      # stable order: x[2], x[0], x[1]
    np.testing.assert_allclose(grad(weighted_sort)(x), expected)
    jax, jnp = _jax()
    if jax is not None:
        w = jnp.array([1.0, 2.0, 3.0])
        np.testing.assert_allclose(jax.grad(lambda v: jnp.sum(jnp.sort(v) * w))(x), expected)


def interp_at(x):
    return np.sum(np.interp(x, np.array([0.0, 1.0, 2.0]), np.array([0.0, 1.0, 3.0])))


def test_interp_derivative_at_knots_and_outside_is_jax_one_sided_slope():
    x = np.array([-0.5, 0.0, 1.0, 2.0, 2.5])
    expected = [0.0, 1.0, 2.0, 2.0, 0.0]     # right-hand segment, last segment at the end
    np.testing.assert_allclose(grad(interp_at)(x), expected)
    jax, jnp = _jax()
    if jax is not None:
        xp, fp = jnp.array([0.0, 1.0, 2.0]), jnp.array([0.0, 1.0, 3.0])
        np.testing.assert_allclose(jax.grad(lambda v: jnp.sum(jnp.interp(v, xp, fp)))(x),
                                   expected)


def smoothed_energy(x):
    """Energy of a smoothed signal plus a roughness penalty."""
    kernel = np.array([0.25, 0.5, 0.25])
    smooth = np.convolve(x, kernel, mode="same")
    return np.trapezoid(smooth ** 2, dx=0.1) + np.sum(np.diff(x, n=2) ** 2) + \
        np.sum(np.sort(x)[-2:])


@pytest.mark.slow
def test_compiled_gradient_of_a_signal_loss_matches_finite_differences():
    x = np.random.default_rng(3).standard_normal(7)
    got = jit(grad(smoothed_energy))(x)
    np.testing.assert_allclose(got, numerical_grad(smoothed_energy, [x]), rtol=1e-6,
                               atol=1e-8)


def cross_about_rows(a):
    return np.sum(np.cross(a, a[::-1], axisa=0))


@pytest.mark.parametrize("transform", ["grad", "jvp", "jit"])
def test_a_keyword_without_a_rule_is_refused_at_the_users_line_with_a_hint(transform):
    a = np.ones((3, 3))
    with pytest.raises(transformer.TransformError) as info:
        if transform == "grad":
            grad(cross_about_rows)(a)
        elif transform == "jvp":
            transformer.jvp(cross_about_rows, (a,), (a,))
        else:
            jit(cross_about_rows)(a)
    message = str(info.value)
    assert "test_structural_losses.py" in message and "np.cross(a, a[::-1], axisa=0)" in message
    assert "hint: move the vector axis last with np.moveaxis" in message


def test_the_refusal_hint_works():
    a = np.random.default_rng(4).standard_normal((3, 3))
    np.testing.assert_allclose(grad(cross_about_last)(a), numerical_grad(cross_about_last, [a]),
                               rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(cross_about_last(a), cross_about_rows(a))


def cross_about_last(a):
    return np.sum(np.cross(np.moveaxis(a, 0, -1), a[::-1]))


def _jax():
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        return None, None
    return jax, jnp
