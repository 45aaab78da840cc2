"""Inputs secant cannot compile end in an error at the user's line (TransformError with
file:line:col and a hint) or JAX's TypeError naming the argument, never in an internal
RecursionError/IndexError/NotImplementedError; valid programs with dead code after a
return compile and give the right value."""
import numpy as np
import pytest

from gradcheck import central_differences
from transformer import TransformError, grad, jit, vmap


def factorial(n):
    if n <= 1.0:
        return 1.0
    return n * factorial(n - 1.0)


def ping(x):
    if x < 0.0:
        return x
    return pong(x - 1.0)


def pong(x):
    return ping(x) * 2.0


def loss(x):
    return np.sum(x * x)


def total(x):
    return np.sum(x)


def returns_in_both_branches(x):
    if x[0] > 0.0:
        return np.sum(x * x)
    else:
        return np.sum(x * x * x)
    return x                             # dead, and of another type


def code_after_return(x):
    s = np.sum(np.sin(x) * x)
    return s
    s = s + 1.0                          # dead
    return s


X = np.array([0.5, -1.5, 2.0])


def test_jit_of_a_recursive_function_is_a_located_error():
    with pytest.raises(TransformError, match=r"factorial calls itself \(recursion") as info:
        jit(factorial)(5.0)
    error = info.value
    assert error.filename == __file__ and "factorial(n - 1.0)" in error.line
    assert "loop" in error.hint


def test_jit_of_mutual_recursion_names_the_cycle():
    with pytest.raises(TransformError, match="recursion: pong -> ping -> pong") as info:
        jit(ping)(3.0)
    assert info.value.filename == __file__ and "pong(x - 1.0)" in info.value.line


def test_jit_grad_of_a_zero_size_array_gives_an_empty_gradient():
    empty = np.zeros(0)
    got = jit(grad(loss))(empty)
    assert got.shape == (0,) and got.dtype == np.float64
    assert jit(loss)(empty) == 0.0


def test_jit_of_float16_arrays_is_a_located_error():
    with pytest.raises(TransformError, match="'x' of loss holds float16") as info:
        jit(grad(loss))(np.ones(3, np.float16))
    assert info.value.filename == __file__ and "astype" in info.value.hint
    np.testing.assert_allclose(jit(loss, backend="python")(np.ones(3, np.float16)), 3.0)


def test_jit_grad_of_complex_is_a_type_error_naming_the_argument():
    with pytest.raises(TypeError, match="argument 'x' is complex"):
        jit(grad(loss))(np.ones(3, complex))


def test_jit_vmap_of_a_list_raises_as_vmap_does():
    with pytest.raises(ValueError, match="in_axes 0 is out of range for argument 'x'"):
        vmap(total)([1.0, 2.0])
    with pytest.raises(ValueError, match="in_axes 0 is out of range for argument 'x'"):
        jit(vmap(total))([1.0, 2.0])


@pytest.mark.parametrize("x", [X, -X])
def test_jit_grad_with_returns_in_both_branches_and_dead_code(x):
    expected = 2.0 * x if x[0] > 0.0 else 3.0 * x * x
    np.testing.assert_allclose(jit(grad(returns_in_both_branches))(x), expected, rtol=1e-14)
    np.testing.assert_allclose(grad(returns_in_both_branches)(x), expected, rtol=1e-14)


def test_jit_grad_with_code_after_an_unconditional_return():
    expected = central_differences(code_after_return, [X], 0)
    np.testing.assert_allclose(jit(grad(code_after_return))(X), expected, rtol=1e-6)
    np.testing.assert_allclose(jit(grad(code_after_return))(X), np.cos(X) * X + np.sin(X),
                               rtol=1e-14)


def _several_checks_on_one_line(x, v):
    h = np.zeros(6) + x
    t = (v, x)
    held = [x, h]
    k = 1   # a computed index: a list read only at constant ones compiles (const_lists)
    for _ in range(2):
        held[k][3] = np.tanh(t[0][4] / (1.5 + t[0][4] * t[0][4]))
    return np.sum(h)


def test_numbas_refusal_of_a_line_with_several_index_checks_is_at_the_users_line():
    with pytest.raises(TransformError) as info:
        jit(_several_checks_on_one_line)(0.3, np.linspace(-1.0, 1.0, 6))
    assert info.value.filename == __file__
    assert info.value.line.strip() == "held[k][3] = np.tanh(t[0][4] / (1.5 + t[0][4] * t[0][4]))"
    assert "backend='python'" in info.value.hint
