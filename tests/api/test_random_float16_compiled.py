"""float16 draws under jit: Numba has no float16 arrays, so every sampler given
dtype=np.float16 under jit is a TransformError naming the sampler and float16, whose hint
works: jit(..., backend='python') gives the numbers plain NumPy gives, which are JAX's
recorded float16 vectors where tests/data/jax_random_samplers.json has them. The integer
samplers with 16-bit dtypes compile and give the plain bits. One case is quick; the
sweep over samplers is slow."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from transformer import TransformError, jit, random

H = np.float16
VECTORS = Path(__file__).resolve().parents[1] / "data" / "jax_random_samplers.json"


def float16_draw(k, which):
    """The float16 draw `which` names (a static argument: one function, one specialization
    per sampler)."""
    if which == "uniform":
        return random.uniform(k, (5,), H)
    if which == "normal":
        return random.normal(k, (5,), H)
    if which == "exponential":
        return random.exponential(k, (5,), H)
    if which == "laplace":
        return random.laplace(k, (5,), H)
    if which == "logistic":
        return random.logistic(k, (40,), H)
    if which == "gumbel":
        return random.gumbel(k, (40,), H)
    if which == "gumbel high":
        return random.gumbel(k, (4,), H, mode="high")
    if which == "truncated_normal":
        return random.truncated_normal(k, -1.0, 1.0, (5,), H)
    if which == "gamma":
        return random.gamma(k, 2.0, (4,), H)
    return random.beta(k, 2.0, 3.0, (5,), H)


DRAW = jit(float16_draw, static_argnames=("which",))
# sampler -> (key seed, the call recorded from JAX, or None)
SAMPLERS = {
    "uniform": (3, None), "normal": (3, None),
    "exponential": (3, "exponential(PRNGKey(3), (5,), np.float16)"),
    "laplace": (3, None),
    "logistic": (5, "logistic(PRNGKey(5), (40,), np.float16)"),
    "gumbel": (5, "gumbel(PRNGKey(5), (40,), np.float16)"),
    "gumbel high": (7, "gumbel(PRNGKey(7), (4,), np.float16, mode='high')"),
    "truncated_normal": (3, None),
    "gamma": (3, "gamma(PRNGKey(3), np.float16(2.0), (4,), np.float16)"),
    "beta": (3, None),
}
QUICK = "exponential"


def _jax(call: str) -> np.ndarray:
    case = {c["call"]: c for c in json.loads(VECTORS.read_text())["cases"]}[call]
    return np.array(case["value"], case["dtype"]).reshape(case["shape"])


@pytest.mark.parametrize("which", [pytest.param(name, marks=() if name == QUICK else
                                                pytest.mark.slow) for name in SAMPLERS])
def test_a_float16_draw_under_jit_is_refused_with_a_hint_that_gives_the_numbers(which):
    seed, recorded = SAMPLERS[which]
    k = random.PRNGKey(seed)
    with pytest.raises(TransformError) as info:
        DRAW(k, which=which)
    message = str(info.value)
    name = which.split()[0]
    assert f"random.{name} under jit supports dtypes float32, float64; got float16" in message
    assert "backend='python'" in message and f"transformer.random.{name}(" in message
    hinted = jit(float16_draw, static_argnames=("which",), backend="python")(k, which=which)
    plain = float16_draw(k, which)
    assert hinted.dtype == plain.dtype == np.float16
    np.testing.assert_array_equal(hinted.view(np.uint16), plain.view(np.uint16))
    if recorded is not None:
        np.testing.assert_array_equal(plain.view(np.uint16), _jax(recorded).view(np.uint16))


def sixteen_bit_integers(k):
    return (random.randint(k, (6,), -300, 300, np.int16), random.bits(k, (6,), np.uint16),
            random.poisson(k, 3.0, (6,), np.int16))


@pytest.mark.slow
def test_sixteen_bit_integer_draws_under_jit_give_the_plain_bits():
    k = random.PRNGKey(3)
    for got, want in zip(jit(sixteen_bit_integers)(k), sixteen_bit_integers(k)):
        assert got.dtype == want.dtype and np.array_equal(got, want)
