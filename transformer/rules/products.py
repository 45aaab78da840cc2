"""Derivative templates of np.prod and np.cumprod (and of their runtime forms, which the
rules themselves call, so that second derivatives have rules too).

A product's derivative in one element is the product of the others. Dividing the product
by the element is 0 / 0 where the element is 0 (NaN, where JAX gives the product of the
others), so both rules count the zeros instead: with `safe` the elements with each 0 read
as 1 and `kept` their product, the derivative in `x_j` is `kept / safe_j` where no zero but
`x_j` takes part, and 0 elsewhere. The adjoint and the tangent share that computation's
text (`_PROD_OTHERS`, `_CUMPROD_COUNTS`); see ``transformer.templates`` for the language.
"""
from __future__ import annotations

import numpy as np

from transformer.primitives.families import RULE_GLOBALS
from transformer.runtime import cumprod, reduce_prod
from transformer.templates import ADJOINTS, TANGENTS, rule_from_source

_PROD = "def prod(z, x, axis=None, dtype=None, out=None, keepdims=False):\n"
# the product of the other elements along `axis`, in the shape of x
_PROD_OTHERS = """\
    zero = x == 0
    safe = np.where(zero, cast_like(1.0, x), x)
    zeros = broadcast_reduced(reduce_sum(cast_like(zero, x), axis, None, None, True),
                              x, axis, True)
    kept = broadcast_reduced(reduce_prod(safe, axis, None, None, True), x, axis, True)
    others = np.where(zeros == 0, kept / safe, np.where(zero & (zeros == 1), kept, 0.0))
"""
_CUMPROD = "def cumprod(z, x, axis=None, dtype=None, out=None):\n"
# the zeros up to each value (`zeros`) and the running product of `safe`
_CUMPROD_COUNTS = """\
    zero = x == 0
    safe = np.where(zero, cast_like(1.0, x), x)
    zeros = cumsum(cast_like(zero, x), axis)
    kept = cumprod(safe, axis)
"""
_RULES = {
    (np.prod, reduce_prod): (
        _PROD + _PROD_OTHERS
        + "    d[x] += broadcast_reduced(d[z], x, axis, keepdims) * others\n",
        _PROD + _PROD_OTHERS
        + "    d[z] = reduce_sum(d[x] * others, axis, None, None, keepdims)\n"),
    # z_k's derivative in x_j (j <= k): kept_k / safe_j where no zero but x_j comes
    # before k; the adjoint sums it over k >= j (cumsum_adjoint), the tangent over j <= k
    (np.cumprod, cumprod): (
        _CUMPROD + _CUMPROD_COUNTS
        + "    before = cumsum_adjoint(d[z] * kept * (zeros == 0), x, axis)\n"
          "    at = cumsum_adjoint(d[z] * kept * (zeros == 1), x, axis)\n"
          "    d[x] += np.where(zero, at, before / safe)\n",
        _CUMPROD + _CUMPROD_COUNTS
        + "    d[z] = kept * ((zeros == 0) * cumsum(np.where(zero, 0.0, d[x] / safe), axis)\n"
          "                   + (zeros == 1) * cumsum(np.where(zero, d[x], 0.0), axis))\n"),
}

for _keys, (_adjoint, _tangent) in _RULES.items():
    for _key in _keys:
        ADJOINTS[_key] = rule_from_source(_adjoint, RULE_GLOBALS)
        TANGENTS[_key] = rule_from_source(_tangent, RULE_GLOBALS)
