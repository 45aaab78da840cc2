"""vmap as a source transformation: a per-example function in, a batched function out.

Input: any Function (a user's function or the output of another transformation); it is
normalized with `anf(desugar(...))` first. Output invariant: a Function with the same
parameters whose mapped arguments carry the batch along their `in_axes` and whose
outputs carry it along `out_axes`. Its first statement is annotated with the strategy
used and why, and it takes one of two shapes:

- *vectorize*: the original statements, each rewritten by its batching rule
  (`transformer.rules.batching`) to work on all examples at once over a leading batch
  axis: `np.dot(W, x)` with `x` batched is one matrix-matrix product, reductions shift
  their axes, a batched index gathers. Control flow stays as written and never depends
  on the batch.
- *loop*: a loop over the examples calling the original function on each one
  (`prange`, so `jit(..., parallel=True)` runs the examples in parallel). Used when the
  batch changes control flow (a batched `if`/`while` condition or loop bound), when a
  batched index is used in a write, or when a primitive has no batching rule. A batched
  `if` therefore never runs both branches for an example.

Which values are batched is decided by a flow-insensitive analysis: a variable is
batched if any assignment to it is; assignments of unbatched values to such a variable
broadcast them. Names that may share an array written in place (`aliases.py`) are
batched alike; a view other than a name or an item at an unbatched index, an unbatched
argument written through another name, or a call writing into its argument takes the
loop. A flag is `False`, `True`, or a structure for containers: a tuple or
dict of flags, or `Each(flag)` for a container whose every leaf has one flag.

Identity batches (jacfwd's basis push, `Spec.identity`): the mapped argument is passed as
one example-shaped array `d` standing for the batch `e_k * d` over the unit vectors `e_k`.
A variable flagged `IDENTITY` holds such a `d`; the statements that keep a value identity-
batched (`rules.LINEAR`: a product with unbatched values, sums of identity batches) run
as written, on `d`. Any other use first expands it to an ordinary batch
(`rules.identity_batch`), and so does an output, so the batched function's results are
those of the ordinary batch.
"""
from __future__ import annotations

import copy
import dataclasses
import math
import types
from typing import Any

import gast
import numba
import numpy as np

from codegen.backends import is_user_function
from codegen.emit import annotate, expression_source

from .anf import anf
from .aliases import write_through, written_alias_groups, written_params
from .basis import basis_size
from .desugar import desugar, view_sources
from .errors import TransformError
from .frontend import parse
from .function import Function, resolve
from .names import Namer
from .rules import batching as rules
from .runtime import update_in_place
from .syntax import assign, call, const, name, store, subscript

# ====================================================================== flags


@dataclasses.dataclass(frozen=True)
class Each:
    """A container (dict, tuple) whose every leaf has the same batch flag."""

    flag: Any


class _Identity:
    """The flag of an identity-batched value (see the module docstring)."""

    def __bool__(self) -> bool:
        return True

    def __repr__(self) -> str:
        return "IDENTITY"


IDENTITY = _Identity()


def _any_leaf(flag, test) -> bool:
    """Whether `test` holds for some leaf of `flag`, through `Each`, tuples and dicts."""
    if isinstance(flag, Each):
        return _any_leaf(flag.flag, test)
    if isinstance(flag, tuple):
        return any(_any_leaf(f, test) for f in flag)
    if isinstance(flag, dict):
        return any(_any_leaf(f, test) for f in flag.values())
    return test(flag)


def any_batched(flag) -> bool:
    return _any_leaf(flag, bool)


