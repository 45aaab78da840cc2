"""Memory-safe indexing: the last pass before the cpu backend emits a module.

Numba does not check indices, so an out-of-bounds read returns garbage and an
out-of-bounds write corrupts memory. This pass makes every index either *proved* in
bounds or *checked* at run time, raising `IndexError` located at the user's line.

Invariant of the output: in every `x[index]` (read, write or augmented write) and every
call of an indexing runtime helper (`scatter_add`, `getitem_mask`, `setitem_mask`,
`take_batched`, `index_examples`), each index part that is not a slice is
- proved in bounds: a variable of the enclosing loop over `range(a, b)` or `prange(a, b)`
  (or of its reversal in a gradient, `range(range_last(a, b, 1), a - 1, -1)`), not
  rebound in the loop, with `a >= 0` provably and `b` the length of that axis of `x`
  (`x.shape[d]`, `len(x)`, `min` of lengths, a name bound once to one, a name `n` that
  made `x` (`np.zeros((n, m))`, vmap's `batch_empty(n, ...)`) or that vmap's leading
  `check_size(n, x.shape[d], ...)` compared); or a constant within an axis of known
  length (`np.zeros(3)`, or a parameter's short last axis that the jit specialization
  fixes, `with_known_lengths`); where `x` (or the array whose shape it copies,
  `zeros_like(x)`) is a parameter never assigned or a name assigned once at the
  function's top level; or
- checked once before its loop: `k + c` (directly, or through a name bound once to it
  earlier in the loop body) for the loop variable `k` of `for k in range(...)` whose body
  evaluates the index on every trip (no break, continue, return or raise in the body,
  not under an `if`, a `while`, a boolean operator, a conditional expression or a
  comprehension), with `x` as stable as above: `checked_range(x, d, a, b, s, c, where)`
  precedes the loop; or
- wrapped: `x[checked(x, i, d, where)]` checks it where it is evaluated (a computed
  array is read through `checked_item(v, index, where)`; a write into one is refused
  with a located `TransformError`).
`where` is the user's `file:line:col` (`index_checks` adds the line when it raises).
`None` and `...` parts stay as written; `d` is the axis a part indexes, counted from the end
(negative) for a part after `...`.
Subscripts of shape tuples (`x.shape[0]`) and of parameters passed as tuples (pytrees)
are left as they are: Numba checks tuples.
"""
from __future__ import annotations

import builtins
import collections
import copy

import gast
import numba
import numpy as np

from codegen import emit

from . import error_flags, index_checks, prange_checks, runtime
from .function import Function, hashable, resolve
from .names import Namer
from .nodes import copy_tree, walk
from .syntax import int_constant
from .tape import range_last

# helper -> (position of the array argument, of the index argument, first indexed axis)
_INDEXING_HELPERS = {
    runtime.scatter_add: (0, 1, 0),
    runtime.getitem_mask: (0, 1, 0),
    runtime.setitem_mask: (0, 1, 0),
    "transformer.runtime.batching.take_batched": (0, 1, 1),
    "transformer.runtime.batching.index_examples": (0, 1, 1),
}
# helpers of passes that import this one's importers, known by name to keep layers one-way
_CHECK_SIZE = "transformer.runtime.batching.check_size"
_BATCH_EMPTY = "transformer.runtime.batch_buffers.batch_empty"
_FLOAT_ZEROS = "transformer.reverse.seeds.float_zeros"
_CONSTANT_SHAPE_CALLS = {np.zeros, np.ones, np.empty, np.full}
_KNOWN_LENGTHS = "secant_known_lengths"     # FunctionDef attribute: param -> (ndim, last)
_TUPLES = "secant_tuple_params"             # FunctionDef attribute: params passed as tuples
_RANGES = {builtins.range, numba.prange}
_BLOCKS = (gast.For, gast.While, gast.If, gast.Try, gast.With)
_NAME_IT = "assign the array to a name first, or use jit(..., boundscheck=False)"
_PURE_NODES = (gast.Name, gast.Constant, gast.Attribute, gast.Subscript, gast.Slice,
               gast.Tuple, gast.BinOp, gast.UnaryOp, gast.Load, gast.Store, gast.operator,
               gast.unaryop)


