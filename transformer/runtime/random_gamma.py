"""`gamma`, `beta` and `dirichlet` of `transformer.random` one element at a time, for Numba.

Same algorithm and bits as `transformer.random_samplers` (JAX's Marsaglia-Tsang rejection):
element `i` of a gamma draw starts from the key `block(key, i)` (row `i` of
`split(key, size)`), splits it into a loop key and a subkey, and redraws proposals, each
splitting the loop key in three, until one is accepted. An element depends only on its own
key and parameter, so the same scalar code serves a Numba loop, a CUDA thread and plain
Python. `beta` draws log-space gammas from the two halves of `split(key)`; `dirichlet`
takes a softmax of log-space gammas over each row of the last axis, summed left to right.
XLA's rounding comes from `xla_math` (fma, log, log1p) and the scalar `exp` forms here
(XLA's Cephes `exp`, subnormal results flushed to zero).

Under Numba: `a`, `b`, `alpha` are real scalars or arrays, `shape` None (the parameters'
shape), an int or a tuple of ints the parameters broadcast to; `dtype` np.float32 or
np.float64 (default float64). Scalar parameters without a shape give a scalar. Float16 runs
in plain Python only. A parameter below 0 or NaN raises ValueError, as in plain NumPy.
"""
from __future__ import annotations

import math

import numpy as np
from numba import from_dtype, types
from numba.core.errors import TypingError
from transformer.runtime.numba_api import overload, register_jitable

from .random import (_check_key, _dtype_of, _given, _normal32, _normal64, _plain_shape,
                     _scalar_shape, _uniform32, _uniform64, block, key_words)
from .xla_math import fma, log1p32, log1p64, log32

_F32, _F64 = np.dtype(np.float32), np.dtype(np.float64)
_FLOATS = (_F32, _F64)

# ---------------------------------------------------------------- XLA's exp and log


def _f32_bits(pattern: int) -> np.float32:
    return np.array(pattern, np.uint32).view(np.float32)[()]


def _f64_bits(pattern: int) -> float:
    return float(np.array(pattern, np.uint64).view(np.float64)[()])


_EXP_LO, _EXP_HI = _f64_bits(0xC086232BDD7ABCD2), _f64_bits(0x40862E42FEFA39EF)
_LOG2E = _f64_bits(0x3FF71547652B82FE)
_LN2_HI, _LN2_LO = _f64_bits(0x3FE62E4000000000), _f64_bits(0x3EB7F7D1CF79ABCA)
_EXP_P0, _EXP_P1 = _f64_bits(0x3F2089CDD5E44BE8), _f64_bits(0x3F9F06D10CCA2C7E)
_EXP_Q0, _EXP_Q1 = _f64_bits(0x3EC92EB6BC365FA0), _f64_bits(0x3F64AE39B508B6C0)
_EXP_Q2 = _f64_bits(0x3FCD17099887E074)


@register_jitable
def exp64(x):
    """XLA's float64 exp (`random_xla_special._exp64`): 2**n applied as four exact scalings."""
    if x != x:
        return x
    if x < _EXP_LO:
        return 0.0
    if x > _EXP_HI:
        return math.inf
    n = float(math.floor(fma(x, _LOG2E, 0.5)))       # |n| < 1100: an exact int
    g = fma(-n, _LN2_LO, fma(-n, _LN2_HI, x))
    g2 = g * g
    p = fma(fma(g2, _EXP_P0, _EXP_P1), g2, 1.0) * g
    q = fma(fma(fma(g2, _EXP_Q0, _EXP_Q1), g2, _EXP_Q2), g2, 2.0)
    e = fma(p / (q - p), 2.0, 1.0)
    ni = min(max(int(n), -2099), 2099)
    quarter = ni >> 2
    scale = math.ldexp(1.0, quarter)
    return e * scale * scale * scale * math.ldexp(1.0, ni - 3 * quarter)


_E32_LOG2E, _E32_LN2_HI = _f32_bits(0x3FB8AA3B), _f32_bits(0x3F318000)
_E32_LN2_LO = _f32_bits(0xB95E8083)
_E32_P = tuple(_f32_bits(c) for c in (0x39506967, 0x3AB743CE, 0x3C088908, 0x3D2AA9C1,
                                      0x3E2AAAAA, 0x3F000000))
