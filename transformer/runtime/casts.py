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
