"""A loop whose body always ends in `break` (written so, or after a module constant's test
is decided at compile time) under jit(grad): Numba used to refuse the generated code
("Unsupported assignment encountered: Undefined") because it folded the break flag, set
from a constant, and then lost a name the body assigns. The oracle is central finite
differences of the plain Python function; values against the plain Python run.
"""
from __future__ import annotations

import numpy as np
import pytest

from tests.gradcheck import assert_gradient_close, central_differences
from transformer import grad, jit

GAIN = 0.75


def carried_scalar(x, v):
    s = x
    for i in range(3):
        s = np.tanh(s + v[i])
        break
    return s * s + x


def written_item(x, v):
    w = v.copy()
    for i in range(3):
        w[0] = np.tanh(w[1] + x * (i + 1))
        break
    return np.sum(w * w)


def break_on_module_constant(x, v):
    w = v.copy()
    c = 0.5 - v[1]
    for i in range(0, 3):
        w[-3] = np.tanh(w[2] ** 2 + x + i)
        if GAIN > 0.1:
            break
        c = np.tanh(c)
    return np.sum(w * w) + c * x


def while_breaks(x, v):
    s = x
    k = 0
    while k < 4:
        s = np.sin(s * v[k])
        k += 1
        break
    return s + 0.5 * x


@pytest.mark.parametrize("fn", [carried_scalar, written_item, break_on_module_constant,
                                while_breaks])
def test_jit_grad_of_loop_that_always_breaks(fn):
    x, v = 0.3, np.array([0.8, -0.1, 0.4])
    assert np.allclose(jit(fn)(x, v), fn(x, v))
    expected = [central_differences(fn, [x, v], argnum) for argnum in (0, 1)]
    for transform in (jit(grad(fn, argnums=(0, 1))), grad(fn, argnums=(0, 1))):
        for argnum, got in enumerate(transform(x, v)):
            assert_gradient_close(got, expected[argnum], f"{fn.__name__} d/d{argnum}")
