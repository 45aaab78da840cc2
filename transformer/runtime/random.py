"""`transformer.random` one element at a time: the key operations and samplers that generated
code calls under Numba (the lowering redirects `random.normal(...)` here; see
`transformer.primitives.random`).

Every function has the signature of its `transformer.random` namesake and gives the same
bits: element `i` of an output is made from the Threefry-2x32 block of the 64-bit counter
`i` (its row-major flat index), then post-processed with XLA's rounding
(`transformer.runtime.xla_math`). Because each element depends only on the key and its
index, the same scalar code serves a Numba loop, a CUDA thread and plain Python.

Under Numba: a key is a uint32 (or other integer) array of shape (2,); `shape` is an int
or a tuple of ints; `dtype` a NumPy scalar type (`np.float32`) or dtype. A shape of ()
gives a scalar rather than a 0-d array. Bounds (`minval`, `maxval`) are scalars, `p` a
scalar or an array that gives the shape. Float16 and `bernoulli(mode="high")` are plain
Python only. The plain Python functions here run the same scalar code in Python loops
(slow; they exist so that every path can be checked without a compile).
"""
from __future__ import annotations

import math
import operator

import numpy as np
from numba import from_dtype, types
from numba.core.errors import TypingError
from transformer.runtime.numba_api import overload, register_jitable

from .xla_math import erf_inv32, erf_inv64, fma

# ---------------------------------------------------------------- Threefry-2x32

_U64 = np.uint64
_MASK = _U64(0xFFFFFFFF)
_PARITY = _U64(0x1BD11BDA)
_ROTATIONS = ((_U64(13), _U64(15), _U64(26), _U64(6)), (_U64(17), _U64(29), _U64(16), _U64(24)))
_SHIFT32 = _U64(32)


@register_jitable
def _mix(x0, x1, r):
    x0 = (x0 + x1) & _MASK
    x1 = (((x1 << r) | (x1 >> (_SHIFT32 - r))) & _MASK) ^ x0
    return x0, x1


@register_jitable
def threefry2x32(k0, k1, x0, x1):
    """The Threefry-2x32 block cipher (20 rounds) on one block: key words `k0`, `k1` and
    counter words `x0`, `x1` (each in [0, 2**32), any integer type). Returns the two
    enciphered words as uint64 values below 2**32."""
    k0, k1 = _U64(k0), _U64(k1)
    ks = (k0, k1, k0 ^ k1 ^ _PARITY)
    x0 = (_U64(x0) + k0) & _MASK
    x1 = (_U64(x1) + k1) & _MASK
    for i in range(5):
        rot = _ROTATIONS[i % 2]
        for j in range(4):
            x0, x1 = _mix(x0, x1, rot[j])
        x0 = (x0 + ks[(i + 1) % 3]) & _MASK
        x1 = (x1 + ks[(i + 2) % 3] + _U64(i + 1)) & _MASK
    return x0, x1


@register_jitable
def block(k0, k1, i):
    """The block of flat index `i` (a 64-bit counter split into high and low words)."""
    n = _U64(i)
    return threefry2x32(k0, k1, n >> _SHIFT32, n & _MASK)


@register_jitable
def key_words(key):
    """The two words of a raw key, checked to be one."""
    if key.shape[0] != 2 or key.ndim != 1:
        raise ValueError("expected a raw PRNG key: an array of shape (2,)")
    return _U64(key[0]) & _MASK, _U64(key[1]) & _MASK

@register_jitable
def checked_key(key, refusal):
    """`key` unchanged when it has shape (2,); otherwise raises ValueError(refusal). The
    lowering passes each sampler's key through it with `refusal` a constant naming the
    user's call (`transformer.random_sites.key_refusal`), so a key of the wrong length is
    reported at that call rather than inside the sampler."""
    if key.ndim != 1 or key.shape[0] != 2:
        raise ValueError(refusal)
    return key

# ---------------------------------------------------------------- elements
# element(k0, k1, i, a, b): element `i` of a sampler's output; `a`, `b` its parameters


@register_jitable
def _bits8(k0, k1, i, a, b):
    y0, y1 = block(k0, k1, i)
    return np.uint8((y0 ^ y1) & _U64(0xFF))


@register_jitable
def _bits16(k0, k1, i, a, b):
    y0, y1 = block(k0, k1, i)
    return np.uint16((y0 ^ y1) & _U64(0xFFFF))