def join(a, b):
    if a == b:
        return a
    if a is IDENTITY or b is IDENTITY:         # not identity-batched on every path
        return True
    if isinstance(a, tuple) and isinstance(b, tuple) and len(a) == len(b):
        return tuple(join(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict) and a.keys() == b.keys():
        return {k: join(a[k], b[k]) for k in a}
    if a is False:
        return b
    if b is False:
        return a
    return any_batched(a) or any_batched(b)


def batched_leaves(flag):
    """`flag` with every leaf batched, keeping its tuple or dict structure: a value
    computed under batched control flow differs per example in each of its parts."""
    if isinstance(flag, tuple):
        return tuple(batched_leaves(f) for f in flag)
    if isinstance(flag, dict):
        return {k: batched_leaves(f) for k, f in flag.items()}
    return True


def child(flag, key):
    """The flag of `container[key]` for a constant key."""
    if isinstance(flag, Each):
        return flag.flag
    if isinstance(flag, tuple) and isinstance(key, int) and -len(flag) <= key < len(flag):
        return flag[key]
    if isinstance(flag, dict) and key in flag:
        return flag[key]
    return any_batched(flag)


# ====================================================================== specification


@dataclasses.dataclass(frozen=True)
class Spec:
    """What to batch: one in_axes entry per parameter (None, an int, or a pytree)."""

    in_axes: tuple
    out_axes: Any = 0
    axis_size: int | None = None
    axis_name: Any = None
    method: str = "auto"
    identity: int | None = None     # the parameter passed as `d` of an identity batch


class NeedsLoop(Exception):
    """Raised while vectorizing: this statement needs the loop strategy."""

    def __init__(self, reason: str, node):
        super().__init__(reason)
        self.reason, self.node = reason, node


def _line(fn: Function, node) -> str:
    lineno = getattr(node, "lineno", None)
    return f"line {lineno}" if lineno else fn.origin.describe()


# ====================================================================== analysis

# values that hold the very arrays of their operands, batched or not
_PLAIN_ALIASES = (gast.Name, gast.Tuple, gast.List)


class Analysis:
    """Batch flags of every local variable, and the first reason to loop, if any."""

    def __init__(self, fn: Function, params: dict, axis_name):
        self.fn, self.axis_name = fn, axis_name
        self.flags: dict[str, Any] = dict(params)
        self.literals: dict[str, gast.expr] = {}
        self.range_targets: set[str] = set()
        self.reason: tuple[str, Any] | None = None
        self.output = False
        counts: dict[str, int] = {}
        for node in gast.walk(fn.node):
            if isinstance(node, gast.Assign) and isinstance(node.targets[0], gast.Name):
                counts[node.targets[0].id] = counts.get(node.targets[0].id, 0) + 1
                if isinstance(node.value, (gast.Tuple, gast.List, gast.Dict)):
                    self.literals[node.targets[0].id] = node.value
        self.literals = {k: v for k, v in self.literals.items()
                         if counts[k] == 1 and k not in params}
        self.groups = written_alias_groups(fn, tuple(rules.MUTATES))
        for _ in range(50):
            before = (dict(self.flags), self.output)
            self.block(fn.node.body, False)
            self.batch_shared(params)
            if (self.flags, self.output) == before:
                break
        self.check_shared_views()

    def batch_shared(self, params: dict) -> None:
        """Names that may share an array written in place are batched alike: a write of
        batched values through one must reach the others, so all hold the batch axis
        (an unbatched array is broadcast once, where it is made)."""
        for group in self.groups:
            if not any(any_batched(self.flags.get(n, False)) for n in group):
                continue
            unbatched = sorted(n for n in group if not any_batched(self.flags.get(n, False)))
            if any(n in params for n in unbatched):
                self.why(f"`{unbatched[0]}` is an unbatched argument written in place "
                         "through another name", write_through(self.fn, group) or self.fn.node)
            for n in unbatched:
                if isinstance(self.flags.get(n, False), bool) and n not in params:
                    self.set(n, True)

    def check_shared_views(self) -> None:
        """A batched view must be a view where each example's is: a plain name, an item or
        slice at an unbatched index, an in-place update; other views take the loop."""
        shared = set().union(*self.groups)
        for stmt in gast.walk(self.fn.node):
            if not (isinstance(stmt, gast.Assign) and isinstance(stmt.targets[0], gast.Name)
                    and stmt.targets[0].id in shared
                    and any_batched(self.flags.get(stmt.targets[0].id, False))):
                continue
            value = stmt.value
            if not view_sources(self.fn, value) or isinstance(value, _PLAIN_ALIASES):
                continue
            if isinstance(value, gast.Subscript) and not self.index_flag(value.slice):
                continue
            if isinstance(value, gast.Call) and \
                    resolve(self.fn, value.func, None) is update_in_place:
                continue
            self.why(f"`{stmt.targets[0].id}` may be a view written in place", stmt)

    def why(self, message: str, node) -> None:
        if self.reason is None:
            self.reason = (f"{message} at {_line(self.fn, node)}", node)

    def set(self, target: str, flag) -> None:
        self.flags[target] = join(self.flags[target], flag) if target in self.flags \
            else flag

    def block(self, stmts, control: bool) -> None:
        for stmt in stmts:
            self.statement(stmt, control)

    def statement(self, stmt, control: bool) -> None:
        """Update the flags for one statement; `control`: it runs under batched control."""
        method = getattr(self, "stmt_" + type(stmt).__name__, None)
        if method is not None:
            method(stmt, control)

    def stmt_Assign(self, stmt, control: bool) -> None:
        target = stmt.targets[0]
        value = self.expr(stmt.value)
        if isinstance(target, gast.Name):
            self.set(target.id, batched_leaves(value) if control else value)
            return
        index = self.index_flag(target.slice)
        if index:
            self.why("a batched index is used in a write", stmt)
        self.set(target.value.id, bool(control or index or any_batched(value)))

    def batched_test(self, stmt, keyword: str) -> bool:
        """Whether the condition of an `if`/`while` depends on the batch (and why, if so)."""
        test = any_batched(self.expr(stmt.test))
        if test:
            self.why(f"the `{keyword}` condition (`{expression_source(stmt.test)}`) depends "
                     "on the batch", stmt)
        return test

    def stmt_If(self, stmt, control: bool) -> None:
        test = self.batched_test(stmt, "if")
        self.block(stmt.body, control or test)
        self.block(stmt.orelse, control or test)

    def stmt_For(self, stmt, control: bool) -> None:
        bound = any(any_batched(self.expr(a)) for a in stmt.iter.args)
        if bound:
            self.why("a loop bound depends on the batch", stmt)
        self.range_targets.add(stmt.target.id)
        self.set(stmt.target.id, control or bound)
        self.block(stmt.body, control or bound)

    def stmt_While(self, stmt, control: bool) -> None:
        test = self.batched_test(stmt, "while")
        self.block(stmt.body, control or test)

    def stmt_Return(self, stmt, control: bool) -> None:
        flag = self.expr(stmt.value)
        self.output = join(self.output, batched_leaves(flag) if control else flag)

    def stmt_Expr(self, stmt, control: bool) -> None:
        self.expr(stmt.value)
        self.mutation(stmt.value, control)

    def mutation(self, node, control: bool) -> None:
        """A helper that writes into an argument makes it batched like a write would."""
        if not isinstance(node, gast.Call):
            return
        position = _lookup(rules.MUTATES, resolve(self.fn, node.func, None))
        if position is None or len(node.args) <= position or \
                not isinstance(node.args[position], gast.Name):
            return
        others = [self.expr(a) for i, a in enumerate(node.args) if i != position]
        if control or any(any_batched(f) for f in others):
            self.set(node.args[position].id, True)

    def index_flag(self, index) -> bool:
        if isinstance(index, gast.Slice):
            return any(any_batched(self.expr(p)) for p in (index.lower, index.upper, index.step)
                       if p is not None)
        if isinstance(index, gast.Tuple):
            return any(self.index_flag(e) for e in index.elts)
        return any_batched(self.expr(index))

    def expr(self, node):
        if isinstance(node, gast.Name):
            return self.flags.get(node.id, False)
        if node is None or isinstance(node, gast.Constant):
            return False
        if isinstance(node, gast.Attribute):
            base = self.expr(node.value)
            return any_batched(base) and node.attr not in ("shape", "ndim", "size", "dtype")
        if isinstance(node, gast.BinOp):
            return _linear_flag(type(node.op), [self.expr(node.left), self.expr(node.right)])
        if isinstance(node, gast.UnaryOp):
            return _linear_flag(type(node.op), [self.expr(node.operand)])
        if isinstance(node, gast.Compare):
            return any_batched(self.expr(node.left)) or \
                any_batched(self.expr(node.comparators[0]))
        if isinstance(node, (gast.Tuple, gast.List)):
            return tuple(self.expr(e) for e in node.elts)
        if isinstance(node, gast.Dict):
            if all(isinstance(k, gast.Constant) for k in node.keys):
                return {k.value: self.expr(v) for k, v in zip(node.keys, node.values)}
            return any(any_batched(self.expr(v)) for v in node.values)
        if isinstance(node, gast.Subscript):
            base = self.expr(node.value)
            if isinstance(node.slice, gast.Constant) and not isinstance(base, bool):
                return child(base, node.slice.value)
            return any_batched(base) or self.index_flag(node.slice)
        if isinstance(node, gast.Call):
            return self.call(node)
        return False

    def call(self, node):
        flags = [self.expr(a) for a in node.args] + [self.expr(k.value) for k in node.keywords]
        target = resolve(self.fn, node.func, None)
        kind = _collective_kind(target)
        if kind is not None and self.axis_name is not None and \
                _axis_name_of(node) == self.axis_name:
            return kind == "axis_index"
        if not any(any_batched(f) for f in flags):
            return False
        callee = _callee_function(target)
        if callee is not None:
            written = written_params(callee)
            if written:
                self.why(f"{callee.name} writes into its argument {written[0]!r}", node)
            return _output_structure(callee)
        result_flag = _lookup(rules.RESULT_FLAGS, target)
        if result_flag is not None:
            return result_flag([any_batched(f) for f in flags])
        return True if node.keywords else _linear_flag(target, flags)


def _linear_flag(key, flags: list):
    """The flag of `key` applied to arguments flagged `flags`: IDENTITY when `key` keeps
    identity batches identity-batched (`rules.LINEAR`), else whether any is batched."""
    kind = _lookup(rules.LINEAR, key)
    identity = [f is IDENTITY for f in flags]
    if kind == "all" and all(identity) or \
            kind == "product" and identity.count(True) == 1 and \
            all(f is IDENTITY or f is False for f in flags) or \
            kind == "first" and identity[0] and all(f is False for f in flags[1:]):
        return IDENTITY
    return any(any_batched(f) for f in flags)


def _lookup(table: dict, key):
    try:
        return table.get(key)
    except TypeError:                   # an unhashable object
        return None


def _collective_kind(target) -> str | None:
    """"psum", "pmean", ..., "axis_index" for a collective function, else None."""
    return _lookup(rules.COLLECTIVES, target)


def _axis_name_of(node):
    """The constant axis name a collective call names (`psum(x, "i")`), or None."""
    for k in node.keywords:
        if k.arg == "axis_name" and isinstance(k.value, gast.Constant):
            return k.value.value
    position = 0 if len(node.args) == 1 else 1
    if len(node.args) > position and isinstance(node.args[position], gast.Constant):
        return node.args[position].value
    return None


def _callee_function(target) -> Function | None:
    """The Function behind a call target that secant can transform, else None."""
    if isinstance(target, Function):
        return target
    if hasattr(target, "__secant_function__"):
        return target.__secant_function__()
    if is_user_function(target) or isinstance(target, numba.core.dispatcher.Dispatcher):
        return parse(target)
    return None


def _output_structure(fn: Function):
    """`(True,) * k` if every return of `fn` is a k-tuple literal, else `True`."""
    prepared = prepare(fn)
    returns = [n for n in gast.walk(prepared.node) if isinstance(n, gast.Return)]
    bound = {n.targets[0].id: n.value for n in gast.walk(prepared.node)
             if isinstance(n, gast.Assign) and isinstance(n.targets[0], gast.Name)}
    sizes = set()
    for r in returns:
        value = bound.get(r.value.id) if isinstance(r.value, gast.Name) else r.value
        sizes.add(len(value.elts) if isinstance(value, gast.Tuple) else None)
    if len(sizes) == 1 and None not in sizes:
        return (True,) * sizes.pop()
    return True


def prepare(fn: Function) -> Function:
    return anf(desugar(fn))


# ====================================================================== parameters


def param_flags(fn: Function, spec: Spec) -> dict:
    """The batch flag of each parameter from its in_axes entry."""
    flags = {}
    for param, axes in zip(fn.params, spec.in_axes):
        flags[param] = _flag_of_axes(fn, param, axes)
    if spec.identity is not None:
        flags[fn.params[spec.identity]] = IDENTITY
    return flags


def _flag_of_axes(fn, param, axes):
    if axes is None:
        return False
    if isinstance(axes, int):
        return Each(True) if param is not None and _used_as_container(fn, param) else True
    if isinstance(axes, (tuple, list)):
        return tuple(_flag_of_axes(fn, None, a) for a in axes)
    if isinstance(axes, dict):
        return {k: _flag_of_axes(fn, None, a) for k, a in axes.items()}
    raise TransformError(f"in_axes entry {axes!r} is not an int, None, tuple, list or dict")


def _used_as_container(fn: Function, param: str) -> bool:
    """True when `param` is read with constant string keys (`params["W"]`): a dict."""
    for node in gast.walk(fn.node):
        if isinstance(node, gast.Subscript) and isinstance(node.value, gast.Name) and \
                node.value.id == param and isinstance(node.slice, gast.Constant) and \
                isinstance(node.slice.value, str):
            return True
    return False


# ====================================================================== the pass


def batch(fn: Function, spec: Spec) -> Function:
    """The batched Function of `fn` for `spec` (strategy chosen by `spec.method`)."""
    prepared = prepare(fn)
    params = param_flags(prepared, spec)
    analysis = Analysis(prepared, params, spec.axis_name)
    reason = analysis.reason
    if spec.method == "vectorize" and reason:
        raise prepared.origin.error(reason[1], f"vmap(method='vectorize') cannot batch "
                                    f"{fn.name}: {reason[0]}",
                                    "use method='loop' or method='auto'")
    if spec.identity is not None and reason:
        raise prepared.origin.error(reason[1], f"vmap of an identity batch cannot batch "
                                    f"{fn.name}: {reason[0]}")
    if spec.method != "loop" and reason is None:
        try:
            return _Vectorizer(prepared, spec, analysis).build()
        except NeedsLoop as need:
            if spec.method == "vectorize" or spec.identity is not None:
                raise prepared.origin.error(need.node, f"vmap(method='vectorize') cannot "
                                            f"batch {fn.name}: {need.reason}",
                                            "use method='loop' or method='auto'") from None
            reason = (need.reason, need.node)
    if reason is None:
        reason = ("method='loop' was requested", None)
    return _Looper(prepared, spec, analysis, reason[0]).build()


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
        node = copy.deepcopy(self.fn.node)
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


# ====================================================================== vectorize


class _Vectorizer(_Emitter):
    strategy = "vectorize"

    def __init__(self, fn, spec, analysis):
        super().__init__(fn, spec, analysis)
        self._callees: dict = {}
        self.basis_name = self.namer.fresh("basis")
        self.expanded: dict[str, str] = {}     # identity-batched name -> its batch, once
        self.expand_once: set[str] = set()

    def build(self) -> Function:
        self.fresh_accumulators = _fresh_accumulators(self.fn, self.analysis)
        body = self.prologue()
        if self.spec.identity is not None:
            param = self.fn.params[self.spec.identity]
            body.append(assign(store(self.basis_name), name(param)))
            if self.analysis.flags.get(param) is not IDENTITY:   # also holds other batches
                body.append(assign(store(param), self.expand(name(param))))
            self.expand_once = self.batched_once()
            body += self.expanded_once(param)
        for param in self.fn.params:
            flag = self.analysis.flags.get(param, False)
            declared = param_flags(self.fn, self.spec).get(param, False)
            if any_batched(flag) and not any_batched(declared):
                # an unmapped argument written with batched values: give each example a copy
                body.append(assign(store(param), self.helper(rules.broadcast_batch,
                                                             name(param), self.size)))
        body += self.block(self.fn.node.body)
        return self.function(self.header(body, "every statement has a batching rule"))

    def flag(self, node):
        return self.analysis.expr(node)

    def block(self, stmts) -> list:
        out = []
        for stmt in stmts:
            new = [gast.copy_location(n, stmt) if hasattr(stmt, "lineno") else n
                   for n in self.statement(stmt)]
            self.comment_source_line(stmt, new)
            out.extend(new)
        return out or [gast.Pass()]

    def comment_source_line(self, stmt, new: list) -> None:
        """`# vmap of: <user line>` above the first statement batched from each line."""
        lineno = getattr(stmt, "lineno", None)
        if not new or lineno is None or lineno == getattr(self, "_last_line", None):
            return
        self._last_line = lineno
        text = self.fn.origin.source_line(lineno)
        if text and text.strip():
            annotate(new[0], f"vmap of: {text.strip()}")

    def statement(self, stmt) -> list:
        if id(stmt) in self.fresh_accumulators:
            first = self.fresh_accumulators[id(stmt)]
            return [] if first is None else [assign(copy.deepcopy(stmt.targets[0]), name(first))]
        if self.on_identity(stmt):
            target = stmt.targets[0].id if isinstance(stmt, gast.Assign) else None
            return [copy.deepcopy(stmt)] + self.expanded_once(target)
        before: list = []
        stmt = self.expand_operands(stmt, before)
        return before + self.batched_statement(stmt)

    # ---------------------------------------------------------------- identity batches
    def on_identity(self, stmt) -> bool:
        """True for a statement computing an identity-batched value: it runs on `d`."""
        if isinstance(stmt, gast.Assign) and isinstance(stmt.targets[0], gast.Name):
            return self.analysis.flags.get(stmt.targets[0].id) is IDENTITY
        return isinstance(stmt, gast.Expr) and self.flag(stmt.value) is IDENTITY

    def expand(self, value: gast.expr) -> gast.Call:
        """An identity-batched value as an ordinary batch."""
        return self.helper(rules.identity_batch, value, name(self.basis_name))

    def batched_once(self) -> set:
        """Identity-batched names read as ordinary batches (not only for their shape)
        that are assigned once at the top level, or are a parameter never assigned: their
        batch is built once, where they are defined, and not again at each use (a read
        `dx[i]` inside a loop would otherwise build it on every iteration)."""
        counts: dict[str, int] = {}
        for node in gast.walk(self.fn.node):
            if isinstance(node, gast.Name) and isinstance(node.ctx, gast.Store):
                counts[node.id] = counts.get(node.id, 0) + 1
        top = {s.targets[0].id for s in self.fn.node.body
               if isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name)}
        once = {n for n, c in counts.items() if c == 1 and n in top}
        once |= {p for p in self.fn.params if p not in counts}
        read: set[str] = set()
        for stmt in _statements(self.fn.node.body):
            if not self.on_identity(stmt) and self.expands(stmt):
                for field in _OPERANDS.get(type(stmt), ()):
                    _batch_reads(getattr(stmt, field), self.analysis.flags, read)
        return once & read

    def expanded_once(self, target) -> list:
        """The statement building `target`'s batch right after its definition, if wanted."""
        if target not in self.expand_once:
            return []
        batch = self.namer.fresh(target + "_batch")
        self.expanded[target] = batch
        self.analysis.flags[batch] = True
        return [assign(store(batch), self.expand(name(target)))]

    def expands(self, stmt) -> bool:
        """Whether `stmt`'s identity-batched operands are read as ordinary batches."""
        return self.spec.identity is not None and not isinstance(stmt, gast.Return) and \
            not (isinstance(stmt, gast.Assign) and
                 isinstance(stmt.value, (gast.Tuple, gast.List, gast.Dict)))

    def expand_operands(self, stmt, before: list):
        """`stmt` with each identity-batched operand read from an ordinary batch, the
        statements computing those batches appended to `before`."""
        if not self.expands(stmt):
            return stmt                 # outputs expand in `output`; literals keep `d`
        stmt = copy.copy(stmt)
        for field in _OPERANDS.get(type(stmt), ()):
            value = getattr(stmt, field)
            setattr(stmt, field, [self.expand_in(v, before, stmt) for v in value]
                    if isinstance(value, list) else self.expand_in(value, before, stmt))
        return stmt

    def expand_in(self, node, before: list, stmt):
        if isinstance(node, gast.Name):
            flag = self.analysis.flags.get(node.id, False)
            if not isinstance(node.ctx, gast.Load) or not _holds_identity(flag):
                return node
            if flag is not IDENTITY:
                raise NeedsLoop(f"`{node.id}` holds an identity batch inside a container",
                                stmt)
            if node.id in self.expanded:
                return name(self.expanded[node.id])
            batch = self.namer.fresh(node.id + "_batch")
            before.append(assign(store(batch), self.expand(name(node.id))))
            self.analysis.flags[batch] = True
            return name(batch)
        if isinstance(node, gast.Attribute) and node.attr in _METADATA or \
                isinstance(node, gast.Subscript) and isinstance(node.slice, gast.Constant) \
                and not isinstance(self.flag(node.value), (bool, _Identity)):
            return node                 # the shape of `d` is the example's; `d` in a tuple
        node = copy.copy(node)
        for field, value in gast.iter_fields(node):
            if isinstance(value, gast.AST):
                setattr(node, field, self.expand_in(value, before, stmt))
            elif isinstance(value, list):
                setattr(node, field, [self.expand_in(v, before, stmt)
                                      if isinstance(v, gast.AST) else v for v in value])
        return node

    def batched_statement(self, stmt) -> list:
        if isinstance(stmt, gast.Assign):
            return self.assign(stmt)
        if isinstance(stmt, gast.If):
            return [gast.If(test=stmt.test, body=self.block(stmt.body),
                            orelse=self.block(stmt.orelse) if stmt.orelse else [])]
        if isinstance(stmt, gast.For):
            return [gast.For(target=stmt.target, iter=stmt.iter, body=self.block(stmt.body),
                             orelse=[], type_comment=None)]
        if isinstance(stmt, gast.While):
            return [gast.While(test=stmt.test, body=self.block(stmt.body), orelse=[])]
        if isinstance(stmt, gast.Return):
            value = self.output(stmt.value, self.flag(stmt.value), self.spec.out_axes, stmt)
            return [gast.Return(value=value)]
        if isinstance(stmt, gast.Expr):
            value, _ = self.expr(stmt.value, stmt, statement=True)
            return [gast.Expr(value=value)]
        if isinstance(stmt, gast.Assert) and any_batched(self.flag(stmt.test)):
            return [gast.Assert(test=self.helper(np.all, stmt.test), msg=stmt.msg)]
        return [copy.deepcopy(stmt)]

    def assign(self, stmt) -> list:
        target = stmt.targets[0]
        value, flag = self.expr(stmt.value, stmt)
        if flag is IDENTITY:            # `d` taken out of a tuple into a batched variable
            value, flag = self.expand(value), True
        if isinstance(target, gast.Name):
            wanted = self.analysis.flags.get(target.id, False)
            if any_batched(wanted) and not any_batched(flag):
                value = self.helper(rules.broadcast_batch, value, self.size)
            elif wanted != flag and not isinstance(wanted, bool) and \
                    not (isinstance(flag, bool) and not flag):
                raise NeedsLoop(f"`{target.id}` holds containers batched in different ways",
                                stmt)
            return [assign(copy.deepcopy(target), value)]
        base = target.value
        if not any_batched(self.analysis.flags.get(base.id, False)):
            return [assign(copy.deepcopy(target), value)]
        index = self.example_index(target.slice, stmt)
        place = gast.Subscript(value=copy.deepcopy(base), slice=index, ctx=gast.Store())
        if any_batched(flag):
            view = gast.Subscript(value=copy.deepcopy(base), slice=copy.deepcopy(index),
                                  ctx=gast.Load())
            value = self.helper(rules.align_batched, value, view)
        return [assign(place, value)]

    # ---------------------------------------------------------------- expressions
    def expr(self, node, stmt, statement: bool = False):
        """(batched expression, flag) for one ANF right-hand side."""
        flag = self.flag(node)
        if isinstance(node, (gast.Name, gast.Constant)) or node is None:
            return node, flag
        if isinstance(node, gast.BinOp):
            return self.rule(type(node.op), [node.left, node.right], {}, stmt, node)
        if isinstance(node, gast.UnaryOp):
            return self.rule(type(node.op), [node.operand], {}, stmt, node)
        if isinstance(node, gast.Compare):
            return self.rule(type(node.ops[0]), [node.left, node.comparators[0]], {}, stmt,
                             node)
        if isinstance(node, gast.Call):
            return self.call(node, stmt, statement)
        if isinstance(node, gast.Subscript):
            return self.getitem(node, stmt), flag
        if isinstance(node, gast.Attribute):
            if not any_batched(self.flag(node.value)) or self.flag(node.value) is IDENTITY:
                return node, False
            result = rules.batched_attribute(node.value, node.attr)
            if result is None:
                raise NeedsLoop(f"no batching rule for the attribute `.{node.attr}`", stmt)
            return result
        return node, flag                       # Tuple, List, Dict literals of atoms

    def rule(self, key, args, keywords, stmt, node, statement=False):
        batched = [any_batched(self.flag(a)) for a in args]
        kw_batched = {k: any_batched(self.flag(v)) for k, v in keywords.items()}
        if not any(batched) and not any(kw_batched.values()):
            return node, False
        batcher = rules.BATCHERS.get(key)
        if batcher is None:
            raise NeedsLoop(f"no batching rule for {rules.describe(key)}", stmt)
        site = rules.Site(key, list(args), batched, dict(keywords), kw_batched, self.ref,
                          self.size, statement)
        result = batcher(site)
        if result is None:
            raise NeedsLoop(f"the batching rule for {rules.describe(key)} does not handle "
                            f"this call (`{expression_source(node)}`)", stmt)
        return result

    def call(self, node, stmt, statement=False):
        target = resolve(self.fn, node.func, None)
        kind = _collective_kind(target)
        if kind is not None:
            return self.collective(kind, node, stmt)
        flags = [self.flag(a) for a in node.args] + [self.flag(k.value) for k in node.keywords]
        if not any(any_batched(f) for f in flags):
            return node, False
        callee = _callee_function(target)
        if callee is not None:
            return self.user_call(target, callee, node), self.flag(node)
        if target is None:
            raise NeedsLoop(f"the call `{expression_source(node)}` has batched arguments and "
                            "its function is not known before run time", stmt)
        keywords = {k.arg: k.value for k in node.keywords}
        return self.rule(target, node.args, keywords, stmt, node, statement)

    def user_call(self, target, callee: Function, node) -> gast.Call:
        """A call of the batched version of a user function (built once per flags)."""
        sig_params = callee.params
        axes = [None] * len(sig_params)
        for i, arg in enumerate(node.args):
            axes[i] = 0 if any_batched(self.flag(arg)) else None
        for k in node.keywords:
            if k.arg in sig_params:
                axes[sig_params.index(k.arg)] = 0 if any_batched(self.flag(k.value)) else None
        spec = Spec(tuple(axes), 0, None, self.spec.axis_name, "auto")
        cache_key = (id(target), spec.in_axes)
        if cache_key not in self._callees:
            key = self.namer.fresh(f"{callee.name}_vmap")
            self.env[key] = batch(callee, spec)
            self._callees[cache_key] = (key, target)     # target kept alive: ids stay unique
        key = self._callees[cache_key][0]
        return gast.Call(func=name(key), args=list(node.args), keywords=list(node.keywords))

    def collective(self, kind: str, node, stmt):
        ours = self.spec.axis_name is not None and _axis_name_of(node) == self.spec.axis_name
        if kind == "axis_index":
            if ours:
                return self.helper(np.arange, self.size), True
            return node, False
        value = node.args[0]
        batched = any_batched(self.flag(value))
        if not ours:                    # another vmap's axis: passes through per example
            return node, batched
        on_batched, on_unbatched = rules.COLLECTIVE_RULES[kind]
        if not batched:
            return self.helper(on_unbatched, value, self.size), False
        return self.helper(on_batched, value), False

    def getitem(self, node, stmt):
        base, index = node.value, node.slice
        base_flag = self.flag(base)
        if isinstance(index, gast.Constant) and not isinstance(base_flag, bool):
            return node                 # an element of a tuple or dict of batched values
        index_batched = self.analysis.index_flag(index)
        if not any_batched(base_flag):
            if not index_batched:
                return node
            return gast.Subscript(value=base, slice=self.gather_index(index, stmt),
                                  ctx=gast.Load())
        if index_batched:
            if isinstance(index, (gast.Tuple, gast.Slice)):
                raise NeedsLoop("a batched index inside a tuple index of a batched array",
                                stmt)
            return self.helper(rules.take_batched, base, index)
        return self.indexed(base, index, stmt)

    def indexed(self, base, index, stmt):
        if isinstance(index, gast.Name) and index.id not in self.analysis.range_targets:
            return self.helper(rules.index_examples, base, index)
        return gast.Subscript(value=base, slice=self.example_index(index, stmt),
                              ctx=gast.Load())

    def example_index(self, index, stmt):
        """`index` of one example as an index of the batched array (`:` in front)."""
        whole = gast.Slice(lower=None, upper=None, step=None)
        if isinstance(index, gast.Name) and index.id not in self.analysis.range_targets:
            raise NeedsLoop("a write through an index that may be a tuple", stmt)
        if isinstance(index, gast.Tuple):
            return gast.Tuple(elts=[whole] + list(index.elts), ctx=gast.Load())
        return gast.Tuple(elts=[whole, index], ctx=gast.Load())

    def gather_index(self, index, stmt):
        """An unbatched array indexed by batched indices: each batched part aligned."""
        if not isinstance(index, gast.Tuple):
            return index
        if any(isinstance(e, gast.Slice) for e in index.elts):
            raise NeedsLoop("a batched index next to a slice", stmt)
        site = rules.Site(None, list(index.elts),
                          [any_batched(self.flag(e)) for e in index.elts], {}, {},
                          self.ref, self.size)
        return gast.Tuple(elts=rules.aligned(site), ctx=gast.Load())


