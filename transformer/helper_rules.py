"""Derivative rules for the runtime helpers that generated derivative code calls.

A derivative is itself a program secant must differentiate again for second order
(`grad(grad(f))`, `jvp(grad(f))`, `hessian`): adjoint code calls `unbroadcast`,
`broadcast_reduced`, `matmul_grad_left`, ...; tangent code calls `broadcast_like`,
`reduce_sum`, `matmul`, .... Almost all are linear in their first argument (or bilinear),
so each rule below is the helper applied to the derivative, or its transpose.
"""
# ruff: noqa: F821  (``d`` is template syntax, never evaluated)
from __future__ import annotations

from .rules import RULE_GLOBALS
from .runtime import (axis_count, axis_mask, broadcast_like, broadcast_reduced, cast_like,
                      cumsum, cumsum_adjoint, flip, inside, matmul, matmul_grad_left,
                      matmul_grad_right, moveaxis, outer_or_matmul, reduce_mean, reduce_sum,
                      reshape, reshape_like, squeeze, transpose, unbroadcast, untranspose,
                      zeros_like)
from .templates import ADJOINTS, TANGENTS, adjoint, nondifferentiable, rule_from_source, tangent

nondifferentiable(zeros_like, axis_count, axis_mask, inside)


def linear(key, params: str, forward: str, transpose: str) -> None:
    """A helper linear in its first parameter `g`: tangent `forward` (with `g` the
    tangent), adjoint `transpose` (with `g` the adjoint of the result)."""
    first = params.split(",")[0].strip()
    fwd = forward.replace("G", f"d[{first}]")
    back = transpose.replace("G", "d[z]")
    TANGENTS[key] = rule_from_source(f"def rule(z, {params}):\n    d[z] = {fwd}\n",
                                     RULE_GLOBALS)
    ADJOINTS[key] = rule_from_source(f"def rule(z, {params}):\n    d[{first}] += {back}\n",
                                     RULE_GLOBALS)


linear(unbroadcast, "g, x", "unbroadcast(G, x)", "broadcast_like(G, g)")
linear(broadcast_like, "t, shape_of", "broadcast_like(G, shape_of)", "unbroadcast(G, t)")
linear(broadcast_reduced, "g, x, axis=None, keepdims=False",
       "broadcast_reduced(G, x, axis, keepdims)", "reduce_sum(G, axis, None, None, keepdims)")
linear(cast_like, "value, x", "cast_like(G, x)", "G")
linear(reshape_like, "g, x", "reshape_like(G, x)", "reshape_like(G, g)")
linear(reshape, "a, shape", "reshape(G, shape)", "reshape_like(G, a)")
linear(reduce_sum, "a, axis=None, dtype=None, out=None, keepdims=False",
       "reduce_sum(G, axis, None, None, keepdims)", "broadcast_reduced(G, a, axis, keepdims)")
linear(reduce_mean, "a, axis=None, dtype=None, out=None, keepdims=False",
       "reduce_mean(G, axis, None, None, keepdims)",
       "broadcast_reduced(G, a, axis, keepdims) / cast_like(axis_count(a, axis), a)")
linear(transpose, "a, axes=None", "transpose(G, axes)", "untranspose(G, axes)")
linear(untranspose, "g, axes=None", "untranspose(G, axes)", "transpose(G, axes)")
linear(squeeze, "a, axis=None", "squeeze(G, axis)", "reshape_like(G, a)")
linear(flip, "a, axis=None", "flip(G, axis)", "flip(G, axis)")
linear(moveaxis, "a, source, destination", "moveaxis(G, source, destination)",
       "moveaxis(G, destination, source)")
linear(cumsum, "a, axis=None", "cumsum(G, axis)", "cumsum_adjoint(G, a, axis)")
linear(cumsum_adjoint, "g, x, axis=None", "cumsum_adjoint(G, x, axis)", "cumsum(G, axis)")


# ---------------------------------------------------------------- bilinear products

@tangent(matmul)
def matmul_tangent(z, a, b):
    d[z] = matmul(d[a], b)
    d[z] = matmul(a, d[b])


@adjoint(matmul)
def matmul_adjoint(z, a, b):
    d[a] += matmul_grad_left(d[z], a, b)
    d[b] += matmul_grad_right(d[z], a, b)


# matmul_grad_left(g, a, b) is g @ b.T shaped like a: bilinear in (g, b)
@tangent(matmul_grad_left)
def matmul_grad_left_tangent(z, g, a, b):
    d[z] = matmul_grad_left(d[g], a, b)
    d[z] = matmul_grad_left(g, a, d[b])


@adjoint(matmul_grad_left)
def matmul_grad_left_adjoint(z, g, a, b):
    d[g] += matmul(d[z], b)
    d[b] += matmul_grad_right(g, d[z], b)


# matmul_grad_right(g, a, b) is a.T @ g shaped like b: bilinear in (g, a)
@tangent(matmul_grad_right)
def matmul_grad_right_tangent(z, g, a, b):
    d[z] = matmul_grad_right(d[g], a, b)
    d[z] = matmul_grad_right(g, d[a], b)


@adjoint(matmul_grad_right)
def matmul_grad_right_adjoint(z, g, a, b):
    d[g] += matmul(a, d[z])
    d[a] += matmul_grad_left(g, a, d[z])


@tangent(outer_or_matmul)
def outer_or_matmul_tangent(z, t, w):
    d[z] = outer_or_matmul(d[t], w)
    d[z] = outer_or_matmul(t, d[w])


__all__ = ["linear"]
