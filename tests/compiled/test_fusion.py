"""Elementwise fusion (transformer.fusion, runtime.fused): a `np.where` chain compiled as one
loop gives NumPy's values and dtypes (NEP 50 weak scalars, NaN, inf, -0.0), falls back to
the whole-array form for shapes that broadcast or mixed dtypes, and is the form chosen for
arrays of one float dtype and shape; a vmap of a scalar function whose example cannot fail
inside the loop runs without the rerun bookkeeping."""
import math
import re

import numpy as np
import pytest

from transformer import grad, jit, vmap
from transformer import lowering
from transformer.runtime import fused

ALPHA, SCALE = 1.6732632423543772, 1.0507009873554805


def selu_where(x):
    return SCALE * np.where(x > 0, x, ALPHA * np.exp(x) - ALPHA)


def typed_selu(dtype):
    alpha, scale = dtype(ALPHA), dtype(SCALE)

    def selu(x):
        return scale * np.where(x > 0, x, alpha * np.exp(x) - alpha)
    return selu


def mixed(x, y):
    return np.where(x > y, x * y - 2, np.exp(-y) * 0.5 + x)


def masked(m, x):
    return np.where(m, np.tanh(x) * 3.0, -x)


def selu_scalar(v):
    return SCALE * v if v > 0 else SCALE * (ALPHA * math.exp(v) - ALPHA)


def specials(dtype, n=2000, seed=0):
    x = np.random.default_rng(seed).standard_normal(n).astype(dtype) * dtype(30)
    x[:8] = [np.nan, np.inf, -np.inf, -0.0, 0.0, 1e-30, -1e-30, -np.nan]
    return x


def unfused(monkeypatch, fun):
    """`jit(fun)` compiled without fusion (a different module text, its own cache entry)."""
    monkeypatch.setattr(lowering, "fuse_elementwise", lambda fn, vector_form: fn)
    return jit(fun)


def assert_numpy_close(got, want, term=0.0):
    """NumPy's dtype, the same NaN, infinities and signs of zero, values within a few ulps
    (secant's exp is not NumPy's) of the result, or of `term` where a sum cancels it."""
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(np.isinf(got), np.isinf(want))
    np.testing.assert_array_equal(np.signbit(got[got == 0]), np.signbit(want[got == 0]))
    eps = np.finfo(want.dtype).eps
    finite = np.isfinite(want)
    bound = 8 * eps * (1 + np.abs(want) + np.abs(np.broadcast_to(term, want.shape)))
    with np.errstate(invalid="ignore"):
        assert np.all(np.abs(got - want)[finite] <= bound[finite])


def kernel_of(text):
    name = re.search(r"(fused_\w+)\(", text).group(1)
    return next(k for k in fused._MADE.values() if k.__name__.startswith(name))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_where_chain_compiles_to_one_loop(dtype):
    x = specials(dtype)
    text = jit(selu_where).source(x)
    assert "np.where" not in text and "fused_" in text
    loop = fused.loop_source(kernel_of(text), np.float64(SCALE), x, np.float64(ALPHA))
    assert loop is None                        # the literals are weak: no argument for them
    body = text.split("def selu_where", 1)[1]
    assert re.search(r"return fused_\w+\(x\)", body)
    loop = fused.loop_source(kernel_of(text), x)
    assert loop.count("for ") == 1 and "np.where" not in loop
    assert fused.loop_source(kernel_of(text), np.arange(3)) is None


@pytest.mark.slow
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_where_chain_gives_numpys_values(dtype, monkeypatch):
    x = specials(dtype)
    with np.errstate(all="ignore"):
        assert_numpy_close(jit(selu_where)(x), selu_where(x))
    # the same elements as the whole-array form (same scalar kernels, same order); Numba's
    # whole-array form widens float32 meeting a Python float, so the constants are typed
    selu = typed_selu(dtype)
    with np.errstate(all="ignore"):
        assert_numpy_close(jit(selu)(x), selu(x))
    np.testing.assert_array_equal(jit(selu)(x), unfused(monkeypatch, selu)(x))


@pytest.mark.slow
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fused_chain_of_two_arrays_and_a_mask(dtype, monkeypatch):
    x, y = specials(dtype, seed=1), specials(dtype, seed=2)[::-1].copy()
    m = np.random.default_rng(3).random(x.size) < 0.5
    with np.errstate(all="ignore"):
        assert_numpy_close(jit(mixed)(x, y), mixed(x, y), np.exp(-y))
        assert_numpy_close(jit(masked)(m, x), masked(m, x))
    text = jit(mixed).source(x, y)
    assert fused.loop_source(kernel_of(text), x, y) is not None
    assert fused.loop_source(kernel_of(jit(masked).source(m, x)), m, x) is not None
    if dtype == np.float64:
        np.testing.assert_array_equal(jit(mixed)(x, y), unfused(monkeypatch, mixed)(x, y))