def with_known_lengths(fn: Function, shapes: dict, tuples=()) -> Function:
    """`fn` noting what its jit specialization guarantees about its parameters: the
    last-axis lengths of arrays (`shapes`: parameter -> shape class, as `scalarize` takes
    them) and the parameters passed as tuples (`tuples`, pytrees: Numba checks those)."""
    known = {name: (s.ndim, s.last) for name, s in shapes.items()
             if getattr(s, "last", None) is not None and getattr(s, "ndim", 0) > 0}
    if not known and not tuples:
        return fn
    node = copy.copy(fn.node)
    setattr(node, _KNOWN_LENGTHS, known)
    setattr(node, _TUPLES, frozenset(tuples))
    return fn.replace(node=node)


def check_indices(fn: Function) -> Function:
    """`fn` with every index proved, checked before its loop, or checked in place."""
    node = copy_tree(fn.node)
    checker = _Checker(fn, _Facts(fn, node))
    node = checker.visit(node)
    flag = getattr(node, error_flags.FLAG_PARAMETER, None)
    if flag:        # called from a prange loop: every check records into the flag
        node = prange_checks.record_in_flag(checker, node, flag)
    else:
        node = prange_checks.record_in_prange(checker, node)
    return fn.replace(node=node, env=checker.env) if checker.changed else fn


# ---------------------------------------------------------------- what the code tells us

