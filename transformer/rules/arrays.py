"""Derivative templates of NumPy's structural functions: differences, sorting, diagonals
and triangles, Kronecker and cross products, convolution, interpolation and the
trapezoidal rule (see ``transformer.templates`` for the language). Their runtime forms
live in ``transformer.runtime.structure`` and ``transformer.runtime.sampled``; their
records (batching, Numba lowering, samples) in ``transformer.primitives.structural_more``.
"""

# ruff: noqa: F821  (``d`` is template syntax, never evaluated)

from __future__ import annotations

import numpy as np

from transformer.runtime import cast_like, unbroadcast
from transformer.runtime.sampled import interp as sampled_interp
from transformer.runtime.sampled import (convolve, convolve_grad, interp_grad_fp,
                                         interp_grad_x, interp_grad_xp, interp_outside,
                                         interp_tangent_fp, interp_tangent_outside,
                                         interp_tangent_x, interp_tangent_xp, trapezoid,
                                         trapezoid_grad_dx, trapezoid_grad_x, trapezoid_grad_y)
from transformer.runtime.structure import (diag_adjoint, diff, diff_adjoint, kron_grad_left,
                                           kron_grad_right, sort_adjoint, sort_tangent)
from transformer.runtime.structure import sort as structure_sort
from transformer.templates import adjoint, tangent

TRAPEZOID = tuple(getattr(np, n) for n in ("trapezoid", "trapz") if hasattr(np, n))

# ---------------------------------------------------------------- linear maps of one array


@adjoint(np.diff, diff)
def diff_(z, a, n=1, axis=-1):
    d[a] += diff_adjoint(d[z], a, n, axis)


@tangent(np.diff, diff)
def diff_t(z, a, n=1, axis=-1):
    d[z] = diff(d[a], n, axis)


@adjoint(np.diag)
def diag(z, v, k=0):
    d[v] += diag_adjoint(d[z], v, k)


@tangent(np.diag)
def diag_t(z, v, k=0):
    d[z] = np.diag(d[v], k)


@adjoint(np.tril)
def tril(z, m, k=0):
    d[m] += unbroadcast(np.tril(d[z], k), m)     # a vector m is read as its rows


@tangent(np.tril)
def tril_t(z, m, k=0):
    d[z] = np.tril(d[m], k)


@adjoint(np.triu)
def triu(z, m, k=0):
    d[m] += unbroadcast(np.triu(d[z], k), m)


@tangent(np.triu)
def triu_t(z, m, k=0):
    d[z] = np.triu(d[m], k)


# structure.sort (vmap's per-example np.sort) takes (a, axis, kind, stable): the rules read
# only its first two parameters, which np.sort's share
@adjoint(np.sort, structure_sort)
def sort(z, a, axis=-1, kind=None, order=None, stable=None):
    d[a] += sort_adjoint(d[z], a, axis)


@tangent(np.sort, structure_sort)
def sort_t(z, a, axis=-1, kind=None, order=None, stable=None):
    d[z] = sort_tangent(d[a], a, axis)


# ---------------------------------------------------------------- products


@adjoint(np.kron)
def kron(z, a, b):
    d[a] += kron_grad_left(d[z], a, b)
    d[b] += kron_grad_right(d[z], a, b)


@tangent(np.kron)
def kron_t(z, a, b):
    d[z] = np.kron(d[a], b)
    d[z] = np.kron(a, d[b])


@adjoint(np.cross)
def cross(z, a, b):
    d[a] += unbroadcast(np.cross(b, d[z]), a)
    d[b] += unbroadcast(np.cross(d[z], a), b)


@tangent(np.cross, broadcast=True)
def cross_t(z, a, b):
    d[z] = np.cross(d[a], b)
    d[z] = np.cross(a, d[b])


@adjoint(np.convolve, convolve)
def convolve_(z, a, v, mode="full"):
    d[a] += convolve_grad(d[z], a, v, mode)
    d[v] += convolve_grad(d[z], v, a, mode)


@tangent(np.convolve, convolve)
def convolve_t(z, a, v, mode="full"):
    d[z] = convolve(d[a], v, mode)
    d[z] = convolve(a, d[v], mode)


# ---------------------------------------------------------------- sampled functions


@adjoint(np.interp, sampled_interp)
def interp(z, x, xp, fp, left=None, right=None):
    d[x] += interp_grad_x(d[z], x, xp, fp)
    d[xp] += interp_grad_xp(d[z], x, xp, fp)
    d[fp] += interp_grad_fp(d[z], x, xp, fp, left, right)
    d[left] += interp_outside(d[z], x, xp, True)
    d[right] += interp_outside(d[z], x, xp, False)


@tangent(np.interp, sampled_interp)
def interp_t(z, x, xp, fp, left=None, right=None):
    d[z] = interp_tangent_x(d[x], x, xp, fp)
    d[z] = interp_tangent_xp(d[xp], x, xp, fp)
    d[z] = interp_tangent_fp(d[fp], x, xp, fp, left, right)
    d[z] = interp_tangent_outside(d[left], x, xp, True)
    d[z] = interp_tangent_outside(d[right], x, xp, False)


@adjoint(*TRAPEZOID, trapezoid)
def trapezoid_(z, y, x=None, dx=1.0, axis=-1):
    d[y] += trapezoid_grad_y(d[z], y, x, dx, axis)
    d[x] += trapezoid_grad_x(d[z], y, x, axis)
    d[dx] += cast_like(trapezoid_grad_dx(d[z], y, axis), dx)


@tangent(*TRAPEZOID, trapezoid)
def trapezoid_t(z, y, x=None, dx=1.0, axis=-1):
    d[z] = trapezoid(d[y], x, dx, axis)
    d[z] = trapezoid(y, d[x], 1.0, axis)
    d[z] = trapezoid(y, None, d[dx], axis)
