"""exponential, laplace, logistic, gumbel, truncated_normal and categorical inside jit, grad
and vmap: the compiled samplers give `transformer.random`'s bits (which
tests/api/test_random_samplers.py checks against vectors recorded from JAX, and the slow
sweep here checks again under jit, vmap and jit(vmap)), a draw is a constant of the
differentiated function, a differentiated truncated_normal bound is refused at its line,
and vmap over split keys is a loop over the keys. Quick set: one compiled function."""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

import transformer
from transformer import grad, jit, random, stop_gradient, vmap
from transformer.runtime import random_samplers as compiled
from transformer.test_util import numerical_grad

K = random.PRNGKey(42)
LOGITS = np.array([[0.5, -1.0, 2.0, 0.0, 1.0], [3.0, 0.1, -2.0, 0.2, 0.3], [0.0] * 5])
CUBE = np.random.default_rng(0).normal(size=(3, 4, 5))


def same_bits(got, want) -> None:
    """Equal dtype, shape and every bit (NaN and -0.0 included)."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (got, want)
    np.testing.assert_array_equal(got.reshape(-1).view(np.uint8),
                                  want.reshape(-1).view(np.uint8))

# ---------------------------------------------------------------- the scalar code itself


# the element-wise runtime form (m = transformer.runtime.random_samplers) against the NumPy
# form (m = transformer.random); plain Python, no compile
PLAIN_CASES = {
    "exponential float64": lambda m: m.exponential(K, (40,)),
    "exponential float32": lambda m: m.exponential(K, (2, 20), np.float32),
    "laplace float64": lambda m: m.laplace(K, (40,)),
    "laplace float32": lambda m: m.laplace(K, 40, np.float32),
    "logistic float64": lambda m: m.logistic(K, (40,)),
    "logistic float32": lambda m: m.logistic(K, (40,), np.float32),
    "gumbel low float64": lambda m: m.gumbel(K, (40,)),
    "gumbel low float32": lambda m: m.gumbel(K, (40,), np.float32, "low"),
    "gumbel high float64": lambda m: m.gumbel(K, (40,), mode="high"),
    "gumbel high float32": lambda m: m.gumbel(K, (40,), np.float32, "high"),
    "gumbel highest float32": lambda m: m.gumbel(K, (40,), np.float32, "highest"),
    "gumbel highest float64 is high": lambda m: m.gumbel(K, (8,), np.float64, "highest"),
    "truncated_normal float64 tails": lambda m: m.truncated_normal(K, -8.0, -3.0, (30,)),
    "truncated_normal float32": lambda m: m.truncated_normal(K, -0.5, 4.0, (30,), np.float32),
    "truncated_normal unbounded below": lambda m: m.truncated_normal(K, -np.inf, 0.0, (30,)),
    "truncated_normal broadcast bounds": lambda m: m.truncated_normal(
        K, np.array([-1.0, 0.0, 5.0]), np.array([[1.0], [7.0]])),
    "categorical axis 1 of a cube": lambda m: m.categorical(K, CUBE, axis=1),
    "categorical broadcast batch": lambda m: m.categorical(K, CUBE[:, :1], 0, (2, 4, 5)),
    "categorical float32, high": lambda m: m.categorical(
        K, CUBE.astype(np.float32), -2, (2, 3, 5), mode="high"),
    "categorical without replacement": lambda m: m.categorical(
        K, CUBE, axis=1, shape=(4, 3, 5), replace=False),
    "categorical of one row": lambda m: m.categorical(K, LOGITS[0], shape=(4,), replace=False),
}


@pytest.mark.parametrize("case", sorted(PLAIN_CASES))
def test_element_wise_forms_give_the_numpy_bits(case):
    same_bits(PLAIN_CASES[case](compiled), PLAIN_CASES[case](random))


@pytest.mark.parametrize("call, match", [
    (lambda m: m.categorical(K, np.ones((2, 3)), shape=(4,)), "broadcast"),
    (lambda m: m.categorical(K, np.ones(3), axis=1), "out of bounds"),
    (lambda m: m.categorical(K, np.ones(3), shape=(4,), replace=False), "exceed"),
    (lambda m: m.categorical(K, np.ones((2, 0))), "empty sequence"),
    (lambda m: m.gumbel(K, (2,), mode="medium"), "mode"),
])
def test_element_wise_forms_refuse_what_numpy_refuses(call, match):
    for module in (compiled, random):
        with pytest.raises(ValueError, match=match):
            call(module)


def test_scalar_float32_erf_is_the_array_form_behind_truncated_normal():
    x = np.concatenate([np.linspace(-4.5, 4.5, 901), [0.0, -0.0, 3.8325069, np.inf, -np.inf]])
    x = x.astype(np.float32)
    same_bits(np.array([compiled.erf32(v) for v in x], np.float32),
              transformer.random_xla_special.erf(x, np.dtype(np.float32)))


@pytest.mark.parametrize("x", [0.0, -0.0, 5e-324, -5e-324, 2.0 ** -1022, -2.0 ** -1021, -1.0,
                               0.75, -3.5e300, math.inf, -math.inf, 1.7976931348623157e308])
def test_next_up_is_nextafter_toward_infinity(x):
    with np.errstate(over="ignore"):          # the largest float steps to inf
        same_bits(compiled.next_up64(x), np.nextafter(x, np.inf))
        x32 = np.float32(x)
        same_bits(compiled.next_up32(x32), np.nextafter(x32, np.float32(np.inf)))

# ---------------------------------------------------------------- under jit(vmap)


def two_samplers(k, x, logits):
    k1, k2 = random.split(k)
    return random.exponential(k1, x.shape) * x, random.categorical(k2, logits)


@pytest.mark.slow
def test_jit_vmap_over_split_keys_is_a_loop_over_the_keys():
    keys = random.split(K, 3)
    x = np.linspace(0.5, 2.0, 4)
    got = jit(vmap(two_samplers, in_axes=(0, None, None)))(keys, x, LOGITS)
    for i, k in enumerate(keys):
        for g, w in zip(got, two_samplers(k, x, LOGITS)):
            same_bits(g[i], w)

# ---------------------------------------------------------------- under grad


def noisy_loss(mu, sigma, k):
    heavy = random.laplace(k, mu.shape) + random.logistic(k, mu.shape)
    return np.sum((mu + sigma * heavy) ** 2 * random.gumbel(k, mu.shape)) + \
        np.sum(mu * random.categorical(k, np.stack([mu, -mu]), axis=0))


def test_draws_are_constants_of_the_differentiated_function():
    mu = np.array([0.5, -1.0, 2.0])
    got = grad(noisy_loss, argnums=(0, 1))(mu, 0.7, K)
    for argnum in (0, 1):
        np.testing.assert_allclose(got[argnum], numerical_grad(noisy_loss, (mu, 0.7, K),
                                                               argnum), rtol=1e-6)


def test_jvp_carries_no_tangent_through_an_exponential_draw():
    draw = random.exponential(K, (3,))
    _, tangent = transformer.jvp(lambda s: s * random.exponential(K, (3,)), (2.0,), (0.5,))
    np.testing.assert_array_equal(tangent, 0.5 * draw)


def test_argnums_naming_a_key_is_a_type_error_that_says_so():
    with pytest.raises(TypeError, match=r"argument 'k'.*PRNG key.*leave 'k' out of argnums"):
        grad(noisy_loss, argnums=2)(np.zeros(3), 1.0, K)


def moving_bounds(lo, k):
    return np.sum(random.truncated_normal(k, lo, lo + 1.0, (3,)))


def constant_bounds(lo, k):
    return np.sum(lo * random.truncated_normal(k, stop_gradient(lo), 2.0, (3,)))


def test_a_differentiated_truncated_normal_bound_is_refused_with_a_hint_that_works():
    with pytest.raises(transformer.TransformError) as info:
        grad(moving_bounds)(0.5, K)
    message = str(info.value)
    assert "test_random_samplers_compiled.py" in message
    assert "random.truncated_normal(k, lo, lo + 1.0, (3,))" in message
    assert "transformer.stop_gradient(lower)" in message
    # the hint: bounds held constant, so the derivative in lo is the draw itself
    draws = random.truncated_normal(K, 0.5, 2.0, (3,))
    np.testing.assert_allclose(grad(constant_bounds)(0.5, K), np.sum(draws), rtol=1e-12)


def test_the_table_of_primitives_lists_the_samplers_where_they_run():
    rows = {row["name"].rpartition(".")[2]: row for row in transformer.primitives()
            if row["name"].startswith("transformer.random")}
    for name in ("exponential", "laplace", "logistic", "gumbel", "truncated_normal",
                 "categorical"):
        assert rows[name]["kind"] == "random" and rows[name]["jit"], name
    assert rows["gumbel"]["grad"] and rows["categorical"]["grad"]
    assert not rows["truncated_normal"]["grad"]
    assert rows["truncated_normal"]["cuda"] and rows["fold_in"]["cuda"]
    assert rows["PRNGKey"]["cuda"]
    assert rows["categorical"]["cuda"] and rows["choice"]["cuda"]

# ---------------------------------------------------------------- slow: errors under jit


def half_precision(k):
    return random.exponential(k, (3,), np.float16)


@pytest.mark.slow
def test_an_unsupported_dtype_under_jit_is_a_located_error():
    with pytest.raises(transformer.TransformError) as info:
        jit(half_precision)(K)
    message = str(info.value)
    assert "exponential(k, (3,), np.float16)" in message
    assert "float32, float64" in message

# ---------------------------------------------------------------- slow: JAX's vectors

VECTORS = Path(__file__).resolve().parents[1] / "data" / "jax_random_samplers.json"
# the recorded calls `recorded_draws` makes, in its order (float16 runs in plain Python only)
RECORDED = (
    "exponential(PRNGKey(7), (6,))", "exponential(PRNGKey(3), (2, 3), np.float32)",
    "laplace(PRNGKey(7), (6,))", "laplace(PRNGKey(3), (5,), np.float32)",
    "logistic(PRNGKey(7), (6,))", "logistic(PRNGKey(3), (5,), np.float32)",
    "gumbel(PRNGKey(7), (6,))", "gumbel(PRNGKey(3), (5,), np.float32)",
    "gumbel(PRNGKey(7), (5,), mode='high')",
    "gumbel(PRNGKey(7), (6,), np.float32, mode='highest')",
    "categorical(PRNGKey(7), L)", "categorical(PRNGKey(7), L, axis=0)",
    "categorical(PRNGKey(3), L, shape=(4, 3))",
    "categorical(PRNGKey(3), L, shape=(2, 3), replace=False)",
    "categorical(PRNGKey(3), L, axis=0, shape=(2, 5), replace=False)",
    "categorical(PRNGKey(7), L.astype(np.float32), mode='high')",
    "truncated_normal(PRNGKey(7), -1.5, 0.7, (6,))",
    "truncated_normal(PRNGKey(3), 2.0, 5.0, (4,), np.float32)",
    "truncated_normal(PRNGKey(7), np.array([-1.0, 0.0]), np.array([[1.0], [2.0], [3.0]]))")
LOGITS_TEXT = "np.array([[0.5, -1.0, 2.0, 0.0, 1.0], [3.0, 0.1, -2.0, 0.2, 0.3], [0.0] * 5])"


def recorded_draws(k7, k3, logits, lower, upper):
    return (random.exponential(k7, (6,)), random.exponential(k3, (2, 3), np.float32),
            random.laplace(k7, (6,)), random.laplace(k3, (5,), np.float32),
            random.logistic(k7, (6,)), random.logistic(k3, (5,), np.float32),
            random.gumbel(k7, (6,)), random.gumbel(k3, (5,), np.float32),
            random.gumbel(k7, (5,), mode="high"),
            random.gumbel(k7, (6,), np.float32, mode="highest"),
            random.categorical(k7, logits), random.categorical(k7, logits, axis=0),
            random.categorical(k3, logits, shape=(4, 3)),
            random.categorical(k3, logits, shape=(2, 3), replace=False),
            random.categorical(k3, logits, axis=0, shape=(2, 5), replace=False),
            random.categorical(k7, logits.astype(np.float32), mode="high"),
            random.truncated_normal(k7, -1.5, 0.7, (6,)),
            random.truncated_normal(k3, 2.0, 5.0, (4,), np.float32),
            random.truncated_normal(k7, lower, upper))


def recorded_values() -> list:
    cases = {case["call"].replace(LOGITS_TEXT, "L"): case
             for case in json.loads(VECTORS.read_text())["cases"]}
    return [np.array(cases[c]["value"], cases[c]["dtype"]).reshape(cases[c]["shape"])
            for c in RECORDED]


BOUNDS = (np.array([-1.0, 0.0]), np.array([[1.0], [2.0], [3.0]]))


@pytest.mark.slow
def test_jax_known_answers_under_jit():
    got = jit(recorded_draws)(random.PRNGKey(7), random.PRNGKey(3), LOGITS, *BOUNDS)
    for label, g, want in zip(RECORDED, got, recorded_values()):
        assert np.ndim(g) == want.ndim, label
        same_bits(g, want)


@pytest.mark.slow
@pytest.mark.parametrize("compiled_too", [False, True], ids=["vmap", "jit(vmap)"])
def test_jax_known_answers_under_vmap_and_rows_of_other_keys(compiled_too):
    """Row 0 draws with the recorded keys, row 1 with split keys (a loop over the keys)."""
    others = random.split(K, 2)
    k7s = np.stack([random.PRNGKey(7), others[0]])
    k3s = np.stack([random.PRNGKey(3), others[1]])
    batched = vmap(recorded_draws, in_axes=(0, 0, None, None, None))
    got = (jit(batched) if compiled_too else batched)(k7s, k3s, LOGITS, *BOUNDS)
    loop = recorded_draws(others[0], others[1], LOGITS, *BOUNDS)
    assert len(got) == len(RECORDED)
    for g, want, other in zip(got, recorded_values(), loop):
        same_bits(g[0], want)
        same_bits(g[1], other)
