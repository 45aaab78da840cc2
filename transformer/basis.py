"""Basis vectors and Jacobian assembly for the loops jacfwd and jacrev generate.

A Jacobian is assembled as a 2-D array `(out.size, arg.size)` - one column per pushed
basis vector (jacfwd) or one row per pulled one (jacrev) - and reshaped at the end to
`shape(out) + shape(arg)` (JAX's layout), a scalar when both are scalars. Each helper is
plain NumPy with a Numba overload that dispatches on scalar versus array types.
"""
from __future__ import annotations

import numpy as np
from numba import types
from transformer.runtime.allocation import full_array, zeros_array
from transformer.runtime.numba_api import overload, register_jitable
from numba.np.numpy_support import as_dtype

from .errors import TransformError


def _float(x):
    if isinstance(x, (tuple, list, dict)):
        raise TransformError(
            f"a Jacobian of a function returning a {type(x).__name__} whose structure was "
            "not known when the Jacobian was transformed",
            hint="return a tuple literal in every return (`return a, b`), or take each "
            "output's Jacobian: jacrev(lambda x: f(x)[0])")
    dtype = np.result_type(x)
    return dtype if np.issubdtype(dtype, np.floating) else np.dtype(np.float64)


def _nb_float(ty):
    dtype = ty.dtype if isinstance(ty, types.Array) else ty
    return as_dtype(dtype).type if isinstance(dtype, types.Float) else np.float64


def basis_size(x) -> int:
    """How many basis vectors span the tangent space of `x`."""
    return int(np.size(x))


@overload(basis_size)
def _basis_size_nb(x):
    if isinstance(x, types.Array):
        return lambda x: x.size
    return lambda x: 1


def basis_vector(x, k):
    """The `k`-th unit vector shaped like `x` (C order); a scalar 1 for a scalar `x`."""
    if np.ndim(x) == 0:
        return _float(x).type(1.0)
    e = np.zeros(np.size(x), _float(x))
    e[k] = 1.0
    return e.reshape(np.shape(x))


@overload(basis_vector)
def _basis_vector_nb(x, k):
    dtype = _nb_float(x)
    if isinstance(x, types.Array):
        def impl(x, k):
            e = zeros_array(x.size, dtype)
            e[k] = 1.0
            return e.reshape(x.shape)
        return impl
    return lambda x, k: dtype(1.0)


def jacobian_alloc(out, x):
    """Zeros `(size(out), size(x))` in the float type of `out`."""
    return np.zeros((np.size(out), np.size(x)), _float(out))


@overload(jacobian_alloc)
def _jacobian_alloc_nb(out, x):
    dtype = _nb_float(out)
    return lambda out, x: zeros_array((basis_size(out), basis_size(x)), dtype)


def set_column(jac, t, k) -> None:
    """`jac[:, k] = ravel(t)`: the tangent pushed from basis vector `k`."""
    jac[:, k] = np.ravel(t)


def set_row(jac, g, k) -> None:
    """`jac[k, :] = ravel(g)`: the cotangent pulled from basis vector `k`."""
    jac[k, :] = np.ravel(g)


@register_jitable
def _at_column(jac, i, k, value):
    jac[i, k] = value


@register_jitable
def _at_row(jac, i, k, value):
    jac[k, i] = value


def _put_flat_nb(value, put):
    """Compiled: element `i` of `ravel(value)` written by `put(jac, i, k, element)`."""
    if isinstance(value, types.Array):
        def impl(jac, value, k):
            flat = np.ascontiguousarray(value).ravel()
            for i in range(flat.size):
                put(jac, i, k, flat[i])
        return impl
    return lambda jac, value, k: put(jac, 0, k, value)


@overload(set_column)
def _set_column_nb(jac, value, k):
    return _put_flat_nb(value, _at_column)


@overload(set_row)
def _set_row_nb(jac, value, k):
    return _put_flat_nb(value, _at_row)


def jacobian_result(jac, out, x):
    """`jac` reshaped to `shape(out) + shape(x)`; a scalar when both are scalars."""
    shape = np.shape(out) + np.shape(x)
    if not shape:
        return jac[0, 0]
    return jac.reshape(shape)


@overload(jacobian_result)
def _jacobian_result_nb(jac, out, x):
    out_array, x_array = isinstance(out, types.Array), isinstance(x, types.Array)
    if out_array and x_array:
        return lambda jac, out, x: jac.reshape(out.shape + x.shape)
    if out_array:
        return lambda jac, out, x: jac.reshape(out.shape)
    if x_array:
        return lambda jac, out, x: jac.reshape(x.shape)
    return lambda jac, out, x: jac[0, 0]


# ---------------------------------------------------------------- all basis vectors at once


def basis_matrix(x):
    """Every basis vector of `x`'s tangent space, stacked on a leading axis (for vmap)."""
    n = int(np.size(x))
    return np.eye(n, dtype=_float(x)).reshape((n,) + np.shape(x))


@overload(basis_matrix)
def _basis_matrix_nb(x):
    dtype = _nb_float(x)
    if isinstance(x, types.Array):
        def identity(x):
            n = x.size
            out = zeros_array((n, n), dtype)
            for k in range(n):
                out[k, k] = 1.0
            return out.reshape((n,) + x.shape)
        return identity
    return lambda x: full_array(1, 1.0, dtype)


