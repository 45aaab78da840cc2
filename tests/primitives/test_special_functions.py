"""scipy.special's reductions (logsumexp, softmax, log_softmax) and the special values of
the elementwise special functions (the registry-generated tests cover the rest).

Oracles: SciPy itself, finite differences (`transformer.test_util`), a loop over examples,
and hand derivations (the Hessian of logsumexp, the limits of sinc at 0). The compiled
checks share one jitted function in the quick set; the heavier sweeps are marked slow.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.special
import scipy.special as sp
from scipy.special import expit, log_softmax, logsumexp, softmax, xlogy

import transformer
from transformer import grad, hessian, jit, jvp, vmap
from transformer.test_util import check_jvp, check_vjp

LOGITS = np.array([[0.3, -1.2, 2.0, 0.5], [1e3, -1e3, 999.0, 0.0], [-0.7, 0.1, 0.4, -2.5]])


def normalizers(x):
    """The three reductions along the rows, as one function (one compile)."""
    return logsumexp(x, axis=1), softmax(x, axis=1), sp.log_softmax(x, axis=1)


def other_axes(x):
    return (scipy.special.logsumexp(x), logsumexp(x, axis=0, keepdims=True),
            softmax(x), log_softmax(x, axis=-2),
            logsumexp(x, axis=1, b=np.cos(x), return_sign=True))


@pytest.mark.slow
@pytest.mark.parametrize("f, oracle", [
    (normalizers, lambda x: (sp.logsumexp(x, axis=1), sp.softmax(x, axis=1),
                             sp.log_softmax(x, axis=1))),
    pytest.param(other_axes, lambda x: (sp.logsumexp(x), sp.logsumexp(x, axis=0, keepdims=True),
                                        sp.softmax(x), sp.log_softmax(x, axis=-2),
                                        sp.logsumexp(x, axis=1, b=np.cos(x), return_sign=True)),
                 marks=pytest.mark.slow)], ids=["rows", "other_axes"])
def test_the_reductions_under_jit_match_scipy_and_stay_finite_at_large_logits(f, oracle):
    got = jit(f)(LOGITS)
    for g, want in zip(got, oracle(LOGITS)):
        assert np.all(np.isfinite(g)) and np.shape(g) == np.shape(want)
        np.testing.assert_allclose(g, want, rtol=1e-13, atol=1e-300)


# ---------------------------------------------------------------- derivatives


def lse_rows(x):
    return np.sum(logsumexp(x, axis=1) * np.array([1.0, 2.0, -0.5]))


def lse_all(x):
    return logsumexp(x) * 1.5


def lse_kept(x):
    return np.sum(sp.logsumexp(x, axis=0, keepdims=True) ** 2)


def softmax_weighted(x):
    return np.sum(softmax(x, axis=-1) * np.arange(12.0).reshape(3, 4))


def softmax_all(x):
    return np.sum(scipy.special.softmax(x) ** 2)


def log_softmax_cols(x):
    return np.sum(log_softmax(x, axis=0) * np.cos(x))


REDUCTIONS = [lse_rows, lse_all, lse_kept, softmax_weighted, softmax_all, log_softmax_cols]
X = np.random.default_rng(0).normal(size=(3, 4))


@pytest.mark.parametrize("f", REDUCTIONS, ids=lambda f: f.__name__)
def test_reduction_gradients_match_finite_differences(f):
    check_vjp(f, [X])
    check_jvp(f, [X])


@pytest.mark.parametrize("f", REDUCTIONS, ids=lambda f: f.__name__)
def test_vmap_of_a_reduction_matches_a_loop_over_examples(f):
    xs = np.random.default_rng(1).normal(size=(5, 3, 4))
    np.testing.assert_allclose(vmap(f)(xs), [f(x) for x in xs], rtol=1e-13)


def log_softmax_all(x):
    return np.sum(log_softmax(x) * np.cos(x))


lse_each, softmax_each, log_softmax_each = (vmap(lse_all), vmap(softmax_all),
                                            vmap(log_softmax_all))


def vmapped_lse(xs):                 # grad of a vmap: the per-example forms' own rules
    return np.sum(np.sin(lse_each(xs)))


def vmapped_softmax(xs):
    return np.sum(np.sin(softmax_each(xs)))


def vmapped_log_softmax(xs):
    return np.sum(np.sin(log_softmax_each(xs)))


@pytest.mark.slow
@pytest.mark.parametrize("f", [vmapped_lse, vmapped_softmax, vmapped_log_softmax],
                         ids=lambda f: f.__name__)
def test_derivatives_through_a_vmap_of_a_whole_array_reduction(f):
    xs = np.random.default_rng(2).normal(size=(4, 3, 2))
    check_vjp(f, [xs])
    check_jvp(f, [xs])
    h = hessian(f)(xs[:2]).reshape(12, 12)
    fd = np.stack([(grad(f)(xs[:2] + 1e-5 * e.reshape(2, 3, 2)) -
                    grad(f)(xs[:2] - 1e-5 * e.reshape(2, 3, 2))).ravel() / 2e-5
                   for e in np.eye(12)], axis=1)
    np.testing.assert_allclose(h, fd, atol=1e-6)


def test_hessian_of_logsumexp_is_the_softmax_covariance():
    x = X[0]
    p = sp.softmax(x)
    np.testing.assert_allclose(hessian(lse_all)(x), 1.5 * (np.diag(p) - np.outer(p, p)),
                               atol=1e-14)


def test_gradients_at_logits_of_1e3_are_the_softmax_and_finite():
    g = grad(lse_rows)(LOGITS)
    assert np.all(np.isfinite(g))
    np.testing.assert_allclose(g, sp.softmax(LOGITS, axis=1) * [[1.0], [2.0], [-0.5]],
                               atol=1e-15)
    _, tangent = jvp(softmax_weighted, (LOGITS,), (np.ones_like(LOGITS),))
    assert tangent == pytest.approx(0.0, abs=1e-12)      # softmax ignores a common shift


def lse_weighted(x):
    return logsumexp(x, b=np.array([1.0, 2.0, 3.0, 4.0]))


def lse_signed(x):
    return logsumexp(x, return_sign=True)[0]


@pytest.mark.parametrize("f, hint", [(lse_weighted, "logsumexp(a + np.log(b))"),
                                     (lse_signed, "return_sign=True")])
def test_arguments_without_a_derivative_rule_are_located_errors(f, hint):
    with pytest.raises(transformer.TransformError) as info:
        grad(f)(X[0])
    message = str(info.value)
    assert "test_special_functions.py" in message and hint in message
    assert "logsumexp(x" in message                  # the user's line


def test_the_hint_for_weights_gives_the_weighted_value_and_gradient():
    b = np.array([1.0, 2.0, 3.0, 4.0])

    def hinted(x):
        return logsumexp(x + np.log(b))
    assert hinted(X[0]) == pytest.approx(sp.logsumexp(X[0], b=b), rel=1e-14)
    check_vjp(hinted, [X[0]])


# ---------------------------------------------------------------- elementwise special values


def sinc_at(x):
    return np.sinc(x)


def test_sinc_at_zero_has_value_one_slope_zero_and_curvature_minus_pi_squared_over_3():
    assert sinc_at(0.0) == 1.0
    assert grad(sinc_at)(0.0) == 0.0
    assert grad(grad(sinc_at))(0.0) == pytest.approx(-math.pi ** 2 / 3, rel=1e-12)
    assert grad(grad(sinc_at))(0.7) == pytest.approx(
        (np.sinc(0.7 + 1e-4) - 2 * np.sinc(0.7) + np.sinc(0.7 - 1e-4)) / 1e-8, rel=1e-5)


def xlogy_of(x, y):
    return xlogy(x, y)


def test_xlogy_is_zero_at_the_origin_with_jaxs_derivatives():
    assert xlogy_of(0.0, 0.0) == 0.0
    dx, dy = grad(xlogy_of, argnums=(0, 1))(0.0, 2.0)
    assert dx == pytest.approx(math.log(2.0)) and dy == 0.0     # log(y), x / y


def expit_sum(x):
    return np.sum(expit(x))


def logit_of_expit(x):
    return np.sum(sp.logit(expit(x)))


def test_expit_and_logit_are_finite_at_the_tails():
    x = np.array([-1000.0, -40.0, 0.0, 30.0, 1000.0])
    g = grad(expit_sum)(x)
    np.testing.assert_allclose(g, sp.expit(x) * (1.0 - sp.expit(x)), rtol=1e-14)
    assert g[0] == 0.0 and g[-1] == 0.0
    inner = np.array([-30.0, -2.0, 0.5, 20.0])
    np.testing.assert_allclose(grad(logit_of_expit)(inner), np.ones(4), rtol=1e-6)


def gammaln_sum(x):
    return np.sum(sp.gammaln(x)) + math.lgamma(x[0])


def test_gammaln_gradient_is_digamma_and_its_hessian_trigamma():
    x = np.array([0.3, 2.5, 11.0, -1.5])
    want = sp.digamma(x) + np.array([sp.digamma(0.3), 0.0, 0.0, 0.0])
    np.testing.assert_allclose(grad(gammaln_sum)(x), want, rtol=1e-12)
    np.testing.assert_allclose(np.diag(hessian(gammaln_sum)(x)),
                               sp.polygamma(1, x) + [sp.polygamma(1, 0.3), 0, 0, 0],
                               rtol=1e-12)


def test_scipy_special_functions_are_listed_with_every_transformation():
    rows = {row["name"]: row for row in transformer.primitives()}
    for name in ("scipy.special.expit", "scipy.special.logit", "scipy.special.xlogy",
                 "scipy.special.erf", "scipy.special.gammaln", "numpy.sinc",
                 "math.lgamma", "math.erfc", "numpy.rad2deg"):
        assert all(rows[name][t] for t in ("grad", "jvp", "vmap", "jit", "cuda")), rows[name]
    for name in ("scipy.special.logsumexp", "scipy.special.softmax",
                 "scipy.special.log_softmax"):
        assert rows[name]["kind"] == "reduction"
        assert all(rows[name][t] for t in ("grad", "jvp", "vmap", "jit")), rows[name]
        assert "cuda: a reduction along an axis" in rows[name]["reason"]


# ---------------------------------------------------------------- compiled sweeps


@pytest.mark.slow
@pytest.mark.parametrize("f", REDUCTIONS, ids=lambda f: f.__name__)
def test_compiled_gradient_and_vmap_of_a_reduction_match_python(f):
    np.testing.assert_allclose(jit(grad(f))(X), grad(f)(X), rtol=1e-13)
    xs = np.random.default_rng(2).normal(size=(4, 3, 4))
    np.testing.assert_allclose(jit(vmap(f))(xs), vmap(f)(xs), rtol=1e-13)


def special_values(x):
    """Values at the edges of the domains, compiled: tails, removable points, underflow."""
    return (np.sinc(x - x), expit(1e3 * x), sp.logit(expit(20.0 * x)), xlogy(x - x, x - x),
            sp.log_ndtr(-40.0 * x), sp.ndtri(1e-300 * x), sp.erfinv(x * 0.999999),
            sp.entr(x - x), sp.kl_div(x, 2.0 * x), sp.gammaln(1e5 * x))


@pytest.mark.slow
def test_compiled_special_values_match_scipy_at_the_edges():
    x = np.array([0.25, 1.0, 0.5])
    got = jit(special_values)(x)
    with np.errstate(all="ignore"):
        for g, want in zip(got, _scipy_values(x)):
            np.testing.assert_allclose(g, want, rtol=1e-13)


def _scipy_values(x):
    return (np.sinc(x - x), sp.expit(1e3 * x), sp.logit(sp.expit(20.0 * x)),
            sp.xlogy(x - x, x - x), sp.log_ndtr(-40.0 * x), sp.ndtri(1e-300 * x),
            sp.erfinv(x * 0.999999), sp.entr(x - x), sp.kl_div(x, 2.0 * x),
            sp.gammaln(1e5 * x))


def expit_three_ways(x):
    return np.sum(expit(x) + sp.expit(x) + scipy.special.expit(x))


def test_scipy_special_is_recognized_however_it_is_imported():
    x = np.array([-2.0, 0.0, 3.0])
    np.testing.assert_allclose(grad(expit_three_ways)(x),
                               3.0 * sp.expit(x) * (1.0 - sp.expit(x)), rtol=1e-14)
    np.testing.assert_allclose(vmap(expit_three_ways)(np.stack([x, -x])),
                               [expit_three_ways(x), expit_three_ways(-x)], rtol=1e-14)
