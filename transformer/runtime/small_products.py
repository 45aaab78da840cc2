"""Matrix-vector and vector-matrix products of small float arrays, as loops.

Numba's `np.dot` calls BLAS through SciPy; for a small operand the call's own cost
dominates: a (32, 32) matrix times a vector took 0.30 us through BLAS and 0.20 us as the
loop below, (32, 8) 0.25 and 0.16 us, (64, 64) 0.62 and 0.38 us; from (128, 128) on BLAS
wins. Recurrent models (W7's RNN step) make thousands of such products per call. Up to
`SMALL` matrix elements the products here run a loop LLVM vectorizes; larger ones, and any
whose shapes do not match (np.dot's error then), still go to `np.dot`.

The matrix-vector loop sums each row with reassociation allowed (the only way LLVM
vectorizes a float sum): the result may differ from BLAS's in the last place, as BLAS
itself does between machines. Each sum accumulates in the operands' type (float32 stays
float32, as in NumPy).

Contract: `matvec_for(a, b)` / `vecmat_for(g, a)` are called at typing time with Numba
types; they return a jitable computing `np.dot(a, b)` / `np.dot(g, a)`, or None when the
operands are not a C-contiguous float matrix and vector of one dtype.
"""
from __future__ import annotations

import numpy as np
from numba import types
from transformer.runtime.numba_api import register_jitable

SMALL = 8192        # matrix elements up to which the loops beat the BLAS call


@register_jitable(fastmath={"reassoc"})
def _matvec(a, b):
    n, m = a.shape
    if a.size > SMALL or b.shape[0] != m:
        return np.dot(a, b)
    out = np.zeros(n, a.dtype)
    for i in range(n):
        s = out[i]                      # a zero of the operands' type
        for j in range(m):
            s += a[i, j] * b[j]
        out[i] = s
    return out


@register_jitable
def _vecmat(g, a):
    n, m = a.shape
    if a.size > SMALL or g.shape[0] != n:
        return np.dot(g, a)
    out = np.zeros(m, a.dtype)
    for i in range(n):
        gi = g[i]
        for j in range(m):
            out[j] += gi * a[i, j]
    return out


def _float_pair(matrix, vector) -> bool:
    return (isinstance(matrix, types.Array) and isinstance(vector, types.Array)
            and matrix.ndim == 2 and vector.ndim == 1
            and matrix.layout == "C" and vector.layout == "C"
            and isinstance(matrix.dtype, types.Float) and matrix.dtype == vector.dtype)


def matvec_for(a, b):
    """The jitable `np.dot(a, b)` of matrix `a` and vector `b` (Numba types), or None."""
    return _matvec if _float_pair(a, b) else None


def vecmat_for(g, a):
    """The jitable `np.dot(g, a)` of vector `g` and matrix `a` (Numba types), or None."""
    return _vecmat if _float_pair(a, g) else None