_TINY32, _TINY64 = np.float32(np.finfo(np.float32).tiny), float(np.finfo(np.float64).tiny)
_Z32, _HALF32, _ONE32 = np.float32(0.0), np.float32(0.5), np.float32(1.0)


@register_jitable
def exp32(x):
    """XLA's float32 exp (`random_xla_special._exp32`), subnormal results flushed."""
    if x != x:
        return x
    xc = np.float32(-87.8) if x < np.float32(-87.8) else x
    xc = np.float32(88.8) if xc > np.float32(88.8) else xc
    n = np.float32(math.floor(fma(xc, _E32_LOG2E, _HALF32)))
    n = min(max(n, np.float32(-127.0)), np.float32(127.0))
    r = fma(-_E32_LN2_LO, n, fma(-_E32_LN2_HI, n, xc))
    p = fma(r, _E32_P[0], _E32_P[1])
    for j in range(2, 6):
        p = fma(p, r, _E32_P[j])
    y = _ONE32 + fma(p, r * r, r)
    scale = _Z32 if n == np.float32(-127.0) else np.float32(math.ldexp(1.0, int(n)))
    return flush32(y * scale)


@register_jitable
def flush32(x):
    return _Z32 if abs(x) < _TINY32 else x


@register_jitable
def flush64(x):
    return 0.0 if abs(x) < _TINY64 else x


@register_jitable
def log64(x):
    """The C library's log, as XLA calls it, with NumPy's answers at 0 and below."""
    if x > 0.0:
        return math.log(x)
    return -math.inf if x == 0.0 else math.nan

# ---------------------------------------------------------------- one gamma draw


def _gamma_one_for(dt: np.dtype):
    """A jitable `(k0, k1, alpha, log_space) -> float of dt`: one Gamma(alpha) draw (its log
    when `log_space`) from the element key `(k0, k1)`, as `random_samplers._gamma`."""
    f = dt.type
    one, zero, two, half, third = f(1.0), f(0.0), f(2.0), f(0.5), f(1.0 / 3.0)
    squeeze_c = f(-0.0331)
    wide = dt == _F64
    uniform, normal = (_uniform64, _normal64) if wide else (_uniform32, _normal32)
    log, log1p, flush = (log64, log1p64, flush64) if wide else (log32, log1p32, flush32)

    def rejects(big_x, v, u, d):
        squeeze = fma(squeeze_c, big_x * big_x, one)
        bound = big_x * half + d * ((one - v) + log(v))
        return u >= squeeze and log(u) >= bound

    rejects = register_jitable(rejects)

    def gamma_one(k0, k1, alpha, log_space):
        a0, a1 = block(k0, k1, 0)
        s0, s1 = block(k0, k1, 1)
        boost = alpha >= one
        d = (alpha if boost else alpha + one) - third
        c = third * (one / f(math.sqrt(d)))
        big_x, v, u = zero, one, two
        while rejects(big_x, v, u, d):
            x0, x1 = block(a0, a1, 1)
            u0, u1 = block(a0, a1, 2)
            a0, a1 = block(a0, a1, 0)
            x, vv = zero, -one
            while vv <= zero:              # redraw the normal until 1 + c * x > 0
                n0, n1 = block(x0, x1, 1)
                x0, x1 = block(x0, x1, 0)
                x = normal(n0, n1, 0, 0, 0)
                vv = fma(x, c, one)
            u = uniform(u0, u1, 0, zero, one)
            big_x, v = x * x, vv * vv * vv
        u_final = uniform(s0, s1, 0, zero, one)
        if log_space:
            log_u = log1p(-u_final)
            log_boost = zero if (boost or log_u == zero) else log_u * (one / alpha)
            return log(d) + log(v) + log_boost
        scale = one if boost else flush((one - u_final) ** (one / alpha))
        return flush(d * v * scale)

    return register_jitable(gamma_one)


GAMMA_ONE = {dt: _gamma_one_for(dt) for dt in _FLOATS}
EXP = {_F32: exp32, _F64: exp64}
FLUSH = {_F32: flush32, _F64: flush64}

# ---------------------------------------------------------------- the samplers, flat


