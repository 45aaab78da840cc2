"""runtime.vector_math: the vectorizable exp/expm1/log/log1p/tanh/expit kernels within their
stated ulps of the exactly rounded result over the whole range of float32 and float64, NumPy's
special values, and jit routing np.exp & co. through them."""
import math
import re

import numba
import numpy as np
import pytest

from transformer import grad, jit, source
from transformer.runtime import fused
from transformer.runtime import vector_math as vm

NAMES = ("exp", "expm1", "log", "log1p", "tanh", "expit")
DTYPES = (np.float32, np.float64)
# the oracle: float32 results checked against float64 NumPy, float64 against long double
WIDER = {np.float32: np.float64, np.float64: np.longdouble}
LONG_DOUBLE_IS_WIDER = np.finfo(np.longdouble).eps < np.finfo(np.float64).eps


def _vector_forms(x, out):
    """All six public forms applied to one array: one compiled function per dtype."""
    out[0] = vm.vector_exp(x)
    out[1] = vm.vector_expm1(x)
    out[2] = vm.vector_log(x)
    out[3] = vm.vector_log1p(x)
    out[4] = vm.vector_tanh(x)
    out[5] = vm.vector_expit(x)


all_forms = numba.njit(_vector_forms)


def exact(name, x):
    """`name` of `x` in the wider type (never rounded to x's type)."""
    w = x.astype(WIDER[x.dtype.type])
    with np.errstate(all="ignore"):
        if name == "expit":
            e = np.exp(-np.abs(w))
            return np.where(w >= 0, 1 / (1 + e), e / (1 + e))
        return getattr(np, name)(w)


def ulp_errors(got, ref, dtype):
    """|got - ref| in units of the spacing just below |ref| rounded to `dtype` (the finer
    side of a power of two); 0 where both are nan or the same infinity, inf on a mismatch."""
    with np.errstate(all="ignore"):
        rounded = np.abs(ref.astype(dtype))
        below = np.spacing(np.nextafter(rounded, dtype(0))).astype(ref.dtype)
        err = np.abs(got.astype(ref.dtype) - ref) / below
    agree = (np.isnan(got) & np.isnan(rounded)) | (np.isinf(rounded) & (got == ref.astype(dtype)))
    err = np.where(agree, 0.0, err)
    return np.where(np.isnan(err) | (np.isinf(rounded) & ~agree), np.inf, err)


