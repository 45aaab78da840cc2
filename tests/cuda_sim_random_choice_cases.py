"""categorical, permutation and choice in CUDA threads on Numba's CUDA simulator; started by
tests/cuda/test_cuda_random_choice.py in a process of its own (the simulator must be on
before numba is imported). Oracles: JAX's recorded vectors
(tests/data/jax_random_samplers.json) and a loop over split keys in plain Python. Two or
three threads per kernel (the simulator runs every thread as a Python thread)."""
import json
from pathlib import Path

import numba
import numpy as np
import pytest

from transformer import jit, random, vmap

pytestmark = pytest.mark.skipif(not numba.config.ENABLE_CUDASIM,
                                reason="needs NUMBA_ENABLE_CUDASIM=1 before numba is imported")

VECTORS = Path(__file__).resolve().parent / "data" / "jax_random_samplers.json"
LOGITS = np.array([[0.5, -1.0, 2.0, 0.0, 1.0], [3.0, 0.1, -2.0, 0.2, 0.3], [0.0] * 5])
P = np.array([0.1, 0.2, 0.3, 0.15, 0.25])
ITEMS = np.linspace(0.0, 1.0, 7)


def recorded(k7, k3, k5, logits, logits32, items, p, p32):
    return (random.categorical(k7, logits), random.categorical(k7, logits, axis=0),
            random.categorical(k3, logits, shape=(4, 3)),
            random.categorical(k3, logits, shape=(2, 3), replace=False),
            random.categorical(k3, logits, axis=0, shape=(2, 5), replace=False),
            random.categorical(k7, logits32, mode="high"),
            random.categorical(k5, logits[0], shape=(3,)),
            random.categorical(k5, logits32, axis=0, mode="high"),
            random.permutation(k7, 10), random.permutation(k3, items),
            random.choice(k7, 10, (5,)), random.choice(k3, items, (2, 3)),
            random.choice(k7, 10, (4,), replace=False), random.choice(k7, 5, (6,), p=p),
            random.choice(k3, 5, (3,), replace=False, p=p), random.choice(k3, 5, (4,), p=p32),
            random.choice(k7, 5, (2,), replace=False, p=p32))


RECORDED = (
    "categorical(PRNGKey(7), {L})", "categorical(PRNGKey(7), {L}, axis=0)",
    "categorical(PRNGKey(3), {L}, shape=(4, 3))",
    "categorical(PRNGKey(3), {L}, shape=(2, 3), replace=False)",
    "categorical(PRNGKey(3), {L}, axis=0, shape=(2, 5), replace=False)",
    "categorical(PRNGKey(7), {L}.astype(np.float32), mode='high')",
    "categorical(PRNGKey(5), {L}[0], shape=(3,))",
    "categorical(PRNGKey(5), {L}.astype(np.float32), axis=0, mode='high')",
    "permutation(PRNGKey(7), 10)", "permutation(PRNGKey(3), np.linspace(0.0, 1.0, 7))",
    "choice(PRNGKey(7), 10, (5,))", "choice(PRNGKey(3), np.linspace(0.0, 1.0, 7), (2, 3))",
    "choice(PRNGKey(7), 10, (4,), replace=False)", "choice(PRNGKey(7), 5, (6,), p={P})",
    "choice(PRNGKey(3), 5, (3,), replace=False, p={P})",
    "choice(PRNGKey(3), 5, (4,), p={P}.astype(np.float32))",
    "choice(PRNGKey(7), 5, (2,), replace=False, p={P}.astype(np.float32))")


def test_jax_known_answers_in_threads():
    cases = {case["call"]: case for case in json.loads(VECTORS.read_text())["cases"]}
    logits_text = "np.array([[0.5, -1.0, 2.0, 0.0, 1.0], [3.0, 0.1, -2.0, 0.2, 0.3], " \
                  "[0.0] * 5])"
    p_text = "np.array([0.1, 0.2, 0.3, 0.15, 0.25])"
    keys = [np.stack([random.PRNGKey(seed)] * 2) for seed in (7, 3, 5)]
    got = jit(vmap(recorded, in_axes=(0, 0, 0) + (None,) * 5), backend="cuda")(
        *keys, LOGITS, LOGITS.astype(np.float32), ITEMS, P, P.astype(np.float32))
    assert len(got) == len(RECORDED)
    for call, rows in zip(RECORDED, got):
        case = cases[call.format(L=logits_text, P=p_text)]
        want = np.array(case["value"], case["dtype"]).reshape(case["shape"])
        for row in rows:
            assert row.dtype == want.dtype and np.array_equal(row, want), call


def shuffles(k, logits, items, p):
    k1, k2 = random.split(k)
    return (random.categorical(k1, logits, shape=(2, 3)), random.permutation(k2, items),
            random.choice(k, items, replace=False, p=p[:7] / np.sum(p[:7])),
            random.categorical(k2, logits[1]), random.choice(k1, 7, (3,), replace=False))


def test_draws_in_threads_equal_a_loop_over_split_keys():
    keys = random.split(random.PRNGKey(11), 3)
    logits = np.array([[0.0, -np.inf, 1.0, np.nan], [2.0, 2.0, 2.0, 2.0], [1.0, 0.0, 0.5, 3.0]])
    p = np.abs(np.sin(np.arange(1.0, 9.0)))
    got = jit(vmap(shuffles, in_axes=(0, None, None, None)), backend="cuda")(
        keys, logits, ITEMS, p)
    for j, rows in enumerate(got):
        for i, k in enumerate(keys):
            want = shuffles(k, logits, ITEMS, p)[j]
            assert np.asarray(rows[i]).dtype == np.asarray(want).dtype
            assert np.array_equal(rows[i], want), (j, i)


def test_a_thread_shuffle_of_more_than_1625_items_sorts_twice_as_the_cpu_does():
    from numba import cuda

    from transformer.cuda import random_thread_choice as thread
    from transformer.cuda.random_forms import device_function
    from transformer.runtime.random_choice import _rounds
    n = 1700
    assert _rounds(n) == 2 and _rounds(1625) == 1
    element = device_function(thread.shuffle_element(n, False))

    @cuda.jit
    def some_elements(k, at, out):
        for j in range(at.size):
            out[j] = element(k[0], k[1], at[j], 0, 0)

    k, at = random.PRNGKey(7), np.array([911, n - 1])
    out = np.zeros(2, np.int64)
    some_elements[1, 1](k, at, out)
    assert np.array_equal(out, random.permutation(k, n)[at])
