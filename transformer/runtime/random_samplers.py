"""`exponential`, `laplace`, `logistic`, `gumbel`, `truncated_normal` and `categorical` of
`transformer.random` one element at a time, for generated code under Numba and CUDA threads.

Each sampler has the signature and defaults of its `transformer.random` namesake (JAX's;
`dtype=None` is float64) and gives its bits: element `i` is a function of the key and of
the uniform draw(s) at flat index `i` (and `n + i` for the two-draw Gumbel modes, `n` the
number of elements), post-processed with XLA's float32/float64 arithmetic
(`transformer.runtime.xla_math`: log, log1p, erf_inv, fma; float32 erf here). The element
functions `element(k0, k1, i, a, b)` follow the contract of `transformer.runtime.random`,
so the same scalar code runs in a Numba loop, a CUDA thread and plain Python.

Under Numba: dtypes float32/float64 (float16 is plain Python only), `shape` an int or a
tuple of ints (() gives a scalar), `mode` and `replace` literals. `truncated_normal` takes
scalar or array bounds; `categorical` takes logits of any rank (a float array) and an
integer axis. Invalid arguments raise ValueError as `transformer.random` does. The plain
Python functions run the same scalar code in Python loops (slow; for checks without a
compile).
"""
from __future__ import annotations

import math

import numpy as np
from numba import from_dtype, types
from numba.core.errors import TypingError
from transformer.runtime.numba_api import overload, register_jitable
from numba.np.unsafe.ndarray import to_fixed_tuple

from .random import (_MASK as _MASK32, _U64, _as_u64, _check_key, _dtype_of, _given, _pick,
                     _plain_fill, _plain_shape, _scalar_shape, _SHIFT32, _uniform32,
                     _uniform64, block, key_words, threefry2x32)
from .random_choice import _log64
from .xla_math import erf_inv32, erf_inv64, fma, log1p32, log1p64, log32

_F32 = np.float32
_FLOAT_TYPES = (np.dtype(np.float32), np.dtype(np.float64))

# ---------------------------------------------------------------- float32 erf
# XLA's float32 erf (its CPU kernel): x * P(x^2) / Q(x^2) in Horner form with fused
# multiply-adds, and +-1 from |x| >= the cutoff; coefficients as float32 bit patterns
# (`transformer.random_xla_special` reads these tables).
ERF32_CUTOFF = 0x407547CB
ERF32_P = (0x39702D51, 0x3B5F5DA2, 0x3D50B6EB, 0x3E3DA740, 0x3F906EBA)
ERF32_Q = (0xB3FD3906, 0x37C588DF, 0x3A856D28, 0x3C6687D4, 0x3DE34C21, 0x3EFEB44A, 0x3F800000)


def float32_of_bits(pattern: int) -> np.float32:
    """The float32 whose bit pattern is `pattern`."""
    return np.array(pattern, np.uint32).view(np.float32)[()]


_ERF32_CUT = float32_of_bits(ERF32_CUTOFF)
_ERF32_P32 = tuple(float32_of_bits(c) for c in ERF32_P)
_ERF32_Q32 = tuple(float32_of_bits(c) for c in ERF32_Q)


@register_jitable
def erf32(x):
    """XLA's float32 erf; `x` a np.float32."""
    x2 = x * x
    p = _ERF32_P32[0]
    for i in range(1, 5):
        p = fma(x2, p, _ERF32_P32[i])
    q = _ERF32_Q32[0]
    for i in range(1, 7):
        q = fma(x2, q, _ERF32_Q32[i])
    if abs(x) >= _ERF32_CUT:
        return _F32(1.0) if x > _F32(0.0) else _F32(-1.0)
    return (x * p) / q

# ---------------------------------------------------------------- one uniform each
# element(k0, k1, i, a, b); a and b unused unless named