def _samplers_for(dt: np.dtype):
    """Jitable array-level forms for `dt`: parameters flat and cast, shapes settled."""
    gamma_one, exp, flush = GAMMA_ONE[dt], EXP[dt], FLUSH[dt]
    one = dt.type(1.0)

    def gamma_flat(k0, k1, alpha, out, log_space):
        for i in range(out.size):
            e0, e1 = block(k0, k1, i)
            out[i] = gamma_one(e0, e1, alpha[i], log_space)

    def beta_one(k0, k1, i, a, b):
        ka0, ka1 = block(k0, k1, 0)
        kb0, kb1 = block(k0, k1, 1)
        e0, e1 = block(ka0, ka1, i)
        log_ga = gamma_one(e0, e1, a, True)
        e0, e1 = block(kb0, kb1, i)
        log_gb = gamma_one(e0, e1, b, True)
        top = log_ga if (log_ga >= log_gb or log_ga != log_ga) else log_gb
        ga, gb = exp(log_ga - top), exp(log_gb - top)
        return flush(ga / (ga + gb))

    lowest = dt.type(-np.inf)

    def dirichlet_rows(k0, k1, alpha, out):
        """`alpha`, `out` of shape (rows, categories): one softmax of log-gammas per row."""
        width = out.shape[1]
        for r in range(out.shape[0]):
            top = lowest
            for j in range(width):
                e0, e1 = block(k0, k1, r * width + j)
                g = gamma_one(e0, e1, alpha[r, j], True)
                out[r, j] = g
                if top == top and (g > top or g != g):      # np.max: NaN wins
                    top = g
            total = exp(out[r, 0] - top)
            out[r, 0] = total
            for j in range(1, width):
                e = exp(out[r, j] - top)
                out[r, j] = e
                total = total + e
            scale = one / total
            for j in range(width):
                out[r, j] = flush(out[r, j] * scale)

    return (register_jitable(gamma_flat), register_jitable(beta_one),
            register_jitable(dirichlet_rows))


_FLAT = {dt: _samplers_for(dt) for dt in _FLOATS}


def _elements_for(dt: np.dtype):
    """Jitable `element(k0, k1, i, a, b)` forms of gamma (`a`) and beta (`a`, `b`) with
    scalar parameters and of dirichlet (`a` a 1-D alpha), for CUDA threads: an invalid
    parameter (below 0, NaN) gives NaN, since a kernel cannot raise."""
    gamma_one, beta_one, exp, flush = GAMMA_ONE[dt], _FLAT[dt][1], EXP[dt], FLUSH[dt]
    zero, one, nan, lowest = dt.type(0.0), dt.type(1.0), dt.type(np.nan), dt.type(-np.inf)

    def gamma_element(k0, k1, i, a, b):
        if not a >= zero:
            return nan
        e0, e1 = block(k0, k1, i)
        return gamma_one(e0, e1, a, False)

    def beta_element(k0, k1, i, a, b):
        if not (a >= zero and b >= zero):
            return nan
        return beta_one(k0, k1, i, a, b)

    def log_gamma_at(k0, k1, row, j, alpha):
        e0, e1 = block(k0, k1, row * alpha.shape[0] + j)
        return gamma_one(e0, e1, alpha[j], True)

    def dirichlet_element(k0, k1, i, alpha, b):
        """Element `i` of `dirichlet(key, alpha, shape)` for a 1-D `alpha`: the row's
        log-gammas drawn twice (for its maximum, then its sum) instead of stored."""
        width = alpha.shape[0]
        row, c = i // width, i % width
        top = lowest
        for j in range(width):
            if not alpha[j] >= zero:
                return nan
            g = log_gamma_at(k0, k1, row, j, alpha)
            if top == top and (g > top or g != g):      # np.max: NaN wins
                top = g
        total = exp(log_gamma_at(k0, k1, row, 0, alpha) - top)
        for j in range(1, width):
            total = total + exp(log_gamma_at(k0, k1, row, j, alpha) - top)
        return flush(exp(log_gamma_at(k0, k1, row, c, alpha) - top) * (one / total))
    return (register_jitable(gamma_element), register_jitable(beta_element),
            register_jitable(dirichlet_element))


ELEMENTS = {dt: _elements_for(dt) for dt in _FLOATS}


@register_jitable
def _check_params(values, message):
    for v in values:
        if not v >= 0:
            raise ValueError(message)

# ---------------------------------------------------------------- plain Python forms


