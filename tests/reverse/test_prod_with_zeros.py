"""np.prod's and np.cumprod's derivatives where an element is 0. The rules divided the
product by each element (`z / x`), which is 0 / 0 there: the gradient and the tangent were
NaN, where the derivative in that element is the product of the others (JAX's too). They
now compute the product of the others, with one zero or several along the axis, under
grad, jvp, jit and hessian."""
import numpy as np
import pytest

from transformer import grad, hessian, jit, jvp


def whole(x):
    return np.prod(x)


def rows(x):
    return np.sum(np.prod(x.reshape(2, 3), axis=1) * np.array([1.0, 3.0]))


def columns_kept(x):
    return np.sum(np.prod(x.reshape(2, 3), axis=0, keepdims=True) ** 2)


def running(x):
    return np.sum(np.cumprod(x) * np.arange(1.0, 7.0))


def running_rows(x):
    return np.sum(np.cumprod(x.reshape(2, 3), axis=1) * np.arange(6.0).reshape(2, 3))


def running_columns(x):
    return np.sum(np.cumprod(x.reshape(2, 3), axis=0) ** 2)


POINTS = [np.array([0.5, 2.0, 0.0, 1.5, -1.0, 3.0]),       # one zero
          np.array([0.0, 2.0, 0.0, 1.5, -1.0, 0.0]),       # several, one row with two
          np.array([0.5, 2.0, 1.2, 1.5, -1.0, 3.0])]       # none


def central(f, x, h=1e-6):
    return np.array([(f(x + e) - f(x - e)) / (2 * h) for e in np.eye(x.size) * h])


@pytest.mark.every_case
@pytest.mark.parametrize("function", [whole, rows, columns_kept, running, running_rows,
                                      running_columns])
def test_derivatives_at_zeros_match_central_differences(function):
    for x in POINTS:
        want = central(function, x)
        np.testing.assert_allclose(grad(function)(x), want, atol=1e-6)
        np.testing.assert_allclose(jit(grad(function))(x), want, atol=1e-6)
        _, tangent = jvp(function, (x,), (np.arange(6.0),))
        assert tangent == pytest.approx(want @ np.arange(6.0), abs=1e-6)


def test_second_derivatives_and_float32():
    x = POINTS[2]
    for function in (rows, running_rows):
        numeric = np.array([central(grad(function), x)[:, i] for i in range(6)]).T
        np.testing.assert_allclose(hessian(function)(x), numeric, atol=1e-5)
    assert jit(grad(whole))(x.astype(np.float32)).dtype == np.float32