# ---------------------------------------------------------------- fresh accumulators
# Reverse mode starts each adjoint at zero (`bW = zeros_like(W)`) and adds contributions
# (`bW = bW + matmul_grad_left(g, W, x)`). Batched, the zeros would be one copy of `W`
# per example and the addition another full pass: when the first contribution is one of
# these adjoint helpers, whose result has exactly the shape of that argument, the
# accumulator simply starts as that contribution.

def _shape_argument():
    from . import runtime
    table = {runtime.unbroadcast: 1, runtime.matmul_grad_left: 1,
             runtime.matmul_grad_right: 2, runtime.broadcast_reduced: 1}
    zeros = {runtime.zeros_like, np.zeros_like}
    try:
        from . import reverse
        zeros.add(reverse.float_zeros)
    except ImportError:           # reverse mode not installed in a partial checkout
        pass
    return table, zeros


def _fresh_accumulators(fn: Function, analysis: Analysis) -> dict:
    """id(statement) -> None (drop the zeros) or the name the accumulator starts as."""
    table, zeros = _shape_argument()
    body, found = fn.node.body, {}
    written = _written_in_place(fn)
    calls = {s.targets[0].id: s.value for s in body if isinstance(s, gast.Assign) and
             isinstance(s.targets[0], gast.Name) and isinstance(s.value, gast.Call)}
    for i, stmt in enumerate(body):
        zero_of = _zeros_of(fn, stmt, zeros)
        if zero_of is None:
            continue
        target, source = zero_of
        if target in written or not any_batched(analysis.flags.get(target, False)) or \
                any_batched(analysis.flags.get(source, False)):
            continue
        for later in body[i + 1:]:
            first = _first_contribution(fn, later, target, source, calls, table)
            if first is not None and first not in written and \
                    analysis.flags.get(first) is True:
                found[id(stmt)], found[id(later)] = None, first
                break
            if target in {n.id for n in gast.walk(later) if isinstance(n, gast.Name)}:
                break
    return found


