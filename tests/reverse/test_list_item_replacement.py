"""Replacing an item of a list built in the function (`lst[1] = h * 2`, `lst[0] += x`)
under reverse mode. The reverse pass reads `lst[k]` as the value the list was built from,
so the new item was missed: grad gave silently wrong numbers (where nothing read the
list's first value afterwards) or refused with a message about a write into a view of `h`,
which the line does not make. It is refused at the line, naming the list, with a hint that
works; forward mode takes the write as it is. Oracle: central finite differences."""
import inspect

import numpy as np
import pytest

from transformer import TransformError, grad, jacfwd, jvp
from transformer.test_util import numerical_grad


def replaced(x):
    h = np.sin(x)
    lst = [h, x]
    lst[1] = h * 2
    return np.sum(lst[0] * lst[1])


def augmented(x):
    lst = [x * 1.0, x * 2.0]
    lst[0] += x
    return np.sum(lst[0] * lst[1])


def replaced_in_loop(x):
    h = np.sin(x)
    lst = [x, h]
    for _ in range(2):
        lst[1] = h * 2
    return np.sum(lst[0] * lst[1]) + np.sum(h)


def as_the_hint_says(x):
    h = np.sin(x)
    lst = [h, x]
    lst2 = [lst[0], h * 2]
    return np.sum(lst2[0] * lst2[1])


X = np.array([0.3, 1.1, -2.0])


def _line(f, text):
    lines, first = inspect.getsourcelines(f)
    return first + next(k for k, line in enumerate(lines) if text in line)


@pytest.mark.parametrize("f, text", [(replaced, "lst[1] = h * 2"),
                                     (augmented, "lst[0] += x"),
                                     (replaced_in_loop, "lst[1] = h * 2")])
def test_grad_refuses_replacing_an_item_of_a_list_at_its_line(f, text):
    with pytest.raises(TransformError, match=r"'lst\[[01]\]' of the list 'lst'") as caught:
        grad(f)(X)
    assert caught.value.location.split(":")[-2] == str(_line(f, text))
    assert "view" not in str(caught.value) and "lst2 = [lst[0], ...]" in caught.value.hint


def test_the_hints_rewrite_and_forward_mode_match_finite_differences():
    np.testing.assert_allclose(grad(as_the_hint_says)(X), numerical_grad(replaced, (X,)),
                               rtol=1e-6, atol=1e-8)
    for f in (replaced, augmented, replaced_in_loop):
        expected = numerical_grad(f, (X,))
        np.testing.assert_allclose(jacfwd(f)(X), expected, rtol=1e-6, atol=1e-8)
        _, tangent = jvp(f, (X,), (np.ones(3),))
        assert tangent == pytest.approx(np.sum(expected), rel=1e-6)