def samples(dtype, n, seed=0):
    """Every finite exponent alike: random bit patterns, denormals, and values near 0 and 1."""
    rng = np.random.default_rng(seed)
    uint, bits = (np.uint32, 32) if dtype == np.float32 else (np.uint64, 64)
    x = rng.integers(0, 2 ** bits, n, dtype=uint).view(dtype)
    mantissa_mask = uint((1 << np.finfo(dtype).nmant) - 1)
    denormals = (rng.integers(0, 2 ** bits, n // 20, dtype=uint) & mantissa_mask).view(dtype)
    near = rng.standard_normal(n // 4).astype(dtype)
    small = (rng.uniform(-1, 1, n // 8) * 1e-4).astype(dtype)
    x = np.concatenate([x, denormals, -denormals, near, small, 1 + small,
                        rng.uniform(-1, 0, n // 8).astype(dtype)])
    return x[np.isfinite(x)]


def edges(dtype):
    info = np.finfo(dtype)
    big = 709.782712893384 if dtype == np.float64 else 88.72283935546875
    low = -745.1332191019412 if dtype == np.float64 else -103.97207708
    points = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, info.tiny, -info.tiny,
              info.smallest_subnormal, -info.smallest_subnormal, info.max, -info.max,
              big, low, -big, 0.5 * big, 20.0, -20.0, 9.0, 10.0]
    x = np.array(points, dtype)
    finite = x[np.isfinite(x) & (x != 0)]
    return np.concatenate([x, np.nextafter(finite, dtype(np.inf)),
                           np.nextafter(finite, dtype(-np.inf))])


def run_all(x):
    out = np.empty((6,) + x.shape, x.dtype)
    all_forms(x, out)
    return dict(zip(NAMES, out))


def assert_within_stated_ulps(x):
    dtype = x.dtype.type
    got = run_all(x)
    for name in NAMES:
        err = ulp_errors(got[name], exact(name, x), dtype)
        worst = int(np.argmax(err))
        assert err[worst] <= vm.ULPS[name], (
            f"{name} {dtype.__name__}: {err[worst]:.2f} ulps at x={x[worst]!r} "
            f"(got {got[name][worst]!r}, exact {exact(name, x[worst:worst + 1])[0]!r})")


def _needs_oracle(dtype):
    if dtype == np.float64 and not LONG_DOUBLE_IS_WIDER:
        pytest.skip("long double is float64 here: no wider oracle for float64")


@pytest.mark.slow
@pytest.mark.every_case
@pytest.mark.parametrize("dtype", DTYPES)
def test_kernels_within_stated_ulps_on_a_sample_of_every_exponent(dtype):
    _needs_oracle(dtype)
    assert_within_stated_ulps(np.concatenate([samples(dtype, 4000), edges(dtype)]))


@pytest.mark.slow
@pytest.mark.parametrize("dtype", DTYPES)
def test_kernels_within_stated_ulps_over_the_whole_range(dtype):
    _needs_oracle(dtype)
    for seed in range(4):
        assert_within_stated_ulps(samples(dtype, 500_000, seed))


def _scalar_forms(x, out):
    """The six kernels called on one number at a time (the form scalar code gets)."""
    for i in range(x.size):
        out[0, i] = vm.vector_exp(x[i])
        out[1, i] = vm.vector_expm1(x[i])
        out[2, i] = vm.vector_log(x[i])
        out[3, i] = vm.vector_log1p(x[i])
        out[4, i] = vm.vector_tanh(x[i])
        out[5, i] = vm.vector_expit(x[i])


scalar_forms = numba.njit(_scalar_forms)


@pytest.mark.slow
@pytest.mark.every_case
@pytest.mark.parametrize("dtype", DTYPES)
def test_array_loops_equal_the_scalar_kernels_bit_for_bit(dtype):
    """An array's loop is each kernel's body written out in it (`_loop_form`): the same
    results, special values and signed zeros included."""
    x = np.concatenate([samples(dtype, 2000, seed=5), edges(dtype)])
    by_array = np.empty((len(NAMES), x.size), dtype)
    by_number = np.empty_like(by_array)
    with np.errstate(all="ignore"):
        all_forms(x, by_array)
        scalar_forms(x, by_number)
    assert np.array_equal(by_array.view(f"u{x.itemsize}"), by_number.view(f"u{x.itemsize}"))


@pytest.mark.slow
@pytest.mark.every_case
@pytest.mark.parametrize("dtype", DTYPES)
def test_special_values_are_numpys(dtype):
    x = edges(dtype)
    got = run_all(x)
    for name in NAMES:
        with np.errstate(all="ignore"):
            want = exact(name, x).astype(dtype)
        special = ~np.isfinite(want) | (want == 0) | ~np.isfinite(x) | (x == 0)
        same = (got[name] == want) & (np.signbit(got[name]) == np.signbit(want))
        same |= np.isnan(got[name]) & np.isnan(want)
        assert same[special].all(), (name, x[special & ~same], got[name][special & ~same])


def test_forms_keep_the_float_type_and_shape_and_hand_other_types_to_numpy():
    exp_of = numba.njit(lambda v: vm.vector_exp(v))
    x = np.linspace(-2.0, 2.0, 6, dtype=np.float32).reshape(2, 3).T      # not contiguous
    got = exp_of(x)
    assert got.dtype == np.float32 and got.shape == (3, 2)
    np.testing.assert_allclose(got, np.exp(x), rtol=2 * np.finfo(np.float32).eps)
    z = np.array([1j, 2.0 + 0.5j])
    np.testing.assert_allclose(exp_of(z), np.exp(z), rtol=1e-15)


# ---------------------------------------------------------------- jit routes through them


def selu(x):
    alpha, scale = 1.6732632423543772, 1.0507009873554805
    return np.where(x > 0, scale * x, scale * alpha * (np.exp(x) - 1))


def softplus_tanh(w):
    return np.sum(np.log1p(np.exp(w)) + np.tanh(w)) + math.log(1.0 + w[0] * w[0])


@pytest.mark.slow
def test_jit_computes_elementwise_math_with_the_vector_kernels():
    x = np.linspace(-3.0, 3.0, 13)
    compiled = jit(selu)
    np.testing.assert_allclose(compiled(x), selu(x), rtol=2e-16, atol=0)
    # the np.where chain is one fused loop (runtime.fused), with exp's kernel written out
    name = re.search(r"(fused_\w+)\(x, ", source(compiled)).group(1)
    kernel = next(k for k in fused._MADE.values() if k.__name__.startswith(name))
    loop = fused.loop_source(kernel, x, 1.0, 1.0)
    assert "_bits(" in loop and "exp(" not in loop


def six_functions(x):
    return (np.exp(x), np.expm1(x), np.log(np.abs(x)), np.log1p(np.abs(x)), np.tanh(x),
            np.exp(x) - 1.0)


@pytest.mark.parametrize("dtype", DTYPES)
def test_fastmath_callers_keep_the_kernels_exact(dtype):
    # the kernels round with a shifter constant, which reassociation would cancel
    x = np.linspace(-20.0, 20.0, 101).astype(dtype)
    eps = np.finfo(dtype).eps
    for got, want in zip(jit(six_functions, fastmath=True)(x), six_functions(x)):
        assert got.dtype == dtype
        np.testing.assert_allclose(got, want, rtol=4 * eps, atol=4 * eps)


def test_gradient_rules_use_the_vector_kernels_and_match_the_derivative():
    w = np.linspace(-2.0, 2.0, 7)
    g = jit(grad(softplus_tanh))
    want = 1 / (1 + np.exp(-w)) + 1 - np.tanh(w) ** 2
    want[0] += 2 * w[0] / (1 + w[0] ** 2)
    np.testing.assert_allclose(g(w), want, rtol=1e-14)
    assert "vector_log1p" in source(g)


def exp_into(x, y):
    np.exp(x, y)
    return y


def test_calls_with_an_output_argument_keep_numpys_form():
    def f(x, y):
        return exp_into(x, y)
    x = np.linspace(0.0, 1.0, 5)
    compiled = jit(f)
    np.testing.assert_allclose(compiled(x, np.empty(5)), np.exp(x))
    assert "vector_exp" not in source(compiled)