def _zeros_of(fn, stmt, zeros):
    if isinstance(stmt, gast.Assign) and isinstance(stmt.targets[0], gast.Name) and \
            isinstance(stmt.value, gast.Call) and stmt.value.args and \
            isinstance(stmt.value.args[0], gast.Name) and \
            _lookup_set(zeros, resolve(fn, stmt.value.func, None)):
        return stmt.targets[0].id, stmt.value.args[0].id
    return None


def _lookup_set(table, key) -> bool:
    try:
        return key in table
    except TypeError:
        return False


def _first_contribution(fn, stmt, target, source, calls, table):
    """`e` if `stmt` is `target = target + e` with `e` an adjoint shaped like `source`."""
    if not (isinstance(stmt, gast.Assign) and isinstance(stmt.targets[0], gast.Name) and
            stmt.targets[0].id == target and isinstance(stmt.value, gast.BinOp) and
            isinstance(stmt.value.op, gast.Add)):
        return None
    left, right = stmt.value.left, stmt.value.right
    if isinstance(left, gast.Name) and left.id == target and isinstance(right, gast.Name):
        other = right.id
    elif isinstance(right, gast.Name) and right.id == target and isinstance(left, gast.Name):
        other = left.id
    else:
        return None
    call_node = calls.get(other)
    if call_node is None:
        return None
    position = _lookup(table, resolve(fn, call_node.func, None))
    if position is None or len(call_node.args) <= position:
        return None
    shaped = call_node.args[position]
    return other if isinstance(shaped, gast.Name) and shaped.id == source else None


