"""An item of a list or tuple built in the body (`lst = [x, h]`) is read by reverse mode as
the name it was built from. Where that name is assigned again between the building and
the read (`h = np.tanh(h + lst[1][3] * x)` in a loop the passes cannot unroll), the item
holds the old array but its adjoint went to the new one: a silently wrong gradient. It is
refused at the read, and the hint's form gets the finite-difference gradient."""
import numpy as np
import pytest

from transformer import TransformError, grad
from transformer.test_util import numerical_grad

V = np.linspace(-0.5, 1.0, 6)


def item_of_a_rebound_name(x, v):
    h = v * 0.5
    lst = [x, h]
    for _ in range(1):
        for _k in range(2):
            h = np.tanh(h + lst[1][3] * x)
        if x > 10.0:
            v[4] = np.tanh(x)
    return np.sum(np.tanh(h))


def item_of_its_own_name(x, v):           # the hint: build the list from a name of its own
    h = v * 0.5
    h0 = h
    lst = [x, h0]
    for _ in range(1):
        for _k in range(2):
            h = np.tanh(h + lst[1][3] * x)
        if x > 10.0:
            v[4] = np.tanh(x)
    return np.sum(np.tanh(h))


def item_of_a_name_rebound_after_the_read(x, v):
    h = v * 0.5
    t = (x, h)
    s = np.sum(t[1] * x)
    h = np.tanh(h)
    return s + np.sum(h)


def test_an_item_of_a_name_assigned_again_before_the_read_is_refused_at_the_read():
    with pytest.raises(TransformError, match="assigned again before it is read") as info:
        grad(item_of_a_rebound_name)(0.7, V.copy())
    assert info.value.line.strip() == "h = np.tanh(h + lst[1][3] * x)"
    assert "h0 = h" in info.value.hint


@pytest.mark.parametrize("f", [item_of_its_own_name, item_of_a_name_rebound_after_the_read])
def test_an_item_read_before_its_name_changes_gets_the_finite_difference_gradient(f):
    got = grad(f)(0.7, V.copy())
    want = numerical_grad(lambda x: f(x, V.copy()), [0.7])
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-9)
