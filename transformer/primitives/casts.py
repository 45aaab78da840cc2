"""Dtype casts: `x.astype(t)` (which desugaring makes `runtime.astype(x, t)`),
`np.asarray(x, dtype)` and `np.array(x, dtype)`.

A cast to a float or complex dtype passes derivatives through: the cotangent goes back in
the type of the value cast (`g.astype(x.dtype)`), the tangent forward in the new one
(`dx.astype(t)`). A cast to an integer or bool dtype passes none, as JAX's zero (float0)
cotangent: the result is piecewise constant in `x`. The dtype is read when the code runs
(`x.astype(y.dtype)` works), so the rules (`transformer.rules.adjoints`/`tangents`) are
the runtime helpers `cast_cotangent` and `cast_tangent`, themselves linear casts with
rules of their own (second derivatives, `hessian`).
"""
from __future__ import annotations

import numpy as np

from transformer import runtime
from transformer.rules import batching as batching_rules

from . import registry

registry.named(runtime.astype, "numpy.ndarray.astype")
for _key in (runtime.astype, np.asarray, np.array):
    registry.record(_key).kind = "cast"
registry.unsupported(runtime.astype, "cuda", "write float(x) or a typed constant "
                     "(np.float32(x)) for a number in a CUDA kernel")
for _key in (np.asarray, np.array):
    registry.unsupported(_key, "cuda", "a CUDA kernel builds no arrays: convert them before "
                         "the call")

# the cast value's leading axis passes through; a batched dtype is left to the loop
batching_rules.preserving(runtime.astype, runtime.cast_tangent)


@batching_rules.batcher(runtime.cast_cotangent)
def _cast_cotangent(site):
    """`cast_cotangent(g, x, dtype)` reads only the dtype of `x`: the result is batched
    where `g` is."""
    if any(site.batched[2:]) or any(site.kw_batched.values()):
        return None
    return site.helper(site.key, *site.args), site.batched[0]


_add = registry.add_sample
_add(runtime.astype, "x.astype(np.float64) * np.sin(x)", x=(4,))
_add(runtime.astype, "x.astype('float64') * x", x=(2, 3))
# rounding to an integer is piecewise constant: only the second factor is differentiated
_add(runtime.astype, "x.astype(np.int64) * x", domain=(-3.0, 3.0), x=(5,))
_add(np.asarray, "np.asarray(x, dtype=np.int64) * x", domain=(-3.0, 3.0), x=(5,))
_add(np.asarray, "np.asarray(x, np.float64) * x", x=(4,))
