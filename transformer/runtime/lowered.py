"""Lowered NumPy forms: call forms Numba's nopython mode lacks (2-D boolean masks,
np.stack of a list, np.squeeze without an axis), redirected here by `transformer.lowering`;
Python's builtins `abs`, `pow`, `any`, `all` on arrays, overloaded for Numba directly; and
the forms where Numba's own result differs from NumPy's: `str`/`repr` (`as_text`,
`as_repr`: only for the values Numba formats as Python does), an int to a negative int
power (`power`) and `np.clip` of a number (`clip`).
"""
from __future__ import annotations

import numpy as np
from numba import types
from numba.core.errors import TypingError
from transformer.runtime.allocation import empty_array, zeros_array
from transformer.runtime.numba_api import overload

from .kernels import axis_mask
from .shapes import items_tuple, moveaxis, same_ranks, squeeze

# ---------------------------------------------------------------- lowered NumPy forms
# Call forms Numba's nopython mode lacks, redirected here by `transformer.lowering`
# (einsum itself becomes loops generated from its subscripts, see `transformer.einsum`).


def getitem_mask(x, index):
    """``x[index]``; under Numba also for a boolean mask of rank above 1."""
    return x[index]


@overload(getitem_mask, inline="always")
def _getitem_mask_nb(x, index):
    if not (isinstance(index, types.Array) and isinstance(index.dtype, types.Boolean)
            and index.ndim > 1):
        return lambda x, index: x[index]
    if index.ndim != x.ndim:
        raise TypingError("a boolean mask of rank above 1 must cover every axis of the array")

    def masked(x, index):
        if x.shape != index.shape:
            raise IndexError("boolean mask shape does not match the indexed array")
        return x.ravel()[index.ravel()]     # row-major order, as NumPy selects
    return masked


def setitem_mask(x, index, values) -> None:
    """``x[index] = values``; under Numba also for a boolean mask of rank above 1."""
    x[index] = values


@overload(setitem_mask, inline="always")
def _setitem_mask_nb(x, index, values):
    if not (isinstance(index, types.Array) and isinstance(index.dtype, types.Boolean)
            and index.ndim > 1):
        def plain(x, index, values):
            x[index] = values
        return plain
    if index.ndim != x.ndim:
        raise TypingError("a boolean mask of rank above 1 must cover every axis of the array")
    vector = isinstance(values, types.Array)

    def masked(x, index, values):
        if x.shape != index.shape:
            raise IndexError("boolean mask shape does not match the indexed array")
        flat = values.ravel() if vector else values
        # The count lives in an array: a local assigned twice (`n = 0`, `n += 1`) makes
        # Numba's SSA repair warn (NumbaIRAssumptionWarning) when this body is inlined twice.
        n = zeros_array(1, np.intp)
        for at in np.ndindex(x.shape):      # row-major, as NumPy assigns
            if index[at]:
                x[at] = flat[n[0]] if vector else flat
                n[0] += 1
    return masked

def stack(arrays, axis=0):
    """np.stack of a tuple or a list of equally shaped arrays."""
    return np.stack(arrays, axis)


@overload(stack)
def _stack_nb(arrays, axis=0):
    same_ranks(arrays, "np.stack")
    if isinstance(arrays, types.BaseTuple):
        return lambda arrays, axis=0: np.stack(arrays, axis)
    if isinstance(arrays, types.LiteralList):
        return lambda arrays, axis=0: stack(items_tuple(arrays), axis)

    def from_list(arrays, axis=0):
        first = arrays[0]
        out = empty_array((len(arrays),) + first.shape, first.dtype)
        for k in range(len(arrays)):
            if arrays[k].shape != first.shape:
                raise ValueError("all input arrays must have the same shape")
            out[k] = arrays[k]
        return np.ascontiguousarray(moveaxis(out, 0, axis))
    return from_list


def squeeze_known(a, axis):
    """``np.squeeze(a)`` where the caller knows ``axis`` holds the only length-1 axes."""
    return np.squeeze(a)


@overload(squeeze_known)
def _squeeze_known_nb(a, axis):
    def impl(a, axis):
        removed = axis_mask(a.ndim, axis)
        for k in range(a.ndim):
            if a.shape[k] == 1 and not removed[k]:
                raise ValueError("np.squeeze without an axis under jit: the array has a "
                                 "length-1 axis whose removal the compiled code cannot know; "
                                 "pass axis=")
        return squeeze(a, axis)
    return impl


# ---------------------------------------------------------------- builtins on arrays
# Python's builtins take NumPy arrays through the array's own methods (`__abs__`,
# `__pow__`, iteration); Numba types them for numbers (and `any`/`all` not at all). These
# give compiled code NumPy's results; every other argument keeps Numba's own forms.

@overload(abs)
def _abs_of_array(x):
    """`abs(x)` of an array: NumPy's `np.abs(x)` (what `ndarray.__abs__` calls), a 0-d
    array's a number."""
    if isinstance(x, types.Array):
        return lambda x: np.abs(x)
    return None


@overload(pow)
def _pow_of_array(x, y):
    """`pow(x, y)` with an array among the two: `x ** y`, as NumPy's `__pow__`."""
    if isinstance(x, types.Array) or isinstance(y, types.Array):
        return lambda x, y: x ** y
    return None