def _written_in_place(fn: Function) -> set:
    """Names written through an index or by a helper that writes into an argument."""
    out = set()
    for node in gast.walk(fn.node):
        if isinstance(node, gast.Assign) and isinstance(node.targets[0], gast.Subscript) \
                and isinstance(node.targets[0].value, gast.Name):
            out.add(node.targets[0].value.id)
        if isinstance(node, gast.Call):
            position = _lookup(rules.MUTATES, resolve(fn, node.func, None))
            if position is not None and len(node.args) > position and \
                    isinstance(node.args[position], gast.Name):
                out.add(node.args[position].id)
    return out


# ====================================================================== loop


class _Looper(_Emitter):
    strategy = "loop"

    def __init__(self, fn, spec, analysis, reason):
        super().__init__(fn, spec, analysis)
        self.reason = reason

    def build(self) -> Function:
        if _uses_collectives(self.fn, self.spec.axis_name):
            node = next(n for n in gast.walk(self.fn.node) if isinstance(n, gast.Call) and
                        _collective_kind(resolve(self.fn, n.func, None)) is not None)
            raise self.fn.origin.error(
                node, f"vmap of {self.fn.name} needs the loop strategy ({self.reason}), "
                "which cannot run collectives over the mapped axis",
                "compute the collective outside the branch or loop that depends on the batch")
        example = self.namer.fresh(f"{self.fn.name}_example")
        self.env[example], self.leaves, self.result_index = _flatten_example(self.fn)
        b = self.namer.fresh("b")
        body = self.prologue()
        body.append(gast.Expr(value=self.helper(rules.check_examples, self.size)))
        first = self.namer.fresh("first")
        body.append(assign(store(first), self.example_call(example, const(0))))
        structure = self.structure()
        results = self.allocate(first, structure, body)
        step: list = []
        out = self.namer.fresh("out")
        step.append(assign(store(out), self.example_call(example, name(b))))
        self.store(results, structure, out, name(b), step)
        prange = self.ref(numba.prange)
        body.append(gast.For(target=store(b), iter=call(prange, const(1), self.size),
                             body=step, orelse=[], type_comment=None))
        value = self.collect(results, structure, first, self.spec.out_axes)
        body.append(gast.Return(value=value))
        return self.function(self.header(body, self.reason))

    def example_call(self, example: str, b) -> gast.Call:
        args, keywords = [], []
        kwonly = {a.id for a in self.fn.node.args.kwonlyargs}
        for param, axes in zip(self.fn.params, self.spec.in_axes):
            for label, value in self.example_arguments(param, axes, b):
                if param in kwonly:
                    keywords.append(gast.keyword(arg=label, value=value))
                else:
                    args.append(value)
        return gast.Call(func=name(example), args=args, keywords=keywords)

    def example_arguments(self, param: str, axes, b) -> list:
        """(parameter name, value) pairs passing `param` of example `b` to the example
        function: a container read only with constant keys goes leaf by leaf."""
        if param in self.leaves:
            out = []
            for key, leaf in self.leaves[param]:
                value = subscript(name(param), const(key))
                leaf_axes = axes.get(key) if isinstance(axes, dict) else axes
                out.append((leaf, subscript(value, copy.deepcopy(b))
                            if leaf_axes is not None else value))
            return out
        value = name(param)
        if axes is not None:
            value = subscript(name(param), b) if self.analysis.flags.get(param) is True \
                else self.helper(rules.take_example, name(param), b)
        return [(param, value)]

    def part(self, value: str, key):
        """`value[key]` of an example function's result (dicts come back as tuples)."""
        return subscript(name(value), const(self.result_index.get(key, key)))

    def structure(self):
        """The keys of the returned tuple or dict literal (ints or strings), else None."""
        output = self.analysis.output
        if isinstance(output, tuple):
            return list(range(len(output)))
        if isinstance(output, dict):
            return list(output)
        return None

    def allocate(self, first: str, structure, body: list) -> list:
        parts = [self.part(first, k) for k in structure] \
            if structure is not None else [name(first)]
        results = []
        for part in parts:
            result = self.namer.fresh("result")
            body.append(assign(store(result), self.helper(rules.batch_empty, self.size, part)))
            body.append(assign(gast.Subscript(value=name(result), slice=const(0),
                                              ctx=gast.Store()), copy.deepcopy(part)))
            results.append(result)
        return results

    def store(self, results, structure, out: str, b, step: list) -> None:
        keys = structure if structure is not None else [None]
        for key, result in zip(keys, results):
            part = self.part(out, key) if structure is not None else name(out)
            step.append(assign(gast.Subscript(value=name(result), slice=copy.deepcopy(b),
                                              ctx=gast.Store()), part))

    def collect(self, results, structure, first: str, out_axes):
        flags = self.analysis.output
        if structure is None:
            return self.leaf(name(results[0]), name(first), any_batched(flags), out_axes)
        parts = []
        for key, result in zip(structure, results):
            axes = out_axes[key] if isinstance(out_axes, (tuple, list, dict)) else out_axes
            parts.append(self.leaf(name(result), self.part(first, key),
                                   any_batched(flags[key]), axes))
        if isinstance(flags, dict):
            return gast.Dict(keys=[const(k) for k in structure], values=parts)
        return gast.Tuple(elts=parts, ctx=gast.Load())

    def leaf(self, stacked, first, batched: bool, out_axes):
        if isinstance(out_axes, (tuple, list, dict)):
            raise self.fn.origin.error(None, f"out_axes {out_axes!r} does not match what "
                                       f"{self.fn.name} returns")
        if out_axes is None:
            if batched:
                raise self.fn.origin.error(None, f"vmap of {self.fn.name}: out_axes is None "
                                           "but the output varies over the mapped axis",
                                           "give an int out_axes for it")
            return first
        if out_axes != 0:
            return self.helper(rules.from_front, stacked, const(out_axes))
        return stacked