def basis_zeros(x, n):
    """`n` zero tangents of `x` stacked on a leading axis, in its float type (vmap's batch
    of cotangents of an output whose basis is not pulled)."""
    return np.zeros((int(n),) + np.shape(x), _float(x))


@overload(basis_zeros)
def _basis_zeros_nb(x, n):
    dtype = _nb_float(x)
    if isinstance(x, types.Array):
        return lambda x, n: zeros_array((n,) + x.shape, dtype)
    return lambda x, n: zeros_array(n, dtype)


def jacobian_from_columns(columns, out, x):
    """The Jacobian `shape(out) + shape(x)` from `columns[k]`, the tangent of basis `k`;
    for a tuple or dict output (python backend), one Jacobian per output."""
    if isinstance(out, dict):
        return {k: jacobian_from_columns(columns[k], out[k], x) for k in out}
    if isinstance(out, (tuple, list)):
        return type(out)(jacobian_from_columns(c, o, x) for c, o in zip(columns, out))
    flat = np.reshape(columns, (np.size(x), np.size(out)))
    return jacobian_result(np.ascontiguousarray(flat.T), out, x)


@overload(jacobian_from_columns)
def _jacobian_from_columns_nb(columns, out, x):
    def impl(columns, out, x):
        flat = np.ascontiguousarray(columns).reshape((basis_size(x), basis_size(out)))
        return jacobian_result(np.ascontiguousarray(flat.T), out, x)
    return impl


def columns_of_jacobian(g, columns, out, x):
    """The adjoint of `jacobian_from_columns(columns, out, x)`: the Jacobian-shaped `g`
    laid out as `columns` (one basis vector's tangent per row)."""
    flat = np.reshape(g, (np.size(out), np.size(x)))
    return np.reshape(np.ascontiguousarray(flat.T), np.shape(columns))


@overload(columns_of_jacobian)
def _columns_of_jacobian_nb(g, columns, out, x):
    def impl(g, columns, out, x):
        flat = np.ascontiguousarray(g).reshape((basis_size(out), basis_size(x)))
        return np.ascontiguousarray(flat.T).reshape(columns.shape)
    return impl


def basis_ones(x):
    """Ones shaped like `x` in its float type: the identity basis of `x` pushed as an
    identity batch (vmap's `Spec.identity`), example k being the k-th unit vector."""
    if np.ndim(x) == 0:
        return _float(x).type(1.0)
    return np.ones(np.shape(x), _float(x))


@overload(basis_ones)
def _basis_ones_nb(x):
    dtype = _nb_float(x)
    if isinstance(x, types.Array):
        return lambda x: full_array(x.shape, 1.0, dtype)
    return lambda x: dtype(1.0)


def jacobian_from_last(columns, out, x):
    """The Jacobian `shape(out) + shape(x)` from `columns[..., k]`, the tangent of basis
    `k` (the basis axis last); for a tuple or dict output, one Jacobian per output."""
    if isinstance(out, dict):
        return {k: jacobian_from_last(columns[k], out[k], x) for k in out}
    if isinstance(out, (tuple, list)):
        return type(out)(jacobian_from_last(c, o, x) for c, o in zip(columns, out))
    flat = np.reshape(np.ascontiguousarray(columns), (np.size(out), np.size(x)))
    return jacobian_result(flat, out, x)


@overload(jacobian_from_last)
def _jacobian_from_last_nb(columns, out, x):
    if isinstance(columns, types.Array) and columns.layout == "C":   # no copy to compile
        out_array, x_array = isinstance(out, types.Array), isinstance(x, types.Array)
        # one reshape to the result's shape (jacobian_result's, without compiling it)
        if out_array and x_array:
            return lambda columns, out, x: columns.reshape(out.shape + x.shape)
        if out_array:
            return lambda columns, out, x: columns.reshape(out.shape)
        if x_array:
            return lambda columns, out, x: columns.reshape(x.shape)

        def contiguous(columns, out, x):
            flat = columns.reshape((basis_size(out), basis_size(x)))
            return jacobian_result(flat, out, x)
        return contiguous

    def impl(columns, out, x):
        flat = np.ascontiguousarray(columns).reshape((basis_size(out), basis_size(x)))
        return jacobian_result(flat, out, x)
    return impl


def jacobian_from_rows(rows, out, x):
    """The Jacobian `shape(out) + shape(x)` from `rows[k]`, the cotangent of basis `k`."""
    flat = np.reshape(rows, (np.size(out), np.size(x)))
    return jacobian_result(np.ascontiguousarray(flat), out, x)


@overload(jacobian_from_rows)
def _jacobian_from_rows_nb(rows, out, x):
    def impl(rows, out, x):
        flat = np.ascontiguousarray(rows).reshape((basis_size(out), basis_size(x)))
        return jacobian_result(flat, out, x)
    return impl


__all__ = ["basis_matrix", "basis_ones", "basis_size", "basis_vector", "basis_zeros",
           "columns_of_jacobian",
           "jacobian_alloc", "jacobian_from_columns", "jacobian_from_last", "jacobian_from_rows",
           "jacobian_result", "set_column", "set_row"]
