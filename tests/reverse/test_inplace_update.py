"""`z += v` where another name may hold z's array: NumPy updates the array in place, so
the other name sees the change. Primal and vmap follow NumPy; reverse mode gives the
right gradient when no other name really shares the array (numbers, fresh arrays) and
raises otherwise, never a gradient of the wrong function."""
import os

os.environ.setdefault("NUMBA_OPT", "0")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from gradcheck import assert_gradient_close, central_differences  # noqa: E402

from transformer import TransformError, grad, jit, vmap  # noqa: E402


def update_through_copy(x):
    y = x * 2.0
    z = y
    z *= x                # y is the same array: y = 2 x^2
    return np.sum(y * y)


def update_through_slice(x):
    y = x * 2.0
    z = y[1:]
    z += x[:2]            # writes y[1:]
    return np.sum(y * y)


def previous_sum(x):
    s = 0.0
    t = 0.0
    for i in range(x.shape[0]):
        prev = s          # a number: the update rebinds s, prev keeps the old value
        s += x[i]
        t = t + prev * s
    return t


def fresh_after_copy(x):
    y = x * 2.0
    z = y
    z = z * 1.0           # a new array: the update below leaves y alone
    z += x
    return np.sum(y * z)


X = np.array([0.5, -1.25, 2.0])


@pytest.mark.parametrize("fn", [update_through_copy, update_through_slice, previous_sum,
                                fresh_after_copy])
def test_vmap_updates_each_example_as_numpy_does(fn):
    xs = np.stack([X, X[::-1] * 0.5])
    expected = [fn(x.copy()) for x in xs]
    np.testing.assert_allclose(vmap(fn)(xs.copy()), expected, rtol=1e-12)


@pytest.mark.slow
def test_jit_vmap_updates_each_example_as_numpy_does():
    xs = np.stack([X, X[::-1] * 0.5])
    compiled = jit(vmap(update_through_slice))
    np.testing.assert_allclose(compiled(xs.copy()),
                               [update_through_slice(x.copy()) for x in xs], rtol=1e-12)


@pytest.mark.parametrize("fn", [previous_sum, fresh_after_copy])
def test_grad_of_updates_that_share_no_array(fn):
    assert_gradient_close(grad(fn)(X.copy()), central_differences(fn, (X.copy(),), 0))


def test_jit_grad_of_an_updated_number_read_through_a_copy():
    assert_gradient_close(jit(grad(previous_sum))(X.copy()),
                          central_differences(previous_sum, (X.copy(),), 0))


@pytest.mark.parametrize("fn", [update_through_copy, update_through_slice])
def test_grad_refuses_an_update_another_name_sees(fn):
    with pytest.raises(ValueError, match="'y' shares its array"):
        grad(fn)(X.copy())


def test_jit_grad_refuses_an_update_another_name_sees():
    with pytest.raises(ValueError, match="shared with another name"):
        jit(grad(update_through_copy))(X.copy())


def alias_bound_in_a_branch(x, c):
    y = x * 2.0
    if c > 0.0:
        w = y
    y += x                # w, unbound when c <= 0, cannot be checked here
    if c > 0.0:
        return np.sum(w * y)
    return np.sum(y)


def alias_read_before_the_update(x, c):
    y = x * 2.0
    if c > 0.0:
        w = y
        t = np.sum(w)
    else:
        t = 0.0
    y += x                # w is not read again: rebinding y gives NumPy's values
    return t * np.sum(y)


def test_grad_refuses_an_alias_not_surely_bound_at_the_update():
    with pytest.raises(TransformError, match="'w' may hold the array") as info:
        grad(alias_bound_in_a_branch)(X.copy(), 1.0)
    assert "test_inplace_update.py" in str(info.value)


def element_write_then_counter(a):
    b = a.copy()
    j = 2
    b[j] = b[j - 1]       # copies a value: j and b share nothing
    j -= 1
    return b[j]


def test_only_names_that_may_share_an_array_update_in_place():
    from transformer.desugar import desugar
    from transformer.frontend import parse
    from transformer.runtime import update_in_place

    def helpers(fn):
        return [v for v in desugar(parse(fn)).env.values() if v is update_in_place]
    assert helpers(element_write_then_counter) == []
    assert helpers(previous_sum) and helpers(update_through_slice)


def test_grad_of_an_update_whose_alias_is_not_read_again():
    fn = alias_read_before_the_update
    for c in (1.0, -1.0):
        assert_gradient_close(grad(fn)(X.copy(), c), central_differences(fn, (X.copy(), c), 0))
