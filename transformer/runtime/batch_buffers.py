"""The batches vmap's loop strategy fills example by example.

`batch_empty(size, first, widening)` is an uninitialized batch of `size` values shaped like
the first example's result; the loop stores every example's result into it and
`batch_result(batch)` is the array. Compiled, the example function has one return type
(Numba unifies its `return`s), so the batch is a plain array throughout. In plain Python
the first example may return an int where a later one returns a float (`y = 0` and `y = x
* 0.5` on another path): with `widening`, the batch takes the type every result fits as
it is filled, as `np.array` of the results would, instead of truncating the later ones.
"""
from __future__ import annotations

import numba
import numpy as np
from numba import types
from transformer.runtime.allocation import empty_array
from transformer.runtime.numba_api import overload


class Widening:
    """A batch filled in plain Python whose dtype grows to hold every stored result."""

    def __init__(self, size, first):
        first = np.asarray(first)
        self.array = np.empty((size,) + first.shape, first.dtype)

    def __setitem__(self, k, value):
        kind = np.asarray(value).dtype
        if not np.can_cast(kind, self.array.dtype, "safe"):
            self.array = self.array.astype(np.result_type(self.array.dtype, kind))
        self.array[k] = value


def batch_empty(size, example, widening=False):
    """An uninitialized batch of `size` values shaped like `example` (see the module doc
    for `widening`)."""
    if widening:
        return Widening(size, example)
    example = np.asarray(example)
    return np.empty((size,) + example.shape, example.dtype)


@overload(batch_empty)
def _batch_empty_nb(size, example, widening=False):
    if isinstance(example, types.Array):
        return lambda size, example, widening=False: empty_array((size,) + example.shape,
                                                              example.dtype)
    dtype = numba.np.numpy_support.as_dtype(example)
    return lambda size, example, widening=False: empty_array(size, dtype)


def batch_result(batch):
    """The array of a batch `batch_empty` made."""
    return batch.array if isinstance(batch, Widening) else batch


@overload(batch_result)
def _batch_result_nb(batch):
    return lambda batch: batch
