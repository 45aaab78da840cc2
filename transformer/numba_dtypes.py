"""Refuse, before Numba compiles, dtypes it has no machine type for on the CPU.

Numba has no float16 arithmetic or arrays on the CPU, nor long double: given one it raises
a bare `NotImplementedError` from inside its lowering. `refuse_numba_dtypes(fn)` raises a
located `TransformError` instead, at the first place in `fn` or a user function it calls
that names such a dtype where a dtype is taken: the callee of a call (`np.float16(x)`), or
an argument of one (`np.ones(3, np.float16)`, `x.astype(np.float16)`,
`np.zeros(n, dtype="float16")`). A string names a dtype only as a `dtype=` keyword, the
argument of `.astype`/`.view` or `np.dtype`, or an argument of a NumPy function after
its first (which is data, or `np.einsum`'s subscripts). A comparison such as
`x.dtype == np.float16` is left alone, and so are `transformer.random` samplers, which
refuse float16 themselves with a hint of their own. `refuse_argument_dtypes` refuses
arguments holding such dtypes, which `jit` checks before this runs.
"""
from __future__ import annotations

import gast
import numpy as np

from . import tree_util
from .function import Function, resolve
from .nodes import walk
from .recursion import user_calls

# long double is float64 on some platforms, which Numba compiles
NO_NUMBA_DTYPES = {np.dtype(np.float16), np.dtype(np.longdouble),
                   np.dtype(np.clongdouble)} - {np.dtype(np.float64), np.dtype(np.complex128)}
_DTYPE_METHODS = ("astype", "view")
# secant's samplers refuse float16 themselves, naming the sampler and how to draw it
_SAMPLERS = "transformer.random"
# what to compute in under jit instead, converting outside it
_INSTEAD = {np.dtype(np.float16): "float32", np.dtype(np.longdouble): "float64",
            np.dtype(np.clongdouble): "complex128"}


def refuse_argument_dtypes(fn: Function, name: str, params: list, dynamic) -> None:
    """A located error for array arguments (`dynamic`, the values of `params` of `fn`,
    jitted as `name`) whose dtype Numba has no machine type for, which it would report as
    an internal NotImplementedError."""
    for i, value in enumerate(dynamic):
        for leaf in tree_util.tree_leaves(value):
            dtype = getattr(leaf, "dtype", None)
            if isinstance(leaf, (np.ndarray, np.generic)) and dtype in NO_NUMBA_DTYPES:
                param = params[i] if len(params) == len(dynamic) else f"#{i}"
                raise fn.origin.error(fn.node, f"argument {param!r} of {name} holds {dtype}, "
                                      "which Numba cannot compile",
                                      "cast it (x.astype(np.float32)), or use "
                                      "jit(..., backend='python') to run it with NumPy")


def refuse_numba_dtypes(fn: Function) -> None:
    """Raise a TransformError at the first dtype Numba cannot compile in `fn`'s call tree."""
    _visit(fn, set())


def _visit(fn: Function, done: set) -> None:
    for node in walk(fn.node):
        if isinstance(node, gast.Call):
            _refuse_in_call(fn, node)
    for _, code, callee in user_calls(fn):
        if code not in done:
            done.add(code)
            _visit(callee, done)


def _refuse_in_call(fn: Function, call: gast.Call) -> None:
    callee = resolve(fn, call.func, None)
    if _module(callee) == _SAMPLERS:
        return
    method = isinstance(call.func, gast.Attribute) and call.func.attr in _DTYPE_METHODS
    numpy = _module(callee).partition(".")[0] == "numpy"
    # a NumPy function's first argument is data or subscripts ("e" is float16's code)
    named = [(call.func, False)] + [
        (a, method or callee is np.dtype or (numpy and k > 0)) for k, a in enumerate(call.args)
    ] + [(k.value, method or numpy or k.arg == "dtype") for k in call.keywords]
    for node, string_allowed in named:
        dtype = _dtype_named(fn, node, string_allowed)
        if dtype is not None:
            raise fn.origin.error(
                node, f"{dtype} under jit: Numba has no {dtype} arithmetic or arrays on the "
                "CPU", f"compute in np.{_INSTEAD[dtype]} under jit and convert outside it "
                f"(jit(f)(x).astype(np.{dtype})), or use jit(..., backend='python') to run "
                "it with NumPy")


def _dtype_named(fn: Function, node, string_allowed: bool):
    """The dtype of NO_NUMBA_DTYPES that `node` names, or None."""
    if isinstance(node, gast.Constant) and isinstance(node.value, str) and string_allowed:
        value = node.value
    elif isinstance(node, (gast.Name, gast.Attribute)):
        value = resolve(fn, node, None)
        if not (isinstance(value, type) and issubclass(value, np.generic)) \
                and not isinstance(value, np.dtype):
            return None
    else:
        return None
    try:
        dtype = np.dtype(value)
    except (TypeError, ValueError):
        return None
    return dtype if dtype in NO_NUMBA_DTYPES else None


def _module(obj) -> str:
    return getattr(obj, "__module__", None) or ""