class _Facts:
    """Single assignments, stable arrays, loop ranges and lengths of one function."""

    def __init__(self, fn: Function, node: gast.FunctionDef):
        self.fn = fn
        self.params = set(fn.params)
        self.known = getattr(node, _KNOWN_LENGTHS, {})
        self.tuples = getattr(node, _TUPLES, frozenset())
        self.counts = collections.Counter(fn.params)
        self.defs, self.loops = {}, collections.defaultdict(list)
        self.stored_in: dict[int, set] = {}
        for sub in walk(node):
            if isinstance(sub, gast.Name) and isinstance(sub.ctx, gast.Store):
                self.counts[sub.id] += 1
            if isinstance(sub, gast.Assign) and len(sub.targets) == 1 \
                    and isinstance(sub.targets[0], gast.Name):
                self.defs[sub.targets[0].id] = sub.value
            if isinstance(sub, gast.For) and isinstance(sub.target, gast.Name) \
                    and self.callee(sub.iter) in _RANGES:
                self.loops[sub.target.id].append(sub)
                self.stored_in[id(sub)] = {
                    n.id for s in sub.body for n in walk(s)
                    if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store)}
        self.top_level = {s.targets[0].id for s in node.body if isinstance(s, gast.Assign)
                          and len(s.targets) == 1 and isinstance(s.targets[0], gast.Name)}
        self.sized: dict[str, set] = collections.defaultdict(set)   # name -> (array, axis)
        self._sizes_checked(node.body)
        for name in self.top_level:
            self._sizes_made(name)

    def _sizes_checked(self, body) -> None:
        """`check_size(n, x.shape[d], ...)` (vmap's batch sizes) before any array index:
        from there on `n` is the length of axis d of x."""
        for stmt in body:
            if any(isinstance(sub, gast.Subscript) and not _is_shape(sub.value)
                   for sub in walk(stmt)) or isinstance(stmt, _BLOCKS):
                return
            call = stmt.value if isinstance(stmt, gast.Expr) else None
            if _qualified(self.callee(call)) == _CHECK_SIZE and len(call.args) >= 2 \
                    and isinstance(call.args[0], gast.Name):
                self.sized[call.args[0].id] |= self.lengths(call.args[1])

    def _sizes_made(self, name: str) -> None:
        """`x = np.zeros((n, m))` or `x = batch_empty(n, ...)`: `n` is the length of
        axis 0 of x, `m` of axis 1, where `n` and `m` are names bound once."""
        value = self.once(name)
        made = self.callee(value)
        if made in _CONSTANT_SHAPE_CALLS and value.args:
            shape = value.args[0]
            dims = shape.elts if isinstance(shape, gast.Tuple) else [shape]
        elif _qualified(made) == _BATCH_EMPTY and value.args:
            dims = value.args[:1]
        else:
            return
        for axis, dim in enumerate(dims):
            if isinstance(dim, gast.Name) and self.counts[dim.id] == 1:
                self.sized[dim.id].add((name, axis))

    def calls(self, node, obj) -> bool:
        if not isinstance(node, gast.Call) or node.keywords:
            return False
        found = resolve(self.fn, node.func, None)
        return hashable(found) and found is obj

    def callee(self, node):
        if not isinstance(node, gast.Call):
            return None
        found = resolve(self.fn, node.func, None)
        return found if hashable(found) else None

    def once(self, name: str):
        """The value bound to `name` by its only assignment, or None."""
        if self.counts[name] == 1 and name not in self.params:
            return self.defs.get(name)
        return None

    def stable(self, name: str) -> bool:
        """`name` holds one array for the whole call (its shape never changes)."""
        if self.counts[name] != 1:
            return False
        return name in self.params or name in self.top_level

    def shape_root(self, name: str) -> str | None:
        """The stable array whose shape `name` has, or None."""
        for _ in range(8):
            if not self.stable(name):
                return None
            value = self.once(name)
            if value is None or not self._copies_shape(value):
                return name
            name = value.args[0].id
        return None

    def _copies_shape(self, value) -> bool:
        like = (runtime.zeros_like, np.zeros_like, np.empty_like, np.ones_like, np.copy)
        made = self.callee(value)
        return ((made in like or _qualified(made) == _FLOAT_ZEROS) and value.args
                and isinstance(value.args[0], gast.Name))

    def lengths(self, expr, depth: int = 0) -> set:
        """(array, axis) pairs whose length `expr` provably equals (or, via min, bounds)."""
        if depth > 8:
            return set()
        if isinstance(expr, gast.Name):
            value = self.once(expr.id)
            known = self.sized.get(expr.id, set())
            return known | (self.lengths(value, depth + 1) if value is not None else set())
        if self.calls(expr, builtins.len) and len(expr.args) == 1:
            return self._axis(expr.args[0], 0)
        if self.calls(expr, builtins.min):
            return set().union(*(self.lengths(a, depth + 1) for a in expr.args))
        if isinstance(expr, gast.Subscript) and int_constant(expr.slice) is not None:
            shape = expr.value
            if isinstance(shape, gast.Name):
                shape = self.once(shape.id)
            if isinstance(shape, gast.Attribute) and shape.attr == "shape":
                return self._axis(shape.value, int_constant(expr.slice))
        return set()

    def _axis(self, array, axis: int) -> set:
        if not isinstance(array, gast.Name) or axis < 0:
            return set()
        root = self.shape_root(array.id)
        return {(root, axis)} if root else set()

    def constant_length(self, name: str, axis: int) -> int | None:
        root = self.shape_root(name)
        ndim, last = self.known.get(root, (0, None))
        if root in self.params and ndim and axis == ndim - 1:
            return last
        value = self.once(root) if root else None
        if value is None or self.callee(value) not in _CONSTANT_SHAPE_CALLS or not value.args:
            return None
        shape = value.args[0]
        dims = shape.elts if isinstance(shape, gast.Tuple) else [shape]
        return int_constant(dims[axis]) if axis < len(dims) else None

    def nonneg(self, expr, depth: int = 0) -> bool:
        if depth > 8:
            return False
        value = int_constant(expr)
        if value is not None:
            return value >= 0
        if self.lengths(expr):
            return True
        if isinstance(expr, gast.BinOp) and isinstance(expr.op, (gast.Add, gast.Mult)):
            return self.nonneg(expr.left, depth + 1) and self.nonneg(expr.right, depth + 1)
        if isinstance(expr, gast.Name):
            loops = self.loops.get(expr.id, [])
            if loops and self.counts[expr.id] == len(loops):   # stored by range loops only
                return all(self.range_facts(loop, depth + 1)[0] for loop in loops)
            value = self.once(expr.id)
            return value is not None and self.nonneg(value, depth + 1)
        return False

    def loop_of(self, name: str, enclosing) -> gast.For | None:
        """The innermost loop of `enclosing` over `name` that no statement in it rebinds."""
        for loop in reversed(enclosing):
            if isinstance(loop.target, gast.Name) and loop.target.id == name:
                return loop if name not in self.stored_in.get(id(loop), {name}) else None
        return None

    def range_facts(self, loop, depth: int = 0) -> tuple[bool, set]:
        """(`loop`'s variable is >= 0, the (array, axis) lengths it stays below)."""
        args = loop.iter.args
        if not 1 <= len(args) <= 3 or loop.iter.keywords:
            return False, set()
        start, stop = (args[0], args[1]) if len(args) > 1 else (gast.Constant(0, None), args[0])
        step = int_constant(args[2]) if len(args) == 3 else 1
        if step is not None and step > 0:
            return self.nonneg(start, depth + 1), self.lengths(stop)
        forward = self.reversed_range(start, stop, step)
        if forward is None:
            return False, set()
        return self.nonneg(forward[0], depth + 1), self.lengths(forward[1])

    def reversed_range(self, start, stop, step):
        """(a, b) when `range(start, stop, step)` walks `range(a, b, s)` backwards."""
        if step != -1 or not isinstance(start, gast.Name):
            return None
        last = self.once(start.id)
        if not self.calls(last, range_last) or len(last.args) != 3 \
                or (int_constant(last.args[2]) or 0) <= 0:
            return None
        a, b = last.args[0], last.args[1]
        if _same(stop, _minus_one(a)):
            return a, b
        return None


