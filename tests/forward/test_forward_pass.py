"""The jvp pass through control flow, in-place writes and calls, against finite differences.

Each function is checked with the python backend along random directions; a few run
compiled (module-scope, one compile each) to check the generated code also types in Numba.
"""
from __future__ import annotations

import math
import os

import numpy as np
import pytest

os.environ.setdefault("NUMBA_OPT", "0")

from transformer import TransformError, jit, jvp, show_jvp  # noqa: E402
from transformer.test_util import numerical_jvp  # noqa: E402

RNG = np.random.default_rng(0)


def check(f, *primals, backend=None):
    tangents = tuple(RNG.normal(size=np.shape(p)) if np.ndim(p) else RNG.normal()
                     for p in primals)
    if backend is None:
        out, tangent = jvp(f, primals, tangents)
    else:
        out, tangent = backend(*primals, *tangents)
    np.testing.assert_allclose(out, f(*primals), rtol=1e-12)
    np.testing.assert_allclose(tangent, numerical_jvp(f, primals, tangents),
                               rtol=1e-6, atol=1e-7)


# ---------------------------------------------------------------- control flow

def branches(x, y):
    if x > 1.0:
        z = x * y
    elif x > 0.0:
        z = np.sin(x) + y
    else:
        z = x ** 3
    return z * 2.0


@pytest.mark.parametrize("x", [1.5, 0.5, -0.7])
def test_jvp_through_if_elif_else(x):
    check(branches, x, 0.3)


def loops(x):
    s = 0.0
    for i in range(x.shape[0]):
        if x[i] < -1.0:
            continue
        s += np.exp(x[i]) * s + x[i]
        if s > 50.0:
            break
    return s


def test_jvp_through_for_with_continue_and_break():
    check(loops, np.array([0.3, -2.0, 1.1, 0.4, 2.0, 3.0]))


def swap_after_break(x, v):
    b, c = x, v[1]
    for _ in range(3):
        b = np.tanh(b * v[0])
        if v[2] > 0.5:
            break
        b, c = c, np.tanh(c)            # b assigned afresh, but only on the paths that stay
    return b + c


def swap_after_continue(x, v):
    b, c = x, v[1]
    for j in range(3):
        b = np.tanh(b * v[0])
        if j == 1:
            continue
        b, c = c, np.tanh(c)
    return b + c


def swap_after_return(x, v):
    b, c = x, v[1]
    for _ in range(3):
        b = np.tanh(b * v[0])
        if v[2] > 0.5:
            return b * c
        b, c = c, np.tanh(c)
    return b + c


@pytest.mark.parametrize("f", [swap_after_break, swap_after_continue, swap_after_return])
def test_a_tangent_read_after_a_jump_out_of_an_if_is_kept(f):
    # the tangent of `b = np.tanh(...)` was dropped as overwritten by the swap below it
    check(f, 0.76, np.array([-0.88, 0.82, 0.93]))


def halving(x, c):
    steps = 0
    while np.sum(x * x) > c:       # trip count depends on the data
        x = 0.5 * x + np.sin(x) * 0.1
        steps += 1
    return x * steps


def test_jvp_through_while_with_data_dependent_trip_count():
    check(halving, np.array([3.0, -4.0, 2.5]), 0.01)


def early(x):
    for i in range(x.shape[0]):
        if x[i] > 2.0:
            return x[i] * np.sum(x)
    return np.prod(x)


@pytest.mark.parametrize("x", [np.array([0.5, 3.0, 1.0]), np.array([0.5, 1.5, 1.0])])
def test_jvp_through_early_return(x):
    check(early, x)


def inplace(x, w):
    y = x + 1.0                     # the tangent of y aliases dx: the write must copy
    y[0] = w * w
    z = np.zeros(x.shape[0])
    for i in range(x.shape[0]):
        z[i] = y[i] * x[i]
    z[1:] += np.cos(z[:-1])
    return z + x


def test_jvp_through_inplace_writes_leaves_input_tangent_intact():
    x = np.array([0.2, 0.7, -0.3, 1.1])
    dx = np.ones(4)
    check(inplace, x, 0.4)
    jvp(inplace, (x, 0.4), (dx, 1.0))
    np.testing.assert_array_equal(dx, np.ones(4))


# ---------------------------------------------------------------- calls

def helper(a, scale=2.0):
    return np.tanh(a) * scale


def outer(x, k):
    v = helper(x) + helper(x * k, scale=k)
    return np.sum(v * v) + math.sin(k)


def test_jvp_through_calls_to_user_functions_with_keywords_and_defaults():
    check(outer, np.array([0.1, -0.4, 0.9]), 1.3)


def pair(x):
    return np.sin(x), np.cos(x)


def uses_pair(x):
    s, c = pair(x)
    return s * c + x


def test_jvp_through_a_call_returning_a_tuple():
    check(uses_pair, np.array([0.2, 1.4]))


def integer_args(x, n):
    acc = x
    for _ in range(n):
        acc = acc * x
    return acc


def test_integer_parameter_gets_no_spurious_tangent():
    out, tangent = jvp(integer_args, (0.7, 3), (1.0, 0))
    assert out == pytest.approx(0.7 ** 4)
    assert tangent == pytest.approx(4 * 0.7 ** 3)


# ---------------------------------------------------------------- compiled

@pytest.fixture(scope="module")
def compiled_loops():
    return jit(jvp(loops))


def test_compiled_jvp_matches_python(compiled_loops):
    check(loops, np.array([0.3, -2.0, 1.1, 0.4, 2.0, 3.0]), backend=compiled_loops)


@pytest.mark.slow
def test_compiled_jvp_through_calls_and_inplace():
    check(inplace, np.array([0.2, 0.7, -0.3, 1.1]), 0.4, backend=jit(jvp(inplace)))


# ---------------------------------------------------------------- generated code and errors

def test_generated_code_names_tangents_and_cites_source_lines():
    text = show_jvp(branches)
    assert "def branches_jvp(x, y, dx, dy):" in text
    assert "# jvp of: z = np.sin(x) + y" in text
    assert "return z_times_2_0, dz_times_2_0" in text


def no_rule(x):
    return np.fft.fft(x)


def test_missing_rule_is_a_located_error():
    with pytest.raises(TransformError) as info:
        jvp(no_rule, (np.ones(4),), (np.ones(4),))
    assert info.value.lineno == no_rule.__code__.co_firstlineno + 1
    assert "fft" in str(info.value)


def mutator(x, out):
    fill(out, x)
    return out


def fill(out, x):
    out[0] = x


def test_call_for_effect_on_active_value_is_refused():
    with pytest.raises(TransformError, match="result is unused"):
        jvp(mutator, (1.0, np.zeros(2)), (1.0, np.zeros(2)))
