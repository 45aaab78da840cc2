"""Scalars, zeros and casts: gradients in the float type of their value, a value owned
before it is written in place, and the small type predicates the other helpers share.
"""
from __future__ import annotations

import numpy as np
from numba import types
from numba.core.errors import TypingError
from transformer.runtime.allocation import zeros_array
from transformer.runtime.numba_api import overload
from numba.np.numpy_support import as_dtype

from .batch_buffers import Widening


def _float_dtype(x) -> np.dtype:
    dtype = np.asarray(x).dtype
    return dtype if np.issubdtype(dtype, np.floating) else np.dtype(np.float64)


def _is_scalar(x) -> bool:
    return not isinstance(x, np.ndarray) or x.ndim == 0


def _nb_float(ty):
    """The Numba float type a gradient of a value of type ``ty`` has."""
    dtype = ty.dtype if isinstance(ty, types.Array) else ty
    return dtype if isinstance(dtype, types.Float) else types.float64


def _is_none(ty) -> bool:
    return ty is None or isinstance(ty, (types.NoneType, types.Omitted)) and (
        not isinstance(ty, types.Omitted) or ty.value is None)


def _static(ty, what):
    """The value of a literal (or omitted) argument that fixes a result's rank."""
    if isinstance(ty, types.Omitted):
        return ty.value
    if isinstance(ty, types.Literal):
        return ty.literal_value
    if isinstance(ty, (bool, int)):
        return ty
    raise TypingError(f"{what} must be a constant here")


# ---------------------------------------------------------------- scalars, zeros, casts


def cast_like(value, x):
    """``value`` in the float type of ``x`` (arrays are converted elementwise)."""
    if isinstance(x, (float, int)) and not isinstance(value, np.ndarray):
        return float(value)
    dtype = _float_dtype(x)
    if isinstance(value, np.ndarray):
        return value.astype(dtype)
    return dtype.type(value)


@overload(cast_like)
def _cast_like_nb(value, x):
    target = as_dtype(_nb_float(x)).type
    if isinstance(value, types.Array):
        return lambda value, x: value.astype(target)
    return lambda value, x: target(value)


def keep_float_type(value, x):
    """`value` in the float type of `x`: itself where it already has it (no copy), else
    converted (a gradient batched by vmap narrowed back to its argument's type)."""
    dtype = _float_dtype(x)
    if isinstance(value, np.ndarray):
        return value if value.dtype == dtype else value.astype(dtype)
    return cast_like(value, x)


@overload(keep_float_type, inline="always")
def _keep_float_type_nb(value, x):
    target = as_dtype(_nb_float(x)).type
    if isinstance(value, types.Array) and as_dtype(value.dtype).type is target:
        return lambda value, x: value
    return lambda value, x: cast_like(value, x)


def zeros_like(x):
    """Float zeros shaped like ``x``: a scalar for a scalar, else an array; a tuple of
    them for a tuple (the zero tangent of a function returning a tuple)."""
    if isinstance(x, tuple):
        return tuple(zeros_like(e) for e in x)
    if isinstance(x, Widening):         # a batch vmap's loop is filling, in plain Python
        x = x.array
    if _is_scalar(x):
        return cast_like(0.0, x)
    return np.zeros(np.shape(x), _float_dtype(x))


@overload(zeros_like)
def _zeros_like_nb(x):
    if isinstance(x, types.BaseTuple):
        parts = "".join(f"zeros_like(x[{i}]), " for i in range(len(x)))
        return eval(f"lambda x: ({parts})", {"zeros_like": zeros_like})
    target = as_dtype(_nb_float(x)).type
    if isinstance(x, types.Array):
        return lambda x: zeros_array(x.shape, target)
    return lambda x: target(0.0)


def update_in_place(target, value):
    """``target op= v`` as NumPy runs it, with ``value`` = ``target op v``: an array is
    overwritten in place (every name holding it sees the change) and returned; anything
    else (a number) is rebound to ``value``."""
    if not isinstance(target, np.ndarray):
        return value
    if not np.can_cast(np.result_type(value), target.dtype, casting="same_kind"):
        raise TypeError(f"cannot update an array of {target.dtype} in place with values of "
                        f"{np.result_type(value)}")
    target[...] = value
    return target


