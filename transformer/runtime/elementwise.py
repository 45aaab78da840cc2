"""Array forms of scalar `math` functions that NumPy lacks (`math.erf` under vmap).

`array_form(math.erf)` is a function applying `math.erf` to every element of an array
(a number gives a number), in plain Python and, through its overload, under Numba.
"""
from __future__ import annotations

import numpy as np
from numba import types
from transformer.runtime.allocation import empty_array
from transformer.runtime.numba_api import overload

_FORMS: dict = {}


def array_form(scalar_fn):
    """`scalar_fn` mapped over the elements of an array; float64 results."""
    if scalar_fn in _FORMS:
        return _FORMS[scalar_fn]

    def python(x):
        if np.ndim(x) == 0:
            return scalar_fn(x)
        flat = np.asarray(x).ravel()
        out = np.empty(flat.shape, np.float64)
        for i in range(flat.size):
            out[i] = scalar_fn(flat[i])
        return out.reshape(np.shape(x))

    python.__name__ = python.__qualname__ = f"{scalar_fn.__name__}_elements"
    python.__doc__ = f"`math.{scalar_fn.__name__}` of every element."

    @overload(python)
    def _nb(x):
        if not isinstance(x, types.Array):
            return lambda x: scalar_fn(x)

        def impl(x):
            flat = np.ascontiguousarray(x).ravel()
            out = empty_array(flat.shape, np.float64)
            for i in range(flat.size):
                out[i] = scalar_fn(flat[i])
            return out.reshape(x.shape)
        return impl
    _FORMS[scalar_fn] = python
    return python
