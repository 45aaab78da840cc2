"""NumPy's pairwise summation, for the whole-array sums of compiled code.

`np.sum` of a float array adds its elements pairwise (numpy/_core/src/umath/
loops_utils.h.src): a run of at most 128 elements is summed in 8 interleaved accumulators,
combined as ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7)); a longer run is split in
two at a multiple of 8 near its middle and the halves' sums added. The rounding error
then grows with log(n), not n. Numba's own `np.sum` adds the elements one after another in
the array's dtype: for 10^6 float32 values of 0.1 it gives 100958.8 where NumPy gives
100000.0, and the mean of 10^5 copies of 1.7 in float32 is 1.7017.

`pairwise_sum(flat, start, n)` is that recursion, written as a loop over an explicit stack
(compiled code does not recurse here), with NumPy's association of every addition, so an
array contiguous in C or Fortran order sums to NumPy's value bit for bit (`whole_sum`:
NumPy reduces such an array in the order of its memory; another strided array is copied
in C order, where NumPy's buffered order may round differently).
"""
from __future__ import annotations

import numpy as np
from transformer.runtime.numba_api import register_jitable

BLOCK = 128             # NumPy's PW_BLOCKSIZE
_DEPTH = 64             # the stack: each level halves a run, so 64 levels cover any array


@register_jitable
def _leaf(flat, start, n):
    """NumPy's sum of a run of at most `BLOCK` elements."""
    if n < 8:
        res = flat.dtype.type(0)
        for i in range(start, start + n):
            res += flat[i]
        return res
    r0, r1, r2, r3 = flat[start], flat[start + 1], flat[start + 2], flat[start + 3]
    r4, r5, r6, r7 = flat[start + 4], flat[start + 5], flat[start + 6], flat[start + 7]
    stop = start + n - n % 8
    for i in range(start + 8, stop, 8):
        r0 += flat[i]
        r1 += flat[i + 1]
        r2 += flat[i + 2]
        r3 += flat[i + 3]
        r4 += flat[i + 4]
        r5 += flat[i + 5]
        r6 += flat[i + 6]
        r7 += flat[i + 7]
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    for i in range(stop, start + n):
        res += flat[i]
    return res


@register_jitable
def pairwise_sum(flat, start, n):
    """NumPy's pairwise sum of `flat[start:start + n]` (a 1-d array)."""
    if n <= BLOCK:
        return _leaf(flat, start, n)
    starts = np.empty(_DEPTH, np.int64)
    counts = np.empty(_DEPTH, np.int64)
    phases = np.zeros(_DEPTH, np.int64)      # 0: left half next, 1: right half, 2: add
    values = np.empty(_DEPTH + 1, flat.dtype)
    top, held = 0, 0
    starts[0], counts[0] = start, n
    while top >= 0:
        s, m = starts[top], counts[top]
        if m <= BLOCK:
            values[held] = _leaf(flat, s, m)
            held += 1
            top -= 1
            continue
        half = m // 2
        half -= half % 8
        if phases[top] == 0:
            phases[top] = 1
            top += 1
            starts[top], counts[top], phases[top] = s, half, 0
        elif phases[top] == 1:
            phases[top] = 2
            top += 1
            starts[top], counts[top], phases[top] = s + half, m - half, 0
        else:
            held -= 1
            values[held - 1] = values[held - 1] + values[held]
            top -= 1
    return values[0]


@register_jitable
def whole_sum(a):
    """`np.sum(a)` of a float or complex array as NumPy adds it: pairwise, in the order of
    its memory."""
    if a.flags.f_contiguous and not a.flags.c_contiguous:
        flat = a.T.ravel()                   # Fortran order: the transpose is C-contiguous
    else:
        flat = np.ascontiguousarray(a).ravel()
    return pairwise_sum(flat, 0, flat.size)
