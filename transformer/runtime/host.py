"""Calls from generated code back into the Python interpreter (debug printing, host
callbacks), one `HostSite` per call site.

Generated code calls `host_call(site, args)`: in plain Python directly, under Numba inside
a `numba.objmode` block whose result types come from `site.numba_types()`. `args` is the
flat tuple of the call's values (positional ones first, then the values of `site.names`,
passed to the callback by keyword). A callback's result is checked against the declared
shapes and dtypes here, on the host, and handed back as a tuple of C-contiguous arrays
(or Python scalars for shape `()`), one per declared leaf.

Invariant: nothing here is compiled; this module imports only NumPy and codegen.errors.
"""
from __future__ import annotations

import builtins
import dataclasses
from typing import Any

import numpy as np

from codegen.errors import TransformError

KINDS = ("print", "callback", "pure", "io")


@dataclasses.dataclass(eq=False)
class HostSite:
    """One call of `debug.print`, `debug.callback`, `pure_callback` or `io_callback`.

    `target` is the format string (kind "print") or the Python callable; `names` the
    keywords passed to it, whose values end `args`; `leaves` the declared results as
    (shape, dtype) pairs with `None` for a batch axis of run-time length; `where` and
    `line` locate the call in the user's source for errors raised at run time.
    """

    kind: str
    target: Any
    names: tuple = ()
    leaves: tuple = ()
    where: tuple = (None, None, None, None)       # filename, lineno, col, line

    def numba_types(self) -> list[str]:
        """The `numba.objmode` annotation of each declared leaf."""
        return [_numba_type(np.dtype(dtype), len(shape)) for shape, dtype in self.leaves]

    def error(self, message: str, hint: str | None = None) -> TransformError:
        filename, lineno, col, line = self.where
        return TransformError(message, filename=filename, lineno=lineno, col=col, line=line,
                              hint=hint)


def _numba_type(dtype: np.dtype, ndim: int) -> str:
    base = "boolean" if dtype == np.bool_ else dtype.name
    if ndim == 0:
        return base
    return f"{base}[{', '.join([':'] * (ndim - 1) + ['::1'])}]"


def host_call(site: HostSite, args: tuple):
    """Run `site` on the host with `args`; the checked result leaves, or None."""
    npos = len(args) - len(site.names)
    positional, keywords = args[:npos], dict(zip(site.names, args[npos:]))
    if site.kind == "print":
        builtins.print(site.target.format(*positional, **keywords))
        return None
    result = site.target(*positional, **keywords)
    if site.kind == "callback" or not site.leaves:
        return None
    return check_result(site, result)


def check_result(site: HostSite, result) -> tuple:
    """`result` as one value per declared leaf, each of the declared shape and dtype."""
    if len(site.leaves) == 1 or not isinstance(result, (tuple, list)):
        values = [result]
    else:
        values = list(result)
    if len(values) != len(site.leaves):
        raise site.error(f"the callback returned {len(values)} values where "
                         f"result_shape_dtypes declares {len(site.leaves)}")
    return tuple(_checked_leaf(site, value, shape, dtype)
                 for value, (shape, dtype) in zip(values, site.leaves))


def _checked_leaf(site: HostSite, value, shape, dtype):
    array = np.asarray(value)
    declared = np.dtype(dtype)
    shape_ok = array.ndim == len(shape) and all(
        want is None or want == got for want, got in zip(shape, array.shape))
    if not shape_ok or array.dtype != declared:
        said = tuple("batch" if s is None else s for s in shape)
        raise site.error(
            f"the callback returned an array of shape {array.shape} and dtype {array.dtype}, "
            f"but result_shape_dtypes declares shape {said} and dtype {declared}",
            hint="make the callback return exactly the declared shape and dtype "
                 "(np.asarray(value, dtype=...)), or declare what it returns")
    if array.ndim == 0:
        return array.item()
    return np.ascontiguousarray(array)


def batched_pure_callback(fun, result_shape_dtypes, size, *args, **kwargs):
    """What vmap makes of a `pure_callback` with vmap_method "expand_dims" or
    "broadcast_all": one call with the batched arguments, each declared result (one
    leaf or a flat tuple/list of them) with a leading batch axis of length `size`."""
    flat = isinstance(result_shape_dtypes, (tuple, list))
    specs = list(result_shape_dtypes) if flat else [result_shape_dtypes]
    leaves = tuple(((size,) + tuple(s.shape), np.dtype(s.dtype)) for s in specs)
    values = check_result(HostSite("pure", fun, tuple(kwargs), leaves), fun(*args, **kwargs))
    values = [np.asarray(v) for v in values]
    return type(result_shape_dtypes)(values) if flat else values[0]
