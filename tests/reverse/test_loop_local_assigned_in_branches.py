"""A name assigned only inside branches (or inner loops) of a loop body, such as the
element `e` of two `for e in w` loops, one in each arm of an `if`.

Its adjoint used to be zeroed at the start of each reverse trip of the enclosing loop
with `be = zeros_like(e)`, which reads `e`: when the loop is left by `return` before the
first assignment of `e`, or the branch that assigns it is never taken, `grad` raised
UnboundLocalError on a valid program. The adjoint is now zeroed where the value is
assigned and reset after each assignment consumes it, as for such a name at the top of
the function.
"""
import numpy as np
import pytest

from gradcheck import assert_gradient_close, central_differences
from transformer import grad, jit


def returns_before_the_inner_loops(x, v):
    w = v.copy()
    b = v[0] * x
    for _ in range(2):
        if x > 0.1:
            if w[1] > 0.1:
                return b
            for e in w:
                b = np.tanh(b + e * x)
        else:
            for e in w:
                b = np.tanh(b + e * x)
    return b


def assigned_in_one_branch(x, v):
    b = x
    for j in range(3):
        if v[j] > 0.0:
            t = np.sin(b * v[j])
            b = b + t * t
    return b


def _expected(f, x, v):
    return [central_differences(f, [x, v], k) for k in (0, 1)]


@pytest.mark.parametrize("x, v", [
    (0.25, np.array([0.79, 0.55, -0.55, -0.4])),     # returns on the first trip
    (0.25, np.array([0.79, -0.55, 0.55, -0.4])),     # inner loop of the first arm runs
    (-0.5, np.array([0.3, 0.55, -0.2, 0.4]))],       # the other arm
    ids=["return-first", "first-arm", "second-arm"])
def test_grad_of_a_loop_left_before_its_inner_loops_matches_finite_differences(x, v):
    gx, gv = grad(returns_before_the_inner_loops, argnums=(0, 1))(x, v)
    ex, ev = _expected(returns_before_the_inner_loops, x, v)
    assert_gradient_close(gx, ex)
    assert_gradient_close(gv, ev)


@pytest.mark.parametrize("v", [np.array([-0.5, -0.3, -0.1]), np.array([-0.5, 0.7, 0.4]),
                               np.array([0.6, -0.2, 0.9])], ids=["never", "late", "mixed"])
def test_grad_of_a_name_assigned_in_one_branch_of_a_loop_matches_finite_differences(v):
    gx, gv = grad(assigned_in_one_branch, argnums=(0, 1))(0.4, v)
    ex, ev = _expected(assigned_in_one_branch, 0.4, v)
    assert_gradient_close(gx, ex)
    assert_gradient_close(gv, ev)


@pytest.mark.slow
def test_compiled_grad_of_a_loop_left_before_its_inner_loops_matches_finite_differences():
    x, v = 0.25, np.array([0.79, 0.55, -0.55, -0.4])
    gx, gv = jit(grad(returns_before_the_inner_loops, argnums=(0, 1)))(x, v)
    ex, ev = _expected(returns_before_the_inner_loops, x, v)
    assert_gradient_close(gx, ex)
    assert_gradient_close(gv, ev)
