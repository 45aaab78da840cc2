"""A custom_vjp host callback called in a loop under grad runs once per trip, as in JAX.

The forward sweep runs the rule's `fwd` and keeps each trip's residuals; the reverse sweep
hands them to `bwd` in reverse order instead of running `fwd` (and the callback) again.
Counted calls are the contract; gradients are checked against central differences.
"""
import numpy as np
import pytest

from gradcheck import assert_gradient_close, central_differences
from transformer import ShapeDtypeStruct, custom_vjp, grad, jit, pure_callback, vmap

CALLS = []
VEC3 = ShapeDtypeStruct((3,), np.float64)


def host_sin(a):
    CALLS.append(np.array(a))
    return np.sin(a)


@custom_vjp
def hsin(x):
    return pure_callback(host_sin, VEC3, x, vmap_method="sequential")


def _hsin_fwd(x):
    s = hsin(x)
    return s, (x, s)           # a tuple of residuals, one of them the callback's value


def _hsin_bwd(residuals, g):
    x, s = residuals
    return (g * np.cos(x) + 0.0 * s,)


hsin.defvjp(_hsin_fwd, _hsin_bwd)


def for_loop(x, n):
    for _ in range(n):
        x = hsin(x) * 1.5
    return np.sum(x * x)


def while_loop_with_branch(x):
    k = 0
    while k < 4:
        if k % 2 == 0:
            x = hsin(x) + x          # trips 0 and 2 only: residuals pushed and popped alike
        else:
            x = x * 0.5
        k = k + 1
    return np.sum(x)


X = np.array([0.3, -0.7, 1.1])


@pytest.fixture(autouse=True)
def _fresh():
    CALLS.clear()


def _counted(g, *args):
    g(*args)            # transform and compile first: count one evaluation alone
    CALLS.clear()
    result = g(*args)
    return result, len(CALLS)


@pytest.mark.parametrize("f, args, trips", [(for_loop, (X, 3), 3),
                                            (while_loop_with_branch, (X,), 2)],
                         ids=["for", "while-branch"])
def test_grad_runs_the_callback_once_per_trip(f, args, trips):
    g, calls = _counted(grad(f), *args)
    assert calls == trips
    assert_gradient_close(g, central_differences(f, args))


@pytest.mark.slow
def test_compiled_grad_runs_the_callback_once_per_trip():
    g, calls = _counted(jit(grad(for_loop)), X, 3)
    assert calls == 3
    assert_gradient_close(g, central_differences(for_loop, (X, 3)))


def test_vmap_of_grad_runs_the_callback_once_per_trip_and_example():
    xs = np.stack([X, 0.5 * X])
    g, calls = _counted(vmap(grad(for_loop), in_axes=(0, None)), xs, 2)
    assert calls == 2 * 2
    expected = np.stack([central_differences(for_loop, (x, 2)) for x in xs])
    assert_gradient_close(g, expected)


def test_second_derivative_through_a_looped_custom_vjp_is_refused_with_its_location():
    from transformer import jacrev
    from transformer.errors import TransformError
    with pytest.raises(TransformError) as caught:
        jacrev(grad(for_loop))(X, 2)
    assert caught.value.line.strip() == "x = hsin(x) * 1.5"


@custom_vjp
def plain_sin(x):
    return np.sin(x)


plain_sin.defvjp(lambda x: (np.sin(x), np.cos(x)), lambda c, g: (g * c,))


def plain_for_loop(x):
    for _ in range(x.shape[0]):
        x = plain_sin(x) * 1.5
    return np.sum(x * x)


def test_a_looped_custom_vjp_without_callbacks_keeps_its_gradient():
    assert_gradient_close(grad(plain_for_loop)(X), central_differences(plain_for_loop, (X,)))