@register_jitable
def _sign(x):
    """np.sign of a float: -1, 0 or 1 in the type of `x` (0 keeps the sign of x)."""
    if x > 0:
        return x - x + 1
    if x < 0:
        return x - x - 1
    return x


@register_jitable
def _exponential64(k0, k1, i, a, b):
    return -log1p64(-_uniform64(k0, k1, i, 0.0, 1.0))


@register_jitable
def _exponential32(k0, k1, i, a, b):
    return -log1p32(-_uniform32(k0, k1, i, _F32(0.0), _F32(1.0)))


_LAPLACE_LO64 = -1.0 + float(np.finfo(np.float64).epsneg)
_LAPLACE_LO32 = _F32(-1.0) + np.finfo(np.float32).epsneg


@register_jitable
def _laplace64(k0, k1, i, a, b):
    u = _uniform64(k0, k1, i, _LAPLACE_LO64, 1.0)
    return _sign(u) * log1p64(-abs(u))


@register_jitable
def _laplace32(k0, k1, i, a, b):
    u = _uniform32(k0, k1, i, _LAPLACE_LO32, _F32(1.0))
    return _sign(u) * log1p32(-abs(u))


_TINY64 = float(np.finfo(np.float64).tiny)
_TINY32 = np.finfo(np.float32).tiny


@register_jitable
def _logistic64(k0, k1, i, a, b):
    u = _uniform64(k0, k1, i, _TINY64, 1.0)
    return _log64(u) - log1p64(-u)


@register_jitable
def _logistic32(k0, k1, i, a, b):
    u = _uniform32(k0, k1, i, _TINY32, _F32(1.0))
    return log32(u) - log1p32(-u)


@register_jitable
def _gumbel64(k0, k1, i, a, b):
    return -_log64(-_log64(_uniform64(k0, k1, i, _TINY64, 1.0)))


@register_jitable
def _gumbel32(k0, k1, i, a, b):
    return -log32(-log32(_uniform32(k0, k1, i, _TINY32, _F32(1.0))))

# ---------------------------------------------------------------- two draws each
# element(k0, k1, i, n, b): draws i and n + i of an array of 2 * n


@register_jitable
def _gumbel_high64(k0, k1, i, n, b):
    high = _uniform64(k0, k1, i, 0.0, 1.0)
    x = high
    if not high >= 0.5:
        x = high + 2.0 ** -52 * _uniform64(k0, k1, n + i, 0.0, 1.0) + _TINY64
    return -_log64(-log1p64(-x))


_ULP32 = _F32(2.0 ** -23)


@register_jitable
def _gumbel_high32(k0, k1, i, n, b):
    high = _uniform32(k0, k1, i, _F32(0.0), _F32(1.0))
    x = high
    if not high >= _F32(0.5):
        x = high + _ULP32 * _uniform32(k0, k1, n + i, _F32(0.0), _F32(1.0)) + _TINY32
    return -log32(-log1p32(-x))


_MASK64 = _U64(0xFFFFFFFFFFFFFFFF)
_TOP_BIT = _U64(1) << _U64(63)


@register_jitable
def _word32(k0, k1, i):
    y0, y1 = block(k0, k1, i)
    return y0 ^ y1


@register_jitable
def _fraction_to_float32(v):
    """The 64-bit fixed-point fraction `v` (a uint64) as a float32 in (0, 1), truncated to
    24 significant bits (JAX's `_bits_to_float32` behind gumbel's "highest" mode)."""
    lead = 0
    while lead < 64 and (v << _U64(lead)) & _TOP_BIT == _U64(0):
        lead += 1
    top = ((v << _U64(lead)) & _MASK64) >> _SHIFT32 if lead < 64 else _U64(0)
    mant = (top >> _U64(8)) & _U64(0x7FFFFF)
    return _F32(math.ldexp(1.0 + float(mant) * 2.0 ** -23, -1 - lead))


