"""A view rebound in a branch to a view of an array written in place afterwards
(hunt_writes seed 41, example 4).

`u` is a view of `h`, rebound in a branch to a view of `g`; `g` is then written in place
and `u` read after: the write changes `u` on the branch taken. grad returned 0.0 there,
where central differences give 2.0: reverse mode checked at run time only a view bound
once, in a block around the write. It now checks every name bound on all paths to the
write (`check_not_view`): on the branch taken the write is refused at its line, on the
other the gradient is right. Forward mode follows the write.
"""
from __future__ import annotations

import os

os.environ.setdefault("NUMBA_OPT", "0")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from gradcheck import assert_gradient_close, central_differences  # noqa: E402

from transformer import grad, jacfwd, jit  # noqa: E402

pytestmark = pytest.mark.every_case


def view_rebound_in_a_branch(x, a):
    h = np.zeros(6) + x
    g = a * 0.5
    u = h[::2]
    if x > 0.5:
        u = g[::2]
    g[1:3] += x * 2.0
    return np.sum(u)


A = np.linspace(-1.0, 1.0, 6)


def fresh(x):
    return view_rebound_in_a_branch(x, A.copy())


def test_forward_mode_follows_the_write():
    assert_gradient_close(jacfwd(view_rebound_in_a_branch)(0.8, A.copy()),
                          central_differences(fresh, (0.8,), 0))


@pytest.mark.parametrize("compiled", [False, True])
def test_grad_refuses_the_write_through_the_rebound_view(compiled):
    f = jit(grad(view_rebound_in_a_branch)) if compiled else grad(view_rebound_in_a_branch)
    with pytest.raises(ValueError, match="reverse mode needs a copy") as caught:
        f(0.8, A.copy())
    if not compiled:
        assert "view into 'g'" in str(caught.value) and ":32:5" in str(caught.value)


@pytest.mark.parametrize("compiled", [False, True])
def test_grad_is_right_where_the_view_is_not_rebound(compiled):
    f = jit(grad(view_rebound_in_a_branch)) if compiled else grad(view_rebound_in_a_branch)
    assert_gradient_close(f(0.2, A.copy()), central_differences(fresh, (0.2,), 0))


def rebound_after_the_write(x, a):
    g = a * 0.5
    u = g[::2]
    if x > 0.5:
        u = g[1::2]
    g[1:3] += x * 2.0
    u = g[3:] * 1.0
    return np.sum(u)


def test_a_view_rebound_before_any_use_after_the_write_is_not_checked():
    def fresh_rebound(x):
        return rebound_after_the_write(x, A.copy())
    for x in (0.2, 0.8):
        assert_gradient_close(grad(rebound_after_the_write)(x, A.copy()),
                              central_differences(fresh_rebound, (x,), 0))