def _plain_dtype(dtype, name: str) -> np.dtype:
    dt = np.dtype(np.float64 if dtype is None else dtype)
    if dt not in _FLOATS:
        raise TypeError(f"{name} in the element-wise form takes float32 or float64, got {dt}")
    return dt


def _plain_params(name: str, shape, *params):
    """The parameters as arrays broadcast to the result shape, and that shape."""
    arrays = [np.asarray(p, np.float64) for p in params]
    if shape is None:
        shape = np.broadcast_shapes(*(a.shape for a in arrays))
    shape = _plain_shape(shape)
    for a in arrays:
        if np.broadcast_shapes(shape, a.shape) != shape:
            raise ValueError(f"{name}: parameter shape {a.shape} does not broadcast to {shape}")
        if not (a >= 0).all():
            raise ValueError(f"{name}: parameters must be >= 0 (and not NaN)")
    return [np.broadcast_to(a, shape).reshape(-1) for a in arrays], shape


def gamma(key, a, shape=None, dtype=None) -> np.ndarray:
    """Gamma(a, 1) samples; `shape` defaults to `a`'s shape."""
    dt = _plain_dtype(dtype, "gamma")
    (alpha,), shape = _plain_params("gamma", shape, a)
    k0, k1 = key_words(np.asarray(key))
    out = np.empty(len(alpha), dt)
    _FLAT[dt][0](k0, k1, alpha.astype(dt), out, False)
    return out.reshape(shape)


def beta(key, a, b, shape=None, dtype=None) -> np.ndarray:
    """Beta(a, b) samples, as `G_a / (G_a + G_b)` from log-space gamma draws."""
    dt = _plain_dtype(dtype, "beta")
    (pa, pb), shape = _plain_params("beta", shape, a, b)
    k0, k1 = key_words(np.asarray(key))
    beta_one = _FLAT[dt][1]
    out = np.array([beta_one(k0, k1, i, dt.type(x), dt.type(y))
                    for i, (x, y) in enumerate(zip(pa, pb))], dt)
    return out.reshape(shape)


def dirichlet(key, alpha, shape=None, dtype=None) -> np.ndarray:
    """Dirichlet(alpha) samples over the last axis of `alpha`."""
    dt = _plain_dtype(dtype, "dirichlet")
    alpha = np.asarray(alpha, np.float64)
    if alpha.ndim < 1:
        raise ValueError("dirichlet requires alpha.ndim >= 1, got a scalar alpha")
    batch = alpha.shape[:-1] if shape is None else tuple(shape)
    (flat,), full = _plain_params("dirichlet", batch + alpha.shape[-1:], alpha)
    k0, k1 = key_words(np.asarray(key))
    out = np.empty((int(np.prod(batch)), alpha.shape[-1]), dt)
    _FLAT[dt][2](k0, k1, flat.astype(dt).reshape(out.shape), out)
    return out.reshape(full)

# ---------------------------------------------------------------- Numba forms


def _float_dtype(dtype, name: str) -> np.dtype:
    if _given(dtype, default=dtype) is None:
        return _F64
    return _dtype_of(dtype, name, _FLOATS)


def _real(param, name: str, what: str) -> bool:
    """Whether the parameter is an array (else a real scalar); raises for anything else."""
    if isinstance(param, types.Array) and isinstance(param.dtype, (types.Integer, types.Float)):
        return True
    if isinstance(param, (types.Integer, types.Float)) and not isinstance(param, types.Boolean):
        return False
    raise TypingError(f"random.{name}: {what} must be a real number or array, got {param}")


def _no_shape(shape) -> bool:
    return _given(shape, default=False) is None


@register_jitable
def _dims(a):
    return a.shape


@register_jitable
def _no_dims(a):
    return ()


def _shape_of(param):
    return _dims if isinstance(param, types.Array) else _no_dims


def _result_shape(shape, a, b):
    """A jitable `(shape, a, b) -> the result shape`: `shape`, or the broadcast shape of
    the parameters `a`, `b` when it is None."""
    if not _no_shape(shape):
        _scalar_shape(shape, "sampler")             # raises for what is not a shape
        return register_jitable(lambda shape, a, b: shape)
    first, second = _shape_of(a), _shape_of(b)
    return register_jitable(lambda shape, a, b: np.broadcast_shapes(first(a), second(b)))


