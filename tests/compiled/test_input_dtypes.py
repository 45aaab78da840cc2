"""Inputs the derivative is not defined for are refused as JAX refuses them, never
differentiated into a wrong number; out-of-range vmap axes raise under jit as without it;
integer arithmetic under jit differs from NumPy 2 exactly as the README states."""
import numpy as np
import pytest

from transformer import (grad, hessian, jacfwd, jacrev, jit, value_and_grad, vjp, vmap)
from transformer.input_dtypes import FLOAT0


def square_plus_one(x):
    return x * x + 1.0


def weighted(x, w):
    return np.sum(x * w)


def shifted(x):
    return x + 2


COMPILED_GRAD = jit(grad(square_plus_one))


@pytest.mark.parametrize("value,kind", [(2 + 1j, "complex"), (True, "a boolean"),
                                        (2, "an integer"), (np.int32(2), "an integer"),
                                        (np.array([1, 2]), "an integer")])
@pytest.mark.parametrize("transform", [
    lambda f: grad(f), lambda f: value_and_grad(f), lambda f: jacrev(f),
    lambda f: jacfwd(f), lambda f: hessian(f), lambda f: COMPILED_GRAD,
], ids=["grad", "value_and_grad", "jacrev", "jacfwd", "hessian", "jit-grad"])
def test_non_real_inputs_are_a_type_error_naming_the_argument(transform, value, kind):
    with pytest.raises(TypeError, match=f"argument 'x' is {kind}"):
        transform(square_plus_one)(value)


def test_complex_refusal_says_holomorphic_is_out_of_scope():
    with pytest.raises(TypeError, match="holomorphic=True; secant does not") as info:
        grad(square_plus_one)(2 + 1j)
    assert "sub-dtype of np.floating" in str(info.value)


def test_vjp_refuses_an_integer_primal_naming_it():
    with pytest.raises(TypeError, match="vjp requires real-valued inputs.*argument 'x'"):
        vjp(square_plus_one, 2)


def tilted(p, q):
    if p > q:
        return np.tanh(p - 0.5 * q)
    return np.tanh(p * q)


def int_on_one_path(x):
    b = x * 2.0
    c = 0
    if x < 10.0:
        b = c               # an int here: tilted's vjp is handed 0, not a float
    return tilted(b, 1.5) + x


def scaled_tanh(p, q):
    return np.tanh(p * q)


def int_rows_on_one_path(x):
    rows = x * 2.0
    if x[0] < 10.0:
        rows = np.arange(3)
    return np.sum(scaled_tanh(rows, 1.5)) + np.sum(x * x)


# (under jit, an int array and a float array in one variable is refused, located)
@pytest.mark.parametrize("f, x, transform", [
    (int_on_one_path, 0.3, grad), (int_on_one_path, 0.3, lambda f: jit(grad(f))),
    (int_rows_on_one_path, np.array([0.3, -0.2, 0.5]), grad)],
    ids=["number", "number-jit", "array"])
def test_a_helper_handed_an_int_on_one_path_has_no_derivative_there(f, x, transform):
    """The refusal of an integer argument is the user's own call's (`grad(f)(2)`), not a
    helper's: an int a helper gets from a branch of its caller is constant."""
    h = 1e-6
    if np.ndim(x):
        want = np.array([(f(x + h * e) - f(x - h * e)) / (2 * h) for e in np.eye(x.size)])
    else:
        want = (f(x + h) - f(x - h)) / (2 * h)
    np.testing.assert_allclose(transform(f)(x), want, rtol=1e-6, atol=1e-8)


def test_allow_int_gives_float0_zeros_and_the_float_gradients():
    x, w = np.array([1, 2]), np.array([3.0, 5.0])
    gx, gw = grad(weighted, argnums=(0, 1), allow_int=True)(x, w)
    assert gx.dtype == FLOAT0 and gx.shape == (2,)
    np.testing.assert_allclose(gw, x.astype(float))
    value, (gx, gw) = value_and_grad(weighted, argnums=(0, 1), allow_int=True)(x, w)
    assert value == pytest.approx(13.0) and gx.dtype == FLOAT0
    np.testing.assert_allclose(gw, [1.0, 2.0])
    only = grad(square_plus_one, allow_int=True)(3)
    assert only.dtype == FLOAT0 and only.shape == ()


def test_allow_int_under_jit_is_refused_rather_than_wrong():
    with pytest.raises(TypeError, match="allow_int=True.*under jit"):
        jit(grad(square_plus_one, allow_int=True))(3)


def test_allow_int_does_not_accept_complex():
    with pytest.raises(TypeError, match="is complex"):
        grad(square_plus_one, allow_int=True)(1 + 2j)


def test_jit_vmap_with_an_axis_out_of_range_raises_like_vmap():
    x, w = np.ones((3, 2)), np.ones((3, 2))
    batched = vmap(weighted, in_axes=(2, 0))
    with pytest.raises(ValueError, match="in_axes 2 is out of range for argument 'x'"):
        batched(x, w)
    with pytest.raises(ValueError, match="in_axes 2 is out of range for argument 'x'"):
        jit(batched)(x, w)
    np.testing.assert_allclose(jit(vmap(weighted, in_axes=(1, 1)))(x, w), [3.0, 3.0])


def test_integer_arithmetic_under_jit_is_int64_as_the_readme_states():
    narrow = np.array([1, 2, 200], dtype=np.uint8)
    compiled = jit(shifted)(narrow)
    # NumPy 2 keeps uint8 and wraps; jit computes in int64 (Numba types the literal so)
    assert shifted(narrow).dtype == np.uint8 and compiled.dtype == np.int64
    np.testing.assert_array_equal(compiled, narrow.astype(np.int64) + 2)
    np.testing.assert_array_equal(compiled.astype(np.uint8), shifted(narrow))
    floats = np.array([1.5, 2.5], dtype=np.float32)
    assert jit(shifted)(floats).dtype == np.float32
