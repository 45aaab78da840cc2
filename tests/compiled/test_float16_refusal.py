"""float16 made inside a jitted function: Numba has no float16 on the CPU, so every way of
naming it where a dtype is taken is a TransformError at the user's line naming float16,
and both workarounds in its hint give NumPy's values (the python backend; computing in
float32 under jit and converting outside). The refusals happen before Numba runs: cheap.
"""
from __future__ import annotations

import numpy as np
import pytest

from transformer import grad, jit, vmap
from transformer.errors import TransformError
from transformer.frontend import parse
from transformer.numba_dtypes import NO_NUMBA_DTYPES, refuse_numba_dtypes


def ones_half(n):
    return np.ones(n, np.float16) + 1


def zeros_half_keyword(n):
    return np.zeros(n, dtype=np.float16)


def cast_half(x):
    return x.astype(np.float16) * 2


def cast_half_string(x):
    return x.astype("float16")


def half_scalar(x):
    return np.float16(x[0]) * np.float16(2)


def as_half(x):
    return np.asarray(x, dtype="f2")


def calls_a_half_helper(x):
    return as_half(x) + 1.0


def cast_to(x, dt):
    return x.astype(dt)


def loss_through_half(x):
    y = np.asarray(x, dtype=np.half)        # (.astype of a differentiated array is refused)
    return np.sum(y * x)


def long_double_sum(x):
    return np.sum(x.astype(np.longdouble))


def strings_that_are_not_dtypes(x):
    same = x.dtype == np.float16        # a comparison compiles or not on its own
    return np.einsum("e,e", x, x) + np.pad(x, 1, mode="edge")[0] + same


def ones_single(n):
    return np.ones(n, np.float32) + 1


X = np.array([0.5, 1.25, -3.0])
CASES = {        # name -> (function, arguments, the text of the refused line)
    "np.ones": (ones_half, (3,), "np.ones(n, np.float16) + 1"),
    "dtype=": (zeros_half_keyword, (4,), "np.zeros(n, dtype=np.float16)"),
    "astype": (cast_half, (X,), "x.astype(np.float16) * 2"),
    "astype string": (cast_half_string, (X,), 'x.astype("float16")'),
    "scalar type": (half_scalar, (X,), "np.float16(x[0]) * np.float16(2)"),
    "in a called function": (calls_a_half_helper, (X,), 'np.asarray(x, dtype="f2")'),
}


def _assert_located(error: TransformError, line: str):
    text = str(error)
    assert "float16 under jit" in text and "test_float16_refusal.py:" in text, text
    assert line in text and "^" in text, text
    assert "np.float32" in text and "backend='python'" in text, text


@pytest.mark.parametrize("name", list(CASES))
def test_float16_inside_jit_is_a_located_error_whose_python_backend_hint_works(name):
    fn, args, line = CASES[name]
    with pytest.raises(TransformError) as err:
        jit(fn)(*args)
    _assert_located(err.value, line)
    got, expected = jit(fn, backend="python")(*args), fn(*args)
    assert np.asarray(got).dtype == np.asarray(expected).dtype == np.float16
    np.testing.assert_array_equal(got, expected)


def test_float16_as_a_static_argument_is_refused_at_its_use():
    with pytest.raises(TransformError) as err:
        jit(cast_to, static_argnames=("dt",))(X, dt=np.float16)
    _assert_located(err.value, "x.astype(dt)")


@pytest.mark.parametrize("transformed,arg,line", [
    (grad(loss_through_half), X, "y = np.asarray(x, dtype=np.half)"),
    (vmap(cast_half), np.ones((2, 3)), "x.astype(np.float16) * 2"),
], ids=["grad", "vmap"])
def test_float16_under_grad_and_vmap_is_refused_at_the_users_line(transformed, arg, line):
    with pytest.raises(TransformError) as err:
        jit(transformed)(arg)
    _assert_located(err.value, line)


def test_computing_in_float32_and_converting_outside_gives_numpys_float16():
    got = jit(ones_single)(5).astype(np.float16)
    expected = ones_half(5)
    assert got.dtype == expected.dtype
    np.testing.assert_array_equal(got, expected)


@pytest.mark.skipif(np.dtype(np.longdouble) not in NO_NUMBA_DTYPES,
                    reason="long double is float64 here, which Numba compiles")
def test_long_double_inside_jit_is_refused_with_a_float64_hint():
    with pytest.raises(TransformError) as err:
        jit(long_double_sum)(X)
    text = str(err.value)
    assert f"{np.dtype(np.longdouble)} under jit" in text and "np.float64" in text, text
    assert "x.astype(np.longdouble)" in text and "^" in text, text


def test_strings_and_comparisons_that_do_not_make_float16_are_not_refused():
    refuse_numba_dtypes(parse(strings_that_are_not_dtypes))     # raises when it refuses
