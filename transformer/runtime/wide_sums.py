"""Whole-array sums of float32 arrays, accumulated in float64.

Numba's `np.sum` adds the elements one after another in the array's dtype. In float32 the
rounding error of that grows with the count: 10^6 values of 0.1 sum to 100958.8, and the
mean of 10^5 copies of 1.7 is 1.7017, where NumPy (which adds pairwise) gives 100000.0
and 1.7000. `wide_sum` adds in float64 and rounds the total to float32 once: nearer the
exact sum than NumPy's pairwise float32 sum, which rounds at every level of its tree, and
so within NumPy's own rounding error of NumPy's result, not equal to it bit for bit. It
compiles as one plain loop, which NumPy's recursive scheme would not (that cost about
0.6 s more of a cold first call).

A float64 array keeps Numba's sum: its error, n times 1e-16 at worst, is far below what
a float32 sum loses.
"""
from __future__ import annotations

import numpy as np
from numba import types
from transformer.runtime.numba_api import register_jitable


def is_float32_array(a) -> bool:
    """Whether Numba type `a` is a float32 array, whose whole sum is added in float64."""
    return isinstance(a, types.Array) and a.dtype == types.float32


@register_jitable
def wide_sum(a):
    """`np.sum(a)` of a float32 array: added in float64, the total rounded to float32."""
    total = 0.0
    for v in np.nditer(a):
        total += np.float64(v.item())
    return np.float32(total)
