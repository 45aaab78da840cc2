"""Runtime helpers the reverse sweep seeds its adjoints with (plain Python and Numba).

`unit_cotangent(out)` is the seed of a scalar output, `float_zeros(x, label)` the first
adjoint of a differentiated argument; both refuse what grad cannot take (an array output,
an integer / boolean / complex argument) with the message users see, in Python and in
compiled code alike. Both are nondifferentiable: their values do not depend on their
arguments' values.
"""
from __future__ import annotations

import numpy as np

from .. import runtime, tape
from ..input_dtypes import input_kind, refusal
from ..templates import nondifferentiable


def unit_cotangent(out):
    """1 in the float type of a scalar output; an error naming the shape otherwise."""
    if np.ndim(out) != 0:
        raise TypeError(f"grad requires a scalar output, but the function returned an array "
                        f"of shape {np.shape(out)}; use vjp or jacrev for non-scalar outputs")
    return runtime.cast_like(1.0, out)


def float_zeros(x, label):
    """Zeros shaped like argument `x`; an error naming it when it is an integer, a
    boolean or complex (see `input_dtypes`). A vjp's parameter has `label` None: a callee
    handed an int on some path of its caller (`b = 0` in one branch) has no derivative
    there, so an integer or boolean value gets float zeros; complex is still refused."""
    kind = input_kind(x)
    if kind is not None:
        if label is None and kind != "complex":
            return np.zeros(np.shape(x)) if np.ndim(x) else 0.0
        raise refusal("grad", label or "an argument", x, allow_int_hint=False)
    return runtime.zeros_like(x)


def _install_overloads():
    from numba import types
    from numba.core.errors import TypingError
    from numba.np.numpy_support import as_dtype

    from transformer.runtime.allocation import zeros_array
    from transformer.runtime.numba_api import overload

    @overload(unit_cotangent)
    def _unit_nb(out):
        if isinstance(out, types.Array) and out.ndim > 0:
            raise TypingError(f"grad requires a scalar output, but the function returned a "
                              f"{out.ndim}-d array; use vjp or jacrev for non-scalar outputs")
        return lambda out: runtime.cast_like(1.0, out)

    @overload(float_zeros)
    def _zeros_nb(x, label):
        dtype = x.dtype if isinstance(x, types.Array) else x
        exact = isinstance(dtype, (types.Integer, types.Boolean))
        if exact and isinstance(label, (types.NoneType, types.Omitted)):
            if isinstance(x, types.Array):
                return lambda x, label: zeros_array(x.shape, np.float64)
            return lambda x, label: 0.0
        if exact or isinstance(dtype, types.Complex):
            which = getattr(label, "literal_value", "an argument")
            kind = "complex" if isinstance(dtype, types.Complex) else "an integer"
            raise TypingError(f"grad requires real-valued inputs (input dtype that is a "
                              f"sub-dtype of np.floating), but argument {which!r} is {kind} "
                              f"({dtype})")
        if isinstance(x, types.Array):      # the zeros themselves: one compile fewer
            target = as_dtype(dtype if isinstance(dtype, types.Float) else types.float64).type
            return lambda x, label: zeros_array(x.shape, target)
        return lambda x, label: runtime.zeros_like(x)


_install_overloads()
# helpers whose results do not depend on their arguments' values (shapes, types, zeros)
nondifferentiable(unit_cotangent, float_zeros, tape.float_tape, tape.exact_tape,
                  tape.items_buffer, tape.trip_count, tape.range_last)
