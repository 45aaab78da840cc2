"""Gradients of randomly generated programs against finite differences.

Hypothesis writes small programs as source text - straight-line arithmetic, tuple
assignments, `if/else`, `for` and `while` loops with `break`/`continue`, in-place writes
into a work array - to a module on disk, and `grad` (python backend) must agree with
central differences. Programs whose finite differences are not smooth at the drawn point
(a branch threshold within the step) are discarded: no derivative exists there. The
programs are the core grammar of tests/program_generator.py.
"""
import math  # noqa: F401  (generated programs use it)
import os
import textwrap

import numpy as np
import pytest
from gradcheck import assert_gradient_close, central_differences, smooth_differences, write_module
from hypothesis import HealthCheck, assume, given, note, settings
from hypothesis import strategies as st
from program_generator import WORK, programs

from transformer import grad  # noqa: E402

@pytest.fixture(scope="module")
def directory(tmp_path_factory):
    return tmp_path_factory.mktemp("programs")


# Deterministic by default (a fixed sequence of 50 programs); set SECANT_HYPOTHESIS_EXAMPLES
# to search longer with fresh random programs, e.g. SECANT_HYPOTHESIS_EXAMPLES=2000.
_EXAMPLES = int(os.environ.get("SECANT_HYPOTHESIS_EXAMPLES", "0"))


@pytest.mark.slow
@settings(max_examples=_EXAMPLES or 50, derandomize=not _EXAMPLES, deadline=None,
          database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(source=programs(), x=st.floats(-1.0, 1.0), seed=st.integers(0, 2 ** 16))
def test_random_program_gradient(directory, source, x, seed):
    note(source)
    module = write_module(directory, "import math\n\nimport numpy as np\n\n\n" + source, {})
    program = module.program
    v = np.random.default_rng(seed).uniform(-1.0, 1.0, size=WORK)
    expected = smooth_differences(program, (x, v), (0, 1))
    assume(expected is not None)
    gx, gv = grad(program, argnums=(0, 1))(x, v.copy())
    assert_gradient_close(gx, expected[0], "d/dx\n" + textwrap.indent(source, "  "))
    assert_gradient_close(gv, expected[1], "d/dv\n" + textwrap.indent(source, "  "))


# ------------------------------------------------------------------ programs found by search
def swap_in_nested_branch(x, v):
    a = x
    b = v[0] * x
    if b > 5.0:
        pass
    else:
        if a > 0.25:
            a, b = b, a
        b = np.tanh(a)
    return a + b


def test_swap_in_nested_branch():
    # reduced from a generated program; at x < 0.25 the swap branch is not taken
    x, v = -0.8512318451515273, np.array([0.3, -0.2, 0.1, 0.4])
    gx, gv = grad(swap_in_nested_branch, argnums=(0, 1))(x, v)
    assert_gradient_close(gx, central_differences(swap_in_nested_branch, (x, v), 0))
    assert_gradient_close(gv, central_differences(swap_in_nested_branch, (x, v), 1))


def swap_then_augmented(x, v):
    a = x
    b = v[0] * x
    c = 0.5 - v[1]
    for _ in range(2):
        for _k in range(1):
            a, c = c, np.tanh(b)
        c -= 0.5 * np.tanh(a)
    return a + 2.0 * b - c * c


def test_swap_then_augmented_assignment():
    # reduced from a generated program: the swap binds `c` and a temporary to one value,
    # so `c -= ...` counts as an update of a shared array; the temporary is not read
    # again (and may be unbound), which must neither be refused nor change the gradient
    x, v = 0.4259854057753596, np.array([0.3, -0.2, 0.1, 0.4])
    gx, gv = grad(swap_then_augmented, argnums=(0, 1))(x, v)
    assert_gradient_close(gx, central_differences(swap_then_augmented, (x, v), 0))
    assert_gradient_close(gv, central_differences(swap_then_augmented, (x, v), 1))
