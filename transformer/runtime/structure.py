"""Runtime forms of NumPy's structural functions (diff, sort) and of the derivatives of
diff, sort, diag and kron.

Each public function runs as plain NumPy (the value is NumPy's own) and, through an
``overload``, inside Numba with every keyword NumPy's common call takes (Numba's own
versions take only the first arguments). Functions along an axis move the axis last and
work row by row (`_row_helpers`), so any rank and any int axis compile.

Convention at ties (JAX's): `np.sort` passes each derivative through the stable sorting
permutation, so tied elements take the derivatives of their positions in stable order.
"""
from __future__ import annotations

import numpy as np
from numba import types
from numba.core.errors import TypingError
from transformer.runtime.allocation import empty_array, zeros_array
from transformer.runtime.numba_api import overload, register_jitable
from numba.np.unsafe.ndarray import to_fixed_tuple

from .casts import _is_none
from .shapes import moveaxis

# ---------------------------------------------------------------- rows along an axis


def _row_helpers(ndim: int):
    """(to_rows, from_rows) for arrays of rank `ndim` under Numba: `to_rows(a, axis)` is
    (a 2-D C-contiguous copy with the axis last, the shape of the moved array);
    `from_rows(rows, shape, axis)` puts rows of any width back (width 0: the axis dropped,
    rank ndim - 1)."""
    @register_jitable
    def to_rows(a, axis):
        moved = np.ascontiguousarray(moveaxis(a, axis, -1))
        shape = np.asarray(moved.shape)
        count = 1
        for k in range(ndim - 1):
            count *= shape[k]
        return moved.reshape((count, shape[ndim - 1])), shape

    @register_jitable
    def from_rows(rows, shape, axis):
        full = shape.copy()
        full[ndim - 1] = rows.shape[1]
        return moveaxis(np.ascontiguousarray(rows).reshape(to_fixed_tuple(full, ndim)),
                        -1, axis)

    return to_rows, from_rows


def _int_axis(axis):
    """Numba: refuse an axis that is not an int (an omitted one arrives as its default)."""
    if isinstance(axis, types.Omitted):
        axis = axis.value
    if not isinstance(axis, (int, types.Integer, types.IntegerLiteral)):
        raise TypingError("the axis must be an int here")


# ---------------------------------------------------------------- diff


def diff(a, n=1, axis=-1):
    """np.diff(a, n, axis)."""
    return np.diff(a, n, axis)


def diff_adjoint(g, x, n=1, axis=-1):
    """The adjoint of ``np.diff(x, n, axis)``: the transposed difference applied n times
    (each step: ``-diff`` of the argument padded with one zero at each end)."""
    g = np.asarray(g)
    for _ in range(n):
        pad = [(0, 0)] * g.ndim
        pad[axis] = (1, 1)
        g = -np.diff(np.pad(g, pad), axis=axis)
    return g.astype(np.result_type(x, g), copy=False)


@register_jitable
def _diff_row(src, out, n):
    work = src.copy()
    m = src.shape[0]
    for _ in range(n):
        for i in range(m - 1):
            work[i] = work[i + 1] - work[i]
        m -= 1
    out[:] = work[:out.shape[0]]


@register_jitable
def _diff_adjoint_row(src, out, n):
    work = np.zeros_like(out)
    m = src.shape[0]
    work[:m] = src
    for _ in range(n):
        work[m] = work[m - 1]
        for i in range(m - 1, 0, -1):
            work[i] = work[i - 1] - work[i]
        work[0] = -work[0]
        m += 1
    out[:] = work


@overload(diff)
def _diff_nb(a, n=1, axis=-1):
    _int_axis(axis)
    to_rows, from_rows = _row_helpers(a.ndim)

    def impl(a, n=1, axis=-1):
        rows, shape = to_rows(a, axis)
        width = max(rows.shape[1] - n, 0)
        out = empty_array((rows.shape[0], width), rows.dtype)
        for r in range(rows.shape[0]):
            _diff_row(rows[r], out[r], n)
        return from_rows(out, shape, axis)
    return impl


