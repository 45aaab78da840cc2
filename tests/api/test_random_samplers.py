"""transformer.random's further samplers: JAX's known answers, distributions, errors.

The known answers were recorded from jax.random (tests/data/record_jax_samplers.py) and
need no JAX here.  The distribution checks compare sample moments with closed forms.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from transformer import random as R
from transformer import random_samplers

VECTORS = Path(__file__).resolve().parents[1] / "data" / "jax_random_samplers.json"
NAMESPACE = {"np": np, **{name: getattr(R, name) for name in R.__all__}}
K = R.PRNGKey(11)


def _load_cases():
    data = json.loads(VECTORS.read_text())
    return [pytest.param(case, id=case["call"][:70]) for case in data["cases"]]


@pytest.mark.parametrize("case", _load_cases())
def test_sampler_matches_jax(case):
    got = eval(case["call"], NAMESPACE)  # noqa: S307 - calls recorded in the repository
    expected = np.array(case["value"], dtype=case["dtype"]).reshape(case["shape"])
    assert got.dtype == expected.dtype
    assert got.shape == expected.shape
    if case["exact"]:
        np.testing.assert_array_equal(got, expected)
    else:
        scale = float(np.max(np.abs(expected)))
        np.testing.assert_allclose(got, expected, rtol=case["rtol"], atol=case["rtol"] * scale)


def test_every_sampler_has_a_known_answer():
    calls = [case["call"] for case in json.loads(VECTORS.read_text())["cases"]]
    for name in random_samplers.__all__:
        assert any(call.startswith(name + "(") for call in calls), name


def test_bits_default_dtype_is_jax_x64_default():
    assert R.bits(K).dtype == np.uint64
    assert R.bits(K, (2,), np.uint32).dtype == np.uint32


# ---------------------------------------------------------------------------
# Distributions (independent oracles: closed-form moments)
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "sample, mean, var",
    [
        (lambda k: R.exponential(k, (40_000,)), 1.0, 1.0),
        (lambda k: R.laplace(k, (40_000,)), 0.0, 2.0),
        (lambda k: R.logistic(k, (40_000,)), 0.0, math.pi**2 / 3),
        (lambda k: R.gumbel(k, (40_000,)), np.euler_gamma, math.pi**2 / 6),
        (lambda k: R.gumbel(k, (40_000,), np.float32, "highest"), np.euler_gamma, math.pi**2 / 6),
        (lambda k: R.poisson(k, 3.5, (40_000,)), 3.5, 3.5),
        (lambda k: R.poisson(k, 40.0, (40_000,)), 40.0, 40.0),
    ],
)
def test_sample_moments(sample, mean, var):
    x = sample(K).astype(np.float64)
    n = x.size
    assert abs(x.mean() - mean) < 5 * math.sqrt(var / n)
    assert abs(x.var() / var - 1.0) < 0.05


def test_truncated_normal_stays_inside_and_matches_mean():
    lo, hi = -0.5, 1.5
    x = R.truncated_normal(K, lo, hi, (40_000,))
    assert (x > lo).all() and (x < hi).all()
    phi = lambda t: math.exp(-t * t / 2) / math.sqrt(2 * math.pi)  # noqa: E731
    cdf = lambda t: 0.5 * (1 + math.erf(t / math.sqrt(2)))  # noqa: E731
    mean = (phi(lo) - phi(hi)) / (cdf(hi) - cdf(lo))
    assert abs(x.mean() - mean) < 0.01


def test_categorical_frequencies_follow_softmax():
    logits = np.array([0.0, 1.0, -1.0, 2.0])
    draws = R.categorical(K, logits, shape=(40_000,))
    freq = np.bincount(draws, minlength=4) / draws.size
    np.testing.assert_allclose(freq, np.exp(logits) / np.exp(logits).sum(), atol=0.01)
    picked = R.categorical(K, logits, shape=(4,), replace=False)
    np.testing.assert_array_equal(np.sort(picked), np.arange(4))


def test_gamma_beta_dirichlet_moments():
    n = 20_000
    g = R.gamma(K, np.array([0.4, 3.0]), (n, 2))
    assert (g >= 0).all()
    np.testing.assert_allclose(g.mean(axis=0), [0.4, 3.0], atol=5 * math.sqrt(3.0 / n))
    # The sample variance of Gamma(a) has relative spread sqrt((2 + 6 / a) / n): 3% at a=0.4.
    np.testing.assert_allclose(g.var(axis=0), [0.4, 3.0], rtol=0.15)
    b = R.beta(K, 2.0, 5.0, (n,))
    assert ((b >= 0) & (b <= 1)).all()
    assert abs(b.mean() - 2 / 7) < 5 * math.sqrt(10 / (49 * 8) / n)
    d = R.dirichlet(K, np.array([1.0, 2.0, 3.0]), (n,))
    np.testing.assert_allclose(d.sum(axis=-1), 1.0, rtol=1e-12)
    np.testing.assert_allclose(d.mean(axis=0), [1 / 6, 2 / 6, 3 / 6], atol=5 * math.sqrt(0.04 / n))


def test_multivariate_normal_covariance():
    cov = np.array([[2.0, 0.6], [0.6, 1.0]])
    for method in ("cholesky", "eigh", "svd"):
        x = R.multivariate_normal(K, np.array([1.0, -1.0]), cov, (40_000,), method=method)
        np.testing.assert_allclose(x.mean(axis=0), [1.0, -1.0], atol=0.03)
        np.testing.assert_allclose(np.cov(x.T), cov, atol=0.05)
    singular = np.array([[1.0, 1.0], [1.0, 1.0]])
    y = R.multivariate_normal(K, np.zeros(2), singular, (5,), method="svd")
    np.testing.assert_allclose(y[:, 0], y[:, 1], atol=1e-7)


def test_orthogonal_is_orthonormal():
    q = R.orthogonal(K, 4, (3,))
    np.testing.assert_allclose(q @ np.swapaxes(q, -1, -2), np.broadcast_to(np.eye(4), (3, 4, 4)),
                               atol=1e-12)
    wide = R.orthogonal(K, 2, m=5)
    assert wide.shape == (2, 5)
    np.testing.assert_allclose(wide @ wide.T, np.eye(2), atol=1e-12)


def test_samplers_are_deterministic_and_keep_keys():
    k = R.PRNGKey(5)
    np.testing.assert_array_equal(R.gamma(k, 2.0, (3,)), R.gamma(k, 2.0, (3,)))
    np.testing.assert_array_equal(R.poisson(k, 2.0, (3,)), R.poisson(k, 2.0, (3,)))
    np.testing.assert_array_equal(k, R.PRNGKey(5))


# ---------------------------------------------------------------------------
# Error paths
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "call, error, match",
    [
        (lambda: R.exponential(K, (2,), np.int32), TypeError, "float16/32/64"),
        (lambda: R.gumbel(K, (2,), mode="medium"), ValueError, "mode"),
        (lambda: R.categorical(K, np.ones((2, 3)), shape=(4,)), ValueError, "broadcast"),
        (lambda: R.categorical(K, np.ones(3), axis=1), ValueError, "out of bounds"),
        (lambda: R.categorical(K, 1.0), ValueError, "at least one dimension"),
        (lambda: R.categorical(K, np.ones(3), shape=(4,), replace=False), ValueError, "exceed"),
        (lambda: R.truncated_normal(K, np.zeros(2), 1.0, (3,)), ValueError, "broadcast"),
        (lambda: R.truncated_normal(K, "a", 1.0), TypeError, "real"),
        (lambda: R.gamma(K, -1.0), ValueError, ">= 0"),
        (lambda: R.gamma(K, np.array([1.0, np.nan])), ValueError, "NaN"),
        (lambda: R.gamma(K, np.ones(3), (2,)), ValueError, "broadcast"),
        (lambda: R.beta(K, 1.0, -0.5), ValueError, "b must be"),
        (lambda: R.dirichlet(K, 1.0), ValueError, "alpha.ndim >= 1"),
        (lambda: R.dirichlet(K, np.ones((2, 3)), (3,)), ValueError, "broadcast"),
        (lambda: R.poisson(K, -2.0), ValueError, "lam must be"),
        (lambda: R.poisson(K, np.inf), ValueError, "finite"),
        (lambda: R.poisson(K, 1.0, (2,), np.float64), TypeError, "integer dtype"),
        (lambda: R.multivariate_normal(K, np.zeros(2), np.eye(2), method="qr"), ValueError,
         "method"),
        (lambda: R.multivariate_normal(K, np.zeros(2), np.eye(3)), ValueError, "n=2"),
        (lambda: R.multivariate_normal(K, 0.0, np.eye(1)), ValueError, "mean.ndim"),
        (lambda: R.multivariate_normal(K, np.zeros(2), np.ones((2, 2))), ValueError,
         "method='svd'"),
        (lambda: R.orthogonal(K, -1), ValueError, "non-negative"),
        (lambda: R.orthogonal(K, 2.5), TypeError, "integer"),
        (lambda: R.gamma(np.zeros(3, np.uint32), 1.0), TypeError, "shape \\(2,\\)"),
    ],
)
def test_bad_arguments_raise_clear_errors(call, error, match):
    with pytest.raises(error, match=match):
        call()
