"""Which values are batched: the flow-insensitive analysis of a normalized function.

Input: a Function in `prepare`'s form (`anf(desugar(...))`) and the flags of its parameters.
Output: `Analysis.flags`, name -> flag (a variable is batched if any assignment to it is;
names that may share an array written in place are batched alike), and `reason`, set when
the batch changes control flow or writes (a batched `if`/`while` test or loop bound, a write
at a batched index, a call writing into its argument): the pass then loops over examples.
`shared_write` is set when the function may write into an array every example shares: the
examples then run in order.
Also the flags of the parameters, from `in_axes`.
"""
from __future__ import annotations

import collections

from typing import Any

import gast
import numba
import numpy as np

from codegen.backends import is_user_function
from codegen.emit import expression_source

from ..aliases import (first_write, parameter_writes, write_through, written_alias_groups,
                       written_names)
from ..anf import anf
from ..desugar import desugar, view_sources
from ..errors import TransformError
from ..frontend import parse_callee
from ..function import Function, resolve
from ..helper_effects import called_function, changed_arrays
from ..param_updates import updates_in_place
from ..rules import batching as rules
from ..runtime import update_in_place
from ..syntax import int_constant
from .gradient_types import keep_gradient_types
from .flags import (IDENTITY, Each, Spec, _line, any_batched, any_item, batched_leaves, child,
                    join)

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
        # (a user function writing into an argument, `scale(g, k)`, writes a group too)
        self.groups = written_alias_groups(fn, tuple(rules.MUTATES),
                                           _call_writes(fn, frozenset()))
        # parameter -> the first statement that may write its array, on some path
        self.written_params = parameter_writes(fn, tuple(rules.MUTATES),
                                               _call_writes(fn, frozenset()))
        for _ in range(50):
            before = (dict(self.flags), self.output)
            self.block(fn.node.body, False)
            self.batch_shared(params)
            if (self.flags, self.output) == before:
                break
        self.check_shared_views()
        self.shared_write = _shared_write(fn, params, self.written_params)

    def batch_shared(self, params: dict) -> None:
        """Names that may share an array written in place are batched alike: a write of
        batched values through one must reach the others, so all hold the batch axis
        (an unbatched array is broadcast once, where it is made). A parameter whose array
        is written on no path (every name holding it is rebound before the write) is only
        read through the others."""
        for group in self.groups:
            if not any(any_batched(self.flags.get(n, False)) for n in group):
                continue
            unbatched = sorted(n for n in group if not any_batched(self.flags.get(n, False)))
            written = [n for n in unbatched if n in params and n in self.written_params]
            if written:
                self.why(f"`{written[0]}` is an unbatched argument written in place "
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
        current = self.flags.get(target.value.id, False)
        if isinstance(current, (tuple, dict)):
            # `lst[1] = h * 2`, `lst[1] *= k`: an item of a list, not a slice of one array
            self.why(f"an item of `{target.value.id}` is assigned", stmt)
            items = _item_written(current, target.slice, True if control or index else value)
            if items is not None:
                self.set(target.value.id, items)
                return
            if self.returned(target.value.id):
                raise self.fn.origin.error(
                    stmt, f"vmap: the dict `{target.value.id}` gets a key it was not built "
                    "with, so its structure is not known when it is batched",
                    "build the dict as one literal with every key (`out = {\"loss\": l, "
                    "\"grad\": g}`)")
        self.set(target.value.id, bool(control or index or any_batched(value)))

    def returned(self, variable: str) -> bool:
        """Whether some return of the function gives the value of `variable`."""
        return any(isinstance(r, gast.Return) and isinstance(r.value, gast.Name) and
                   r.value.id == variable for r in gast.walk(self.fn.node))

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
            if isinstance(base, (tuple, dict, Each)):
                # an item of a list or tuple at a run-time index (`for v in lst`)
                item = any_item(base)
                if item is None or self.index_flag(node.slice):
                    self.why("a list or tuple holding batched values is indexed at a "
                             "run-time index", node)
                    return any_batched(base)
                return item
            return any_batched(base) or self.index_flag(node.slice)
        if isinstance(node, gast.Call):
            return self.call(node)
        return False

    def call(self, node):
        flags = [self.expr(a) for a in node.args] + [self.expr(k.value) for k in node.keywords]
        target = resolve(self.fn, node.func, None)
        if target is None and isinstance(node.func, gast.Attribute) and \
                any_batched(self.expr(node.func.value)):
            # a method of a list or dict holding batched values (`d.get("a")`,
            # `lst.pop()`): no rule says which example's items it returns
            self.why(f"the method .{node.func.attr}() of a value holding batched values",
                     node)
            return True
        kind = _collective_kind(target)
        if kind is not None and self.axis_name is not None and \
                _axis_name_of(node) == self.axis_name:
            return kind == "axis_index"
        if not any(any_batched(f) for f in flags):
            return False
        callee = _callee_function(target)
        if callee is not None:
            written = _callee_writes(callee, frozenset())
            if written:
                self.why(f"{callee.name} writes into its argument {written[0]!r}", node)
            return _output_structure(callee)
        result_flag = _lookup(rules.RESULT_FLAGS, target)
        if result_flag is not None:
            return result_flag([any_batched(f) for f in flags])
        return True if node.keywords else _linear_flag(target, flags)


def _shared_write(fn: Function, params: dict, written_params: dict):
    """(why, statement) when `fn` may write in place into an array every example shares
    (an unbatched argument among `written_params`, a global or closure array), else None.
    Example by example, each write reaches the caller and the later examples; only the
    examples run in order give those numbers."""
    effects, writes = tuple(rules.MUTATES), _call_writes(fn, frozenset())
    written = written_names(fn, effects, writes)
    unbatched = {p for p in written_params if not any_batched(params.get(p, False))}
    assigned = {n.id for n in gast.walk(fn.node) if isinstance(n, gast.Name) and
                isinstance(n.ctx, gast.Store)} | set(fn.params)
    free = {n for n in written - assigned
            if isinstance(resolve(fn, gast.Name(id=n, ctx=gast.Load(), annotation=None,
                                                 type_comment=None), None), np.ndarray)}
    if unbatched:
        param = min(unbatched, key=fn.params.index)
        return f"`{param}` is an argument not mapped (in_axes None), written in place at " \
            f"{_line(fn, written_params[param])}", written_params[param]
    if not free:
        return _helper_write(fn)
    outside = min(free)
    group = set().union({outside}, *(g for g in written_alias_groups(fn, effects, writes)
                                     if outside in g))
    where = first_write(fn, group, effects, writes) or fn.node
    return f"`{outside}` is an array the function reads from outside, written in place at " \
        f"{_line(fn, where)}", where


def _helper_write(fn: Function):
    """(why, call) for a call of a helper that may write into a global or closed-over
    array (`bump()` doing `W[0, 0] += 10.0`), else None."""
    for node in gast.walk(fn.node):
        if isinstance(node, gast.Call):
            callee = called_function(resolve(fn, node.func, None))
            changed = changed_arrays(callee) if callee is not None else []
            if changed:
                return f"`{callee.__name__}` writes into `{changed[0]}`, an array of its " \
                    f"module, in place, at {_line(fn, node)}", node
    return None


def _call_writes(fn: Function, seen: frozenset):
    """`call_writes` for `aliases`: the names a call of a user function passes to
    parameters it writes in place (itself or through the functions it calls)."""
    def writes(node: gast.Call) -> set:
        if not node.args:               # the writes read here are positional
            return set()
        positions = _written_positions(resolve(fn, node.func, None), seen)
        return set().union(*(view_sources(fn, a) for k, a in enumerate(node.args)
                             if k in positions))
    return writes


def _written_positions(target, seen: frozenset) -> set:
    """Positions of the parameters the user function `target` writes in place."""
    try:
        callee = _callee_function(target)
    except TransformError:          # no source to read: the call is batched as written
        return set()
    if callee is None:
        return set()
    written = _callee_writes(callee, seen)
    return {k for k, p in enumerate(callee.params) if p in written}


def _callee_writes(callee: Function, seen: frozenset) -> list[str]:
    """The parameters of user function `callee` it may write in place on some path, itself
    or through the functions it calls, read in the form batching runs it (`prepare`:
    `p += v` and `p[i] += v` write the caller's array); `seen`: the functions whose
    reading holds this one."""
    key = callee.origin.describe()
    if key in seen:                 # recursion: its writes are found at the outer call
        return []
    prepared = prepare(callee)
    return list(parameter_writes(prepared, tuple(rules.MUTATES),
                                 _call_writes(prepared, seen | {key})))


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
        return parse_callee(target)
    return None


def _item_written(flags, index, written):
    """A container's flags after `container[index] = <value flagged written>`: the item's
    flag joined with `written` at a constant key, every item's at another index (a list
    keeps its length); None for a key the dict may not hold yet (its structure changes)."""
    if isinstance(flags, dict):
        if not isinstance(index, gast.Constant) or index.value not in flags:
            return None
        return {**flags, index.value: join(flags[index.value], written)}
    key = int_constant(index)
    if key is not None and -len(flags) <= key < len(flags):
        items = list(flags)
        items[key] = join(items[key], written)
        return tuple(items)
    return tuple(join(flag, written) for flag in flags)


def _output_structure(fn: Function):
    """The flag of `fn`'s result: the structure of tuple literals every return shares,
    nested (`return (h, c), y` is `((True, True), True)`), its leaves batched; `True`
    when the returns differ or return something else. A returned name stands for the
    structure its assignments share (`True` if one is not a plain `name = value`)."""
    prepared = prepare(fn)
    returns = [n for n in gast.walk(prepared.node) if isinstance(n, gast.Return)]
    stores = collections.Counter(n.id for n in gast.walk(prepared.node)
                                 if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store))
    assigned = collections.defaultdict(list)
    for n in gast.walk(prepared.node):
        if isinstance(n, gast.Assign) and isinstance(n.targets[0], gast.Name):
            assigned[n.targets[0].id].append(n.value)

    def structure(value, depth=0):
        if depth > 20:
            return True
        if isinstance(value, gast.Name) and value.id in assigned and \
                len(assigned[value.id]) == stores[value.id]:
            return _shared({structure(v, depth + 1) for v in assigned[value.id]})
        if isinstance(value, gast.Tuple):
            return tuple(structure(e, depth + 1) for e in value.elts)
        return True

    return _shared({structure(r.value) if r.value is not None else None for r in returns})


def _shared(shapes: set):
    """The one tuple structure in `shapes`, else True."""
    if len(shapes) == 1 and isinstance(next(iter(shapes)), tuple):
        return next(iter(shapes))
    return True


def prepare(fn: Function) -> Function:
    """`fn` normalized for batching: `anf(desugar(...))`, with `p += v` on a parameter
    `p` an `update_in_place` (see `param_updates.updates_in_place`) and a returned
    gradient in its argument's float type (`gradient_types`)."""
    return keep_gradient_types(anf(desugar(updates_in_place(fn))))


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
