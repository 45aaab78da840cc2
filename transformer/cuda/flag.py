"""The device side of `transformer.error_flags` for CUDA kernels.

Imports numba.cuda, so only code that builds a CUDA kernel imports it.
"""
from __future__ import annotations

from numba import cuda


@cuda.jit(device=True)
def record_failure(flag, site, index, axis, size):
    """Claim `flag` for this failure unless another thread claimed it first: only the
    thread whose compare-and-swap on `flag[0]` succeeded writes the rest."""
    if cuda.atomic.compare_and_swap(flag, -1, site) == -1:
        flag[1] = index
        flag[2] = axis
        flag[3] = size


@cuda.jit(device=True)
def flagged_index(flag, site, index, axis, size):
    """`index` when `-size <= index < size`; else record the failure and return 0, an index
    that is in bounds (`size` > 0), so the read it feeds stays inside the array."""
    if index < -size or index >= size:
        record_failure(flag, site, index, axis, size)
        return 0
    return index
