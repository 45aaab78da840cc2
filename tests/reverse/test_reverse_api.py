"""grad / value_and_grad / vjp / custom_vjp / defadjoint / stop_gradient and their errors."""
import numpy as np
import pytest

import reverse_api_functions as ra
from transformer import TransformError, grad, jit, value_and_grad, vjp
from transformer.api_reverse import show_grad
from transformer.test_util import check_grads

X = np.array([0.1, 0.2, 0.9, -2.0])


def test_argnums_tuple_gives_tuple_of_gradients():
    gx, gy = grad(ra.uses_pair, argnums=(0, 1))(1.5, 2.0)
    # a * b = (x y)(x + y): d/dx = y (x + y) + x y, d/dy = x (x + y) + x y
    assert np.isclose(gx, 2.0 * 3.5 + 3.0)
    assert np.isclose(gy, 1.5 * 3.5 + 3.0)


def test_unpacked_tuple_from_user_function():
    check_grads(ra.uses_pair, (1.5, 2.0))


def test_value_and_grad_and_has_aux():
    value, g = value_and_grad(ra.aux_fn, has_aux=True)(X)
    assert np.isclose(value[0], np.sum(X * X))
    np.testing.assert_allclose(value[1], 2 * X)
    np.testing.assert_allclose(g, 2 * X)
    g, aux = grad(ra.aux_fn, has_aux=True)(X)
    np.testing.assert_allclose(g, 2 * X)
    np.testing.assert_allclose(aux, 2 * X)


def test_vjp_of_vector_output():
    out, vjp_fn = vjp(ra.vec_out, X)
    np.testing.assert_allclose(out, X * X)
    ct = np.array([1.0, -1.0, 2.0, 0.5])
    (bx,) = vjp_fn(ct)
    np.testing.assert_allclose(bx, 2 * X * ct)


def test_vjp_of_tuple_output():
    out, vjp_fn = vjp(ra.tuple_output, 1.5)
    assert out == (3.0, 4.5)
    assert vjp_fn((1.0, 2.0)) == (8.0,)


def test_pytree_arguments_get_pytree_gradients():
    params = {"W": np.array([[1.0, 0.5], [-0.3, 0.8]]), "b": np.array([0.1, -0.2]),
              "scale": 2.0}
    x = np.array([0.7, -1.1])
    g = grad(ra.loss)(params, x)
    assert set(g) == {"W", "b", "scale"}
    h = np.tanh(params["W"] @ x + params["b"])
    back = params["scale"] * 2 * h * (1 - h * h)
    np.testing.assert_allclose(g["W"], np.outer(back, x))
    np.testing.assert_allclose(g["b"], back)
    assert np.isclose(g["scale"], np.sum(h * h))


def test_custom_vjp_rule_is_used_inside_and_at_top_level():
    np.testing.assert_allclose(grad(ra.uses_custom)(X), np.full(4, 0.5))
    np.testing.assert_allclose(grad(lambda x: np.sum(ra.clip_grad(x)))(X), np.ones(4) * 0.5)


def test_defadjoint_registers_a_template_for_a_user_function():
    check_grads(ra.uses_softplus, (X,))
    assert "np.exp(-x)" in show_grad(ra.uses_softplus)      # the template, expanded


def test_stop_gradient_blocks_the_derivative():
    assert grad(ra.with_sg)(2.0) == 4.0


def test_calls_a_jit_wrapped_function():
    assert grad(ra.uses_jitted)(3.0) == 13.0


def test_float32_stays_float32():
    assert grad(ra.f32)(np.ones(3, np.float32)).dtype == np.float32


def test_non_scalar_output_is_an_error_showing_the_shape():
    with pytest.raises(TypeError, match=r"shape \(3,\)"):
        grad(ra.vector_output)(np.ones(3))


def test_integer_argument_is_an_error_naming_it():
    with pytest.raises(TypeError, match="'n' is an integer"):
        grad(ra.returns_int_and_float)(3, 2.0)


def test_missing_rule_is_a_located_error():
    with pytest.raises(TransformError, match="no adjoint rule for numpy.fft.fft") as info:
        grad(ra.missing_rule)(X)
    assert info.value.lineno is not None and info.value.filename.endswith(
        "reverse_api_functions.py")


def test_tuple_output_for_grad_is_an_error():
    with pytest.raises(TransformError, match="returns a tuple"):
        grad(ra.tuple_output)(1.0)


def test_recursion_is_refused():
    with pytest.raises(TransformError, match="recursion"):
        grad(ra.recursive)(1.0, 2)


@pytest.mark.slow
def test_jit_of_grad_with_static_argnums():
    g = jit(grad(ra.static_n), static_argnums=1)
    np.testing.assert_allclose(g(np.ones(4), 3), [2.0, 2.0, 2.0, 0.0])


def test_jit_of_grad_refuses_integer_argument():
    with pytest.raises(TypeError, match="argument 'n' is an integer"):
        jit(grad(ra.returns_int_and_float))(3, 2.0)


def test_jit_of_grad_with_a_dict_argument_returns_a_dict():
    params = {"W": np.array([[1.0, 0.5], [-0.3, 0.8]]), "b": np.array([0.1, -0.2]),
              "scale": 2.0}
    x = np.array([0.7, -1.1])
    compiled = jit(grad(ra.loss))(params, x)
    expect = grad(ra.loss)(params, x)
    assert set(compiled) == set(expect)
    for key in expect:
        np.testing.assert_allclose(compiled[key], expect[key])


def test_vjp_with_aux():
    out, vjp_fn, aux = vjp(ra.aux_fn, X, has_aux=True)
    assert np.isclose(out, np.sum(X * X))
    np.testing.assert_allclose(aux, 2 * X)
    np.testing.assert_allclose(vjp_fn(0.5)[0], X)


def test_grad_of_jit_and_numba_functions_at_top_level():
    assert grad(ra.jitted_helper)(3.0) == 12.0
    assert grad(ra.njit_cube)(2.0) == 12.0
    assert jit(grad(ra.njit_cube))(2.0) == 12.0


def test_show_grad_includes_the_vjp_of_called_functions():
    text = show_grad(ra.uses_pair, argnums=(0, 1))
    assert "def grad_uses_pair(x, y):" in text
    assert "def vjp_pair(x, y, b_" in text
    assert "# grad of: a, b = pair(x, y)" in text


def test_writing_an_array_through_an_alias_is_refused():
    with pytest.raises(TransformError, match="same array") as info:
        grad(ra.alias_write)(X)
    assert "z = y.copy()" in str(info.value)


def test_a_differentiated_call_that_writes_into_its_argument_is_refused():
    with pytest.raises(TransformError, match="writes into its argument 'y'"):
        grad(ra.calls_fill_first)(2.0)


@pytest.mark.slow
def test_a_view_changed_by_a_later_write_is_an_error_not_a_wrong_gradient():
    X0 = np.arange(6.0).reshape(2, 3)
    with pytest.raises(ValueError, match="view"):
        grad(ra.view_changed_after_read)(X0)
    with pytest.raises(ValueError, match="view"):
        jit(grad(ra.view_changed_after_read))(X0)