# ---------------------------------------------------------------- the rewrite

class _Checker(gast.NodeTransformer):
    def __init__(self, fn: Function, facts: _Facts):
        self.fn, self.facts = fn, facts
        self.env = dict(fn.env)
        self.namer = Namer.for_function(fn)
        self.names: dict[int, str] = {}
        self.flagged: dict[int, tuple] = {}    # id(callee) -> (callee, error_flags.Flagged)
        self.changed = False
        self.loop = None          # the For whose every trip evaluates the current node
        self.enclosing: list = []  # the For statements around the current node
        self.hoisted: dict[int, list] = collections.defaultdict(list)
        self.earlier: dict[str, gast.AST] = {}   # names bound earlier in self.loop's body
        self.line = fn.origin.lineno   # the user's line of the statement being visited

    def bind(self, obj, base: str) -> gast.Name:
        if id(obj) not in self.names:
            self.names[id(obj)] = self.namer.fresh(base)
            self.env[self.names[id(obj)]] = obj
        self.changed = True
        return _name(self.names[id(obj)])

    # ------------------------------------------------------------ statements
    def visit_For(self, node):
        node.iter = self.visit(node.iter)
        outer, outer_earlier = self.loop, self.earlier
        self.loop = node if self._hoistable(node) else None
        self.earlier = {}
        self.enclosing.append(node)
        node.body = self._visit_body(node.body)
        self.enclosing.pop()
        self.loop, self.earlier = None, {}
        node.orelse = self._visit_body(node.orelse)
        self.loop, self.earlier = outer, outer_earlier
        return self.hoisted.pop(id(node), []) + [node]

    def _visit_body(self, body):
        out = []
        for stmt in body:
            self.line = self._line_of(stmt) or self.line
            result = self.visit(stmt)
            out.extend(result if isinstance(result, list) else [result])
            if self.loop is not None and isinstance(stmt, gast.Assign) \
                    and len(stmt.targets) == 1 and isinstance(stmt.targets[0], gast.Name):
                self.earlier[stmt.targets[0].id] = stmt.value
        return out

    def _conditional(self, node):
        """Visit `node` where it may run on some trips only: nothing hoists out of it."""
        outer = self.loop
        self.loop = None
        try:
            return self.generic_visit(node)
        finally:
            self.loop = outer

    def visit_If(self, node):
        node.test = self.visit(node.test)
        outer = self.loop
        self.loop = None
        node.body, node.orelse = self._visit_body(node.body), self._visit_body(node.orelse)
        self.loop = outer
        return node

    def visit_While(self, node):
        outer = self.loop
        self.loop = None
        node.test = self.visit(node.test)
        node.body, node.orelse = self._visit_body(node.body), self._visit_body(node.orelse)
        self.loop = outer
        return node

    def visit_FunctionDef(self, node):
        node.body = self._visit_body(node.body)
        return node

    visit_Try = visit_With = _conditional

    # ------------------------------------------------------------ expressions
    def visit_BoolOp(self, node):
        node.values[0] = self.visit(node.values[0])
        outer = self.loop
        self.loop = None
        node.values[1:] = [self.visit(v) for v in node.values[1:]]
        self.loop = outer
        return node

    def visit_IfExp(self, node):
        node.test = self.visit(node.test)
        outer = self.loop
        self.loop = None
        node.body, node.orelse = self.visit(node.body), self.visit(node.orelse)
        self.loop = outer
        return node

    visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = _conditional
    visit_Lambda = _conditional

    def visit_Subscript(self, node):
        # the check reads the array's shape from the expression as written: a view of an
        # unchecked `x[i]` has the right shape, and `x[i]` itself is checked first
        array = copy_tree(node.value) if _pure(node.value) else None
        self.generic_visit(node)
        parts = node.slice.elts if isinstance(node.slice, gast.Tuple) else [node.slice]
        if all(isinstance(p, gast.Slice) for p in parts) or self._shape_lookup(node.value):
            return node
        if array is None and isinstance(node.ctx, gast.Load):
            return self.checked_item(node.value, node.slice, node)
        if array is None:
            raise self.fn.origin.error(
                node, "cannot check this index: the array written to is a computed expression",
                hint=_NAME_IT)
        checked = [p if isinstance(p, gast.Slice) or _is_constant(p, (None, Ellipsis))
                   else self.part(array, p, axis, node) if axis >= 0
                   else self.check(array, p, axis, node)
                   for p, axis in zip(parts, self._axes(parts, node))]
        if isinstance(node.slice, gast.Tuple):
            node.slice.elts = checked
        else:
            node.slice = checked[0]
        return node

    def _axes(self, parts, site) -> list[int]:
        """The axis of the array each index part applies to; an axis counted from the end
        (negative: `checked` adds the array's ndim) after an `...`. `None` adds an axis and
        uses none; every other part uses one (Numba takes one-dimensional advanced indices
        only in a tuple)."""
        ellipses = [k for k, p in enumerate(parts) if _is_constant(p, (Ellipsis,))]
        if len(ellipses) > 1:
            raise self.fn.origin.error(site, "an index can only have a single ellipsis ('...')",
                                       hint="keep one '...' and write ':' for the other axes")
        uses = [0 if _is_constant(p, (None, Ellipsis)) else 1 for p in parts]
        split = ellipses[0] if ellipses else len(parts)
        before = [sum(uses[:k]) for k in range(split)]
        return before + [-sum(uses[k:]) for k in range(split, len(parts))]

    def checked_item(self, value, index, site):
        """`checked_item(value, index, where)`: `value[index]` for a computed `value`."""
        if isinstance(index, gast.Slice):       # a lone slice cannot be passed as a value
            return gast.Subscript(value=value, slice=index, ctx=gast.Load())
        if isinstance(index, gast.Tuple):       # `a:b` is only written in a subscript
            index = gast.Tuple(elts=[self.slice_value(p) for p in index.elts],
                               ctx=gast.Load())
        call = gast.Call(func=self.bind(index_checks.checked_item, "checked_item"),
                         args=[value, index, gast.Constant(self.where(site), None)],
                         keywords=[])
        return gast.copy_location(call, site)

    def slice_value(self, part):
        """An index part as a value: `slice(a, b, c)` for `a:b:c`, any other part as is."""
        if not isinstance(part, gast.Slice):
            return part
        bounds = [gast.Constant(None, None) if p is None else p
                  for p in (part.lower, part.upper, part.step)]
        return gast.Call(func=self.bind(slice, "slice"), args=bounds, keywords=[])

    def visit_Call(self, node):
        self.generic_visit(node)
        helper = self.facts.callee(node)
        key = helper if helper in _INDEXING_HELPERS else _qualified(helper)
        if key not in _INDEXING_HELPERS or node.keywords:
            return node
        at_array, at_index, axis = _INDEXING_HELPERS[key]
        if len(node.args) <= max(at_array, at_index):
            return node
        if not _pure(node.args[at_array]):
            if helper is runtime.getitem_mask:
                return self.checked_item(node.args[0], node.args[1], node)
            raise self.fn.origin.error(node, "cannot check the index of this call: the array "
                                       "is a computed expression", hint=_NAME_IT)
        array = node.args[at_array]
        node.args[at_index] = self.part(array, node.args[at_index], axis, node)
        return node

    # ------------------------------------------------------------ one index
    def part(self, array, index, axis: int, site):
        """`index` as it must be written: proved, checked before the loop, or wrapped."""
        if self._proved(array, index, axis) or self._hoist(array, index, axis, site):
            return index
        return self.check(array, index, axis, site)

    def check(self, array, index, axis: int, site):
        call = gast.Call(func=self.bind(index_checks.checked, "checked"),
                         args=[copy_tree(array), index, gast.Constant(axis, None),
                               gast.Constant(self.where(site), None)], keywords=[])
        return gast.copy_location(call, index)

    def _proved(self, array, index, axis: int) -> bool:
        if not isinstance(array, gast.Name):
            return False
        root = self.facts.shape_root(array.id)
        if root is None:
            return False
        constant = int_constant(index)
        if constant is not None:
            n = self.facts.constant_length(root, axis)
            return n is not None and -n <= constant < n
        loop = self.facts.loop_of(index.id, self.enclosing) \
            if isinstance(index, gast.Name) else None
        if loop is None:
            return False
        nonneg, below = self.facts.range_facts(loop)
        return nonneg and (root, axis) in below

    def _hoist(self, array, index, axis: int, site) -> bool:
        loop = self.loop
        if loop is None or not isinstance(array, gast.Name) \
                or self.facts.shape_root(array.id) is None:
            return False
        if not isinstance(loop.target, gast.Name) \
                or self.facts.loop_of(loop.target.id, self.enclosing) is not loop:
            return False
        offset = self._offset(index, loop.target.id)
        args = loop.iter.args
        if offset is None or not 1 <= len(args) <= 3 or \
                not all(_pure(a) or self._length(a) for a in args):
            return False
        start, stop = (args[0], args[1]) if len(args) > 1 else (gast.Constant(0, None), args[0])
        step = args[2] if len(args) == 3 else gast.Constant(1, None)
        call = gast.Call(func=self.bind(index_checks.checked_range, "checked_range"),
                         args=[copy_tree(array), gast.Constant(axis, None),
                               copy_tree(start), copy_tree(stop), copy_tree(step),
                               gast.Constant(offset, None),
                               gast.Constant(self.where(site), None)], keywords=[])
        stmt = gast.copy_location(gast.Expr(value=gast.copy_location(call, loop)), loop)
        checks = self.hoisted[id(loop)]
        if not any(_same(stmt, c) for c in checks):
            checks.append(stmt)
        return True

    def _length(self, node) -> bool:
        """`node` is `len(a)` of a pure `a`: as safe to evaluate again as `a.shape[0]`."""
        return isinstance(node, gast.Call) and len(node.args) == 1 and not node.keywords \
            and self.facts.callee(node) is builtins.len and _pure(node.args[0])

    def _offset(self, index, var: str, depth: int = 0) -> int | None:
        """c when `index` is `var + c` (or `var - c`, or a name bound to one earlier)."""
        if depth > 4:
            return None
        if isinstance(index, gast.Name):
            if index.id == var:
                return 0
            value = self.earlier.get(index.id)
            if value is not None and self.facts.counts[index.id] == 1:
                return self._offset(value, var, depth + 1)
            return None
        if isinstance(index, gast.BinOp) and isinstance(index.op, (gast.Add, gast.Sub)):
            c = int_constant(index.right)
            inner = self._offset(index.left, var, depth + 1)
            if c is not None and inner is not None:
                return inner + c if isinstance(index.op, gast.Add) else inner - c
        return None

    # ------------------------------------------------------------ helpers
    def _shape_lookup(self, value) -> bool:
        """`value` is a tuple: a shape, or a parameter passed as one."""
        if isinstance(value, gast.Attribute) and value.attr in ("shape", "strides"):
            return True
        if isinstance(value, gast.Name) and value.id in self.facts.tuples \
                and self.facts.counts[value.id] == 1:
            return True
        if isinstance(value, gast.Name):
            bound = self.facts.once(value.id)
            return isinstance(bound, gast.Attribute) and bound.attr in ("shape", "strides")
        return False

    def where(self, node) -> str:
        """The location a failed check reports: the user's file:line:col."""
        lineno = getattr(node, "lineno", None)
        if lineno:
            col = getattr(node, "col_offset", None) or 0
        else:       # no position of its own: the start of its statement's line
            lineno, text = self.line, self.fn.origin.source_line(self.line) or ""
            col = len(text) - len(text.lstrip())
        return f"{self.fn.origin.filename}:{lineno}:{col + 1}"

    def _line_of(self, stmt) -> int | None:
        """`stmt`'s user line: its own, or the line its `# vmap of: ...` comment quotes."""
        if getattr(stmt, "lineno", None):
            return stmt.lineno
        comment = emit.comment_of(stmt) or ""
        quoted = comment.partition(" of: ")[2].strip()
        if not quoted:
            return None
        origin = self.fn.origin
        for lineno in range(origin.lineno, origin.lineno + 10_000):
            text = origin.source_line(lineno)
            if text is None:
                return None
            if text.strip() == quoted:
                return lineno
        return None

    def _hoistable(self, loop) -> bool:
        stops = (gast.Break, gast.Continue, gast.Return, gast.Raise, gast.Try, gast.With)
        return not any(isinstance(n, stops) for s in loop.body for n in walk(s))


# ---------------------------------------------------------------- small AST helpers

def _name(id_: str) -> gast.Name:
    return gast.Name(id=id_, ctx=gast.Load(), annotation=None, type_comment=None)


def _is_constant(node, values) -> bool:
    return isinstance(node, gast.Constant) and any(node.value is v for v in values)


def _minus_one(node):
    value = int_constant(node)
    if value is not None:
        return gast.Constant(value - 1, None)
    return gast.BinOp(left=node, op=gast.Sub(), right=gast.Constant(1, None))


def _same(a, b) -> bool:
    return gast.dump(_normalized(a)) == gast.dump(_normalized(b))


def _normalized(node):
    """`node` with -1 written as a constant, so `-1` and `UnaryOp(-, 1)` compare equal."""
    value = int_constant(node)
    return gast.Constant(value, None) if value is not None else node


def _qualified(obj) -> str | None:
    module, name = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
    return f"{module}.{name}" if module and name else None


def _is_shape(node) -> bool:
    return isinstance(node, gast.Attribute) and node.attr == "shape"


def _pure(node) -> bool:
    """Evaluating `node` twice is safe: names, constants, attributes, subscripts, arithmetic."""
    return all(isinstance(n, _PURE_NODES) for n in walk(node))

