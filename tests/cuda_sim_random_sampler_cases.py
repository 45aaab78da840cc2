"""exponential, laplace, logistic, gumbel, truncated_normal, fold_in and PRNGKey in CUDA
threads on Numba's CUDA simulator; started by tests/cuda/test_cuda_random_samplers.py in a
process of its own (the simulator must be on before numba is imported). Oracles: JAX's
recorded vectors, and a loop over the keys in plain Python (whose draws
tests/api/test_random_samplers*.py check against JAX and the CPU backend). A few threads
only (the simulator runs every thread as a Python thread)."""
import json
from pathlib import Path

import numba
import numpy as np
import pytest

from transformer import jit, random, vmap

pytestmark = pytest.mark.skipif(not numba.config.ENABLE_CUDASIM,
                                reason="needs NUMBA_ENABLE_CUDASIM=1 before numba is imported")

DATA = Path(__file__).resolve().parent / "data"
KEYS = random.split(random.PRNGKey(7), 3)


def keyed_draws(x, k, seed):
    folded = random.fold_in(k, 3)
    fresh = random.PRNGKey(seed)
    wait = random.exponential(folded, (3,))
    heavy = random.laplace(fresh, (2,), np.float32)
    extreme = random.gumbel(k, (3,), mode="high")
    inside = random.truncated_normal(k, -1.0, x[0], (3,))
    return np.sum(wait * x) + np.sum(heavy) + np.sum(extreme * x) + np.sum(inside) + \
        random.logistic(folded) + random.truncated_normal(fresh, -np.inf, 0.0)


def test_draws_and_keys_made_in_threads_equal_a_loop_over_the_keys():
    xs = np.linspace(0.25, 1.5, 9).reshape(3, 3)
    seeds = np.array([0, -5, 2 ** 40 + 3])
    got = jit(vmap(keyed_draws), backend="cuda")(xs, KEYS, seeds)
    want = [keyed_draws(x, k, s) for x, k, s in zip(xs, KEYS, seeds)]
    assert np.array_equal(got, want)


def thread_keys(k):
    folded = random.fold_in(k, 7)
    made = random.PRNGKey(2147483647)
    return random.bits(folded, (2,), np.uint32), random.bits(made, (2,), np.uint32)


def recorded_draws(k7, k3):
    return (random.exponential(k7, (6,)), random.exponential(k3, (2, 3), np.float32),
            random.laplace(k7, (6,)), random.laplace(k3, (5,), np.float32),
            random.logistic(k7, (6,)), random.logistic(k3, (5,), np.float32),
            random.gumbel(k7, (6,)), random.gumbel(k3, (5,), np.float32),
            random.gumbel(k7, (5,), mode="high"),
            random.gumbel(k7, (6,), np.float32, mode="highest"),
            random.truncated_normal(k7, -1.5, 0.7, (6,)),
            random.truncated_normal(k3, 2.0, 5.0, (4,), np.float32))


RECORDED = (
    "exponential(PRNGKey(7), (6,))", "exponential(PRNGKey(3), (2, 3), np.float32)",
    "laplace(PRNGKey(7), (6,))", "laplace(PRNGKey(3), (5,), np.float32)",
    "logistic(PRNGKey(7), (6,))", "logistic(PRNGKey(3), (5,), np.float32)",
    "gumbel(PRNGKey(7), (6,))", "gumbel(PRNGKey(3), (5,), np.float32)",
    "gumbel(PRNGKey(7), (5,), mode='high')",
    "gumbel(PRNGKey(7), (6,), np.float32, mode='highest')",
    "truncated_normal(PRNGKey(7), -1.5, 0.7, (6,))",
    "truncated_normal(PRNGKey(3), 2.0, 5.0, (4,), np.float32)")


def _recorded(path: str, field: str, names) -> list:
    cases = {case[field]: case for case in json.loads((DATA / path).read_text())["cases"]}
    return [np.array(cases[n]["value"], cases[n]["dtype"]).reshape(cases[n]["shape"])
            for n in names]


def test_jax_known_answers_in_threads():
    k7s = np.stack([random.PRNGKey(7)] * 2)
    k3s = np.stack([random.PRNGKey(3)] * 2)
    got = jit(vmap(recorded_draws), backend="cuda")(k7s, k3s)
    assert len(got) == len(RECORDED)
    for label, rows, want in zip(RECORDED, got, _recorded("jax_random_samplers.json", "call",
                                                          RECORDED)):
        for row in rows:
            assert row.dtype == want.dtype and np.array_equal(row, want), label


def test_jax_keys_made_in_threads():
    folded, made = _recorded("jax_random.json", "name",
                             ("fold_in(PRNGKey(42), 7)", "PRNGKey(2147483647)"))
    got = jit(vmap(thread_keys), backend="cuda")(np.stack([random.PRNGKey(42)] * 2))
    for rows, key in zip(got, (folded, made)):
        for row in rows:      # the thread's key drew these bits: those of the recorded key
            assert np.array_equal(row, random.bits(key, (2,), np.uint32))