@register_jitable
def _gumbel_highest32(k0, k1, i, n, b):
    v = (_word32(k0, k1, i) << _SHIFT32) | _word32(k0, k1, n + i)
    if v < _TOP_BIT:                      # x in (0, 1/2): log1p keeps its precision
        return -log32(-log1p32(-_fraction_to_float32(v)))
    return -log32(-log32(_fraction_to_float32((_MASK64 - v + _U64(1)) & _MASK64)))

# ---------------------------------------------------------------- truncated normal
# element(k0, k1, i, lower, upper): JAX's inverse CDF, clamped one ulp inside the bounds

_INV_SQRT2_64 = 1.0 / math.sqrt(2.0)
_INV_SQRT2_32 = _F32(1.0) / _F32(math.sqrt(2.0))
_SQRT2_32 = _F32(math.sqrt(2.0))


@register_jitable
def _truncated_normal64(k0, k1, i, lower, upper):
    a, b = math.erf(lower * _INV_SQRT2_64), math.erf(upper * _INV_SQRT2_64)
    z = math.sqrt(2.0) * erf_inv64(_uniform64(k0, k1, i, a, b))
    return _clamp(z, next_up64(lower), -next_up64(-upper))


@register_jitable
def _truncated_normal32(k0, k1, i, lower, upper):
    a, b = erf32(lower * _INV_SQRT2_32), erf32(upper * _INV_SQRT2_32)
    z = _SQRT2_32 * erf_inv32(_uniform32(k0, k1, i, a, b))
    return _clamp(z, next_up32(lower), -next_up32(-upper))


_MAX64 = float(np.finfo(np.float64).max)
_MAX32 = np.finfo(np.float32).max


@register_jitable
def next_up64(x):
    """np.nextafter(x, inf) by arithmetic (CUDA has no nextafter): x plus the gap above it."""
    if x != x or x == math.inf:
        return x
    if x == -math.inf:
        return -_MAX64
    if x == 0.0:
        return 5e-324
    m, e = math.frexp(x)
    gap = e - 54 if m == -0.5 else e - 53     # at -2**k the gap below the binade is half
    up = x + math.ldexp(1.0, max(gap, -1074))
    return up if up != 0.0 else -0.0          # up from -5e-324 is -0.0


@register_jitable
def next_up32(x):
    """np.nextafter(x, inf) of a np.float32."""
    if x != x or x == _F32(math.inf):
        return x
    if x == _F32(-math.inf):
        return -_MAX32
    if x == _F32(0.0):
        return _F32(2.0 ** -149)
    m, e = math.frexp(x)
    gap = e - 25 if m == -0.5 else e - 24
    up = x + _F32(math.ldexp(1.0, max(gap, -149)))
    return up if up != _F32(0.0) else _F32(-0.0)


@register_jitable
def _clamp(z, lo, hi):
    """np.minimum(hi, np.maximum(lo, z)): NaN in any operand gives NaN."""
    if z != z or lo != lo:
        z = z if z != z else lo
    elif lo > z:
        z = lo
    if hi != hi or z != z:
        return z if z != z else hi
    return hi if hi < z else z

# ---------------------------------------------------------------- tables

# (name, dtype) -> element; the Gumbel modes are "gumbel", "gumbel high", "gumbel highest"
ELEMENTS = {
    ("exponential", np.dtype(np.float64)): _exponential64,
    ("exponential", np.dtype(np.float32)): _exponential32,
    ("laplace", np.dtype(np.float64)): _laplace64,
    ("laplace", np.dtype(np.float32)): _laplace32,
    ("logistic", np.dtype(np.float64)): _logistic64,
    ("logistic", np.dtype(np.float32)): _logistic32,
    ("gumbel", np.dtype(np.float64)): _gumbel64,
    ("gumbel", np.dtype(np.float32)): _gumbel32,
    ("gumbel high", np.dtype(np.float64)): _gumbel_high64,
    ("gumbel high", np.dtype(np.float32)): _gumbel_high32,
    ("gumbel highest", np.dtype(np.float64)): _gumbel_high64,
    ("gumbel highest", np.dtype(np.float32)): _gumbel_highest32,
    ("truncated_normal", np.dtype(np.float64)): _truncated_normal64,
    ("truncated_normal", np.dtype(np.float32)): _truncated_normal32,
}
GUMBEL_MODES = {None: "gumbel", "low": "gumbel", "high": "gumbel high",
                "highest": "gumbel highest"}

