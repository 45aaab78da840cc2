"""An element (or row) of `for e in w` read again only after a later loop binds it anew.

`for e in w: ...` binds `e` to items of `w`; a later `w[1:] = ...` changes the array. The
reverse sweep reads a copy of each `e`, which keeps the primal's meaning when no primal
read of the old `e` can follow the write. A second `for e in w` after the write binds `e`
again before every read; `grad` used to refuse such a program ("'e' is a view of 'w' ...")
because `e` had two assignments. A read of the old `e` after the write is still refused.
"""
import numpy as np
import pytest

from gradcheck import assert_gradient_close, central_differences
from transformer import TransformError, grad


def loops_around_a_write(x, v):
    w = v.copy()
    b = np.sum(v[0]) * x
    for e in w:
        b = np.tanh(b + np.sum(e * b))
    if np.sum(w[0]) > 0.5:
        w[1:] = np.tanh(w[:-1] * x + v[1:])
    else:
        for e in w:
            b = np.tanh(b + np.sum(e * x))
    return b + np.sum(w * w)


def old_item_read_after_the_write(x, v):
    w = v.copy()
    b = x
    for e in w:
        b = np.tanh(b + np.sum(e * b))
    w[1:] = np.tanh(w[:-1] * x + v[1:])
    return b + np.sum(e * w[0])


@pytest.mark.parametrize("v", [np.array([0.96, -0.33, -0.71, -0.67]),
                               np.array([0.2, -0.33, 0.71, -0.67]),
                               np.array([[0.96, 0.1], [-0.33, 0.4], [-0.71, 0.2]]),
                               np.array([[0.1, -0.2], [-0.33, 0.4], [0.71, 0.2]])],
                         ids=["items-write", "items-second-loop", "rows-write",
                              "rows-second-loop"])
def test_grad_of_items_bound_again_after_a_write_matches_finite_differences(v):
    x = 0.3
    gx, gv = grad(loops_around_a_write, argnums=(0, 1))(x, v)
    assert_gradient_close(gx, central_differences(loops_around_a_write, [x, v], 0))
    assert_gradient_close(gv, central_differences(loops_around_a_write, [x, v], 1))


def test_an_old_item_read_after_the_write_is_still_refused_at_the_write():
    with pytest.raises(TransformError, match="'e' is a view of 'w'"):
        grad(old_item_read_after_the_write, argnums=(0, 1))(
            0.3, np.array([[0.9, 0.1], [-0.3, 0.4], [-0.7, 0.2]]))