@pytest.mark.slow
@pytest.mark.parametrize("x_shape, y_shape", [((5, 1), (1, 4)), ((3, 4), (4,)),
                                              ((6,), (1,)), ((2, 3), (2, 3)), ((0, 1), (1, 3)),
                                              ((1,), (0,))])
def test_shapes_that_broadcast_follow_numpy(x_shape, y_shape):
    rng = np.random.default_rng(4)
    x, y = rng.standard_normal(x_shape), rng.standard_normal(y_shape)
    assert_numpy_close(jit(mixed)(x, y), mixed(x, y), np.exp(-y))
    t, u = (x.T, y.T) if x.ndim == y.ndim == 2 else (x[::-1], y)     # strided operands
    assert_numpy_close(jit(mixed)(t, u), mixed(t, u), np.exp(-u))


@pytest.mark.slow
def test_scalar_operands_and_mixed_dtypes_follow_numpy():
    x = specials(np.float32)
    y = np.float32(0.25)
    assert_numpy_close(jit(mixed)(x, y), mixed(x, y), np.exp(-y))
    assert fused.loop_source(kernel_of(jit(mixed).source(x, y)), x, y) is not None
    y64 = specials(np.float64, seed=5)
    with np.errstate(all="ignore"):
        assert_numpy_close(jit(mixed)(x, y64), mixed(x, y64), np.exp(-y64))   # not fused
    assert fused.loop_source(kernel_of(jit(mixed).source(x, y64)), x, y64) is None
    assert fused.loop_source(kernel_of(jit(mixed).source(x, y64)), x, np.float32(1)) \
        is not None


def test_python_float_constants_keep_float32():
    def f(x):
        return np.where(x < 1.5, 2.5 * x - 1, np.log1p(x * x) + 0.1)
    x = specials(np.float32, seed=6)
    with np.errstate(all="ignore"):
        assert_numpy_close(jit(f)(x), f(x))
    assert jit(f)(x).dtype == np.float32


@pytest.mark.slow
def test_grad_and_vmap_of_the_where_form_match_numpy():
    x = np.random.default_rng(7).standard_normal(50)

    def loss(x):
        return np.sum(selu_where(x))
    want = SCALE * np.where(x > 0, 1.0, ALPHA * np.exp(x))
    np.testing.assert_allclose(jit(grad(loss))(x), want, rtol=1e-13)
    batch = x.reshape(5, 10)
    np.testing.assert_allclose(jit(vmap(selu_where))(batch), selu_where(batch), rtol=1e-13)


@pytest.mark.parametrize("parallel", [False, True])
def test_vmap_of_a_scalar_function_needs_no_rerun_of_its_examples(parallel):
    x = specials(np.float64)
    f = jit(vmap(selu_scalar), parallel=parallel)
    with np.errstate(all="ignore"):
        assert_numpy_close(f(x), selu_where(x))
    text = f.source(x)
    assert "trip_done" not in text and "index_error" not in text


def test_a_scalar_function_that_divides_keeps_the_rerun_in_parallel():
    def reciprocal(v):
        return 1.0 / v if v > 0 else v
    f = jit(vmap(reciprocal), parallel=True)
    x = np.array([0.5, -1.0, 2.0, 4.0])
    np.testing.assert_allclose(f(x), np.where(x > 0, 1.0 / x, x))
    assert "trip_done" in f.source(x)


@pytest.mark.slow
def test_operands_that_do_not_broadcast_raise_naming_the_line():
    line = mixed.__code__.co_firstlineno + 1
    with pytest.raises(ValueError, match=rf"test_fusion.py:{line}:\d+: operands could not "
                                         "be broadcast together"):
        jit(mixed)(np.ones((2, 3)), np.ones((2, 4)))


def test_lowering_for_numba_leaves_the_function_as_it_was():
    """Tiered execution emits the same Function for NumPy after lowering it for Numba: the
    fused calls must not leak into it (they did, and the NumPy tier failed with KeyError)."""
    import gast

    from transformer.frontend import parse
    fn = parse(mixed)
    before = gast.dump(fn.node)
    lowered = lowering.lower_for_numba(fn)
    assert "fused_" in gast.dump(lowered.node) and gast.dump(fn.node) == before


def test_a_tiered_function_with_a_fused_chain_runs_its_numpy_tier():
    x, y = np.linspace(-1.0, 1.0, 7), np.linspace(0.5, 2.0, 7)
    f = jit(mixed, tiered=True)
    np.testing.assert_allclose(f(x, y), mixed(x, y), rtol=1e-15)
