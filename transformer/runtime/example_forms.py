"""Direct compiled forms of per-example loops (`examples.over_examples`) that have one.

`over_examples(helper, flags)` is a loop calling `helper` on each example and stacking the
results: under Numba it compiles `helper` for one example, the batch allocation, the
per-example store and the loop, about 0.2 s of a cold first call each. Where the result
of every example is known without the loop, `examples.DIRECT_FORMS[(helper, flags)]`
gives it: a chooser called with the argument types, returning an implementation (same
parameters `a0, a1, ...` as the loop) or None, in which case the loop is compiled.

Invariant: a direct form returns what the loop returns, to the bit: the same dtype and
shape, and each example's values computed by the same operations in the same order.
"""
from __future__ import annotations

from numba import types
from numba.np.numpy_support import as_dtype

from .allocation import empty_array, full_array
from .broadcasting import broadcast_reduced, unbroadcast
from .casts import _is_none, _nb_float
from .examples import DIRECT_FORMS as FORMS
from .examples import spread_examples
from .kernels import _numba_sum


def _gradient_type(x):
    """The scalar type `unbroadcast(g, x[k])` returns for examples `x[k]` that are numbers."""
    return as_dtype(_nb_float(x.dtype)).type


def _unbroadcast_shared(a0, a1):
    """`unbroadcast(g, x[k])` with `g` shared and each `x[k]` a number: one value, the sum
    of `g` in `x`'s float type, for every example."""
    if not (isinstance(a1, types.Array) and a1.ndim == 1):
        return None
    target = _gradient_type(a1)
    if isinstance(a0, types.Array):
        total = _numba_sum()

        def shared_sum(a0, a1):
            return full_array(a1.shape[0], target(total(a0, None, None)), target)
        return shared_sum
    if not isinstance(a0, (types.Number, types.Boolean)):
        return None

    def shared_value(a0, a1):
        return full_array(a1.shape[0], target(a0), target)
    return shared_value


def _unbroadcast_sums(g, x):
    """`unbroadcast(g[k], x[k])` for batched arrays `g` (examples of any rank) and `x`
    whose examples are numbers: each example's sum, in `x`'s float type."""
    if not (isinstance(x, types.Array) and x.ndim == 1 and isinstance(g, types.Array)
            and g.ndim >= 2):
        return None
    target = _gradient_type(x)
    total = _numba_sum()

    def example_sums(a0, a1):
        out = empty_array(a0.shape[0], target)
        for k in range(a0.shape[0]):
            out[k] = target(total(a0[k], None, None))
        return out
    return example_sums


def _spread(a0, a1, a2=None, a3=None):
    """`broadcast_reduced(g[k], x[k], None, keepdims)` for batched numbers `g` and batched
    arrays `x`: each example's number spread over the shape of its `x[k]`."""
    if not (isinstance(a0, types.Array) and a0.ndim == 1 and isinstance(a1, types.Array)
            and a1.ndim >= 2 and (a2 is None or _is_none(a2))):
        return None
    if a2 is None:
        return lambda a0, a1: spread_examples(a0, a1)
    return lambda a0, a1, a2, a3: spread_examples(a0, a1)


FORMS[(unbroadcast, (False, True))] = _unbroadcast_shared
FORMS[(unbroadcast, (True, True))] = _unbroadcast_sums
FORMS[(broadcast_reduced, (True, True))] = _spread
FORMS[(broadcast_reduced, (True, True, False, False))] = _spread
