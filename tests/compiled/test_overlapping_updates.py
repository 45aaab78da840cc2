"""`t op= v` where `v` views memory `t` writes: NumPy computes from the values before the
update (it buffers overlapping operands); Numba's in-place loop read elements it had
already updated, so under jit `a[1:] += a[:-1]` gave running sums and `a += a.T` a
matrix that is not symmetric, silently. Such an update now computes `t op v` into a fresh
array first."""
import numpy as np
import pytest

from transformer import grad, jit, vmap


def shifted(x):
    a = np.arange(6.0) * x
    a[1:] += a[:-1]
    return a


def through_a_name(x):
    a = np.arange(6.0) * x
    b = a[:-1]
    a[1:] *= b
    return a


def transposed(x):
    a = np.arange(9.0).reshape(3, 3) * x
    a += a.T
    return a


def transposed_by_name_in_a_loop(x):
    a = np.arange(9.0).reshape(3, 3) * x
    for _ in range(2):
        t = np.transpose(a)
        a -= 0.5 * t + t
        a -= t
    return a


def seen_by_another_name(x):
    a = np.arange(4.0) * x
    alias = a
    a += a[::-1]
    return alias


def same_elements(x):
    a = np.arange(6.0) * x
    a += a
    a[1:] -= a[1:]
    return a


@pytest.mark.every_case
@pytest.mark.parametrize("function", [shifted, through_a_name, transposed,
                                      transposed_by_name_in_a_loop, seen_by_another_name,
                                      same_elements])
def test_values_are_numpys(function):
    np.testing.assert_array_equal(jit(function)(1.5), function(1.5))


def test_under_grad_and_vmap():
    def energy(x):
        return np.sum(transposed(x) ** 2)
    assert jit(grad(energy))(1.5) == pytest.approx(grad(energy)(1.5))
    xs = np.array([1.0, -2.0])
    np.testing.assert_array_equal(jit(vmap(shifted))(xs), [shifted(x) for x in xs])
