"""Identity batches: jacfwd pushes the identity basis of an argument through vmap as one
unbatched array `d` (example k is the k-th unit vector shaped like the basis times `d`); these
helpers turn it into an ordinary batch, in plain NumPy and under Numba.
"""
from __future__ import annotations

import numba
import numpy as np
from numba import types

from transformer.runtime.allocation import full_array, zeros_array
from transformer.runtime.numba_api import overload


# ---------------------------------------------------------------- identity batches
# jacfwd pushes the identity basis of an argument through vmap. An *identity-batched*
# value is held as one unbatched array `d`: example k is the k-th unit vector shaped like
# the basis times `d` (broadcasting), so a chain of linear elementwise steps costs one
# example's work instead of a batch's. These helpers turn it into an ordinary batch.


def identity_batch(d, basis):
    """The batch `e_k * d` for every unit vector `e_k` shaped like `basis`, on axis 0."""
    d = np.asarray(d)
    n = int(np.size(basis))
    pad = (1,) * (d.ndim - np.ndim(basis))
    return np.eye(n, dtype=d.dtype).reshape((n,) + pad + np.shape(basis)) * d


def identity_batch_last(d, basis):
    """`identity_batch(d, basis)` with the batch axis last (jacfwd's column layout)."""
    return np.ascontiguousarray(np.moveaxis(identity_batch(d, basis), 0, -1))


_UNBROADCASTABLE = "identity batch: the basis and the value do not broadcast together"
_LARGER = "identity batch: the basis broadcasts the value to a larger shape"


def _identity_nb(d, basis, last: bool):
    if not isinstance(basis, types.Array):          # one basis vector: the scalar 1
        if isinstance(d, types.Array):
            if last:
                return lambda d, basis: np.ascontiguousarray(d).copy().reshape(d.shape + (1,))
            return lambda d, basis: np.ascontiguousarray(d).copy().reshape((1,) + d.shape)
        value_type = numba.np.numpy_support.as_dtype(types.unliteral(d)).type
        return lambda d, basis: full_array(1, d, value_type)
    # dtype classes and shape tuples, as zeros_like passes: one np.zeros compile for all
    dtype = numba.np.numpy_support.as_dtype(d.dtype if isinstance(d, types.Array) else d).type
    if not isinstance(d, types.Array):
        def scalar(d, basis):
            n = basis.size
            out = zeros_array((n * n,), dtype)
            for k in range(n):
                out[k * n + k] = d
            return out.reshape(basis.shape + (n,) if last else (n,) + basis.shape)
        return scalar

    if d.ndim == 1 and basis.ndim == 1:             # vectors: no index arithmetic to compile
        def vectors(d, basis):
            n, m = basis.size, d.size
            out = zeros_array(m * n, dtype)
            if m == n:
                for k in range(n):
                    out[k * n + k] = d[k]
            elif n == 1:                            # one basis vector: d itself
                for r in range(m):
                    out[r] = d[r]
            elif m == 1:
                raise ValueError(_LARGER)
            else:
                raise ValueError(_UNBROADCASTABLE)
            return out.reshape((m, n)) if last else out.reshape((n, m))
        return vectors
    rank = max(d.ndim, basis.ndim, 1)
    d_ones, b_ones = (1,) * (rank - d.ndim), (1,) * (rank - basis.ndim)   # padding

    def impl(d, basis):
        # one flat array filled by direct loops: a broadcast product per column would cost
        # the compile of Numba's broadcasting kernels in every caller
        n, m = basis.size, d.size
        values = np.ascontiguousarray(d).ravel()
        out = zeros_array((m * n,), dtype)
        if m == n:                                  # d is shaped like the basis: diagonal
            for k in range(n):
                out[k * n + k] = values[k]
        else:                                       # e_k * d keeps d's shape: one column
            dims, bdims = d_ones + d.shape, b_ones + basis.shape
            size = 1
            for a in range(rank):
                if bdims[a] != 1 and dims[a] != 1 and bdims[a] != dims[a]:
                    raise ValueError(_UNBROADCASTABLE)
                size *= dims[a] if bdims[a] == 1 else bdims[a]
            if size != m:
                raise ValueError(_LARGER)
            for r in range(m):                      # d[r] lands on basis element j
                j, rest, stride = 0, r, 1
                for a in range(rank - 1, -1, -1):
                    j += (rest % dims[a]) % bdims[a] * stride
                    rest //= dims[a]
                    stride *= bdims[a]
                out[r * n + j if last else j * m + r] = values[r]
        return out.reshape(d.shape + (n,)) if last else out.reshape((n,) + d.shape)
    return impl


@overload(identity_batch)
def _identity_batch_nb(d, basis):
    return _identity_nb(d, basis, False)


@overload(identity_batch_last)
def _identity_batch_last_nb(d, basis):
    return _identity_nb(d, basis, True)
