"""An augmented assignment to a name that holds an item of a list or tuple (`c = lst[1];
c *= 2.0`, `a, c = t; c += x`, `for c in lst: c *= 2.0`) changes that item in place, as
NumPy does: a later read of `lst[1]` sees the new values. Reverse mode rebinds `c` instead
and gave the gradient of the unchanged item with no error (half the true gradient in the
first case below). Its run-time check (`check_not_shared`) looked only at arrays and let a
list or tuple through; it now looks into their items, so these raise, located at the
update, in plain Python and compiled code alike, with a hint whose form gives the right
gradient. Oracles: central differences; jacfwd and vmap, which follow NumPy's semantics."""
import numpy as np
import pytest

from transformer import grad, jacfwd, jacrev, jit, vmap
from transformer.test_util import numerical_grad

X = np.array([0.1, 0.2, 0.3])
BATCH = np.stack([X, X + 0.5])


def item_of_a_list(x):
    lst = [x * 1.0, x * 3.0]
    c = lst[1]
    c *= 2.0
    return np.sum(lst[1] * x)


def item_of_a_tuple(x):
    t = (x * 1.0, x * 3.0)
    c = t[1]
    c *= 2.0
    return np.sum(t[1] * x)


def unpacked_from_a_list(x):
    lst = [x * 1.0, x * 3.0]
    a, c = lst
    c *= 2.0
    return np.sum(lst[1] * x) + np.sum(a)


def unpacked_from_a_tuple(x):
    t = (x * 1.0, x * 3.0)
    a, c = t
    c += x
    return np.sum(t[1] * x)


def loop_over_a_list(x):
    lst = [x * 1.0, x * 3.0]
    for c in lst:
        c *= 2.0
    return np.sum(lst[1] * x)


SHARED = [item_of_a_list, item_of_a_tuple, unpacked_from_a_list, unpacked_from_a_tuple,
          loop_over_a_list]


@pytest.mark.slow
@pytest.mark.every_case
@pytest.mark.parametrize("f", SHARED, ids=lambda f: f.__name__)
def test_the_other_transformations_follow_numpy(f):
    np.testing.assert_allclose(jacfwd(f)(X), numerical_grad(f, (X,)), rtol=1e-6)
    np.testing.assert_allclose(vmap(f)(BATCH), [f(row) for row in BATCH], rtol=1e-12)


@pytest.mark.every_case
@pytest.mark.parametrize("transform", [grad, jacrev, lambda f: vmap(grad(f))],
                         ids=["grad", "jacrev", "vmap(grad)"])
@pytest.mark.parametrize("f", SHARED, ids=lambda f: f.__name__)
def test_reverse_mode_refuses_located_at_the_update(f, transform):
    argument = BATCH if transform not in (grad, jacrev) else X
    with pytest.raises(ValueError) as info:
        transform(f)(argument)
    message = str(info.value)
    assert "test_updates_of_items_taken_from_lists.py:" in message
    assert "an item of" in message and "updated in place" in message
    assert "c = " in message and ".copy()" in message            # the hint


@pytest.mark.parametrize("f", [item_of_a_list, unpacked_from_a_tuple],
                         ids=lambda f: f.__name__)
def test_compiled_reverse_mode_refuses_too(f):
    with pytest.raises(ValueError, match="shared with an item of a list or tuple") as info:
        jit(grad(f))(X)
    assert "test_updates_of_items_taken_from_lists.py:" in str(info.value)


def test_the_hints_form_gives_the_gradient():
    def copied(x):
        lst = [x * 1.0, x * 3.0]
        c = lst[1].copy()
        c *= 2.0
        return np.sum(lst[1] * x) + np.sum(c)
    expected = numerical_grad(copied, (X,))
    np.testing.assert_allclose(grad(copied)(X), expected, rtol=1e-6)
    np.testing.assert_allclose(jit(grad(copied))(X), expected, rtol=1e-6)


def test_an_update_of_an_item_no_later_read_sees_is_not_refused():
    def unread(x):
        lst = [x * 1.0, x * 3.0]
        c = lst[1]
        c *= 2.0
        return np.sum(c * x)
    np.testing.assert_allclose(grad(unread)(X), numerical_grad(unread, (X,)), rtol=1e-6)