# ---------------------------------------------------------------- plain Python forms


def _float_of(dtype) -> np.dtype:
    return np.dtype(np.float64 if dtype is None else dtype)


def exponential(key, shape=(), dtype=None) -> np.ndarray:
    """Exponential(1) samples."""
    dt = _float_of(dtype)
    return _plain_fill(ELEMENTS["exponential", dt], key, shape, dt)


def laplace(key, shape=(), dtype=None) -> np.ndarray:
    """Laplace(0, 1) samples."""
    dt = _float_of(dtype)
    return _plain_fill(ELEMENTS["laplace", dt], key, shape, dt)


def logistic(key, shape=(), dtype=None) -> np.ndarray:
    """Standard logistic samples."""
    dt = _float_of(dtype)
    return _plain_fill(ELEMENTS["logistic", dt], key, shape, dt)


def gumbel(key, shape=(), dtype=None, mode=None) -> np.ndarray:
    """Standard Gumbel samples (`mode` "low", "high" or "highest", as JAX's)."""
    dt = _float_of(dtype)
    n = math.prod(_plain_shape(shape))
    with np.errstate(over="ignore"):
        return _plain_fill(ELEMENTS[_gumbel_mode(mode), dt], key, shape, dt, n)


def _gumbel_mode(mode) -> str:
    if mode not in GUMBEL_MODES:
        raise ValueError(f"gumbel: mode must be 'low', 'high' or 'highest', got {mode!r}")
    return GUMBEL_MODES[mode]


def truncated_normal(key, lower, upper, shape=None, dtype=None) -> np.ndarray:
    """Standard normal samples conditioned on lower < x < upper."""
    dt = _float_of(dtype)
    lower, upper = np.asarray(lower, dt), np.asarray(upper, dt)
    shape = np.broadcast_shapes(lower.shape, upper.shape) if shape is None else \
        _plain_shape(shape)
    lo, hi = np.broadcast_to(lower, shape).ravel(), np.broadcast_to(upper, shape).ravel()
    element = ELEMENTS["truncated_normal", dt]
    k0, k1 = key_words(np.asarray(key))
    out = np.array([element(k0, k1, i, lo[i], hi[i]) for i in range(lo.size)], dt)
    return out.reshape(shape)


def categorical(key, logits, axis=-1, shape=None, replace=True, mode=None) -> np.ndarray:
    """Indices drawn with probabilities softmax(logits) along `axis` (JAX's Gumbel-max;
    without replacement its Gumbel top-k)."""
    logits = np.asarray(logits)
    logits = logits.astype(np.float64) if logits.dtype.kind in "biu" else logits
    element = ELEMENTS[_gumbel_mode(mode), logits.dtype]
    given = np.array(() if shape is None else _plain_shape(shape), np.int64)
    k0, k1 = key_words(np.asarray(key))
    draw = _with_replacement if replace else _without_replacement
    with np.errstate(over="ignore"):
        flat = draw(k0, k1, logits, axis, given, shape is None, element)
    out_shape = tuple(int(d) for d in _out_dims(logits, axis, given, shape is None))
    return flat.reshape(out_shape)

# ---------------------------------------------------------------- categorical, any rank


