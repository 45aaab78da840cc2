"""User functions named like secant's samplers (`def normal`, `def uniform`, `def split`):
inside them `random.normal` is secant's sampler, and their callers call the user's function.
Under jit the helper is emitted as a module defining `normal`, so the lowered sampler must be
bound under another name (it used to call the helper itself and recurse). Values equal the
plain-NumPy call, which runs Python's own name resolution. Quick set: two compiled functions.
"""
from __future__ import annotations

import numpy as np
import pytest

from transformer import grad, jit, random, vmap
from transformer.test_util import numerical_grad

K = random.PRNGKey(7)


def normal(key, shape):
    return random.normal(key, shape) * 2.0


def uniform(key, n):
    return random.uniform(key, (n,), minval=-1.0, maxval=1.0) + 10.0


def split(key):
    return random.split(key, 3)


def noisy_loss(w, key):
    keys = split(key)
    shifted = w + normal(keys[0], w.shape)
    return np.sum(shifted ** 2) + np.sum(w * uniform(keys[1], 3))


def draws(key, x):
    keys = split(key)                     # the user's split, next to secant's
    return x * normal(keys[2], (3,)), uniform(keys[0], 4), keys, random.split(key, 2)


def oracle_draws(key, x):
    """`draws` spelled with secant's samplers only (no user helper in between)."""
    keys = random.split(key, 3)
    noise = random.normal(keys[2], (3,)) * 2.0
    shifted = random.uniform(keys[0], (4,), minval=-1.0, maxval=1.0) + 10.0
    return x * noise, shifted, keys, random.split(key)


W = np.array([0.5, -1.5, 2.0])


def test_plain_helpers_named_like_samplers_are_the_users_functions():
    got = draws(K, W)
    for g, w in zip(got, oracle_draws(K, W)):
        np.testing.assert_array_equal(g, w)
    # the user's uniform is shifted by 10, secant's is not: callers reached the user's one
    assert np.all(got[1] >= 9.0)


@pytest.mark.slow
def test_helpers_named_like_samplers_under_jit_give_the_plain_values():
    for g, w in zip(jit(draws)(K, W), oracle_draws(K, W)):
        np.testing.assert_array_equal(g, w)


def test_the_helper_itself_under_jit_calls_secants_sampler():
    got = jit(normal)(K, (5,))
    np.testing.assert_array_equal(got, random.normal(K, (5,)) * 2.0)


def test_grad_through_helpers_named_like_samplers_matches_finite_differences():
    got = grad(noisy_loss)(W, K)
    np.testing.assert_allclose(got, numerical_grad(noisy_loss, (W, K)), rtol=1e-6)


def test_vmap_over_split_keys_through_helpers_is_a_loop_over_the_keys():
    keys = random.split(K, 4)
    got = vmap(draws, in_axes=(0, None))(keys, W)
    for i, k in enumerate(keys):
        for g, w in zip(got, oracle_draws(k, W)):
            np.testing.assert_array_equal(g[i], w)


@pytest.mark.slow
def test_jit_grad_and_jit_vmap_through_helpers_named_like_samplers():
    got = jit(grad(noisy_loss))(W, K)
    np.testing.assert_allclose(got, numerical_grad(noisy_loss, (W, K)), rtol=1e-6)
    keys = random.split(K, 3)
    batched = jit(vmap(draws, in_axes=(0, None)))(keys, W)
    for i, k in enumerate(keys):
        for g, w in zip(batched, oracle_draws(k, W)):
            np.testing.assert_array_equal(g[i], w)