# ---------------------------------------------------------------- the example function
# Under jit a dict argument reaches compiled code as a tuple and only the top function's
# constant-key reads are rewritten for it, and Numba cannot return a dict from a called
# function. So the example function takes such a container leaf by leaf (`params_W`
# for `params["W"]`) and returns a dict result as a tuple.

def _flatten_example(fn: Function):
    """(example Function, {param: [(key, leaf parameter)]}, {result key: position})."""
    node = copy.deepcopy(fn.node)
    namer = Namer.for_function(fn)
    leaves = {}
    for param in _container_params(node):
        keys = sorted({sub.slice.value for sub in gast.walk(node)
                       if _is_constant_read(sub, param)}, key=repr)
        leaves[param] = [(key, namer.fresh(f"{param}_{key}")) for key in keys]
    _read_leaves(node, {p: dict(pairs) for p, pairs in leaves.items()})
    _expand_params(node.args, leaves)
    result_index = _dict_results_as_tuples(node)
    return fn.replace(node=node), leaves, result_index


def _is_constant_read(node, param: str) -> bool:
    return isinstance(node, gast.Subscript) and isinstance(node.value, gast.Name) and \
        node.value.id == param and isinstance(node.slice, gast.Constant) and \
        isinstance(node.ctx, gast.Load)


