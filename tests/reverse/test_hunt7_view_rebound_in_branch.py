"""A known wrong gradient (hunt_writes seed 41, example 4), kept as a strict xfail.

`u` is a view of `h`, rebound in a branch to a view of `g`; `g` is then written in place
and `u` read after: the write changes `u` on the branch taken. Reverse mode neither follows
the write nor refuses it (a straight-line `u = g[::2]` is refused at run time with
check_not_view), so grad is 0.0 where central differences give 2.0. Forward mode and the
plain run agree with the differences.
"""
from __future__ import annotations

import os

os.environ.setdefault("NUMBA_OPT", "0")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from gradcheck import assert_gradient_close, central_differences  # noqa: E402

from transformer import TransformError, grad, jacfwd  # noqa: E402

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


@pytest.mark.xfail(strict=True, reason="reverse mode misses a write into a view rebound in "
                   "a branch (grad 0.0, differences 2.0); the fix belongs in transformer/reverse")
def test_grad_follows_or_refuses_the_write():
    expected = central_differences(fresh, (0.8,), 0)
    try:
        got = grad(view_rebound_in_a_branch)(0.8, A.copy())
    except (TransformError, ValueError):
        return                                  # a located refusal is an honest answer
    assert_gradient_close(got, expected)
