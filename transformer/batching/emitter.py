"""What both strategies emit alike: the batch size, helper references, the prologue that
checks the mapped arguments agree on it, the strategy header comment, and outputs moved to
their `out_axes` (identity batches expanded first).
"""
from __future__ import annotations

import math
import types

import gast
import numpy as np

from codegen.emit import annotate

from ..basis import basis_size
from ..errors import TransformError
from ..function import Function
from ..names import Namer
from ..nodes import copy_tree
from ..rules import batching as rules
from ..syntax import assign, call, const, name, store, subscript
from .analysis import Analysis
from .flags import IDENTITY, Each, NeedsLoop, Spec, _any_leaf, any_batched


class _Emitter:
    """What both strategies share: names, environment bindings, the prologue."""

    strategy = ""

    def __init__(self, fn: Function, spec: Spec, analysis: Analysis):
        self.fn, self.spec, self.analysis = fn, spec, analysis
        self.env = dict(fn.env)
        self.namer = Namer.for_function(fn)
        self.size_name = self.namer.fresh("size")
        self._bound: dict[int, str] = {}

    @property
    def size(self) -> gast.Name:
        return name(self.size_name)

    # ---------------------------------------------------------------- environment
    def ref(self, obj) -> gast.expr:
        """An expression naming `obj` in the generated module (`np.sum`, `align`)."""
        attr = getattr(obj, "__name__", None)
        if not isinstance(obj, types.ModuleType):
            for module in (np, math):
                if attr and getattr(module, attr, None) is obj:
                    return gast.Attribute(value=self.ref(module), attr=attr, ctx=gast.Load())
        for key, value in self.env.items():
            if value is obj:
                return name(key)
        if id(obj) not in self._bound:
            base = {np: "np", math: "math"}.get(obj, attr or "helper") \
                if isinstance(obj, types.ModuleType) else (attr or "helper")
            key = self.namer.fresh(base)
            self.env[key] = obj
            self._bound[id(obj)] = key
        return name(self._bound[id(obj)])

    def helper(self, obj, *args) -> gast.Call:
        return call(self.ref(obj), *args)

    # ---------------------------------------------------------------- prologue
    def prologue(self) -> list:
        """Mapped axes to the front, the batch size, and the size checks."""
        out, first = [], None
        for param, axes in zip(self.fn.params, self.spec.in_axes):
            if axes is None:
                continue
            if isinstance(axes, int) and axes != 0:
                out.append(assign(store(param), self.helper(rules.to_front, name(param),
                                                            const(axes))))
            size = self.size_of(param, axes)
            if size is None:
                continue
            if first is None:
                first = param
                if self.spec.axis_size is None:
                    out.append(assign(store(self.size_name), size))
                    continue
                out.append(assign(store(self.size_name), const(self.spec.axis_size)))
                out.append(gast.Expr(value=self.helper(
                    rules.check_size, const(self.spec.axis_size), size,
                    const("axis_size"), const(param))))
                continue
            out.append(gast.Expr(value=self.helper(rules.check_size, name(self.size_name), size,
                                                   const(first), const(param))))
        if first is None:
            if self.spec.axis_size is None:
                raise TransformError(f"vmap of {self.fn.name}: every in_axes is None, so the "
                                     "batch size is unknown",
                                     hint="pass axis_size=..., or map at least one argument")
            out.append(assign(store(self.size_name), const(self.spec.axis_size)))
        return out

    def size_of(self, param: str, axes):
        """The expression for the batch size of a mapped parameter (None: no leaf mapped)."""
        if self.spec.identity is not None and param == self.fn.params[self.spec.identity]:
            return self.helper(basis_size, name(param))
        if isinstance(axes, int):
            if self.analysis.flags.get(param) is True:
                return subscript(gast.Attribute(value=name(param), attr="shape",
                                                ctx=gast.Load()), const(0))
            return self.helper(rules.batch_size_of, name(param))
        path = _first_mapped(axes)
        if path is None:
            return None
        value = name(param)
        for key in path:
            value = subscript(value, const(key))
        return self.helper(rules.batch_size_of, value)

    def header(self, body: list, reason: str) -> list:
        line = f"vmap: {self.strategy} strategy - {reason}"
        annotate(body[0], line)
        return body

    def function(self, body: list) -> Function:
        node = copy_tree(self.fn.node)
        node.name = self.namer.fresh(f"{self.fn.name}_vmap")
        node.body = body
        identity = "" if self.spec.identity is None else \
            f", identity={self.fn.params[self.spec.identity]}"
        label = f"vmap(in_axes={_axes_label(self.spec.in_axes)}, " \
            f"out_axes={self.spec.out_axes!r}, method={self.strategy!r}{identity})"
        return self.fn.with_transform(node, label, self.env)

    # ---------------------------------------------------------------- outputs
    def output(self, value: gast.expr, flag, out_axes, node) -> gast.expr:
        """The returned expression with each leaf's batch axis placed per `out_axes`."""
        literal = self.analysis.literals.get(value.id) if isinstance(value, gast.Name) \
            else None
        if isinstance(out_axes, (tuple, list, dict)) or not isinstance(flag, bool):
            if literal is None:
                return self._output_leaf(value, flag, out_axes, node)
            keys = [k.value for k in literal.keys] if isinstance(literal, gast.Dict) \
                else list(range(len(literal.elts)))
            values = literal.values if isinstance(literal, gast.Dict) else literal.elts
            parts = []
            for k, v in zip(keys, values):
                sub_axes = out_axes[k] if isinstance(out_axes, (tuple, list, dict)) \
                    else out_axes
                parts.append(self.output(v, self.analysis.expr(v), sub_axes, node))
            if isinstance(literal, gast.Dict):
                return gast.Dict(keys=[const(k) for k in keys], values=parts)
            if isinstance(literal, gast.List):      # a list stays a list, as in JAX
                return gast.List(elts=parts, ctx=gast.Load())
            return gast.Tuple(elts=parts, ctx=gast.Load())
        return self._output_leaf(value, flag, out_axes, node)

    def _output_leaf(self, value, flag, out_axes, node):
        if flag is IDENTITY and isinstance(out_axes, int):
            if out_axes == -1:                   # built in place: no axis move to copy
                return self.helper(rules.identity_batch_last, value, name(self.basis_name))
            value, flag = self.expand(value), True
        elif _holds_identity(flag):
            raise NeedsLoop("an output holds an identity batch inside a container", node)
        if isinstance(out_axes, (tuple, list, dict)):
            raise self.fn.origin.error(node, f"out_axes {out_axes!r} does not match the "
                                       f"structure returned by {self.fn.name}",
                                       "give one out_axes entry per returned value")
        batched = any_batched(flag)
        if out_axes is None:
            if batched:
                raise self.fn.origin.error(node, f"vmap of {self.fn.name}: out_axes is None "
                                           "but this output varies over the mapped axis",
                                           "give an int out_axes for it")
            return value
        if not batched:
            value = self.helper(rules.broadcast_batch, value, name(self.size_name))
        elif not isinstance(flag, bool) and flag != Each(True) and \
                not all(f is True for f in flag):
            raise self.fn.origin.error(node, "vmap: this output mixes batched and unbatched "
                                       "parts that cannot be told apart here",
                                       "return a tuple or dict literal")
        if out_axes != 0:
            value = self.helper(rules.from_front, value, const(out_axes))
        return value