@register_jitable
def _bits32(k0, k1, i, a, b):
    y0, y1 = block(k0, k1, i)
    return np.uint32(y0 ^ y1)


@register_jitable
def _bits64(k0, k1, i, a, b):
    y0, y1 = block(k0, k1, i)
    return (y0 << _SHIFT32) | y1


_EPS64 = 2.0 ** -52
_EPS32 = np.float32(2.0 ** -23)


@register_jitable
def _unit64(k0, k1, i):
    # the mantissa bits over 1.0, minus 1.0: exact, so plain arithmetic gives XLA's value
    return float(_bits64(k0, k1, i, 0, 0) >> _U64(12)) * _EPS64


@register_jitable
def _unit32(k0, k1, i):
    return np.float32(_bits32(k0, k1, i, 0, 0) >> np.uint32(9)) * _EPS32


@register_jitable
def _maximum(a, b):
    return a if (a >= b or a != a) else b        # np.maximum, NaN included


@register_jitable
def _uniform64(k0, k1, i, lo, hi):
    return _maximum(lo, fma(_unit64(k0, k1, i), hi - lo, lo))


@register_jitable
def _uniform32(k0, k1, i, lo, hi):
    return _maximum(lo, fma(_unit32(k0, k1, i), hi - lo, lo))


_NORMAL_LO64 = float(np.nextafter(-1.0, 0.0))
_NORMAL_LO32 = np.nextafter(np.float32(-1.0), np.float32(0.0))
_SQRT2_32 = np.float32(math.sqrt(2.0))


@register_jitable
def _normal64(k0, k1, i, a, b):
    return math.sqrt(2.0) * erf_inv64(_uniform64(k0, k1, i, _NORMAL_LO64, 1.0))


@register_jitable
def _normal32(k0, k1, i, a, b):
    return _SQRT2_32 * erf_inv32(_uniform32(k0, k1, i, _NORMAL_LO32, np.float32(1.0)))


@register_jitable
def _bernoulli64(k0, k1, i, p, b):
    return _unit64(k0, k1, i) < p


@register_jitable
def _bernoulli32(k0, k1, i, p, b):
    return _unit32(k0, k1, i) < p


# ---------------------------------------------------------------- randint
# JAX's algorithm and bias: two words per element (from split(key)), reduced mod the span

_HALF64 = _U64(2 ** 63)
_MIN64 = np.int64(-2 ** 63)
_ALL64 = _U64(2 ** 64 - 1)


@register_jitable
def _as_u64(v):
    """The two's-complement bits of the integer `v` as a uint64."""
    if v >= 0:
        return _U64(v)
    return _U64(v + 9223372036854775807 + 1) + _HALF64


@register_jitable
def _rem(a, b):
    return a if b == _U64(0) else a % b          # XLA: a % 0 == a for unsigned