@register_jitable
def _flat_as(values, shape, nb_dt):
    """`values` (scalar or array) broadcast to `shape`, flat, contiguous, of `nb_dt`."""
    return np.ascontiguousarray(np.broadcast_to(values, shape)).ravel().astype(nb_dt)


def _scalar_result(shape, *params) -> bool:
    return not any(isinstance(p, types.Array) for p in params) and \
        (_no_shape(shape) or _scalar_shape(shape, "sampler"))


@overload(gamma)
def _gamma_nb(key, a, shape=None, dtype=None):
    _check_key(key, "gamma")
    dt = _float_dtype(dtype, "gamma")
    _real(a, "gamma", "a")
    nb_dt, gamma_flat, gamma_one = from_dtype(dt), _FLAT[dt][0], GAMMA_ONE[dt]
    if _scalar_result(shape, a):
        def one(key, a, shape=None, dtype=None):
            _check_params((a,), "gamma: a must be >= 0 (and not NaN)")
            k0, k1 = key_words(key)
            e0, e1 = block(k0, k1, 0)
            return gamma_one(e0, e1, nb_dt(a), False)
        return one
    result_shape = _result_shape(shape, a, a)

    def impl(key, a, shape=None, dtype=None):
        out_shape = result_shape(shape, a, a)
        alpha = _flat_as(a, out_shape, nb_dt)
        _check_params(alpha, "gamma: a must be >= 0 (and not NaN)")
        k0, k1 = key_words(key)
        out = np.empty(alpha.size, nb_dt)
        gamma_flat(k0, k1, alpha, out, False)
        return out.reshape(out_shape)
    return impl


@overload(beta)
def _beta_nb(key, a, b, shape=None, dtype=None):
    _check_key(key, "beta")
    dt = _float_dtype(dtype, "beta")
    _real(a, "beta", "a")
    _real(b, "beta", "b")
    nb_dt, beta_one = from_dtype(dt), _FLAT[dt][1]
    if _scalar_result(shape, a, b):
        def one(key, a, b, shape=None, dtype=None):
            _check_params((a, b), "beta: a and b must be >= 0 (and not NaN)")
            k0, k1 = key_words(key)
            return beta_one(k0, k1, 0, nb_dt(a), nb_dt(b))
        return one
    result_shape = _result_shape(shape, a, b)

    def impl(key, a, b, shape=None, dtype=None):
        out_shape = result_shape(shape, a, b)
        pa, pb = _flat_as(a, out_shape, nb_dt), _flat_as(b, out_shape, nb_dt)
        _check_params(pa, "beta: a and b must be >= 0 (and not NaN)")
        _check_params(pb, "beta: a and b must be >= 0 (and not NaN)")
        k0, k1 = key_words(key)
        out = np.empty(pa.size, nb_dt)
        for i in range(pa.size):
            out[i] = beta_one(k0, k1, i, pa[i], pb[i])
        return out.reshape(out_shape)
    return impl


@register_jitable
def _batch_of(shape, alpha):
    return alpha.shape[:-1]


@overload(dirichlet)
def _dirichlet_nb(key, alpha, shape=None, dtype=None):
    _check_key(key, "dirichlet")
    dt = _float_dtype(dtype, "dirichlet")
    if not (_real(alpha, "dirichlet", "alpha") and alpha.ndim >= 1):
        raise TypingError(f"random.dirichlet requires alpha.ndim >= 1, got {alpha}")
    nb_dt, rows_of = from_dtype(dt), _FLAT[dt][2]
    batch_of = _batch_of if _no_shape(shape) else register_jitable(lambda shape, alpha: shape)
    if not _no_shape(shape) and not (isinstance(shape, types.BaseTuple) and
                                     all(isinstance(d, types.Integer) for d in shape)):
        raise TypingError(f"random.dirichlet: shape must be a tuple of ints, got {shape}")

    def impl(key, alpha, shape=None, dtype=None):
        width = alpha.shape[-1]
        full = batch_of(shape, alpha) + (width,)
        flat = _flat_as(alpha, full, nb_dt)
        _check_params(flat, "dirichlet: alpha must be >= 0 (and not NaN)")
        k0, k1 = key_words(key)
        out = np.empty((flat.size // max(width, 1), width), nb_dt)
        rows_of(k0, k1, flat.reshape(out.shape), out)
        return out.reshape(full)
    return impl
