"""np.einsum and its adjoint / tangent (plain NumPy: the lowering replaces their calls with
loops generated from the subscripts, `transformer.einsum`), and the zeros those loops fill.
"""
from __future__ import annotations

import numpy as np
from numba import types
from transformer.runtime.allocation import zeros_array
from transformer.runtime.numba_api import overload
from numba.np.numpy_support import as_dtype

from .errors import TransformError


def einsum(subscripts, *operands):
    """np.einsum (plain Python only)."""
    return np.einsum(subscripts, *operands)


def _einsum_unsupported(what: str):
    return TransformError(f"no derivative rule for np.einsum with {what}",
                          hint="write the contraction with explicit indices, np.trace or "
                               "np.diagonal, which have derivative rules")


def _einsum_spec(subscripts):
    spec = subscripts.replace(" ", "")
    if "." in spec:
        raise _einsum_unsupported("ellipsis subscripts (...)")
    if "->" not in spec:
        letters = spec.replace(",", "")
        out = "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
        return spec.split(","), out
    ins, out = spec.split("->")
    return ins.split(","), out


def einsum_grad(subscripts, k, g, operands):
    """The adjoint of ``operands[k]`` in ``z = np.einsum(subscripts, *operands)``."""
    ins, out = _einsum_spec(subscripts)
    target = ins[k]
    unique = "".join(dict.fromkeys(target))     # 'ii' -> 'i': the diagonal is written
    others = [j for j in range(len(ins)) if j != k]
    present = "".join(c for c in unique if c in out or any(c in ins[j] for j in others))
    spec = ",".join([out] + [ins[j] for j in others]) + "->" + present
    part = np.einsum(spec, g, *[operands[j] for j in others])
    index = tuple(slice(None) if c in present else None for c in unique)
    shape = np.shape(operands[k])
    sizes = tuple(shape[target.index(c)] for c in unique)
    part = np.broadcast_to(part[index], sizes)
    if unique == target:
        return part.copy()
    grad = np.zeros(shape, part.dtype)
    strides = tuple(sum(grad.strides[p] for p, c in enumerate(target) if c == u) for u in unique)
    np.lib.stride_tricks.as_strided(grad, sizes, strides)[...] = part
    return grad


def einsum_tangent(subscripts, k, t, operands):
    """The tangent contribution of ``operands[k]`` (tangent ``t``) to an einsum."""
    operands = list(operands)
    operands[k] = t
    return np.einsum(subscripts, *operands)


def einsum_grad_tangent(subscripts, k, g, operands, tangents):
    """The tangent of ``einsum_grad(subscripts, k, g, operands)`` from the operands' tangents:
    it is linear in each operand but the ``k``-th, whose value it never reads."""
    total = None
    for j in range(len(operands)):
        if j != k:
            varied = list(operands)
            varied[j] = tangents[j]
            part = einsum_grad(subscripts, k, g, varied)
            total = part if total is None else total + part
    if total is None:       # one operand: einsum_grad reads only its shape
        total = np.zeros(np.shape(operands[k]), np.result_type(g))
    return total


def einsum_zeros(shape, operands):
    """Zeros of ``shape`` in the type NumPy gives the product of the ``operands``."""
    return np.zeros(shape, np.result_type(*operands))


@overload(einsum_zeros)
def _einsum_zeros_nb(shape, operands):
    dtype = np.result_type(*[as_dtype(t.dtype if isinstance(t, types.Array) else t)
                             for t in operands]).type
    return lambda shape, operands: zeros_array(shape, dtype)