@register_jitable
def _randint_setup(lo, hi, nbits, dmin, dmax):
    """(lo clipped, span, mult) of JAX's randint for a dtype of `nbits` and range
    [dmin, dmax]; `lo`, `hi` are integers of any range."""
    mask = _ALL64 if nbits == 64 else (_U64(1) << _U64(nbits)) - _U64(1)
    out_of_range = hi > dmax
    lo = min(max(lo, dmin), dmax)
    hi = min(max(hi, dmin), dmax)
    span = (_as_u64(hi) - _as_u64(lo)) & mask
    if hi <= lo:
        span = _U64(1)
    elif out_of_range:
        span = (span + _U64(1)) & mask
    mult = _rem(_U64(1) << _U64(nbits // 2), span)
    return lo, span, _rem((mult * mult) & mask, span), mask


@register_jitable
def _randint_element(words, i, lo, span, mult, mask, nbits):
    a0, a1, c0, c1 = words
    if nbits == 64:
        higher, lower = _bits64(a0, a1, i, 0, 0), _bits64(c0, c1, i, 0, 0)
    else:
        higher, lower = _U64(_bits32(a0, a1, i, 0, 0)), _U64(_bits32(c0, c1, i, 0, 0))
    offset = _rem((_rem(higher, span) * mult + _rem(lower, span)) & mask, span)
    bits = (_as_u64(lo) + offset) & mask
    if nbits == 64:                               # the bits as a signed int64
        return np.int64(bits & _U64(2 ** 63 - 1)) + np.int64(bits >> _U64(63)) * _MIN64
    return np.int64(bits) - (np.int64(1) << 32 if bits >= _U64(2 ** 31) else np.int64(0))


@register_jitable
def _randint64(k0, k1, i, lo, hi):
    """Element `i` of an int64 randint on its own (setup and split redone per element:
    the form of a CUDA thread, which keeps no tuple between statements)."""
    words = block(k0, k1, 0) + block(k0, k1, 1)
    lo, span, mult, mask = _randint_setup(lo, hi, 64, -9223372036854775808,
                                          9223372036854775807)
    return _randint_element(words, i, lo, span, mult, mask, 64)


@register_jitable
def _randint32(k0, k1, i, lo, hi):
    words = block(k0, k1, 0) + block(k0, k1, 1)
    lo, span, mult, mask = _randint_setup(lo, hi, 32, -2147483648, 2147483647)
    return np.int32(_randint_element(words, i, lo, span, mult, mask, 32))


@register_jitable
def _split_word(k0, k1, i, word, b):
    """Word `word` (0 or 1) of key `i` of a split: an element of `split`, for CUDA threads."""
    y0, y1 = block(k0, k1, i)
    return np.uint32(y0 if word == 0 else y1)


@register_jitable
def _split_words(key):
    k0, k1 = key_words(key)
    a0, a1 = block(k0, k1, 0)
    c0, c1 = block(k0, k1, 1)
    return a0, a1, c0, c1

# ---------------------------------------------------------------- plain Python forms


def _plain_shape(shape) -> tuple:
    """`shape` as a tuple of ints; a float dimension is refused, not truncated."""
    if shape is None:
        return ()
    try:
        if np.ndim(shape) == 0:
            return (operator.index(shape),)
        return tuple(operator.index(d) for d in shape)
    except TypeError:
        raise TypeError(f"shape must be an int or a tuple of ints, got {shape!r}") from None


def _plain_fill(element, key, shape, dtype, a=0, b=0) -> np.ndarray:
    k0, k1 = key_words(np.asarray(key))
    out = np.empty(_plain_shape(shape), dtype)
    flat = out.reshape(-1)
    for i in range(flat.size):
        flat[i] = element(k0, k1, i, a, b)
    return out


def PRNGKey(seed) -> np.ndarray:
    """A raw key from a 64-bit integer seed (its high and low words)."""
    v = _as_u64(int(seed))
    return np.array([v >> _SHIFT32, v & _MASK], dtype=np.uint32)


def key(seed) -> np.ndarray:
    """Alias of `PRNGKey`."""
    return PRNGKey(seed)


def split(key, num=2) -> np.ndarray:
    """`num` new keys (or a shape of keys): uint32[*num, 2]."""
    k0, k1 = key_words(np.asarray(key))
    out = np.empty(_plain_shape(num) + (2,), np.uint32)
    flat = out.reshape(-1, 2)
    for i in range(flat.shape[0]):
        flat[i] = block(k0, k1, i)
    return out


def fold_in(key, data) -> np.ndarray:
    """A new key from `key` and an integer in [0, 2**32)."""
    k0, k1 = key_words(np.asarray(key))
    return np.array(threefry2x32(k0, k1, 0, _fold_data(int(data))), np.uint32)


@register_jitable
def _fold_data(data):
    if data < 0 or data > 4294967295:
        raise OverflowError("fold_in data is out of bounds for uint32")
    return data


_BITS = {8: _bits8, 16: _bits16, 32: _bits32, 64: _bits64}
_FLOATS = {np.dtype(np.float32): (_uniform32, _normal32, _bernoulli32),
           np.dtype(np.float64): (_uniform64, _normal64, _bernoulli64)}


# the dtype `bits` draws when none is given, here and in `transformer.random.bits`: JAX's
# default unsigned type with x64 on
DEFAULT_BITS_DTYPE = np.dtype(np.uint64)


def bits(key, shape=(), dtype=None) -> np.ndarray:
    """Uniform unsigned integers of `dtype` (None: `DEFAULT_BITS_DTYPE`)."""
    dtype = DEFAULT_BITS_DTYPE if dtype is None else np.dtype(dtype)
    return _plain_fill(_BITS[dtype.itemsize * 8], key, shape, dtype)


def uniform(key, shape=(), dtype=np.float64, minval=0.0, maxval=1.0) -> np.ndarray:
    """Uniform floats in [minval, maxval)."""
    dt = np.dtype(dtype)
    return _plain_fill(_FLOATS[dt][0], key, shape, dt, dt.type(minval), dt.type(maxval))


def normal(key, shape=(), dtype=np.float64) -> np.ndarray:
    """Standard normal samples."""
    return _plain_fill(_FLOATS[np.dtype(dtype)][1], key, shape, dtype)


def bernoulli(key, p=0.5, shape=None, mode="low") -> np.ndarray:
    """Booleans that are True with probability `p` (a scalar)."""
    p = np.asarray(p)
    return _plain_fill(_FLOATS[p.dtype][2], key, shape, np.bool_, p[()])


def randint(key, shape, minval, maxval, dtype=np.int64) -> np.ndarray:
    """Integers uniformly drawn from [minval, maxval) (JAX's algorithm and bias)."""
    dt = np.dtype(dtype)
    nbits, lo, hi, dmin, dmax = _randint_range(dt, int(minval), int(maxval))
    words = _split_words(np.asarray(key))
    out = np.empty(_plain_shape(shape), dt)
    flat = out.reshape(-1)
    with np.errstate(over="ignore"):            # uint64 arithmetic wraps, as intended
        lo, span, mult, mask = _randint_setup(lo, hi, nbits, dmin, dmax)
        for i in range(flat.size):
            flat[i] = _randint_element(words, i, lo, span, mult, mask, nbits)
    return out


def _randint_range(dt: np.dtype, lo, hi):
    """(nbits, lo, hi, dmin, dmax) of the draw: 8- and 16-bit dtypes draw as int32 with
    the bounds clipped to their own range first, as JAX does."""
    info = np.iinfo(dt)
    if dt.itemsize >= 4:
        return dt.itemsize * 8, lo, hi, info.min, info.max
    lo, hi = min(max(lo, info.min), info.max), min(max(hi, info.min), info.max + 1)
    return 32, lo, hi, -2 ** 31, 2 ** 31 - 1

# ---------------------------------------------------------------- Numba forms


def _check_key(key, name: str) -> None:
    if not (isinstance(key, types.Array) and key.ndim == 1
            and isinstance(key.dtype, types.Integer)):
        raise TypingError(f"random.{name}: expected a PRNG key (a uint32 array of shape "
                          f"(2,), from random.PRNGKey or random.split), got {key}")


def _given(arg, default=None):
    """The Python value of an omitted argument, None or a literal; `default` otherwise."""
    if arg is None or isinstance(arg, types.NoneType):
        return None
    if isinstance(arg, types.Omitted):
        return arg.value
    if not isinstance(arg, types.Type):          # a default, given as its Python value
        return arg
    return getattr(arg, "literal_value", default)


def _dtype_of(dtype, name: str, allowed: tuple) -> np.dtype:
    """The NumPy dtype a `dtype` argument names, one of `allowed`."""
    if isinstance(dtype, types.NumberClass):
        found = np.dtype(str(dtype.instance_type))
    elif isinstance(dtype, types.DType):
        found = np.dtype(str(dtype.dtype))
    else:
        value = _given(dtype, default=dtype)
        try:
            found = np.dtype(value)
        except TypeError:
            raise TypingError(f"random.{name}: dtype must be a NumPy type such as "
                              f"np.float64, got {dtype}") from None
    if found not in allowed:
        raise TypingError(f"random.{name} under jit supports dtypes "
                          f"{', '.join(str(d) for d in allowed)}; got {found}"
                          f"{_FLOAT16_WAYS.format(name=name) if found == _F16 else ''}")
    return found


_F16 = np.dtype(np.float16)
# Numba has no float16 arithmetic or arrays: the ways to JAX's float16 numbers that work
_FLOAT16_WAYS = (" (Numba has no float16 arrays): draw it outside jit, where "
                 "transformer.random.{name}(..., dtype=np.float16) gives JAX's float16 "
                 "numbers, or run this function with jit(..., backend='python'), which "
                 "gives the same numbers; np.float32 under jit draws other numbers")


def _scalar_shape(shape, name: str) -> bool:
    """Whether `shape` is () (a scalar result); raises for what is not a shape."""
    if _given(shape, default=False) in ((), None):
        return True
    if isinstance(shape, types.Integer):
        return False
    if isinstance(shape, types.BaseTuple) and all(isinstance(t, types.Integer) for t in shape):
        return len(shape) == 0
    listed = "; write it as a tuple, e.g. (3, 2)" if isinstance(shape, types.List) else ""
    raise TypingError(f"random.{name}: shape must be an int or a tuple of ints, got "
                      f"{shape}{listed}")


def _scalar_param(value, name: str, what: str) -> None:
    if not isinstance(value, (types.Number, types.Omitted, types.Boolean, int, float)):
        way = ("draw with the default bounds and scale: lo + (hi - lo) * u" if name == "uniform"
               else f"array parameters run outside jit, in transformer.random.{name}")
        raise TypingError(f"random.{name} under jit takes a scalar {what}, got {value}; {way}")


_FILLERS: dict = {}


def _filler(element, dt: np.dtype):
    """A jitable `fill(key, shape, a, b)`: an array of `dt` whose element `i` is
    `element(k0, k1, i, a, b)`, or that scalar for a shape of ()."""
    if (element, dt) not in _FILLERS:
        nb_dt = from_dtype(dt)

        def fill(key, shape, a, b):
            k0, k1 = key_words(key)
            out = np.empty(shape, nb_dt)
            flat = out.reshape(out.size)
            for i in range(out.size):
                flat[i] = element(k0, k1, i, a, b)
            return out

        def one(key, shape, a, b):
            k0, k1 = key_words(key)
            return element(k0, k1, 0, a, b)
        _FILLERS[element, dt] = register_jitable(fill), register_jitable(one)
    return _FILLERS[element, dt]


def _pick(element, dt, shape, name):
    fill, one = _filler(element, dt)
    return one if _scalar_shape(shape, name) else fill


@overload(PRNGKey)
def _prngkey_nb(seed):
    if not isinstance(seed, types.Integer) or isinstance(seed, types.Boolean):
        raise TypingError(f"random.PRNGKey: the seed must be an integer, got {seed}")

    def impl(seed):
        v = _as_u64(seed)
        out = np.empty(2, np.uint32)
        out[0], out[1] = np.uint32(v >> _SHIFT32), np.uint32(v & _MASK)
        return out
    return impl


@overload(key)
def _key_nb(seed):
    return lambda seed: PRNGKey(seed)


@overload(split)
def _split_nb(key, num=2):
    _check_key(key, "split")
    if isinstance(num, (types.Integer, types.Omitted, int)):
        def impl(key, num=2):
            k0, k1 = key_words(key)
            out = np.empty((num, 2), np.uint32)
            for i in range(num):
                y0, y1 = block(k0, k1, i)
                out[i, 0], out[i, 1] = np.uint32(y0), np.uint32(y1)
            return out
        return impl
    _scalar_shape(num, "split")

    def shaped(key, num=2):
        k0, k1 = key_words(key)
        out = np.empty(num + (2,), np.uint32)
        flat = out.reshape((out.size // 2, 2))
        for i in range(flat.shape[0]):
            y0, y1 = block(k0, k1, i)
            flat[i, 0], flat[i, 1] = np.uint32(y0), np.uint32(y1)
        return out
    return shaped


@overload(fold_in)
def _fold_in_nb(key, data):
    _check_key(key, "fold_in")
    if not isinstance(data, types.Integer):
        raise TypingError(f"random.fold_in: data must be an integer, got {data}")

    def impl(key, data):
        k0, k1 = key_words(key)
        y0, y1 = threefry2x32(k0, k1, 0, _fold_data(data))
        out = np.empty(2, np.uint32)
        out[0], out[1] = np.uint32(y0), np.uint32(y1)
        return out
    return impl


_UINTS = tuple(np.dtype(t) for t in (np.uint8, np.uint16, np.uint32, np.uint64))
_FLOAT_TYPES = (np.dtype(np.float32), np.dtype(np.float64))


@overload(bits)
def _bits_nb(key, shape=(), dtype=None):
    _check_key(key, "bits")
    given = _given(dtype, default=dtype)
    dt = DEFAULT_BITS_DTYPE if given is None else _dtype_of(dtype, "bits", _UINTS)
    run = _pick(_BITS[dt.itemsize * 8], dt, shape, "bits")
    return lambda key, shape=(), dtype=None: run(key, shape, 0, 0)


@overload(uniform)
def _uniform_nb(key, shape=(), dtype=np.float64, minval=0.0, maxval=1.0):
    _check_key(key, "uniform")
    dt = _dtype_of(dtype, "uniform", _FLOAT_TYPES)
    _scalar_param(minval, "uniform", "minval")
    _scalar_param(maxval, "uniform", "maxval")
    run, cast = _pick(_FLOATS[dt][0], dt, shape, "uniform"), dt.type

    def impl(key, shape=(), dtype=np.float64, minval=0.0, maxval=1.0):
        return run(key, shape, cast(minval), cast(maxval))
    return impl


@overload(normal)
def _normal_nb(key, shape=(), dtype=np.float64):
    _check_key(key, "normal")
    dt = _dtype_of(dtype, "normal", _FLOAT_TYPES)
    run = _pick(_FLOATS[dt][1], dt, shape, "normal")
    return lambda key, shape=(), dtype=np.float64: run(key, shape, 0, 0)


@overload(bernoulli)
def _bernoulli_nb(key, p=0.5, shape=None, mode="low"):
    _check_key(key, "bernoulli")
    if _given(mode, default="") != "low":
        raise TypingError("random.bernoulli under jit supports mode='low' only, passed "
                          "as a literal (mode='high' runs in plain Python)")
    if isinstance(p, types.Array):
        return _bernoulli_array(p, shape)
    _scalar_param(p, "bernoulli", "p or an array p (without shape)")
    kind = p.value if isinstance(p, types.Omitted) else p
    if not isinstance(kind, (types.Float, float)):
        raise TypingError(f"random.bernoulli: the probability must be a float, got {p}")
    dt = np.dtype(np.float64) if isinstance(kind, float) else np.dtype(str(kind))
    shape_given = () if _given(shape, default=shape) is None else shape
    run = _pick(_FLOATS[dt][2], np.dtype(np.bool_), shape_given, "bernoulli")
    cast = dt.type
    return lambda key, p=0.5, shape=None, mode="low": run(key, shape, cast(p), 0)


def _bernoulli_array(p, shape):
    if _given(shape, default=shape) is not None:
        raise TypingError("random.bernoulli under jit: with an array p, leave shape out "
                          "(the result has the shape of p)")
    element = _FLOATS[np.dtype(str(p.dtype))][2]

    def impl(key, p=0.5, shape=None, mode="low"):
        k0, k1 = key_words(key)
        out = np.empty(p.shape, np.bool_)
        flat, probs = out.reshape(out.size), p.ravel()
        for i in range(out.size):
            flat[i] = element(k0, k1, i, probs[i], 0)
        return out
    return impl


@overload(randint)
def _randint_nb(key, shape, minval, maxval, dtype=np.int64):
    _check_key(key, "randint")
    allowed = tuple(np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64))
    dt = _dtype_of(dtype, "randint", allowed)
    _scalar_param(minval, "randint", "minval")
    _scalar_param(maxval, "randint", "maxval")
    info, nb_dt = np.iinfo(dt), from_dtype(dt)
    small = dt.itemsize < 4
    nbits = 32 if small else dt.itemsize * 8
    dmin, dmax = (-2 ** 31, 2 ** 31 - 1) if small else (int(info.min), int(info.max))
    own_min, own_max = int(info.min), int(info.max)
    scalar = _scalar_shape(shape, "randint")

    def bounds(minval, maxval):
        lo, hi = np.int64(minval), np.int64(maxval)
        if small:
            lo = min(max(lo, own_min), own_max)
            hi = min(max(hi, own_min), own_max + 1)
        return _randint_setup(lo, hi, nbits, dmin, dmax)
    bounds = register_jitable(bounds)

    def one(key, shape, minval, maxval, dtype=np.int64):
        lo, span, mult, mask = bounds(minval, maxval)
        return nb_dt(_randint_element(_split_words(key), 0, lo, span, mult, mask, nbits))

    def impl(key, shape, minval, maxval, dtype=np.int64):
        lo, span, mult, mask = bounds(minval, maxval)
        words = _split_words(key)
        out = np.empty(shape, nb_dt)
        flat = out.reshape(out.size)
        for i in range(out.size):
            flat[i] = _randint_element(words, i, lo, span, mult, mask, nbits)
        return out
    return one if scalar else impl
