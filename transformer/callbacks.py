"""Host callbacks: Python that compiled code calls, with declared result shapes (JAX's
`pure_callback` and `io_callback`).

    spec = ShapeDtypeStruct((3,), np.float64)
    def f(x):
        y = pure_callback(scipy_thing, spec, x, vmap_method="sequential")
        return np.sum(y * x)

`result_shape_dtypes` is a leaf with `.shape` and `.dtype` (`ShapeDtypeStruct`,
`jax.ShapeDtypeStruct`, a NumPy array) or a tuple/list of them, bound outside the
transformed function (a global, a closure cell or a default). The callback's result is
checked against it at every call; a mismatch raises a `TransformError` naming both,
located at the call. Under `jit` the call is a `numba.objmode` block: the rest of the
function stays compiled, and each call costs one transition to the interpreter.

Transformations follow JAX. `grad`/`jvp` of a `pure_callback` whose arguments depend on
the differentiated input raise JAX's error unless it sits in a `custom_vjp` function;
`io_callback` with such arguments raises under grad. Under `vmap`, `pure_callback`'s
`vmap_method` says how: "sequential" loops over the examples, "expand_dims" calls once
with unbatched arguments given a leading axis of length 1, "broadcast_all" calls once with
every argument broadcast to the batch; None raises JAX's error. An unordered
`io_callback` loops; an ordered one raises.
"""
from __future__ import annotations

import dataclasses
import linecache
import sys
from typing import Any, Callable

import numpy as np

from .runtime.host import HostSite, check_result
from .tree_util import tree_flatten, tree_unflatten

__all__ = ["ShapeDtypeStruct", "io_callback", "pure_callback"]

VMAP_METHODS = ("sequential", "sequential_unrolled", "expand_dims", "broadcast_all")

# JAX's first sentence, so errors read the same; the advice is secant's (JAX names its own)
PURE_GRAD_ERROR = ("Pure callbacks do not support JVP. Wrap the function that calls it in "
                   "`transformer.custom_vjp` and give its derivative with `defvjp` to use "
                   "callbacks while taking gradients.")
IO_GRAD_ERROR = "IO callbacks do not support JVP."
_VJP_RULES: dict = {}      # (file, name) of a custom_vjp's fwd or bwd -> the custom_vjp's name
PURE_VMAP_ERROR = ("vmap is only supported for the pure_callback primitive when vmap_method "
                   "is one of 'sequential', 'sequential_unrolled', 'expand_dims' or "
                   "'broadcast_all'. Got vmap_method=None.")
IO_VMAP_ERROR = "Cannot `vmap` ordered IO callback."


@dataclasses.dataclass(frozen=True)
class ShapeDtypeStruct:
    """The shape and dtype of a callback's result (JAX's `ShapeDtypeStruct`)."""

    shape: tuple
    dtype: Any

    def __post_init__(self):
        object.__setattr__(self, "shape", tuple(int(s) for s in self.shape))
        object.__setattr__(self, "dtype", np.dtype(self.dtype))


def is_spec(x) -> bool:
    """Whether `x` declares one result: it has `.shape` and `.dtype`."""
    return hasattr(x, "shape") and hasattr(x, "dtype")


def declared_leaves(result_shape_dtypes) -> tuple[list, Any]:
    """The (shape, dtype) of each leaf of `result_shape_dtypes`, and the tree structure."""
    specs, treedef = tree_flatten(result_shape_dtypes, is_leaf=is_spec)
    bad = [s for s in specs if not is_spec(s)]
    if bad:
        raise TypeError(f"result_shape_dtypes must hold objects with .shape and .dtype "
                        f"(transformer.ShapeDtypeStruct), not {bad[0]!r}")
    return [(tuple(int(n) for n in s.shape), np.dtype(s.dtype)) for s in specs], treedef


def _run(kind: str, fun, result_shape_dtypes, args, kwargs):
    """A call from plain Python: a mismatch is located at the caller's line."""
    leaves, treedef = declared_leaves(result_shape_dtypes)
    frame = sys._getframe(2)
    filename, lineno = frame.f_code.co_filename, frame.f_lineno
    line = linecache.getline(filename, lineno).rstrip("\n")
    where = (filename, lineno, len(line) - len(line.lstrip()), line)
    site = HostSite(kind, fun, tuple(kwargs), tuple(leaves), where)
    values = check_result(site, fun(*args, **kwargs))
    return tree_unflatten(treedef, [np.asarray(v) for v in values])


def pure_callback(fun: Callable[..., Any], result_shape_dtypes, *args: Any,
                  vmap_method: str | None = None, **kwargs: Any):
    """`fun(*args, **kwargs)`, a pure function run on the host, checked against
    `result_shape_dtypes` (see the module docstring for the transformations)."""
    if vmap_method is not None and vmap_method not in VMAP_METHODS:
        raise ValueError(f"vmap_method must be one of {VMAP_METHODS} or None, "
                         f"not {vmap_method!r}")
    return _run("pure", fun, result_shape_dtypes, args, kwargs)


def io_callback(fun: Callable[..., Any], result_shape_dtypes, *args: Any,
                ordered: bool = False, **kwargs: Any):
    """`fun(*args, **kwargs)` run on the host for its effect; calls keep program order
    (compiled code runs them in order; `ordered=True` also refuses vmap, as JAX does)."""
    if result_shape_dtypes is None:
        fun(*args, **kwargs)
        return None
    return _run("io", fun, result_shape_dtypes, args, kwargs)


def note_vjp_rules(owner: str, *rules) -> None:
    """Remember that `rules` are the fwd and bwd of custom_vjp function `owner`."""
    for rule in rules:
        code = getattr(rule, "__code__", None)
        if code is not None:
            _VJP_RULES[(code.co_filename, code.co_name)] = owner


def refuse_in_vjp_rule(fn, stmt, key) -> None:
    """A pure_callback (`key`) that a derivative reaches inside a custom_vjp's fwd or bwd,
    which happens for a second derivative (hessian, grad of grad): refused, located, with
    what works (the rule gives the first derivative only)."""
    owner = _VJP_RULES.get((fn.origin.filename, fn.origin.name))
    if key is not pure_callback or owner is None:
        return
    rule = fn.origin.name
    raise fn.origin.error(stmt, f"a second derivative through custom_vjp function {owner} "
                          f"differentiates its rule {rule}, which calls pure_callback: the "
                          f"rule gives {owner}'s first derivative only, and a pure callback "
                          "has no derivative of its own",
                          "give the callback a derivative: call it through a function with "
                          "custom_jvp (its defjvp rule returns the value and the tangent) "
                          f"in {rule}; hessian and grad of grad then use that rule")
