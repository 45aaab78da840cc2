"""Random keys inside jit, grad and vmap: the compiled samplers give `transformer.random`'s
bits (which tests/api/test_random.py checks against vectors recorded from JAX), a sampler's
draw is a constant of the differentiated function, and vmap over split keys is a loop over
the keys. Quick set: two compiled functions; the float32, scalar-shape and Langevin sweeps
are slow."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import transformer
import transformer.random as jr
from transformer import grad, jit, random, vmap
from transformer.runtime import random as compiled
from transformer.runtime import random_choice
from transformer.test_util import numerical_grad

K = random.PRNGKey(42)


def same_bits(got, want) -> None:
    """Equal dtype, shape and every bit (NaN and -0.0 included)."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (got, want)
    np.testing.assert_array_equal(got.reshape(-1).view(np.uint8),
                                  want.reshape(-1).view(np.uint8))

# ---------------------------------------------------------------- the scalar code itself


# name -> (the element-wise runtime form, the NumPy form); run in plain Python, no compile
PLAIN_CASES = {
    "PRNGKey(-3)": lambda m: m.PRNGKey(-3),
    "PRNGKey(2**63 + 5)": lambda m: m.PRNGKey(2 ** 63 + 5),
    "split(k, (2, 3))": lambda m: m.split(K, (2, 3)),
    "fold_in(k, 2**32 - 1)": lambda m: m.fold_in(K, 2 ** 32 - 1),
    "bits uint8/16/32/64": lambda m: [m.bits(K, (7,), t) for t in
                                      (np.uint8, np.uint16, np.uint32, np.uint64)],
    "uniform float64 [-3, 2.5)": lambda m: m.uniform(K, (64,), minval=-3.0, maxval=2.5),
    "uniform float32 [-1, 2)": lambda m: m.uniform(K, (64,), np.float32, -1.0, 2.0),
    "normal float64": lambda m: m.normal(K, (500,)),
    "normal float32": lambda m: m.normal(K, (500,), np.float32),
    "randint int64 wide": lambda m: m.randint(K, (40,), -2 ** 62, 2 ** 62),
    "randint int32 past its max": lambda m: m.randint(K, (40,), -5, 2 ** 31, np.int32),
    "randint int8 clipped": lambda m: m.randint(K, (40,), -500, 500, np.int8),
    "bernoulli float32": lambda m: m.bernoulli(K, np.float32(0.3), (40,)),
}
P = np.array([0.1, 0.2, 0.3, 0.15, 0.25])
SHUFFLE_CASES = {
    "permutation(k, 3000): two sorting rounds": lambda m: m.permutation(K, 3000),
    "permutation of rows": lambda m: m.permutation(K, np.arange(12.0).reshape(4, 3)),
    "choice with replacement": lambda m: m.choice(K, np.linspace(0, 1, 7), (2, 3)),
    "choice without replacement": lambda m: m.choice(K, 10, (4,), replace=False),
    "choice with p": lambda m: m.choice(K, 5, (6,), p=P),
    "choice without replacement, float32 p": lambda m: m.choice(
        K, 5, (3,), replace=False, p=P.astype(np.float32)),
}


@pytest.mark.parametrize("case", sorted(PLAIN_CASES) + sorted(SHUFFLE_CASES))
def test_element_wise_forms_give_the_numpy_bits(case):
    if case in SHUFFLE_CASES:
        got, want = SHUFFLE_CASES[case](random_choice), SHUFFLE_CASES[case](random)
    else:
        got, want = PLAIN_CASES[case](compiled), PLAIN_CASES[case](random)
    for g, w in zip(got if isinstance(got, list) else [got],
                    want if isinstance(want, list) else [want]):
        same_bits(g, w)


def test_normal_tails_reach_every_erf_inv_branch():
    # uniforms near +-1 take erf_inv64's middle and tail polynomials
    for u in (0.999, 1 - 1e-9, -(1 - 1e-15), 0.3):
        got = compiled.erf_inv64(u)
        want = float(transformer.random_xla.erf_inv64(np.array([u]))[0])
        assert got == want, u

# ---------------------------------------------------------------- under jit


def keys_and_draws(k, x):
    k1, k2 = random.split(k)
    ks = jr.split(k2, 3)
    folded = random.fold_in(ks[2], 7)
    noise = jr.normal(k1, x.shape)
    u = random.uniform(folded, (2, 3), minval=-1.0, maxval=2.0)
    n = random.randint(ks[0], x.shape, -5, 10)
    b = random.bits(ks[1], (4,))
    coin = random.bernoulli(k1, 0.25, x.shape)
    return ks, folded, noise, u, n, b, coin


