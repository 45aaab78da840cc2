"""The rejection and linear-algebra samplers (gamma, beta, dirichlet, poisson,
multivariate_normal, orthogonal) inside jit, grad, vmap and CUDA kernels.

Oracles: plain NumPy `transformer.random` (checked against JAX's recorded vectors in
test_random_samplers.py), the recorded vectors themselves, and finite differences. Quick
set: the element-wise forms without a compile, one compiled function with two samplers,
the grad refusals and their hints; the recorded-vector sweep under jit and jit(vmap) is
slow. CUDA: tests/cuda/test_cuda_random_heavy.py."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import transformer
from transformer import grad, jit, random, stop_gradient, vmap
from transformer.runtime import random_gamma, random_linalg, random_poisson
from transformer.test_util import numerical_grad

K = random.PRNGKey(3)
COV = np.array([[2.0, 0.3, 0.1], [0.3, 1.0, -0.2], [0.1, -0.2, 0.5]])
A7 = np.array([0.01, 0.3, 0.9, 1.0, 1.7, 5.0, 60.0])
SMALL = np.array([0.001, 0.002, 0.003, 0.004, 0.005, 0.006, 0.008, 0.01])
LAM = np.array([0.0, 0.5, 3.0, 9.9, 10.0, 25.0, 300.0, 1e4])


def same(got, want, rtol=0.0) -> None:
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (got, want)
    if rtol:
        np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * np.max(np.abs(want)))
    else:
        np.testing.assert_array_equal(got, want)

# ---------------------------------------------------------------- the scalar code itself


# name -> (runtime module, call); run in plain Python against transformer.random, no compile
PLAIN_CASES = {
    "gamma below and above 1": (random_gamma, lambda m: m.gamma(K, A7)),
    "gamma float32 tiny a": (random_gamma, lambda m: m.gamma(
        K, SMALL.astype(np.float32), dtype=np.float32)),
    "beta broadcast": (random_gamma, lambda m: m.beta(K, A7, 2.0)),
    "dirichlet batch": (random_gamma, lambda m: m.dirichlet(K, np.ones((2, 3)), (4, 2))),
    "dirichlet float32": (random_gamma, lambda m: m.dirichlet(
        K, np.array([0.2, 1.0, 3.0]), (2,), np.float32)),
    "poisson Knuth and rejection": (random_poisson, lambda m: m.poisson(K, LAM)),
    "poisson clamped to uint8": (random_poisson, lambda m: m.poisson(
        K, np.array([5.0, 300.0, 1e6]), dtype=np.uint8)),
    "poisson many rejection rounds": (random_poisson, lambda m: m.poisson(K, 40.0, (200,))),
}
LINALG_CASES = {
    "multivariate_normal eigh": lambda m: m.multivariate_normal(
        K, np.arange(3.0), COV, (4,), method="eigh"),
    "multivariate_normal svd, batched mean": lambda m: m.multivariate_normal(
        K, np.zeros((2, 3)), COV, method="svd"),
    "orthogonal wide": lambda m: m.orthogonal(K, 3, (2,), m=5),
}


@pytest.mark.parametrize("case", sorted(PLAIN_CASES) + sorted(LINALG_CASES))
def test_element_wise_forms_give_the_numpy_numbers(case):
    if case in LINALG_CASES:
        same(LINALG_CASES[case](random_linalg), LINALG_CASES[case](random), rtol=1e-13)
    else:
        module, draw = PLAIN_CASES[case]
        got, want = draw(module), draw(random)
        # float32: NumPy's SIMD exp/log of float32 arrays and the scalar code's may round
        # the last bit differently (NumPy 2.4 on AVX-512 does, near 1e-37); float64 is exact
        if np.asarray(want).dtype != np.float32:
            same(got, want)
            return
        assert np.asarray(got).dtype == np.float32 and np.shape(got) == np.shape(want)
        np.testing.assert_array_max_ulp(got, want, maxulp=2)

# ---------------------------------------------------------------- jit and vmap


def gamma_and_gaussian(k, a, cov):
    k1, k2 = random.split(k)
    return random.gamma(k1, a), random.multivariate_normal(k2, np.zeros(3), cov, (2,))


@pytest.mark.slow            # a compile of tens of seconds; CI runs it
def test_gamma_and_multivariate_normal_under_jit_and_vmap_give_the_numpy_numbers():
    a = np.array([0.3, 1.0, 4.0])
    got = jit(gamma_and_gaussian)(K, a, COV)
    want = gamma_and_gaussian(K, a, COV)
    same(got[0], want[0])
    same(got[1], want[1], rtol=1e-13)
    keys = random.split(K, 3)
    batched = vmap(gamma_and_gaussian, in_axes=(0, None, None))(keys, a, COV)
    for i, k in enumerate(keys):
        for g, w in zip(batched, gamma_and_gaussian(k, a, COV)):
            same(g[i], w, rtol=1e-13)

# ---------------------------------------------------------------- grad and jvp


def scaled_gamma(x, k):
    return np.sum(x * random.gamma(k, 2.0, (3,)))


def gamma_of(a, k):
    return np.sum(a * random.gamma(k, a))


def gamma_of_stopped(a, k):
    return np.sum(a * random.gamma(k, stop_gradient(a)))


def test_a_draw_with_constant_parameters_is_a_constant_of_the_derivative():
    x = np.array([0.5, -1.0, 2.0])
    got = grad(scaled_gamma)(x, K)
    np.testing.assert_allclose(got, numerical_grad(scaled_gamma, (x, K)), rtol=1e-7)
    np.testing.assert_array_equal(got, random.gamma(K, 2.0, (3,)))


def test_a_differentiated_gamma_parameter_is_refused_with_a_hint_that_works():
    a = np.array([0.5, 2.0, 3.0])
    with pytest.raises(transformer.TransformError) as info:
        grad(gamma_of)(a, K)
    message = str(info.value)
    assert "test_random_heavy_compiled.py" in message and "random.gamma(k, a)" in message
    assert "transformer.stop_gradient" in message
    np.testing.assert_array_equal(grad(gamma_of_stopped)(a, K), random.gamma(K, a))
    with pytest.raises(transformer.TransformError, match="random.gamma"):
        transformer.jvp(gamma_of, (a, K), (np.ones(3), np.zeros(2, np.uint32)))


def gaussian(mean, cov, k):
    return np.sum(random.multivariate_normal(k, mean, cov, (4,)) ** 2)


def gaussian_by_factor(mean, chol, k):
    return np.sum((mean + random.normal(k, (4,) + mean.shape[-1:]) @ chol.T) ** 2)


def test_a_differentiated_mean_or_cov_is_refused_and_the_factor_form_matches():
    mean = np.array([0.5, -1.0, 2.0])
    with pytest.raises(transformer.TransformError) as info:
        grad(gaussian)(mean, COV, K)
    message = str(info.value)
    assert "random.multivariate_normal(k, mean, cov, (4,))" in message
    assert "mean + random.normal(key, shape + mean.shape[-1:]) @ L.T" in message
    chol = np.linalg.cholesky(COV)
    assert gaussian_by_factor(mean, chol, K) == pytest.approx(gaussian(mean, COV, K), rel=1e-13)
    for argnum in (0, 1):
        np.testing.assert_allclose(
            grad(gaussian_by_factor, argnums=argnum)(mean, chol, K),
            numerical_grad(gaussian_by_factor, (mean, chol, K), argnum), rtol=1e-6)

# ---------------------------------------------------------------- the table


def test_the_table_of_primitives_says_what_each_sampler_supports():
    rows = {row["name"].rsplit(".", 1)[-1]: row for row in transformer.primitives()
            if row["name"].startswith("transformer.random.")}
    for name in ("gamma", "beta", "dirichlet", "poisson", "multivariate_normal", "orthogonal"):
        assert rows[name]["kind"] == "random" and rows[name]["jit"] and rows[name]["cuda"]
        assert "vmap over keys runs a loop" in rows[name]["reason"], name
    assert rows["poisson"]["grad"] and rows["orthogonal"]["grad"]
    for name in ("gamma", "beta", "dirichlet", "multivariate_normal"):
        assert not rows[name]["grad"] and not rows[name]["jvp"], name


# ---------------------------------------------------------------- JAX's vectors (slow)

VECTORS = Path(__file__).resolve().parents[1] / "data" / "jax_random_samplers.json"
RECORDED_CALLS = (
    "gamma(PRNGKey(7), np.array([0.01, 0.3, 0.9, 1.0, 1.7, 5.0, 60.0]))",
    "gamma(PRNGKey(3), 2.5, (2, 2))",
    "gamma(PRNGKey(3), np.float32(0.5), (5,), np.float32)",
    "gamma(PRNGKey(2), np.array([0.001, 0.002, 0.003, 0.004, 0.005, 0.006, 0.008, 0.01]))",
    "gamma(PRNGKey(2), np.array([0.001, 0.002, 0.003, 0.004, 0.005, 0.006, 0.008, 0.01])"
    ".astype(np.float32), dtype=np.float32)",
    "beta(PRNGKey(2), np.array([0.001, 0.002, 0.003, 0.004, 0.005, 0.006, 0.008, 0.01]), 1.0)",
    "beta(PRNGKey(7), np.array([0.01, 0.3, 0.9, 1.0, 1.7, 5.0, 60.0]), 2.0)",
    "beta(PRNGKey(3), np.float32(0.3), np.float32(0.7), (5,), np.float32)",
    "dirichlet(PRNGKey(7), np.array([0.5, 1.0, 2.0, 4.0]))",
    "dirichlet(PRNGKey(3), np.ones((2, 3)), (4, 2))",
    "poisson(PRNGKey(7), np.array([0.0, 0.5, 3.0, 9.9, 10.0, 25.0, 300.0, 1e4]))",
    "poisson(PRNGKey(3), 4.0, (6,), np.int32)",
    "poisson(PRNGKey(3), np.array([5.0, 300.0, 1e6]), dtype=np.uint8)",
    "poisson(PRNGKey(0), 3e38, (2,))",
    "multivariate_normal(PRNGKey(7), np.arange(3.0), np.array([[2.0, 0.3, 0.1], "
    "[0.3, 1.0, -0.2], [0.1, -0.2, 0.5]]), (4,))",
    "multivariate_normal(PRNGKey(7), np.arange(3.0), np.array([[2.0, 0.3, 0.1], "
    "[0.3, 1.0, -0.2], [0.1, -0.2, 0.5]]), (4,), method='eigh')",
    "multivariate_normal(PRNGKey(7), np.arange(3.0), np.array([[2.0, 0.3, 0.1], "
    "[0.3, 1.0, -0.2], [0.1, -0.2, 0.5]]), (4,), method='svd')",
    "multivariate_normal(PRNGKey(3), np.zeros((2, 3)), np.array([[2.0, 0.3, 0.1], "
    "[0.3, 1.0, -0.2], [0.1, -0.2, 0.5]]))",
    "orthogonal(PRNGKey(7), 4)",
    "orthogonal(PRNGKey(3), 3, (2,), m=5)",
    "orthogonal(PRNGKey(7), 5, (), np.float32, m=2)",
)


def recorded_draws(a7, small, lam, cov):
    k7, k3, k2, k0 = (random.PRNGKey(7), random.PRNGKey(3), random.PRNGKey(2),
                      random.PRNGKey(0))
    return (random.gamma(k7, a7), random.gamma(k3, 2.5, (2, 2)),
            random.gamma(k3, np.float32(0.5), (5,), np.float32), random.gamma(k2, small),
            random.gamma(k2, small.astype(np.float32), dtype=np.float32),
            random.beta(k2, small, 1.0), random.beta(k7, a7, 2.0),
            random.beta(k3, np.float32(0.3), np.float32(0.7), (5,), np.float32),
            random.dirichlet(k7, np.array([0.5, 1.0, 2.0, 4.0])),
            random.dirichlet(k3, np.ones((2, 3)), (4, 2)), random.poisson(k7, lam),
            random.poisson(k3, 4.0, (6,), np.int32),
            random.poisson(k3, np.array([5.0, 300.0, 1e6]), dtype=np.uint8),
            random.poisson(k0, 3e38, (2,)),
            random.multivariate_normal(k7, np.arange(3.0), cov, (4,)),
            random.multivariate_normal(k7, np.arange(3.0), cov, (4,), method="eigh"),
            random.multivariate_normal(k7, np.arange(3.0), cov, (4,), method="svd"),
            random.multivariate_normal(k3, np.zeros((2, 3)), cov),
            random.orthogonal(k7, 4), random.orthogonal(k3, 3, (2,), m=5),
            random.orthogonal(k7, 5, (), np.float32, m=2))


def check_recorded(draws) -> None:
    recorded = {case["call"]: case for case in json.loads(VECTORS.read_text())["cases"]}
    for call, got in zip(RECORDED_CALLS, draws, strict=True):
        case = recorded[call]
        want = np.array(case["value"], dtype=case["dtype"]).reshape(case["shape"])
        same(got, want, rtol=0.0 if case["exact"] else case["rtol"])


@pytest.mark.slow
def test_jax_known_answers_under_jit():
    check_recorded(recorded_draws(A7, SMALL, LAM, COV))      # the oracle agrees with NumPy
    check_recorded(jit(recorded_draws)(A7, SMALL, LAM, COV))


def per_key(k, a, lam):
    k1, k2, k3, k4 = random.split(k, 4)
    return (random.beta(k1, a, 2.0), random.dirichlet(k2, a), random.poisson(k3, lam),
            random.orthogonal(k4, 3, (2,)))


@pytest.mark.slow
def test_jit_of_vmap_over_split_keys_is_a_loop_over_the_keys():
    keys = random.split(K, 4)
    got = jit(vmap(per_key, in_axes=(0, None, None)))(keys, A7, LAM)
    for i, k in enumerate(keys):
        for g, w in zip(got, per_key(k, A7, LAM)):
            same(g[i], w, rtol=1e-13)


def batched_covariances(k, mean, covs):
    return random.multivariate_normal(k, mean, covs)


@pytest.mark.slow
def test_a_call_form_jit_does_not_take_is_a_located_error():
    with pytest.raises(transformer.TransformError) as info:
        jit(batched_covariances)(K, np.zeros((2, 3)), np.stack([COV, COV]))
    assert "cov.ndim == 2" in str(info.value)
    assert "multivariate_normal(k, mean, covs)" in str(info.value)