@register_jitable
def _out_dims(logits, axis, given, batch_shaped):
    """The result's dimensions: the batch dimensions of `logits` (all but `axis`) when
    `batch_shaped`, else `given`, checked to broadcast with them."""
    nd = logits.ndim
    if nd == 0:
        raise ValueError("categorical: logits must have at least one dimension")
    if axis < -nd or axis >= nd:
        raise ValueError("categorical: axis is out of bounds for the logits")
    ax = axis % nd
    batch = np.empty(nd - 1, np.int64)
    for d in range(nd - 1):
        batch[d] = logits.shape[d if d < ax else d + 1]
    if batch_shaped:
        return batch
    pre = len(given) - (nd - 1)
    ok = pre >= 0
    for d in range(nd - 1):
        if ok and not (batch[d] == given[pre + d] or batch[d] == 1):
            ok = False
    if not ok:
        raise ValueError("categorical: the logits' batch shape is not broadcast-compatible "
                         "with the requested shape")
    return given.copy()


@register_jitable
def _strides(dims):
    out = np.ones(len(dims), np.int64)
    for d in range(len(dims) - 2, -1, -1):
        out[d] = out[d + 1] * dims[d + 1]
    return out


@register_jitable
def _with_replacement(k0, k1, logits, axis, given, batch_shaped, element):
    """argmax over the categories of logits + Gumbel noise drawn for the whole result
    (the noise has the result's shape with the category axis inserted), first maximum."""
    dims = _out_dims(logits, axis, given, batch_shaped)
    nd = logits.ndim
    ax, pre = axis % nd, len(dims) - (nd - 1)
    n_cat = logits.shape[ax]
    if n_cat == 0:
        raise ValueError("categorical: attempt to get argmax of an empty sequence (no "
                         "categories along axis)")
    noise_dims = np.empty(len(dims) + 1, np.int64)
    for d in range(len(dims) + 1):
        j = d if d < pre + ax else d - 1
        noise_dims[d] = n_cat if d == pre + ax else dims[j]
    noise_strides, logit_strides = _strides(noise_dims), _strides(np.array(logits.shape))
    values = np.ascontiguousarray(logits).ravel()
    size, n_noise = 1, 1
    for d in dims:
        size *= d
    for d in noise_dims:
        n_noise *= d
    out = np.empty(size, np.int64)
    for o in range(size):
        rest, noise_at, logit_at = o, 0, 0
        for d in range(len(dims) - 1, -1, -1):
            index = rest % dims[d]
            rest //= dims[d]
            full = d if d < pre + ax else d + 1          # its axis in the noise
            noise_at += index * noise_strides[full]
            if d >= pre:
                logit_axis = full - pre
                if logits.shape[logit_axis] != 1:
                    logit_at += index * logit_strides[logit_axis]
        best, best_value = 0, values[0]
        for c in range(n_cat):
            v = element(k0, k1, noise_at + c * noise_strides[pre + ax], n_noise, 0) + \
                values[logit_at + c * logit_strides[ax]]
            if v != v:
                best = c
                break
            if c == 0 or v > best_value:
                best, best_value = c, v
        out[o] = best
    return out


@register_jitable
def _without_replacement(k0, k1, logits, axis, given, batch_shaped, element):
    """The Gumbel top-k: per batch row, the indices of the `k` largest logits + noise
    (noise of the logits' shape), largest first, ties to the lower index; `k` draws lead."""
    nd = logits.ndim
    batch = _out_dims(logits, axis, given, True)
    ax, n_cat = axis % nd, logits.shape[axis % nd]
    dims = batch if batch_shaped else given
    pre, k = len(dims) - (nd - 1), 1
    for d in range(pre):
        k *= dims[d]
    for d in range(nd - 1):
        if pre < 0 or dims[pre + d] != batch[d]:
            raise ValueError("categorical: without replacement the shape must end with "
                             "the logits' batch shape")
    if k > n_cat:
        raise ValueError("categorical: the number of samples without replacement cannot "
                         "exceed the number of categories")
    strides = _strides(np.array(logits.shape))
    values = np.ascontiguousarray(logits).ravel()
    rows = values.size // n_cat if n_cat else 0
    out = np.empty(k * rows, np.int32)
    scores = np.empty(n_cat, values.dtype)
    for r in range(rows):
        rest, base = r, 0
        for d in range(nd - 2, -1, -1):
            full = d if d < ax else d + 1
            base += (rest % logits.shape[full]) * strides[full]
            rest //= logits.shape[full]
        for c in range(n_cat):
            at = base + c * strides[ax]
            scores[c] = -(values[at] + element(k0, k1, at, values.size, 0))
        order = np.argsort(scores, kind="mergesort")
        for j in range(k):
            out[j * rows + r] = order[j]
    return out

