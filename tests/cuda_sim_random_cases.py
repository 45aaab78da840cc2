"""Random draws in CUDA kernels on Numba's CUDA simulator; started by
tests/cuda/test_cuda_random.py in a process of its own (the simulator must be on before
numba is imported). The oracle is a loop over the keys in plain Python, whose draws
tests/api/test_random*.py check against JAX's vectors and the CPU backend; a few blocks
of threads only (the simulator runs every thread as a Python thread)."""
import json
from pathlib import Path

import numba
import numpy as np
import pytest

from transformer import grad, jit, random, vmap
from transformer.test_util import numerical_grad

pytestmark = pytest.mark.skipif(not numba.config.ENABLE_CUDASIM,
                                reason="needs NUMBA_ENABLE_CUDASIM=1 before numba is imported")

VECTORS = Path(__file__).resolve().parent / "data" / "jax_random.json"
KEYS = random.split(random.PRNGKey(7), 6)


def draws(x, k):
    u = random.uniform(k, (2, 3), minval=-1.0, maxval=2.0)
    keep = random.bernoulli(k, 0.3, (4,))
    z = random.normal(k, x.shape)
    n = random.randint(k, (3,), -2 ** 40, 2 ** 40)
    return np.sum(u) + np.sum(keep * x[0]) + np.sum(z * x) + random.normal(k) + \
        np.sum(n * x) + random.randint(k, (), -5, 5, np.int32)


def split_keys(x, k):
    k1, k2 = random.split(k)
    ks = random.split(k2, 3)
    return x * random.normal(k1, x.shape) + random.uniform(ks[2], x.shape)


def narrow(x, k):
    return x * random.normal(k, x.shape, dtype=np.float32) + random.uniform(k, (), np.float32)


def langevin_loss(x, k, eps):
    force = x ** 3 - 2.0 * x
    step = x - eps * force + np.sqrt(2.0 * eps) * random.normal(k, x.shape)
    return np.sum((step - 1.0) ** 2)


def test_draws_in_threads_equal_a_loop_over_the_keys():
    xs = np.linspace(-1.0, 1.0, 18).reshape(6, 3)
    got = jit(vmap(draws), backend="cuda")(xs, KEYS)
    assert np.array_equal(got, [draws(x, k) for x, k in zip(xs, KEYS)])
    got = jit(vmap(split_keys), backend="cuda")(xs, KEYS)
    assert np.array_equal(got, np.stack([split_keys(x, k) for x, k in zip(xs, KEYS)]))
    xs32 = xs.astype(np.float32)
    got32 = jit(vmap(narrow), backend="cuda")(xs32, KEYS)
    assert got32.dtype == np.float32
    assert np.array_equal(got32, np.stack([narrow(x, k) for x, k in zip(xs32, KEYS)]))


def test_langevin_gradient_in_threads_matches_finite_differences():
    xs = np.linspace(-1.2, 1.5, 18).reshape(6, 3)
    got = jit(vmap(grad(langevin_loss), in_axes=(0, 0, None)), backend="cuda")(xs, KEYS, 0.1)
    for x, k, g in zip(xs, KEYS, got):
        np.testing.assert_allclose(g, numerical_grad(langevin_loss, (x, k, 0.1)), rtol=1e-6)


def vector_draws(k):
    return (random.uniform(k, (5,), np.float32), random.normal(k, (6,)),
            random.uniform(k, (2, 3), minval=-1.0, maxval=2.0),
            random.bernoulli(k, 0.3, (8,)), random.bits(k, (8,), np.uint32),
            random.randint(k, (6,), 0, 10))


def test_jax_known_answers_in_threads():
    recorded = {case["name"]: case for case in json.loads(VECTORS.read_text())["cases"]}
    names = ("uniform(PRNGKey(42), (5,), float32)", "normal(PRNGKey(42), (6,), float64)",
             "uniform(PRNGKey(42), (2,3), float64, -1, 2)",
             "bernoulli(PRNGKey(42), 0.3, (8,))", "bits(PRNGKey(42), (8,), uint32)",
             "randint(PRNGKey(42), (6,), 0, 10)")
    keys = np.stack([random.PRNGKey(42)] * 3)
    got = jit(vmap(vector_draws), backend="cuda")(keys)
    for label, rows in zip(names, got):
        case = recorded[label]
        want = np.array(case["value"], dtype=case["dtype"]).reshape(case["shape"])
        for row in rows:
            assert row.dtype == want.dtype and np.array_equal(row, want), label