@pytest.mark.slow
def test_keys_and_samplers_under_jit_give_the_numpy_bits():
    x = np.zeros(37)
    for got, want in zip(jit(keys_and_draws)(K, x), keys_and_draws(K, x)):
        same_bits(got, want)


def test_vmap_over_split_keys_is_a_loop_over_the_keys():
    keys = random.split(K, 5)
    x = np.linspace(-1.0, 1.0, 6)
    got = vmap(keys_and_draws, in_axes=(0, None))(keys, x)
    for i, k in enumerate(keys):
        for g, w in zip(got, keys_and_draws(k, x)):
            same_bits(g[i], w)

# ---------------------------------------------------------------- under grad


def noisy_mean(mu, sigma, k):
    return np.sum((mu + sigma * random.normal(k, mu.shape)) ** 2)


def test_a_draw_is_a_constant_of_the_differentiated_function():
    mu = np.array([0.5, -1.0, 2.0])
    got = grad(noisy_mean, argnums=(0, 1))(mu, 0.7, K)
    for argnum in (0, 1):
        np.testing.assert_allclose(got[argnum], numerical_grad(noisy_mean, (mu, 0.7, K),
                                                               argnum), rtol=1e-7)


def test_argnums_naming_a_key_is_a_type_error_that_says_so():
    with pytest.raises(TypeError, match=r"argument 'k'.*PRNG key.*leave 'k' out of argnums"):
        grad(noisy_mean, argnums=2)(np.zeros(3), 1.0, K)


def shifted_uniform(lo, k):
    return np.sum(random.uniform(k, (3,), minval=lo, maxval=lo + 1.0))


def test_a_differentiated_uniform_bound_is_a_located_error_with_a_working_hint():
    with pytest.raises(transformer.TransformError) as info:
        grad(shifted_uniform)(0.5, K)
    message = str(info.value)
    assert "test_random_compiled.py" in message and "random.uniform(k, (3,)" in message
    assert "minval + (maxval - minval) * random.uniform(key, shape)" in message

# ---------------------------------------------------------------- dropout and Langevin


def dropout_loss(w, x, k):
    rate = 0.25
    keep = random.uniform(k, x.shape) > rate
    h = np.tanh(x * w) * keep / (1.0 - rate)
    return np.sum(h * h)


@pytest.mark.slow
def test_dropout_under_jit_vmap_grad_matches_finite_differences():
    w = np.linspace(0.2, 1.4, 8)
    xs = np.random.default_rng(0).normal(size=(4, 8))
    keys = random.split(K, 4)
    got = jit(vmap(grad(dropout_loss), in_axes=(None, 0, 0)))(w, xs, keys)
    for i in range(4):
        want = numerical_grad(dropout_loss, (w, xs[i], keys[i]))
        np.testing.assert_allclose(got[i], want, rtol=1e-6, atol=1e-9)
    kept = random.uniform(keys[0], (8,)) > 0.25
    assert np.all(got[0][~kept] == 0.0) and np.all(got[0][kept] != 0.0)


@pytest.mark.slow
def test_dropout_under_jit_grad_matches_finite_differences_and_drops_the_same_units():
    w, x = np.linspace(0.2, 1.4, 8), np.random.default_rng(1).normal(size=8)
    got = jit(grad(dropout_loss))(w, x, K)
    np.testing.assert_allclose(got, numerical_grad(dropout_loss, (w, x, K)), rtol=1e-6,
                               atol=1e-9)
    kept = random.uniform(K, (8,)) > 0.25
    assert np.all(got[~kept] == 0.0) and np.all(got[kept] != 0.0)


def potential(x):
    return np.sum(0.25 * x ** 4 - x ** 2)


def langevin_loss(x, k, eps):
    """Distance to a target after one Langevin step x - eps grad U + sqrt(2 eps) noise."""
    force = x ** 3 - 2.0 * x                      # grad U, written out
    step = x - eps * force + np.sqrt(2.0 * eps) * random.normal(k, x.shape)
    return np.sum((step - 1.0) ** 2)