def _container_params(node) -> list:
    """Parameters without a default whose every use is a read with a constant string key
    (dicts; an array indexed by constant ints keeps its batch axis first)."""
    args = node.args
    positional = args.posonlyargs + args.args
    with_default = {a.id for a in positional[len(positional) - len(args.defaults):]} | \
        {a.id for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None}
    out = []
    for param in [a.id for a in positional + args.kwonlyargs]:
        reads = [sub.value for sub in gast.walk(node) if _is_constant_read(sub, param)]
        uses = [n for n in gast.walk(gast.Module(body=node.body, type_ignores=[]))
                if isinstance(n, gast.Name) and n.id == param]
        keys = [sub.slice.value for sub in gast.walk(node) if _is_constant_read(sub, param)]
        if reads and len(reads) == len(uses) and param not in with_default and \
                all(isinstance(k, str) for k in keys):
            out.append(param)
    return out


def _read_leaves(node, leaves: dict) -> None:
    for sub in gast.walk(node):
        for field, value in gast.iter_fields(sub):
            if isinstance(value, list):
                for i, item in enumerate(value):
                    if _is_leaf_read(item, leaves):
                        value[i] = name(leaves[item.value.id][item.slice.value])
            elif _is_leaf_read(value, leaves):
                setattr(sub, field, name(leaves[value.value.id][value.slice.value]))


