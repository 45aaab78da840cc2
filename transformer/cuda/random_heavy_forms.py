"""`random.gamma`, `beta` and `poisson` in CUDA threads: their element forms for
`transformer.cuda.random_forms`, which turns a draw with a constant shape into a loop of
element calls `element(key[0], key[1], flat, a, b)`.

Contract: a draw's parameters are scalars of the thread (a literal or a scalar local or
argument); an array parameter is a TransformError at the user's line. The elements are
`transformer.runtime.random_gamma.ELEMENTS` and `random_poisson.ELEMENTS`: element `i`
gives the number the CPU gives (gamma and beta from their own element keys; poisson with
`a` the rate as float32 and `b` the count of draws, since its rejection rounds are those
of the whole array). A kernel cannot raise, so an invalid parameter gives NaN (gamma,
beta) or -1 (poisson). `dirichlet`, `multivariate_normal` and `orthogonal` have no CUDA
form: the registry says why.
"""
from __future__ import annotations

import copy
import math

import numpy as np

from transformer import random
from transformer.runtime import random_gamma, random_poisson
from transformer.syntax import call, const, name

_F64, _F32 = np.dtype(np.float64), np.dtype(np.float32)
_I64, _I32 = np.dtype(np.int64), np.dtype(np.int32)

ELEMENTS = {
    (random.gamma, _F64): random_gamma.ELEMENTS[_F64][0],
    (random.gamma, _F32): random_gamma.ELEMENTS[_F32][0],
    (random.beta, _F64): random_gamma.ELEMENTS[_F64][1],
    (random.beta, _F32): random_gamma.ELEMENTS[_F32][1],
    (random.poisson, _I64): random_poisson.ELEMENTS[_I64],
    (random.poisson, _I32): random_poisson.ELEMENTS[_I32],
}
DEFAULT_DTYPE = {random.gamma: _F64, random.beta: _F64, random.poisson: _I64}
_PARAMETERS = {random.gamma: ("a",), random.beta: ("a", "b"), random.poisson: ("lam",)}


def parameters(draws, site, target, args, dtype) -> tuple:
    """The `(a, b)` expressions of the element call of a heavy draw (`draws`: the
    random_forms rewriter, whose binder, specs and refusals this uses)."""
    values = []
    for what in _PARAMETERS[target]:
        node = args[what]
        spec = draws.key_spec(node)
        if spec is not None and tuple(spec.shape):
            raise draws.refuse(site, f"random.{target.__name__} takes a scalar {what}")
        values.append(node)
    if target is random.poisson:
        size = math.prod(draws.shape(site, target, args))
        cast = draws.binder.bind(np.float32, "float32")
        return call(name(cast), copy.deepcopy(values[0])), const(size)
    cast = draws.binder.bind(dtype.type, dtype.name)
    calls = [call(name(cast), copy.deepcopy(v)) for v in values]
    return calls[0], calls[1] if len(calls) > 1 else const(0)