@pytest.mark.slow
def test_langevin_step_under_jit_grad_and_jit_vmap_grad():
    x = np.array([0.3, -0.8, 1.2])
    assert numerical_grad(potential, (x,)) == pytest.approx(x ** 3 - 2.0 * x, rel=1e-6)
    one = jit(grad(langevin_loss))(x, K, 0.1)
    np.testing.assert_allclose(one, numerical_grad(langevin_loss, (x, K, 0.1)), rtol=1e-6)
    keys = random.split(K, 3)
    xs = np.stack([x, -x, 2 * x])
    many = jit(vmap(grad(langevin_loss), in_axes=(0, 0, None)))(xs, keys, 0.1)
    for i in range(3):
        want = numerical_grad(langevin_loss, (xs[i], keys[i], 0.1))
        np.testing.assert_allclose(many[i], want, rtol=1e-6)

# ---------------------------------------------------------------- float32, scalars, errors


def narrow_and_scalar_draws(k, n):
    ks = random.split(k, (2, 2))
    return (random.normal(k, (n,), np.float32), random.uniform(k, (n,), np.float32, -2.0, 3.0),
            random.bernoulli(k, np.float32(0.6), (n,)), random.normal(k),
            random.uniform(k, ()), random.randint(k, (), 0, 1000),
            random.randint(k, (n,), -300, 300, np.int16),
            random.bits(k, n, np.uint64), random.bits(k, (n,), np.uint8), ks,
            random.bernoulli(k, np.linspace(0.0, 1.0, n)), random.PRNGKey(n - 7),
            random.key(12345678901))


@pytest.mark.slow
def test_float32_scalar_shapes_and_key_shapes_under_jit_give_the_numpy_bits():
    for got, want in zip(jit(narrow_and_scalar_draws)(K, 300), narrow_and_scalar_draws(K, 300)):
        same_bits(np.asarray(got).astype(np.asarray(want).dtype), want)
        assert np.ndim(got) == np.ndim(want)


def uniform_of_array_bounds(k, lo):
    return random.uniform(k, lo.shape, minval=lo)


@pytest.mark.slow
def test_an_unsupported_call_form_under_jit_is_a_located_error():
    with pytest.raises(transformer.TransformError) as info:
        jit(uniform_of_array_bounds)(K, np.zeros(3))
    assert "scalar minval" in str(info.value)
    assert "uniform(k, lo.shape, minval=lo)" in str(info.value)


def test_the_table_of_primitives_lists_the_random_functions_and_their_gaps():
    rows = {row["name"]: row for row in transformer.primitives()}
    normal = rows["transformer.random.normal"]
    assert normal["kind"] == "random" and normal["grad"] and normal["jit"]
    assert normal["cuda"] and rows["transformer.random.split"]["cuda"]
    assert rows["transformer.random.permutation"]["cuda"]
    assert rows["transformer.random.categorical"]["cuda"]
    assert not rows["transformer.random.uniform"]["grad"]
    assert rows["transformer.random.choice"]["jit"]
    assert not rows["transformer.random.choice"]["grad"]


def shuffles(k, x, p):
    return (random.permutation(k, 3000), random.permutation(k, x), random.permutation(k, x[0]),
            random.choice(k, 10, (5,)), random.choice(k, x[:, 1], (2, 3)),
            random.choice(k, 10, (4,), replace=False), random.choice(k, 5, (6,), p=p),
            random.choice(k, 5, (3,), False, p), random.choice(k, 10))


@pytest.mark.slow
def test_permutation_and_choice_under_jit_give_the_numpy_bits():
    x = np.arange(12.0).reshape(4, 3)
    for got, want in zip(jit(shuffles)(K, x, P), shuffles(K, x, P)):
        same_bits(np.asarray(got), want)


def shuffled_loss(x, k):
    return np.sum(np.arange(4.0) * random.permutation(k, x))


def indexed_loss(x, k):
    return np.sum(np.arange(4.0) * x[random.permutation(k, x.shape[0])])


def test_grad_through_a_permuted_array_is_refused_with_a_hint_that_works():
    x = np.array([0.5, -1.0, 2.0, 3.0])
    with pytest.raises(transformer.TransformError) as info:
        grad(shuffled_loss)(x, K)
    assert "random.permutation(k, x)" in str(info.value)
    assert "x[random.permutation(key, x.shape[0])]" in str(info.value)
    got = grad(indexed_loss)(x, K)
    np.testing.assert_allclose(got, numerical_grad(indexed_loss, (x, K)), rtol=1e-7)
    assert sorted(got) == [0.0, 1.0, 2.0, 3.0]


def test_jvp_carries_no_tangent_through_a_draw():
    mu = np.array([0.5, -1.0, 2.0])
    draw = random.normal(K, (3,))
    _, tangent = transformer.jvp(lambda m, s: m + s * random.normal(K, m.shape),
                                 (mu, 2.0), (np.ones(3), 0.5))
    np.testing.assert_array_equal(tangent, 1.0 + 0.5 * draw)

