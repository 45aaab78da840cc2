"""The element forms of `random.orthogonal` and `random.multivariate_normal` in CUDA
threads: small factorizations written as loops over a `cuda.local.array` of static size.
Imports numba.cuda, so only code that builds a CUDA kernel imports it
(`random_heavy_forms`).

Element `i` of `orthogonal(key, n, shape, dtype, m)` redraws its matrix of normals (shape
`(max(n, m), min(n, m))`, the CPU's draws) into a `cuda.local.array` and orthonormalizes
its columns up to its own by modified Gram-Schmidt. Gram-Schmidt's R has a positive
diagonal, so its Q is the CPU's sign-corrected QR factor to rounding; `n < m` reads Q
transposed.

Element `i` (row `r`, column `c`) of `multivariate_normal(key, mean, cov, shape)` (mean of
shape (n,), method 'cholesky') factors the rows of `cov` up to `c` (Cholesky-Banachiewicz,
from its lower triangle, as LAPACK reads it) and returns `mean[c] + L[c] @ z[r]` with the
CPU's normals `z`: the CPU's number to rounding. A `cov` that is not positive definite
gives NaN (a kernel cannot raise).
"""
from __future__ import annotations

import math

import numpy as np
from numba import cuda, from_dtype

from transformer.runtime.random import _normal32, _normal64

_BUILT: dict = {}


def orthogonal_element(n: int, m: int, dt: np.dtype):
    """`element(k0, k1, i, a, b)` for sizes `n`, `m` and dtype `dt` as scalar code, for
    `random_forms.device_function` to build (one function per size and dtype)."""
    if (n, m, dt) not in _BUILT:
        rows, cols, wide, per = max(n, m), min(n, m), n < m, n * m
        normal = _normal64 if dt == np.float64 else _normal32
        zero, nb_dt = dt.type(0.0), from_dtype(dt)

        def element(k0, k1, i, a, b):
            batch, rest = i // per, i % per
            r, c = rest // m, rest % m
            if wide:                               # the result is Q transposed
                r, c = c, r
            q = cuda.local.array((rows, cols), nb_dt)
            for x in range(rows):
                for y in range(cols):
                    q[x, y] = normal(k0, k1, (batch * rows + x) * cols + y, 0, 0)
            for j in range(c + 1):
                for p in range(j):
                    dot = zero
                    for x in range(rows):
                        dot += q[x, p] * q[x, j]
                    for x in range(rows):
                        q[x, j] -= dot * q[x, p]
                norm = zero
                for x in range(rows):
                    norm += q[x, j] * q[x, j]
                norm = math.sqrt(norm)
                for x in range(rows):
                    q[x, j] = q[x, j] / norm
            return q[r, c]
        _BUILT[n, m, dt] = element
    return _BUILT[n, m, dt]


def multivariate_normal_element(n: int, dt: np.dtype):
    """`element(k0, k1, i, mean, cov)` for `n` categories and dtype `dt` as scalar code
    (one function per size and dtype)."""
    if ("mvn", n, dt) not in _BUILT:
        normal = _normal64 if dt == np.float64 else _normal32
        zero, nb_dt = dt.type(0.0), from_dtype(dt)

        def element(k0, k1, i, mean, cov):
            row, c = i // n, i % n
            low = cuda.local.array((n, n), nb_dt)
            for x in range(c + 1):
                for y in range(x + 1):
                    s = zero
                    for p in range(y):
                        s += low[x, p] * low[y, p]
                    if x == y:
                        low[x, x] = math.sqrt(cov[x, x] - s)
                    else:
                        low[x, y] = (cov[x, y] - s) / low[y, y]
            acc = zero
            for j in range(c + 1):
                acc += low[c, j] * normal(k0, k1, row * n + j, 0, 0)
            return mean[c] + acc
        _BUILT["mvn", n, dt] = element
    return _BUILT["mvn", n, dt]
