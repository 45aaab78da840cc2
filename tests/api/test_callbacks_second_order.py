"""A second derivative through a custom_vjp whose rule calls pure_callback: refused,
located, naming the rule; the workaround it gives (a custom_jvp around the callback)
gives the right hessian and grad of grad."""
import numpy as np
import pytest

import transformer
from gradcheck import assert_gradient_close
from transformer import TransformError, custom_jvp, custom_vjp, grad, hessian, pure_callback

spec = transformer.ShapeDtypeStruct((3,), np.float64)


def host_sin(x):
    return np.sin(x)


@custom_vjp
def bare(x):
    return pure_callback(host_sin, spec, x)


def bare_fwd(x):
    return pure_callback(host_sin, spec, x), x


def sin_bwd(x, g):
    return (g * np.cos(x),)


bare.defvjp(bare_fwd, sin_bwd)


@custom_jvp
def sin_callback(x):
    return pure_callback(host_sin, spec, x)


@sin_callback.defjvp
def sin_callback_jvp(primals, tangents):
    x, = primals
    t, = tangents
    return sin_callback(x), np.cos(x) * t


@custom_vjp
def wrapped(x):
    return sin_callback(x)


def wrapped_fwd(x):
    return sin_callback(x), x


wrapped.defvjp(wrapped_fwd, sin_bwd)


def looped_bare(x):
    for _ in range(2):
        x = bare(x) * 0.5
    return np.sum(x ** 2)


def looped_wrapped(x):
    for _ in range(2):
        x = wrapped(x) * 0.5
    return np.sum(x ** 2)


def looped_plain(x):
    for _ in range(2):
        x = np.sin(x) * 0.5
    return np.sum(x ** 2)


def grad_sum_bare(x):
    return np.sum(grad(looped_bare)(x))


def grad_sum_wrapped(x):
    return np.sum(grad(looped_wrapped)(x))


def grad_sum_plain(x):
    return np.sum(grad(looped_plain)(x))


def test_a_second_derivative_through_a_callback_in_a_vjp_rule_names_the_rule():
    x = np.linspace(0.1, 1.0, 3)
    for second in (lambda: hessian(looped_bare)(x), lambda: grad(grad_sum_bare)(x)):
        with pytest.raises(TransformError, match="custom_vjp function bare differentiates "
                           "its rule bare_fwd, which calls pure_callback") as info:
            second()
        assert "custom_jvp" in str(info.value) and "test_callbacks_second_order.py" in \
            str(info.value)


@pytest.mark.slow
def test_the_hint_a_custom_jvp_around_the_callback_gives_the_second_derivatives():
    x = np.linspace(0.1, 1.0, 3)
    assert_gradient_close(hessian(looped_wrapped)(x), hessian(looped_plain)(x), "hessian")
    assert_gradient_close(grad(grad_sum_wrapped)(x), grad(grad_sum_plain)(x), "grad of grad")