# ---------------------------------------------------------------- Numba forms


def _float_arg(dtype, name: str) -> np.dtype:
    if _given(dtype, default=dtype) is None:
        return np.dtype(np.float64)
    return _dtype_of(dtype, name, _FLOAT_TYPES)


def _overload_plain(sampler, name: str):
    """The Numba form of `sampler(key, shape=(), dtype=None)`."""
    @overload(sampler)
    def _nb(key, shape=(), dtype=None):
        _check_key(key, name)
        dt = _float_arg(dtype, name)
        run = _pick(ELEMENTS[name, dt], dt, shape, name)
        return lambda key, shape=(), dtype=None: run(key, shape, 0, 0)
    return _nb


for _sampler in (exponential, laplace, logistic):
    _overload_plain(_sampler, _sampler.__name__)


def _literal_mode(mode, name: str) -> str:
    given = _given(mode, default="?")
    if given not in GUMBEL_MODES:
        raise TypingError(f"random.{name}: mode must be 'low', 'high' or 'highest' (a "
                          f"literal), got {mode}")
    return GUMBEL_MODES[given]


@register_jitable
def _count(shape):
    return np.empty(shape, np.bool_).size


@overload(gumbel, prefer_literal=True)
def _gumbel_nb(key, shape=(), dtype=None, mode=None):
    _check_key(key, "gumbel")
    dt = _float_arg(dtype, "gumbel")
    run = _pick(ELEMENTS[_literal_mode(mode, "gumbel"), dt], dt, shape, "gumbel")
    return lambda key, shape=(), dtype=None, mode=None: run(key, shape, _count(shape), 0)


def _is_bound(value) -> bool:
    return isinstance(value, (types.Float, types.Integer, float, int)) or \
        isinstance(value, types.Array) and isinstance(value.dtype, (types.Float, types.Integer))


@overload(truncated_normal)
def _truncated_normal_nb(key, lower, upper, shape=None, dtype=None):
    _check_key(key, "truncated_normal")
    dt = _float_arg(dtype, "truncated_normal")
    if not (_is_bound(lower) and _is_bound(upper)):
        raise TypingError(f"random.truncated_normal: lower and upper must be real scalars or "
                          f"arrays, got {lower} and {upper}")
    element, cast = ELEMENTS["truncated_normal", dt], dt.type
    arrays = isinstance(lower, types.Array) or isinstance(upper, types.Array)
    no_shape = _given(shape, default=shape) is None
    if not arrays:
        run = _pick(element, dt, () if no_shape else shape, "truncated_normal")
        if no_shape:
            return lambda key, lower, upper, shape=None, dtype=None: \
                run(key, (), cast(lower), cast(upper))
        return lambda key, lower, upper, shape=None, dtype=None: \
            run(key, shape, cast(lower), cast(upper))
    if not no_shape:
        _scalar_shape(shape, "truncated_normal")
    nb_dt = from_dtype(dt)

    @register_jitable
    def fill(key, lo, hi, out_shape):
        if np.broadcast_shapes(out_shape, lo.shape, hi.shape) != out_shape:
            raise ValueError("truncated_normal: the bounds do not broadcast to the shape")
        k0, k1 = key_words(key)
        out = np.empty(out_shape, nb_dt)
        flat = out.reshape(out.size)
        i = 0
        for a, b in np.nditer((np.broadcast_to(lo, out_shape), np.broadcast_to(hi, out_shape))):
            flat[i] = element(k0, k1, i, a.item(), b.item())
            i += 1
        return out

    if no_shape:
        def broadcast(key, lower, upper, shape=None, dtype=None):
            lo, hi = np.asarray(lower).astype(nb_dt), np.asarray(upper).astype(nb_dt)
            return fill(key, lo, hi, np.broadcast_shapes(lo.shape, hi.shape))
        return broadcast

    def shaped(key, lower, upper, shape=None, dtype=None):
        lo, hi = np.asarray(lower).astype(nb_dt), np.asarray(upper).astype(nb_dt)
        return fill(key, lo, hi, _dims(shape))
    return shaped


