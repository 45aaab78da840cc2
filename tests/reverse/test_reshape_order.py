"""np.reshape with order='F'. Its rules read and wrote in C order whatever the order, so
grad and jvp of a Fortran-order reshape were silently wrong; they now refuse another order
while transforming, at the call, with a C-order form that is the same reshape. Under jit,
`x.reshape(shape, order="F")` failed inside Numba's own typing (an AssertionError out of
the first call); it is now a TransformError at the user's line."""
import inspect

import numpy as np
import pytest

from transformer import TransformError, grad, jit, jvp

W = np.arange(12.0).reshape(4, 3) - 5.0


def fortran(x):
    return np.sum(np.reshape(x, (4, 3), order="F") * W)


def by_hint(x):
    return np.sum(np.reshape(x.T, (3, 4)).T * W)


def test_another_order_is_refused_at_the_call():
    x = np.random.default_rng(0).normal(size=(3, 4))
    line = inspect.getsourcelines(fortran)[1] + 1
    for transform in (lambda: grad(fortran)(x), lambda: jvp(fortran, (x,), (x,))):
        with pytest.raises(TransformError) as caught:
            transform()
        assert (caught.value.filename, caught.value.lineno) == (__file__, line)
        assert "np.reshape(x.T, shape[::-1]).T" in str(caught.value)
    assert by_hint(x) == pytest.approx(fortran(x))
    np.testing.assert_allclose(grad(by_hint)(x), np.reshape(W, (3, 4), order="F"))


def method_in_fortran_order(x):
    return x.reshape((4, 3), order="F")


def test_a_failure_inside_numbas_typing_is_located():
    with pytest.raises(TransformError) as caught:
        jit(method_in_fortran_order)(np.arange(12.0).reshape(3, 4))
    line = inspect.getsourcelines(method_in_fortran_order)[1] + 1
    assert (caught.value.filename, caught.value.lineno) == (__file__, line)
    assert "AssertionError" in str(caught.value)


def asserted(x):
    assert x > 0, "x must be positive"
    return x * 2.0


def test_the_users_own_assert_still_raises_its_error():
    assert jit(asserted)(1.5) == 3.0
    with pytest.raises(AssertionError, match="x must be positive"):
        jit(asserted)(-1.0)
