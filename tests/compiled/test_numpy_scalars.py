"""Under jit, 0-d arrays and builtins on arrays give what NumPy gives: a ufunc of a 0-d array
is a number (so a name can hold it beside a float); `abs`, `pow`, `any` and `all` take
arrays. Checked against the plain Python run, central differences, and the dtype NumPy
returns; Python's builtins over an iterable, which have no derivative rule, are refused
with the NumPy form to write."""
import math

import numpy as np
import pytest
import scipy.special

from transformer import TransformError, grad, jit, jvp, vmap
from transformer.test_util import numerical_grad


def central_difference(f, x):
    return numerical_grad(f, (x,))


def _unary(call):
    """A function applying `call` to np.where's 0-d array, whose result shares a name with a
    float in another branch (the form Numba rejects when the result stays a 0-d array)."""
    def f(c):
        w = np.where(c > 0.0, c + 1.0, 1.0 - 0.5 * c)      # positive, for log
        d = call(w)
        if c > 1.0:
            d = 1.0
        return d * c
    return f


CALLS = {"exp": np.exp, "expm1": np.expm1, "log": np.log, "log1p": np.log1p, "tanh": np.tanh,
         "expit": scipy.special.expit, "math.tanh": math.tanh}


@pytest.mark.parametrize("name", list(CALLS))
def test_a_vector_kernel_of_a_0d_array_is_a_number_as_in_numpy(name):
    f = _unary(CALLS[name])
    for c in (0.3, -0.4):
        got = jit(f)(c)
        assert np.ndim(got) == 0
        np.testing.assert_allclose(got, f(c), rtol=1e-15)
        np.testing.assert_allclose(jit(grad(f))(c), central_difference(f, c), rtol=1e-6)


def float32_branches(x):
    d = np.tanh(np.asarray(x[0]))            # a 0-d float32 array's tanh: a float32
    if x[0] > 1.0:
        d = x[0]
    return d * x


def test_a_float32_0d_array_keeps_its_type():
    x = np.array([0.25, -1.5], np.float32)
    got = jit(float32_branches)(x)
    assert got.dtype == np.float32
    # the float32 kernel is within 3 ulps (runtime.vector_math.ULPS)
    np.testing.assert_allclose(got, float32_branches(x), rtol=4 * np.finfo(np.float32).eps)


def absolute(x):
    return abs(x)


@pytest.mark.parametrize("x", [
    np.array([-1, 2, -3]),
    np.array([True, False]),
    np.array([[-1.5, 2.0], [3.0, -4.0]], np.float32).T,          # not contiguous
    np.array([-1 + 2j, 3 - 4j]),
    np.array(-2.5),
], ids=["int", "bool", "float32-transposed", "complex", "0d"])
def test_abs_of_an_array_is_numpys(x):
    want, got = absolute(x), jit(absolute)(x)
    assert np.ndim(got) == np.ndim(want)
    assert np.asarray(got).dtype == np.asarray(want).dtype
    np.testing.assert_array_equal(got, want)


def abs_energy(x):
    return np.sum(abs(x) ** 3 - abs(x * x - 1.0))


def test_derivatives_through_abs_of_an_array_under_jit():
    x = np.array([-1.3, 0.4, 2.1, -0.7])
    want = central_difference(abs_energy, x)
    np.testing.assert_allclose(grad(abs_energy)(x), want, rtol=1e-6)
    np.testing.assert_allclose(jit(grad(abs_energy))(x), want, rtol=1e-6)
    xs = np.stack([x, -2.0 * x])
    np.testing.assert_allclose(jit(vmap(grad(abs_energy)))(xs),
                               [central_difference(abs_energy, r) for r in xs], rtol=1e-6)


def where_or_float(c):
    d = np.where(c > 0.0, c, 0.5 * c)        # a 0-d array, as NumPy gives
    if c > 1.0:
        d = 1.0
    return d * c


def test_a_name_holding_a_0d_array_and_a_float_is_refused_at_the_users_line():
    with pytest.raises(TransformError) as refused:
        jit(where_or_float)(0.3)
    assert f"{__file__}:" in str(refused.value) and "'d' is" in str(refused.value)


def powers_and_truths(x):
    signs = any(x > 2.0) * 1.0 + all(x > -2.0) * 2.0 + all([x[0] > 0.0, x[1] > 0.0]) * 4.0
    return np.sum(pow(x, 3) + pow(2.0, x)) * signs


def test_pow_any_and_all_of_arrays_under_jit_and_grad():
    for x in (np.array([-1.3, 0.4, 2.1]), np.array([1.5, 0.5, -2.5])):
        np.testing.assert_allclose(jit(powers_and_truths)(x), powers_and_truths(x),
                                   rtol=1e-14)
        want = numerical_grad(powers_and_truths, (x,))
        np.testing.assert_allclose(jit(grad(powers_and_truths))(x), want, rtol=1e-6)


def builtin_min(x):
    return min(x) * 2.0


def builtin_sum(x):
    return sum(x) * 2.0


@pytest.mark.parametrize("f, instead", [(builtin_min, "np.min(x)"),
                                        (builtin_sum, "np.sum(x, axis=0)")])
def test_builtins_over_an_iterable_are_refused_with_the_numpy_form_to_write(f, instead):
    x = np.array([0.5, -1.0])
    np.testing.assert_allclose(jit(f)(x), f(x))              # no derivative: compiled as is
    for transform in (grad, lambda f: (lambda x: jvp(f, (x,), (x,)))):
        with pytest.raises(TransformError) as refused:
            transform(f)(x)
        assert f"{__file__}:" in str(refused.value) and instead in str(refused.value)