@overload(categorical, prefer_literal=True)
def _categorical_nb(key, logits, axis=-1, shape=None, replace=True, mode=None):
    _check_key(key, "categorical")
    if not (isinstance(logits, types.Array) and logits.ndim >= 1 and
            str(logits.dtype) in ("float32", "float64")):
        raise TypingError(f"random.categorical under jit takes logits as a float32/float64 "
                          f"array of at least one dimension, got {logits}")
    replace_given = _given(replace, default="?")
    if replace_given not in (True, False):
        raise TypingError(f"random.categorical under jit takes replace as a literal True or "
                          f"False, got {replace}")
    element = ELEMENTS[_literal_mode(mode, "categorical"), np.dtype(str(logits.dtype))]
    draw = _with_replacement if replace_given else _without_replacement
    no_shape = _given(shape, default=shape) is None
    rank = logits.ndim - 1
    if not no_shape:
        scalar = _scalar_shape(shape, "categorical")
        rank = 0 if scalar else (1 if isinstance(shape, types.Integer) else len(shape))
    given_of = _no_dims if no_shape else _dims_array

    @register_jitable
    def flat_draws(key, logits, axis, shape):
        k0, k1 = key_words(key)
        given = given_of(shape)
        return draw(k0, k1, logits, axis, given, no_shape, element), given

    if rank == 0:
        def one(key, logits, axis=-1, shape=None, replace=True, mode=None):
            return flat_draws(key, logits, axis, shape)[0][0]
        return one

    def impl(key, logits, axis=-1, shape=None, replace=True, mode=None):
        flat, given = flat_draws(key, logits, axis, shape)
        return flat.reshape(to_fixed_tuple(_out_dims(logits, axis, given, no_shape), rank))
    return impl


@register_jitable
def _no_dims(shape):
    return np.empty(0, np.int64)


@register_jitable
def _dims_array(shape):
    dims = _dims(shape)
    out = np.empty(len(dims), np.int64)
    for d in range(len(dims)):
        out[d] = dims[d]
    return out


def _dims(shape):
    """`shape` as a tuple (an int n is (n,))."""
    return (shape,) if np.ndim(shape) == 0 else tuple(shape)


@overload(_dims)
def _dims_nb(shape):
    if isinstance(shape, types.Integer):
        return lambda shape: (shape,)
    return lambda shape: shape

# ---------------------------------------------------------------- key words for CUDA threads
# word `word` (0 or 1) of a key made in a thread, as `_split_word` of runtime.random


@register_jitable
def _fold_in_word(k0, k1, data, word, b):
    """A word of `fold_in(key, data)`; `data` is taken modulo 2**32 (JAX's conversion to
    uint32 under jit)."""
    y0, y1 = threefry2x32(k0, k1, 0, _U64(data) & _MASK32)
    return np.uint32(y0 if word == 0 else y1)


@register_jitable
def _seed_word(seed, word):
    """A word of `PRNGKey(seed)`: the high and low words of the 64-bit seed."""
    v = _as_u64(seed)
    return np.uint32(v >> _SHIFT32 if word == 0 else v & _MASK32)