@overload(update_in_place)
def _update_in_place_nb(target, value):
    if not isinstance(target, types.Array):
        return lambda target, value: value

    def impl(target, value):
        target[...] = value
        return target
    return impl


def update_tangent(target, tangent, value):
    """The tangent of ``update_in_place(target, v)``: written in place into ``tangent``
    exactly where the primal ``target`` (an array) is written in place, else ``value``."""
    if not isinstance(target, np.ndarray):
        return value
    tangent[...] = value
    return tangent


@overload(update_tangent)
def _update_tangent_nb(target, tangent, value):
    if not isinstance(target, types.Array):
        return lambda target, tangent, value: value

    def impl(target, tangent, value):
        tangent[...] = value
        return tangent
    return impl


def own_copy(x):
    """A copy of an array (so in-place writes reach no other name); a number as it is."""
    return x.copy() if isinstance(x, np.ndarray) else x


@overload(own_copy)
def _own_copy_nb(x):
    if isinstance(x, types.Array):
        return lambda x: x.copy()
    return lambda x: x


def array_copy(x):
    """`np.array(x)`: under Numba a copy of an array of any rank (Numba's `np.array` takes
    an array only as a sequence of numbers, so not one of rank 2 or more)."""
    return np.array(x)


@overload(array_copy)
def _array_copy_nb(x):
    if isinstance(x, types.Array):
        return lambda x: x.copy()
    return lambda x: np.array(x)


# ---------------------------------------------------------------- dtype casts and their derivatives
# `x.astype(t)` carries a derivative to a float or complex `t` (the cotangent goes back in
# the type of `x`, the tangent forward in `t`) and none to an integer or bool `t`; `None` (a
# `np.asarray(x)` without a dtype) casts nothing.


def _carries(dtype) -> bool:
    """Whether a cast to `dtype` (None: no cast) carries a derivative."""
    return dtype is None or np.issubdtype(np.dtype(dtype), np.inexact)


def _inexact(x) -> np.dtype:
    """The dtype of `x`'s derivatives: its own when float or complex, else float64."""
    dtype = np.result_type(x)
    return dtype if np.issubdtype(dtype, np.inexact) else np.dtype(np.float64)


def _in_dtype(value, dtype, like):
    """`value` in `dtype` (a NumPy scalar type or dtype): an array stays an array, a
    number becomes a number (a Python one where `like` is one), dropping the imaginary
    part for a real `dtype`."""
    dtype = np.dtype(dtype)
    if np.iscomplexobj(value) and not np.issubdtype(dtype, np.complexfloating):
        value = np.real(value)
    if isinstance(like, np.ndarray) and isinstance(value, np.ndarray):
        return value.astype(dtype)
    if isinstance(like, (np.ndarray, np.generic)):
        return dtype.type(value)
    return complex(value) if np.issubdtype(dtype, np.complexfloating) else float(value)


@overload(_in_dtype)
def _in_dtype_nb(value, dtype, like):
    kind = as_dtype(dtype.instance_type).type
    real = not np.issubdtype(kind, np.complexfloating)
    if isinstance(value, types.Array) and isinstance(like, types.Array):
        if real:
            return lambda value, dtype, like: np.real(value).astype(kind)
        return lambda value, dtype, like: value.astype(kind)
    if isinstance(value, types.Array):       # a 0-d array for a number
        if real:
            return lambda value, dtype, like: kind(value[()].real)
        return lambda value, dtype, like: kind(value[()])
    if real:
        return lambda value, dtype, like: kind(value.real)
    return lambda value, dtype, like: kind(value)


def astype(x, dtype):
    """`x.astype(dtype)`: a copy of `x` in `dtype` (a NumPy scalar for a number)."""
    if hasattr(x, "astype"):
        return x.astype(dtype)
    return np.dtype(dtype).type(x)