def _is_leaf_read(node, leaves: dict) -> bool:
    return isinstance(node, gast.Subscript) and isinstance(node.value, gast.Name) and \
        node.value.id in leaves and isinstance(node.slice, gast.Constant) and \
        isinstance(node.ctx, gast.Load)


def _expand_params(args, leaves: dict) -> None:
    def expand(params):
        out = []
        for a in params:
            pairs = leaves.get(a.id)
            out.extend([gast.Name(id=leaf, ctx=gast.Param(), annotation=None,
                                  type_comment=None) for _, leaf in pairs] if pairs else [a])
        return out
    args.posonlyargs, args.args = expand(args.posonlyargs), expand(args.args)
    kw = [(leaf, d) for a, d in zip(args.kwonlyargs, args.kw_defaults)
          for leaf in (expand([a]))]
    args.kwonlyargs, args.kw_defaults = [a for a, _ in kw], [d for _, d in kw]


def _dict_results_as_tuples(node) -> dict:
    """Rewrite `r = {k: v, ...}; return r` into a tuple when every return is such a dict
    with the same keys; the keys' positions, or {} when nothing was rewritten."""
    bound = {}
    for stmt in gast.walk(node):
        if isinstance(stmt, gast.Assign) and isinstance(stmt.targets[0], gast.Name):
            bound.setdefault(stmt.targets[0].id, []).append(stmt)
    returns = [n for n in gast.walk(node) if isinstance(n, gast.Return)]
    literals = []
    for r in returns:
        stmts = bound.get(r.value.id, []) if isinstance(r.value, gast.Name) else []
        if len(stmts) != 1 or not isinstance(stmts[0].value, gast.Dict) or \
                not all(isinstance(k, gast.Constant) for k in stmts[0].value.keys):
            return {}
        literals.append(stmts[0])
    key_sets = {tuple(k.value for k in s.value.keys) for s in literals}
    if len(key_sets) != 1:
        return {}
    keys = key_sets.pop()
    for stmt in literals:
        stmt.value = gast.Tuple(elts=stmt.value.values, ctx=gast.Load())
    return {key: i for i, key in enumerate(keys)}


def _uses_collectives(fn: Function, axis_name) -> bool:
    if axis_name is None:
        return False
    for node in gast.walk(fn.node):
        if isinstance(node, gast.Call) and \
                _collective_kind(resolve(fn, node.func, None)) is not None and \
                _axis_name_of(node) == axis_name:
            return True
    return False


