"""Runtime forms of np.linalg.cholesky and np.linalg.eigh (with the keywords Numba's own
lack) and their derivatives, as JAX defines them.

Both read one triangle of a matrix NumPy assumes symmetric; like JAX (which symmetrizes
its input), the derivatives here are those of the symmetric matrix: a tangent `da` acts
as `(da + da.T) / 2`, and an adjoint is symmetric. On symmetric inputs (the only ones
these functions are defined for) they agree with finite differences of NumPy along any
symmetric direction. At repeated eigenvalues the eigenvector derivative divides by zero
and is inf/nan, as in JAX; the eigenvalue derivative stays finite.
Matrices are 2-D (vmap runs over a stack example by example).
"""
from __future__ import annotations

import numpy as np
from transformer.runtime.numba_api import overload, register_jitable


def cholesky(a, upper=False):
    """np.linalg.cholesky(a, upper=upper)."""
    return np.linalg.cholesky(a, upper=upper) if upper else np.linalg.cholesky(a)


@overload(cholesky)
def _cholesky_nb(a, upper=False):
    def impl(a, upper=False):
        low = np.linalg.cholesky(np.ascontiguousarray(a))
        return np.ascontiguousarray(low.T) if upper else low
    return impl


def eigh(a, UPLO="L"):        # noqa: N803  (NumPy's keyword)
    """np.linalg.eigh(a, UPLO)."""
    return np.linalg.eigh(a, UPLO)


@overload(eigh)
def _eigh_nb(a, UPLO="L"):    # noqa: N803
    def impl(a, UPLO="L"):
        upper = UPLO == "U" or UPLO == "u"
        side = np.triu(a) if upper else np.tril(a)
        strict = np.triu(a, 1) if upper else np.tril(a, -1)
        return np.linalg.eigh(np.ascontiguousarray(side + strict.T))
    return impl


@register_jitable
def _symmetric(m):
    return (m + m.T) / 2.0


@register_jitable
def _phi(m):
    """The lower triangle of ``m`` with its diagonal halved (self-adjoint)."""
    out = np.tril(m)
    for i in range(m.shape[0]):
        out[i, i] = out[i, i] / 2.0
    return out


@register_jitable
def cholesky_grad(g, low, upper=False):
    """The adjoint of ``low = np.linalg.cholesky(a)``: ``sym(L^-T phi(L^T g) L^-1)``
    (`upper`: ``low`` and ``g`` are of the transposed factor)."""
    if upper:
        return _cholesky_grad_lower(np.ascontiguousarray(g.T), np.ascontiguousarray(low.T))
    return _cholesky_grad_lower(np.ascontiguousarray(g), np.ascontiguousarray(low))


@register_jitable
def _cholesky_grad_lower(g, low):
    inverse = np.linalg.inv(np.ascontiguousarray(low))
    middle = _phi(np.ascontiguousarray(low.T) @ np.ascontiguousarray(g))
    return _symmetric(np.ascontiguousarray(inverse.T) @ middle @ inverse)


@register_jitable
def cholesky_tangent(t, low, upper=False):
    """The tangent of ``low = np.linalg.cholesky(a)``: ``L phi(L^-1 sym(t) L^-T)``
    (`upper`: ``low`` is the transposed factor, and so is the tangent)."""
    if upper:
        return np.ascontiguousarray(_cholesky_tangent_lower(t, low.T).T)
    return _cholesky_tangent_lower(t, low)


@register_jitable
def _cholesky_tangent_lower(t, low):
    inverse = np.linalg.inv(np.ascontiguousarray(low))
    inner = inverse @ _symmetric(np.ascontiguousarray(t)) @ np.ascontiguousarray(inverse.T)
    return np.ascontiguousarray(low) @ _phi(inner)


@register_jitable
def _gaps(w):
    """JAX's ``F``: ``1 / (w[j] - w[i])`` off the diagonal, 0 on it."""
    n = w.shape[0]
    out = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            if i != j:
                out[i, j] = 1.0 / (w[j] - w[i])
    return out


@register_jitable
def eigh_grad(gw, gv, w, v):
    """The adjoint of ``w, v = np.linalg.eigh(a)``:
    ``sym(V (diag(gw) + F * (V^T gv)) V^T)``; an all-zero ``gv`` (eigenvectors unused)
    adds nothing, so repeated eigenvalues do not matter then."""
    v = np.ascontiguousarray(v)
    inner = np.diag(np.ascontiguousarray(gw).astype(np.float64))
    if np.any(gv != 0.0):
        inner = inner + _gaps(w) * (np.ascontiguousarray(v.T) @ np.ascontiguousarray(gv))
    return _symmetric(v @ inner @ np.ascontiguousarray(v.T))


@register_jitable
def eigh_tangent(t, w, v):
    """The tangent ``(dw, dv)`` of ``w, v = np.linalg.eigh(a)`` along ``t``:
    ``M = V^T sym(t) V``, ``dw = diag(M)``, ``dv = V (F * M)``."""
    v = np.ascontiguousarray(v)
    m = np.ascontiguousarray(v.T) @ _symmetric(np.ascontiguousarray(t)) @ v
    return np.diag(m).copy(), v @ (_gaps(w) * m)