def cast_cotangent(g, x, dtype):
    """The cotangent of `x` from `g`, that of `x` cast to `dtype`: `g` in the float or
    complex type of `x` (its real part for a real `x`), zeros for an integer `dtype`."""
    target = _inexact(x)
    if not _carries(dtype):
        return np.zeros(np.shape(g), target) if isinstance(g, np.ndarray) else \
            _in_dtype(0.0, target, x)
    return _in_dtype(g, target, x)


def cast_tangent(dx, dtype):
    """The tangent of `x` cast to `dtype`, from the tangent `dx` of `x`: `dx` in `dtype`
    (no cast for None), float zeros shaped like `dx` for an integer `dtype`."""
    if dtype is None:
        return dx
    if not _carries(dtype):
        return zeros_like(dx)
    return _in_dtype(dx, np.dtype(dtype), dx if isinstance(dx, np.ndarray) else np.float64(0))


def _nb_dtype(ty):
    """The NumPy dtype a dtype argument of Numba type `ty` names (None for None), or
    False for a string Numba has not typed as a literal (it retries with the literal)."""
    if _is_none(ty):
        return None
    if isinstance(ty, types.NumberClass):
        return as_dtype(ty.instance_type)
    if isinstance(ty, types.DType):
        return as_dtype(ty.dtype)
    if isinstance(ty, types.StringLiteral):
        return np.dtype(ty.literal_value)
    if isinstance(ty, types.UnicodeType):
        return False
    if getattr(ty, "typing_key", None) in (float, int, bool, complex):   # the builtins
        return np.dtype(ty.typing_key)
    raise TypingError(f"a dtype must be a NumPy scalar type, a dtype or a string, got {ty}")


def _nb_inexact(ty):
    """The NumPy scalar type of the derivatives of a value of Numba type `ty`."""
    dtype = as_dtype(ty.dtype if isinstance(ty, types.Array) else ty)
    return dtype.type if np.issubdtype(dtype, np.inexact) else np.float64


@overload(astype)
def _astype_nb(x, dtype):
    target = _nb_dtype(dtype)
    if target is False:
        return None
    kind = target.type if target is not None else as_dtype(
        x.dtype if isinstance(x, types.Array) else x).type
    if isinstance(x, types.Array):
        return lambda x, dtype: x.astype(kind)
    return lambda x, dtype: kind(x)


@overload(cast_cotangent)
def _cast_cotangent_nb(g, x, dtype):
    target = _nb_dtype(dtype)
    if target is False:
        return None
    kind = _nb_inexact(x)
    if target is not None and not np.issubdtype(target, np.inexact):
        if isinstance(g, types.Array):
            return lambda g, x, dtype: np.zeros(g.shape, kind)
        return lambda g, x, dtype: kind(0.0)
    return lambda g, x, dtype: _in_dtype(g, kind, x)


@overload(cast_tangent)
def _cast_tangent_nb(dx, dtype):
    target = _nb_dtype(dtype)
    if target is False:
        return None
    if target is None:
        return lambda dx, dtype: dx
    if not np.issubdtype(target, np.inexact):
        return lambda dx, dtype: zeros_like(dx)
    kind = target.type
    return lambda dx, dtype: _in_dtype(dx, kind, dx)


# ---------------------------------------------------------------- real-only derivatives

_COMPLEX = ("this derivative rule is that of real values, and the value is complex "
            "(np.abs of a complex value is not sign(x)): write the complex arithmetic in "
            "real and imaginary parts (np.abs(x * (a + bj)) is np.hypot(a * x, b * x))")


def real_only(x):
    """`x`, refused when complex: a rule written for real values reads it (np.abs's
    derivative is np.sign(real_only(x)), the 2-norm's reads real_only(x))."""
    if np.iscomplexobj(x):
        raise TypeError(_COMPLEX)
    return x


@overload(real_only)
def _real_only_nb(x):
    if isinstance(getattr(x, "dtype", x), types.Complex):
        raise TypingError(_COMPLEX)
    return lambda x: x