_METADATA = ("shape", "ndim", "size", "dtype")
# the fields of a statement holding the expressions it evaluates itself
_OPERANDS = {gast.Assign: ("value", "targets"), gast.Expr: ("value",), gast.If: ("test",),
             gast.While: ("test",), gast.For: ("iter",), gast.Assert: ("test",)}


def _statements(body):
    """Every statement of `body`, nested ones included."""
    for stmt in body:
        yield stmt
        for field in ("body", "orelse"):
            yield from _statements(getattr(stmt, field, []))


def _batch_reads(value, flags: dict, read: set) -> None:
    """Add to `read` the identity-batched names `value` reads other than for a shape."""
    for node in value if isinstance(value, list) else [value]:
        if isinstance(node, gast.Attribute) and node.attr in _METADATA:
            continue
        if isinstance(node, gast.Name) and isinstance(node.ctx, gast.Load) and \
                flags.get(node.id) is IDENTITY:
            read.add(node.id)
        elif isinstance(node, gast.AST):
            _batch_reads(list(gast.iter_child_nodes(node)), flags, read)


def _holds_identity(flag) -> bool:
    return _any_leaf(flag, lambda leaf: leaf is IDENTITY)


def _first_mapped(axes, path=()):
    """The keys leading to the first mapped leaf of a container's in_axes, or None."""
    if axes is None:
        return None
    if isinstance(axes, int):
        if axes != 0:
            raise TransformError(f"vmap in_axes {axes} inside a container: only 0 or None "
                                 "can map the leaves of a tuple or dict argument",
                                 hint="move the mapped axis to the front first")
        return path
    keys = range(len(axes)) if isinstance(axes, tuple) else axes.keys()
    for key in keys:
        found = _first_mapped(axes[key], path + (key,))
        if found is not None:
            return found
    return None


def _axes_label(in_axes) -> str:
    return repr(in_axes[0]) if len(in_axes) == 1 else repr(tuple(in_axes))
