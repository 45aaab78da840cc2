"""gamma, beta, dirichlet, poisson, orthogonal and multivariate_normal in CUDA threads on
Numba's CUDA simulator; started by tests/cuda/test_cuda_random_heavy.py in a process of
its own (the simulator must be on before numba is imported). Oracles: a loop over the keys in
plain Python, and JAX's recorded vectors (tests/data/jax_random_samplers.json). A few
threads only."""
import json
from pathlib import Path

import numba
import numpy as np
import pytest

from transformer import jit, random, vmap

pytestmark = pytest.mark.skipif(not numba.config.ENABLE_CUDASIM,
                                reason="needs NUMBA_ENABLE_CUDASIM=1 before numba is imported")

VECTORS = Path(__file__).resolve().parent / "data" / "jax_random_samplers.json"
KEYS = random.split(random.PRNGKey(7), 4)


def heavy(x, k):
    k1, k2 = random.split(k)
    shape = x[0] + 1.0
    g = random.gamma(k1, 0.7, (3,))
    b = random.beta(k2, shape, 2.0)
    d = random.dirichlet(k1, x * x + 0.2, (2,))
    n = random.poisson(k, 40.0, (4,))
    m = random.poisson(k2, 3.5)
    return np.sum(g * x) + b + np.sum(n) + m + np.sum(d * d)


def test_gamma_beta_dirichlet_poisson_in_threads_equal_a_loop_over_the_keys():
    xs = np.linspace(-0.5, 1.0, 12).reshape(4, 3)
    got = jit(vmap(heavy), backend="cuda")(xs, KEYS)
    assert np.array_equal(got, [heavy(x, k) for x, k in zip(xs, KEYS)])


COV = np.array([[2.0, 0.3, 0.1], [0.3, 1.0, -0.2], [0.1, -0.2, 0.5]])


def gaussian(mean, k, cov):
    return random.multivariate_normal(k, mean, cov, (2,))


def test_multivariate_normal_in_threads_equals_a_loop_over_the_keys_to_rounding():
    means = np.linspace(-1.0, 1.0, 12).reshape(4, 3)
    got = jit(vmap(gaussian, in_axes=(0, 0, None)), backend="cuda")(means, KEYS, COV)
    assert got.shape == (4, 2, 3)
    for i, k in enumerate(KEYS):
        np.testing.assert_allclose(got[i], gaussian(means[i], k, COV), rtol=1e-12, atol=1e-14)


def rotations(k):
    k1, k2 = random.split(k)
    return random.orthogonal(k1, 3), random.orthogonal(k2, 2, (2,), np.float32, m=4)


def test_orthogonal_in_threads_equals_a_loop_over_the_keys_to_rounding():
    square, wide = jit(vmap(rotations), backend="cuda")(KEYS)
    assert square.shape == (4, 3, 3) and wide.shape == (4, 2, 2, 4)
    assert wide.dtype == np.float32
    for i, k in enumerate(KEYS):
        want_square, want_wide = rotations(k)
        np.testing.assert_allclose(square[i], want_square, rtol=1e-12, atol=1e-13)
        np.testing.assert_allclose(wide[i], want_wide, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(square[i] @ square[i].T, np.eye(3), atol=1e-13)


def recorded(k):
    return (random.gamma(k, 2.5, (2, 2)), random.poisson(k, 4.0, (6,), np.int32),
            random.beta(k, np.float32(0.3), np.float32(0.7), (5,), np.float32),
            random.gamma(k, np.float32(0.5), (5,), np.float32),
            random.orthogonal(k, 3, (2,), m=5), random.dirichlet(k, np.ones(3), (4, 2)))


def test_jax_known_answers_in_threads():
    cases = {case["call"]: case for case in json.loads(VECTORS.read_text())["cases"]}
    calls = ("gamma(PRNGKey(3), 2.5, (2, 2))", "poisson(PRNGKey(3), 4.0, (6,), np.int32)",
             "beta(PRNGKey(3), np.float32(0.3), np.float32(0.7), (5,), np.float32)",
             "gamma(PRNGKey(3), np.float32(0.5), (5,), np.float32)",
             "orthogonal(PRNGKey(3), 3, (2,), m=5)",
             "dirichlet(PRNGKey(3), np.ones((2, 3)), (4, 2))")
    got = jit(vmap(recorded), backend="cuda")(np.stack([random.PRNGKey(3)] * 2))
    for call, rows in zip(calls, got):
        case = cases[call]
        want = np.array(case["value"], dtype=case["dtype"]).reshape(case["shape"])
        for row in rows:
            assert row.dtype == want.dtype
            if case["exact"]:
                assert np.array_equal(row, want), call
            else:
                np.testing.assert_allclose(row, want, rtol=case["rtol"])


def by_factor(mean, k, factor):
    return mean + factor @ random.normal(k, (3,))


def test_the_factor_the_eigh_refusal_suggests_gives_the_draws_of_method_eigh():
    w, v = np.linalg.eigh(COV)
    means = np.linspace(-1.0, 1.0, 12).reshape(4, 3)
    got = jit(vmap(by_factor, in_axes=(0, 0, None)), backend="cuda")(means, KEYS,
                                                                     v * np.sqrt(w))
    for i, k in enumerate(KEYS):
        want = random.multivariate_normal(k, means[i], COV, method="eigh")
        np.testing.assert_allclose(got[i], want, rtol=1e-12, atol=1e-14)
