"""Generated programs carrying integers through user helpers, against central differences.

Each seed draws a helper returning an integer with a float (one or several `return i, v`
statements, a counter bumped by a nested helper, an index the caller reads `x` with) and a
caller that carries the integer through a `for` or `while` loop, indexes with it and adds
it to the output. The points keep clear of branch boundaries, so finite differences hold.
"""
import random

import numpy as np
import pytest

from gradcheck import assert_gradient_close, central_differences, write_module
from transformer import grad

N = 4       # length of x

HELPERS = {
    "tuple": """
def helper(i, x):
    return i + {c}, x[i % {n}] * {a}
""",
    "branches": """
def helper(i, x):
    if x[i % {n}] > 0.0:
        return i + {c}, x[i % {n}] * {a}
    return i + 1, -x[(i + 1) % {n}]
""",
    "nested": """
def bump(i):
    return i + {c}


def helper(i, x):
    j = bump(i)
    return j, x[j % {n}] * x[i % {n}] + {a}
""",
    "index_only": """
def helper(i, x):
    k = (i * {c} + 1) % {n}
    return k, x[k] + {a}
""",
}

CALLERS = {
    "for": """
def f(x):
    i = {start}
    acc = 0.0
    for _ in range({trips}):
        i, v = helper(i, x)
        acc = acc + v * {w}
    return acc * x[i % {n}] + i
""",
    "while": """
def f(x):
    i = {start}
    acc = 0.0
    while i < {limit}:
        i, v = helper(i, x)
        acc = acc + v * v
    return acc + x[i % {n}] * {w} + i
""",
}


def _program(seed: int) -> str:
    rng = random.Random(seed)
    helper = rng.choice(sorted(HELPERS))
    caller = rng.choice(sorted(CALLERS))
    fields = dict(n=N, c=rng.randint(1, 3), a=rng.choice([0.5, 1.5, -2.0]),
                  start=rng.randint(0, 2), trips=rng.randint(1, 4), limit=rng.randint(3, 7),
                  w=rng.choice([1.0, -0.5, 2.5]))
    if helper == "index_only" and caller == "while":
        caller = "for"          # its index need not grow: the while loop might not end
    return HELPERS[helper].format(**fields) + "\n" + CALLERS[caller].format(**fields)


def _point(seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.uniform(0.5, 2.0, N) * rng.choice([-1.0, 1.0], N)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(16))
def test_generated_integer_carries_match_finite_differences(seed, tmp_path):
    source = _program(seed)
    f = write_module(tmp_path, source, {}).f
    x = _point(seed)
    assert_gradient_close(grad(f)(x), central_differences(f, (x,)), source)


def test_one_generated_integer_carry_matches_finite_differences(tmp_path):
    source = HELPERS["branches"].format(n=N, c=2, a=1.5) + "\n" + \
        CALLERS["while"].format(n=N, start=0, limit=5, w=-0.5)
    f = write_module(tmp_path, source, {}).f
    x = _point(3)
    assert_gradient_close(grad(f)(x), central_differences(f, (x,)), source)