@overload(diff_adjoint)
def _diff_adjoint_nb(g, x, n=1, axis=-1):
    _int_axis(axis)
    to_rows, from_rows = _row_helpers(g.ndim)

    def impl(g, x, n=1, axis=-1):
        rows, shape = to_rows(g, axis)
        out = empty_array((rows.shape[0], rows.shape[1] + n), rows.dtype)
        for r in range(rows.shape[0]):
            _diff_adjoint_row(rows[r], out[r], n)
        return from_rows(out, shape, axis)
    return impl


# ---------------------------------------------------------------- sort


def sort(a, axis=-1, kind=None, stable=None):
    """np.sort(a, axis) (axis None: the flattened array); `kind` and `stable` change no
    value, so the compiled form ignores them."""
    return np.sort(a, axis)


def _permutation(x, axis):
    """The stable sorting permutation of ``x`` along ``axis`` (None: flattened)."""
    return np.argsort(x, axis=axis, kind="stable")


def sort_adjoint(g, x, axis=-1):
    """The adjoint of ``np.sort(x, axis)``: ``g`` scattered back through the stable
    permutation (ties: each tied element gets the derivative of its stable position)."""
    g = np.asarray(g)
    if axis is None:
        out = np.zeros(np.size(x), g.dtype)
        out[_permutation(x, None)] = g
        return out.reshape(np.shape(x))
    out = np.zeros(np.shape(x), g.dtype)
    np.put_along_axis(out, _permutation(x, axis), g, axis)
    return out


def sort_tangent(t, x, axis=-1):
    """The tangent of ``np.sort(x, axis)``: ``t`` gathered through the stable permutation."""
    if axis is None:
        return np.ravel(t)[_permutation(x, None)]
    return np.take_along_axis(np.asarray(t), _permutation(x, axis), axis)


@register_jitable
def _sort_row(src, out):
    out[:] = np.sort(src)


@register_jitable
def _scatter_row(g, x, out):
    perm = np.argsort(x, kind="mergesort")       # stable, as NumPy's kind="stable"
    for j in range(perm.shape[0]):
        out[perm[j]] = g[j]


@register_jitable
def _gather_row(t, x, out):
    perm = np.argsort(x, kind="mergesort")
    for j in range(perm.shape[0]):
        out[j] = t[perm[j]]


@overload(sort)
def _sort_nb(a, axis=-1, kind=None, stable=None):
    if _is_none(axis):
        return lambda a, axis=-1, kind=None, stable=None: np.sort(a.ravel())
    _int_axis(axis)
    to_rows, from_rows = _row_helpers(a.ndim)

    def impl(a, axis=-1, kind=None, stable=None):
        rows, shape = to_rows(a, axis)
        out = np.empty_like(rows)
        for r in range(rows.shape[0]):
            _sort_row(rows[r], out[r])
        return from_rows(out, shape, axis)
    return impl


def _permuted_nb(kernel, ndim):
    """Numba: `kernel(g_row, x_row, out_row)` row by row along the axis of `x`."""
    to_rows, from_rows = _row_helpers(ndim)

    def impl(g, x, axis=-1):
        g_rows, _ = to_rows(g, axis)
        x_rows, shape = to_rows(x, axis)
        out = zeros_array(g_rows.shape, g_rows.dtype)
        for r in range(x_rows.shape[0]):
            kernel(g_rows[r], x_rows[r], out[r])
        return from_rows(out, shape, axis)
    return impl


@overload(sort_adjoint)
def _sort_adjoint_nb(g, x, axis=-1):
    if _is_none(axis):
        def flat(g, x, axis=-1):
            out = zeros_array(x.size, g.dtype)
            _scatter_row(np.ascontiguousarray(g).ravel(), np.ascontiguousarray(x).ravel(), out)
            return out.reshape(x.shape)
        return flat
    _int_axis(axis)
    return _permuted_nb(_scatter_row, x.ndim)