# ---------------------------------------------------------------- JAX's vectors under jit

VECTORS = Path(__file__).resolve().parents[1] / "data" / "jax_random.json"
VECTOR_NAMES = (
    "PRNGKey(2147483647)", "split(PRNGKey(42))", "split(PRNGKey(42), 3)",
    "fold_in(PRNGKey(42), 7)", "bits(PRNGKey(42), (8,), uint32)",
    "uniform(PRNGKey(42), (5,), float32)", "uniform(PRNGKey(42), (2,3), float32, -1, 2)",
    "normal(PRNGKey(42), (6,), float32)", "uniform(PRNGKey(42), (5,), float64)",
    "uniform(PRNGKey(42), (2,3), float64, -1, 2)", "normal(PRNGKey(42), (6,), float64)",
    "normal(PRNGKey(0), (3,3), float32)", "randint(PRNGKey(42), (6,), 0, 10)",
    "bernoulli(PRNGKey(42), 0.3, (8,))", "uniform(split(PRNGKey(42))[1], (4,), float32)")


def jax_vector_cases(seed):
    k = random.PRNGKey(seed)
    return (random.PRNGKey(2147483647), random.split(k), random.split(k, 3),
            random.fold_in(k, 7), random.bits(k, (8,), np.uint32),
            random.uniform(k, (5,), np.float32), random.uniform(k, (2, 3), np.float32, -1, 2),
            random.normal(k, (6,), np.float32), random.uniform(k, (5,), np.float64),
            random.uniform(k, (2, 3), np.float64, -1, 2), random.normal(k, (6,), np.float64),
            random.normal(random.PRNGKey(0), (3, 3), np.float32), random.randint(k, (6,), 0, 10),
            random.bernoulli(k, 0.3, (8,)), random.uniform(random.split(k)[1], (4,), np.float32))


@pytest.mark.slow
def test_jax_known_answers_under_jit():
    recorded = {case["name"]: case for case in json.loads(VECTORS.read_text())["cases"]}
    for label, got in zip(VECTOR_NAMES, jit(jax_vector_cases)(42)):
        case = recorded[label]
        want = np.array(case["value"], dtype=case["dtype"]).reshape(case["shape"])
        same_bits(got, want)


# the recorded calls `recorded_shuffles` makes (tests/data/jax_random_samplers.json)
SHUFFLES_RECORDED = (
    "permutation(PRNGKey(7), 10)", "permutation(PRNGKey(3), np.linspace(0.0, 1.0, 7))",
    "choice(PRNGKey(7), 10, (5,))", "choice(PRNGKey(3), np.linspace(0.0, 1.0, 7), (2, 3))",
    "choice(PRNGKey(7), 10, (4,), replace=False)",
    "choice(PRNGKey(7), 5, (6,), p=np.array([0.1, 0.2, 0.3, 0.15, 0.25]))",
    "choice(PRNGKey(3), 5, (3,), replace=False, p=np.array([0.1, 0.2, 0.3, 0.15, 0.25]))")


def recorded_shuffles(k7, k3, items, p):
    return (random.permutation(k7, 10), random.permutation(k3, items),
            random.choice(k7, 10, (5,)), random.choice(k3, items, (2, 3)),
            random.choice(k7, 10, (4,), replace=False), random.choice(k7, 5, (6,), p=p),
            random.choice(k3, 5, (3,), replace=False, p=p))


@pytest.mark.slow
def test_jax_known_answers_of_the_shuffles_under_jit_vmap_and_rows_of_other_keys():
    """Row 0 draws with the recorded keys, row 1 with split keys (a loop over the keys)."""
    path = Path(__file__).resolve().parents[1] / "data" / "jax_random_samplers.json"
    cases = {case["call"]: case for case in json.loads(path.read_text())["cases"]}
    items, others = np.linspace(0.0, 1.0, 7), random.split(K, 2)
    k7s = np.stack([random.PRNGKey(7), others[0]])
    k3s = np.stack([random.PRNGKey(3), others[1]])
    got = jit(vmap(recorded_shuffles, in_axes=(0, 0, None, None)))(k7s, k3s, items, P)
    loop = recorded_shuffles(others[0], others[1], items, P)
    for call, rows, other in zip(SHUFFLES_RECORDED, got, loop):
        case = cases[call]
        same_bits(rows[0], np.array(case["value"], case["dtype"]).reshape(case["shape"]))
        same_bits(rows[1], other)
