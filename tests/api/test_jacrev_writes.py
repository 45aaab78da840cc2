"""jacrev of a function that writes into its arguments.

Each Jacobian row differentiates the function at the arguments as they were at the call
(the oracle: finite differences of a wrapper that hands the function a copy), and the
caller's arrays end as one call of the function leaves them.
"""
import numpy as np
import pytest

from transformer import api_forward, hessian, jacfwd, jacrev, jit
from transformer.errors import TransformError
from transformer.test_util import numerical_grad, numerical_jacobian


def doubles_first(x):
    x[0] = 2 * x[0]
    return x * x


def shifts_all(x):
    x += 1.0
    return np.sin(x) * x[0]


def squares_slice(x):
    x[:] = x * x
    return x[1] * x


def writes_both(x, y):
    x[0] = y[1] * x[0]
    y[1] = x[0] + y[0]
    return x * y


def doubles_with_aux(x):
    x[0] = 2 * x[0]
    return x * x, {"first": x[0]}


def cubes_doubled(x):
    x[0] = 2 * x[0]
    return np.sum(x * x * x)


def _copying(f):
    return lambda *args: f(*(np.copy(a) for a in args))


def _after_one_call(f, *args):
    args = tuple(np.copy(a) for a in args)
    f(*args)
    return args


X = np.array([1.0, 2.0, 0.5])


@pytest.mark.parametrize("f", [doubles_first, shifts_all, squares_slice])
def test_jacrev_rows_see_the_arguments_of_the_call(f):
    x = X.copy()
    jac = jacrev(f)(x)
    np.testing.assert_allclose(jac, numerical_jacobian(_copying(f), X), atol=1e-6)
    np.testing.assert_array_equal(x, _after_one_call(f, X)[0])


def test_jacrev_of_the_motivating_write_is_8_not_16():
    x = np.array([1.0, 2.0])
    np.testing.assert_allclose(jacrev(doubles_first)(x), [[8.0, 0.0], [0.0, 4.0]])
    np.testing.assert_array_equal(x, [2.0, 2.0])      # doubled once, as by one call


def test_jacrev_in_two_written_arguments():
    x0, y0 = np.array([1.0, 2.0]), np.array([3.0, 0.5])
    x, y = x0.copy(), y0.copy()
    jx, jy = jacrev(writes_both, argnums=(0, 1))(x, y)
    np.testing.assert_allclose(jx, numerical_jacobian(
        lambda v: _copying(writes_both)(v, y0), x0), atol=1e-6)
    np.testing.assert_allclose(jy, numerical_jacobian(
        lambda v: _copying(writes_both)(x0, v), y0), atol=1e-6)
    after_x, after_y = _after_one_call(writes_both, x0, y0)
    np.testing.assert_array_equal(x, after_x)
    np.testing.assert_array_equal(y, after_y)


def test_jacrev_has_aux_gives_the_aux_of_the_one_call():
    x0 = np.array([1.0, 2.0])
    x = x0.copy()
    jac, aux = jacrev(doubles_with_aux, has_aux=True)(x)
    np.testing.assert_allclose(jac, numerical_jacobian(
        lambda v: _copying(doubles_with_aux)(v)[0], x0), atol=1e-6)
    assert aux == {"first": 2.0}
    np.testing.assert_array_equal(x, [2.0, 2.0])


def test_jacrev_row_by_row_fallback_sees_the_arguments_of_the_call(monkeypatch):
    """Where vmap cannot batch the vjp, jacrev pulls one row at a time: same numbers."""
    def unbatchable(*args, **kwargs):
        raise TransformError("no batching rule")
    monkeypatch.setattr(api_forward, "_batched_body", unbatchable)
    x = X.copy()
    jac = jacrev(doubles_first)(x)
    np.testing.assert_allclose(jac, numerical_jacobian(_copying(doubles_first), X), atol=1e-6)
    np.testing.assert_array_equal(x, _after_one_call(doubles_first, X)[0])


def test_hessian_of_a_writing_function_is_taken_at_the_arguments_of_the_call():
    x0 = np.array([1.0, 2.0])
    gradient = lambda v: numerical_grad(_copying(cubes_doubled), [v], eps=1e-5)  # noqa: E731
    expected = numerical_jacobian(gradient, x0, eps=1e-4)
    np.testing.assert_allclose(hessian(cubes_doubled)(x0.copy()), expected, atol=1e-4)


def test_jacfwd_of_jacrev_of_a_writing_function_is_a_located_error():
    with pytest.raises(TransformError) as caught:
        jacfwd(jacrev(doubles_first))(np.array([1.0, 2.0]))
    text = str(caught.value)
    assert "writes into its argument 'x'" in text
    assert "test_jacrev_writes.py:" in text and "x.copy()" in text


@pytest.mark.slow
def test_jit_jacrev_rows_see_the_arguments_of_the_call():
    x = X.copy()
    jac = jit(jacrev(doubles_first))(x)
    np.testing.assert_allclose(jac, numerical_jacobian(_copying(doubles_first), X), atol=1e-6)
    np.testing.assert_array_equal(x, _after_one_call(doubles_first, X)[0])