@overload(sort_tangent)
def _sort_tangent_nb(t, x, axis=-1):
    if _is_none(axis):
        def flat(t, x, axis=-1):
            out = zeros_array(x.size, t.dtype)
            _gather_row(np.ascontiguousarray(t).ravel(), np.ascontiguousarray(x).ravel(), out)
            return out
        return flat
    _int_axis(axis)
    return _permuted_nb(_gather_row, x.ndim)


# ---------------------------------------------------------------- diag, kron, cross


def diag_adjoint(g, x, k=0):
    """The adjoint of ``np.diag(x, k)``: for a vector ``x`` the k-th diagonal of ``g``; for
    a matrix ``x`` a zero matrix shaped like it holding ``g`` on its k-th diagonal."""
    if np.ndim(x) == 1:
        return np.diag(g, k)
    out = np.zeros(np.shape(x), np.asarray(g).dtype)
    rows = np.arange(len(g)) + max(-k, 0)
    out[rows, rows + k] = g
    return out


@overload(diag_adjoint)
def _diag_adjoint_nb(g, x, k=0):
    if x.ndim == 1:
        return lambda g, x, k=0: np.diag(g, k)

    def impl(g, x, k=0):
        out = zeros_array(x.shape, g.dtype)
        start = max(-k, 0)
        for i in range(g.shape[0]):
            out[start + i, start + i + k] = g[i]
        return out
    return impl


def _kron_split(g, a, b):
    """``g`` (shaped like ``np.kron(a, b)``) as a matrix: rows index ``a``, columns ``b``,
    with ``a`` and ``b`` read at the rank of the larger one (NumPy prepends ones)."""
    rank = max(np.ndim(a), np.ndim(b))
    sa = (1,) * (rank - np.ndim(a)) + np.shape(a)
    sb = (1,) * (rank - np.ndim(b)) + np.shape(b)
    interleaved = np.reshape(g, [n for pair in zip(sa, sb) for n in pair])
    order = list(range(0, 2 * rank, 2)) + list(range(1, 2 * rank, 2))
    return np.transpose(interleaved, order).reshape(int(np.prod(sa)), int(np.prod(sb)))


def kron_grad_left(g, a, b):
    """The adjoint of ``np.kron(a, b)`` with respect to ``a``."""
    return np.reshape(_kron_split(g, a, b) @ np.ravel(b), np.shape(a))


def kron_grad_right(g, a, b):
    """The adjoint of ``np.kron(a, b)`` with respect to ``b``."""
    return np.reshape(np.ravel(a) @ _kron_split(g, a, b), np.shape(b))


def _kron_grad_nb(left: bool):
    def typer(g, a, b):
        if not (isinstance(a, types.Array) and isinstance(b, types.Array)
                and a.ndim == b.ndim and a.ndim in (1, 2)):
            raise TypingError("the derivative of np.kron compiles for two vectors or two "
                              "matrices")
        if a.ndim == 1:
            def vectors(g, a, b):
                n = b.shape[0]
                out = zeros_array(a.shape if left else b.shape, g.dtype)
                for i in range(a.shape[0]):
                    for k in range(n):
                        if left:
                            out[i] += g[i * n + k] * b[k]
                        else:
                            out[k] += g[i * n + k] * a[i]
                return out
            return vectors

        def matrices(g, a, b):
            p, q = b.shape
            out = zeros_array(a.shape if left else b.shape, g.dtype)
            for i in range(a.shape[0]):
                for j in range(a.shape[1]):
                    for k in range(p):
                        for m in range(q):
                            if left:
                                out[i, j] += g[i * p + k, j * q + m] * b[k, m]
                            else:
                                out[k, m] += g[i * p + k, j * q + m] * a[i, j]
            return out
        return matrices
    return typer


overload(kron_grad_left)(_kron_grad_nb(True))
overload(kron_grad_right)(_kron_grad_nb(False))