def _truth_of_each(x) -> bool:
    """Whether `any(x)`/`all(x)` iterate over truth values Numba can take: the numbers of a
    1-d array, a list or a homogeneous tuple (Python's own error for a 2-d array stays)."""
    if isinstance(x, types.Array):
        return x.ndim == 1
    return isinstance(x, (types.List, types.UniTuple)) and \
        isinstance(x.dtype, (types.Number, types.Boolean))


def _first_of(found: bool):
    """`any` (found=True) or `all` (found=False): stops at the first item whose truth is
    `found`, else gives the other."""
    def impl(x):
        for item in x:
            if bool(item) == found:
                return found
        return not found
    return impl


@overload(any)
def _any_of(x):
    """`any(x)`: whether an element is true."""
    return _first_of(True) if _truth_of_each(x) else None


@overload(all)
def _all_of(x):
    """`all(x)`: whether every element is true."""
    return _first_of(False) if _truth_of_each(x) else None


# ---------------------------------------------------------------- str and repr
# Numba formats ints, bools and strings as Python does, but has no float formatting: its
# `str(2.5)` is the text '<object type:float64>' (also for None, complex numbers, arrays),
# which `len`, a comparison or a message would then use as if it were the number's text.


def as_text(x, where=""):
    """`str(x)`; under Numba a refusal (reported at `where`, the user's `file:line:col`)
    for a value Numba does not format as Python does."""
    return str(x)


def as_repr(x, where=""):
    """`repr(x)`, as `as_text`."""
    return repr(x)


def _refused_text(x):
    return TypingError(
        f"str() or repr() of {x} cannot be compiled: Numba has no text form of it (it "
        f"gives '<object type:{x}>', not the digits Python writes); format the number "
        f"outside the jitted function, pass the text in, or use jit(..., "
        f"backend='python')")


_FORMATTED = (types.Integer, types.Boolean, types.UnicodeType, types.StringLiteral)


@overload(as_text)
def _as_text_nb(x, where=""):
    if isinstance(x, _FORMATTED):
        return lambda x, where="": str(x)
    raise _refused_text(x)


@overload(as_repr)
def _as_repr_nb(x, where=""):
    if isinstance(x, _FORMATTED):
        return lambda x, where="": repr(x)
    raise _refused_text(x)


# ---------------------------------------------------------------- integer powers
# Numba computes an int to a negative int power as an int: `2 ** -1` is 0 (and each
# element of an integer array's `a ** -1` too), where Python gives the float 0.5 and
# NumPy refuses integer arrays to negative integer powers.


def power(a, b, where=""):
    """`a ** b`; under Numba an int to a negative int power as Python and NumPy give it
    or refuse it (`where`, the user's `file:line:col`, names the line), never Numba's 0."""
    return a ** b


def _integral(t) -> bool:
    return isinstance(t, types.Integer) or \
        isinstance(t, types.Array) and isinstance(t.dtype, types.Integer)


def _signed(t) -> bool:
    return (t.dtype if isinstance(t, types.Array) else t).signed


def _numpy_refusal(a, b, where=""):
    if np.any(np.asarray(b) < 0):
        raise ValueError(where + ": Integers to negative integer powers are not allowed.")
    return a ** b


def _python_int_power(a, b, where=""):
    if b < 0:
        raise ValueError(where + ": an int to a negative int power is a float in Python, "
                         "and compiled code gives a value one type: write float(n) ** k "
                         "(or n ** -1.0) where the power may be negative")
    return a ** b


@overload(power, prefer_literal=True, inline="always")
def _power_nb(a, b, where=""):
    if not (_integral(a) and _integral(b) and _signed(b)):
        return lambda a, b, where="": a ** b
    if isinstance(a, types.Array) or isinstance(b, types.Array):
        return _numpy_refusal                      # NumPy's error, at the user's line
    literal = getattr(b, "literal_value", None)
    if literal is not None:                        # `n ** -1`: Python's float, typed so
        if literal < 0:
            return lambda a, b, where="": float(a) ** b
        return lambda a, b, where="": a ** b
    return _python_int_power


# ---------------------------------------------------------------- np.clip of a number


def clip(a, a_min, a_max):
    """`np.clip(a, a_min, a_max)`; under Numba also of a number (Numba's takes arrays)."""
    return np.clip(a, a_min, a_max)


@overload(clip)
def _clip_nb(a, a_min, a_max):
    if isinstance(a, types.Array) or not isinstance(a, (types.Number, types.Boolean)):
        return lambda a, a_min, a_max: np.clip(a, a_min, a_max)
    low, high = (not isinstance(b, (types.NoneType, types.Omitted)) for b in (a_min, a_max))
    # NumPy's order: the lower bound first, then the upper (which wins where they cross)
    if low and high:
        return lambda a, a_min, a_max: np.minimum(np.maximum(a, a_min), a_max)
    if low:
        return lambda a, a_min, a_max: np.maximum(a, a_min)
    if high:
        return lambda a, a_min, a_max: np.minimum(a, a_max)
    return lambda a, a_min, a_max: np.clip(np.asarray(a), a_min, a_max)[()]
