"""Scalarize short vectors: under jit, a 1-D array whose length is known at compile time
becomes one scalar variable per element, so the loop that computes it allocates nothing.

Input: the Function jit is about to emit (user code with nested expressions, or the ANF
code of a transformation), and the shape class of each parameter for this call
(`vector_shapes.describe_argument`: positions of shape (n, 3) give rows of length 3).

Output invariant: every *selected* variable `v` of length k is gone; `v_0 ... v_{k-1}`
(or `v0 ...` when those names are taken) hold its elements. `v` is selected when it is a
local (not a parameter) that every assignment makes a k-vector, that is never written
in place nor aliases an array written in place, and whose every use is one of:

    v[c] = s, v[c] += s        c a constant, s a scalar (v never aliases another array)
    v += e                     e as below (v never aliases another array: `z = y; z += 1`
                               writes y's elements, which scalars for z would not)
    v = e                      e elementwise in k-vectors and scalars (a scalar other
                               than names, constants and arithmetic of them is computed
                               once, before the statement): + - * / // % **, unary -,
                               NumPy ufuncs, x[i] (a row of an array whose last axis is
                               k), unbroadcast / broadcast_reduced / zeros_like /
                               matmul_grad_left / matmul_grad_right
    np.sum(e), np.dot(e, f), e @ f, np.linalg.norm(e), v[c]    anywhere: scalar sums
    buf[i] = e, buf[i] += e, scatter_add(buf, i, e)           one statement per element

Each becomes one statement per element (`v_c = e_c`); everything else is left as it was.
The scalar code computes what the array code computes: / // % ** become the ufuncs
np.divide ... np.power (NumPy semantics, not Python's ZeroDivisionError), and a sum of
float32 or unknown-precision elements starts from 0.0 as Numba's np.sum does (float64
accumulator). np.dot, @ and np.linalg.norm (as NumPy computes it: sqrt(dot(x, x))) add
the products left to right, which may round differently from BLAS in the last bit.
"""
from __future__ import annotations


import gast
import numpy as np

from codegen import emit

from .function import Function
from .names import Namer
from .anf import _OP_WORDS
from .nodes import copy_tree, walk
from .syntax import assign, const, located, name, subscript
from .vector_shapes import (ALLOCATIONS, DOTS, NORMS, SUMS, Array, Scalar, Shapes,
                            is_elementwise, is_int, is_range, is_vector)

_UFUNC_OPS = {gast.Div: "divide", gast.FloorDiv: "floor_divide", gast.Mod: "remainder",
              gast.Pow: "power"}
_PLAIN_OPS = (gast.Add, gast.Sub, gast.Mult)


def scalarize(fn: Function, params: dict) -> Function:
    """`fn` with its short vectors split into scalars; `fn` itself when there are none."""
    shapes = Shapes(fn, params)
    candidates = {v: s.last for v, s in shapes.of.items()
                  if is_vector(s) and v not in fn.params}
    if candidates:
        mutated = _mutated(fn, shapes)
        candidates = {v: k for v, k in candidates.items() if v not in mutated}
    while candidates:
        rewriter = _Rewriter(fn, shapes, candidates)
        body = rewriter.block(rewriter.node.body)
        if not rewriter.failed:
            return rewriter.finish(body, params)
        candidates = {v: k for v, k in candidates.items() if v not in rewriter.failed}
    return fn


class _NotElementwise(Exception):
    """An expression the element-by-element rewrite does not understand."""


# ---------------------------------------------------------------------------- aliasing


def _mutated(fn: Function, shapes: Shapes) -> set:
    """Locals whose array may be written in place, directly or through an alias (a view
    `v = x[i]` sees later writes to `x`, which a copy into scalars would not). Two
    parameters may be one array, so a written parameter makes every parameter written."""
    written, element_stores, links = set(), set(), []
    for node in walk(fn.node):
        if _constant_index(node) is not None and isinstance(node.ctx, gast.Store):
            element_stores.add(node.value.id)        # v[0] = x: fine for a fresh vector
        elif isinstance(node, gast.AugAssign) and isinstance(node.target, gast.Name) and \
                not isinstance(shapes.of.get(node.target.id), Scalar):
            element_stores.add(node.target.id)       # v += x writes v's array in place
        elif isinstance(node, (gast.Subscript, gast.Attribute)) \
                and isinstance(node.ctx, (gast.Store, gast.Del)):
            written.add(_root(node))
        elif isinstance(node, gast.Call):
            written |= _written_by_call(node, shapes)
        elif isinstance(node, gast.Assign):
            links += [(t, r) for t in _target_names(node.targets) for r in _aliased(node.value)]
        elif isinstance(node, gast.For) and isinstance(node.target, gast.Name):
            links += [(node.target.id, r) for r in _aliased(node.iter)]
    linked = {name for link in links for name in link}
    written |= element_stores & (linked | set(fn.params))
    if written & set(fn.params):
        written |= set(fn.params)
    changed = True
    while changed:
        changed = False
        for a, b in links:
            if (a in written) != (b in written):
                written |= {a, b}
                changed = True
    return written


def _target_names(targets) -> set:
    """Every name bound by assignment targets (`a, b = ...` unpacks: each may alias)."""
    return {n.id for t in targets for n in walk(t)
            if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store)}


def _constant_index(node):
    """c for a subscript `v[c]` of a Name by an int constant, else None."""
    if isinstance(node, gast.Subscript) and isinstance(node.value, gast.Name) and \
            isinstance(node.slice, gast.Constant) and type(node.slice.value) is int:
        return node.slice.value
    return None


def _aliased(value) -> set:
    """The locals whose arrays `value` may share memory with (views, tuples of them)."""
    if isinstance(value, (gast.Tuple, gast.List)):
        return set().union(*(_aliased(e) for e in value.elts))
    if isinstance(value, gast.IfExp):
        return _aliased(value.body) | _aliased(value.orelse)
    root = _root(value)
    return {root} if root is not None else set()


def _root(node):
    """The local a Name, x[...] or x.attr chain starts from (None for other nodes)."""
    while isinstance(node, (gast.Subscript, gast.Attribute)):
        node = node.value
    return node.id if isinstance(node, gast.Name) else None


def _written_by_call(call: gast.Call, shapes: Shapes) -> set:
    target = shapes.target(call)
    known = shapes.helpers
    if target is known["scatter_add"]:
        return {_root(call.args[0])} if call.args else set()
    pure = (is_elementwise(target) and not call.keywords) or target in SUMS or \
        target in ALLOCATIONS or target in NORMS or \
        target in DOTS or is_range(target) or target in (len, int, float, abs) or \
        any(target is h for key, h in known.items() if key != "scatter_add")
    if pure:
        return set()
    args = call.args + [k.value for k in call.keywords] + [call.func]
    return {_root(a) for a in args} - {None}


# ---------------------------------------------------------------------------- rewriting


class _Rewriter:
    """One attempt at rewriting with a fixed set of candidates; `failed` collects those
    that turned out to have a use it does not understand."""

    def __init__(self, fn: Function, shapes: Shapes, candidates: dict):
        self.fn, self.shapes, self.candidates = fn, shapes, candidates
        self.node = copy_tree(fn.node)
        self.failed: set = set()
        self.env = dict(fn.env)
        self.namer = namer = Namer.for_function(fn)
        self.parts = {v: _element_names(v, k, namer) for v, k in sorted(candidates.items())}
        self.np = next((k for k, v in self.env.items() if v is np), None)
        if self.np is None:
            self.np = namer.fresh("np")
            self.env[self.np] = np
        self.hoisted: list | None = None      # scalars computed once before a statement
        self.hoist_names: dict = {}

    def finish(self, body, params) -> Function:
        self.node.body = body
        known = [f"{p}[..., {s.last}]" for p, s in params.items()
                 if isinstance(s, Array) and s.last is not None]
        label = f"scalarize({', '.join(known)})"
        return self.fn.replace(node=self.node, env=self.env, chain=self.fn.chain + (label,))

    # ------------------------------------------------------------------ statements
    def block(self, body: list) -> list:
        out = []
        for stmt in body:
            out.extend(self.statement(stmt))
        return out

    def statement(self, stmt) -> list:
        if isinstance(stmt, (gast.If, gast.While, gast.For)):
            return self.with_hoisted(stmt, lambda: [self.compound(stmt)])
        return self.with_hoisted(stmt, lambda: self.simple_statement(stmt))

    def with_hoisted(self, stmt, build) -> list:
        """`build()`'s statements after the scalars it hoisted; the source comment first."""
        self.hoisted, self.hoist_names = [], {}
        out = build()
        hoisted, self.hoisted = self.hoisted or [], None
        for h in hoisted:
            self.check(h.value)
        if not hoisted:
            return out
        hoisted = [located(h, stmt) for h in hoisted]
        comment = emit.comment_of(out[0])
        if comment:
            emit.annotate(out[0], None)
            emit.annotate(hoisted[0], comment)
        return hoisted + out

    def hoist(self, node) -> str:
        """A name for the scalar expression `node`, computed once before the statement."""
        if self.hoisted is None:
            raise _NotElementwise(node)
        if id(node) not in self.hoist_names:
            value = _Reductions(self).visit(copy_tree(node))
            self.hoist_names[id(node)] = self.namer.fresh(_label(node)[:24])
            self.hoisted.append(assign(self.hoist_names[id(node)], value))
        return self.hoist_names[id(node)]

    def drop_hoisted(self) -> None:
        self.hoisted.clear()
        self.hoist_names.clear()

    def simple_statement(self, stmt) -> list:
        target = _assigned_name(stmt)
        if target in self.candidates:
            value = stmt.value if isinstance(stmt, gast.Assign) else \
                gast.BinOp(left=name(target), op=stmt.op, right=stmt.value)
            return self.define(target, value, stmt)
        writes = self.element_writes(stmt) or self.element_store(stmt)
        if writes is not None:
            return writes
        if isinstance(stmt, (gast.Assign, gast.AugAssign, gast.Return, gast.Expr,
                             gast.Assert)):
            stmt = _Reductions(self).visit(stmt)
        self.check(stmt)
        return [stmt]

    def compound(self, stmt):
        if isinstance(stmt, gast.While):
            self.hoisted = None       # the test runs again on every iteration
        for field in ("test", "iter"):
            if hasattr(stmt, field):
                setattr(stmt, field, _Reductions(self).visit(getattr(stmt, field)))
                self.check(getattr(stmt, field))
        hoisted = self.hoisted
        if isinstance(stmt, gast.For):
            self.check(stmt.target)
        stmt.body = self.block(stmt.body)
        stmt.orelse = self.block(stmt.orelse)
        self.hoisted = hoisted
        return stmt

    def define(self, target: str, value, stmt) -> list:
        """`target = value` as one assignment per element, or `stmt` if it cannot be."""
        names = self.parts[target]
        try:
            elements = [self.element(value, c, len(names)) for c in range(len(names))]
        except _NotElementwise:
            self.failed.add(target)
            self.drop_hoisted()
            return [stmt]
        for c, element in enumerate(elements):
            # element c must not read an element this statement has already overwritten
            if _reads(element) & set(names[:c]):
                self.failed.add(target)
                return [stmt]
        return _keep_comment(stmt, [located(assign(n, e), stmt)
                                    for n, e in zip(names, elements)])

    def element_writes(self, stmt):
        """`buf[i] = e`, `buf[i] += e` or `scatter_add(buf, i, e)` element by element."""
        write = _element_write(stmt, self.shapes)
        if write is None:
            return None
        buf, items, op, value = write
        # element c reads only element c of any row (its scalars are hoisted), so it may
        # read `buf` itself: nothing it reads has been written yet
        if not _reads(value) & set(self.candidates):
            return None
        k = self.shapes.expr(buf).last
        try:
            elements = [self.element(value, c, k) for c in range(k)]
        except _NotElementwise:
            self.drop_hoisted()
            return None
        out = []
        for c, element in enumerate(elements):
            index = gast.Tuple(elts=copy_tree(items) + [const(c)], ctx=gast.Load())
            target = subscript(name(buf.id), index, gast.Store())
            new = assign(target, element) if op is None \
                else gast.AugAssign(target=target, op=op, value=element)
            out.append(located(new, stmt))
        return _keep_comment(stmt, out)

    def element_store(self, stmt):
        """`v[c] = e` or `v[c] += e` of a candidate `v` and a scalar `e`: `v_c = ...`."""
        target = getattr(stmt, "target", None) or (stmt.targets[0] if isinstance(
            stmt, gast.Assign) and len(stmt.targets) == 1 else None)
        c = _constant_index(target)
        if c is None or target.value.id not in self.parts:
            return None
        parts = self.parts[target.value.id]
        if not -len(parts) <= c < len(parts) or \
                not isinstance(self.shapes.expr(stmt.value), Scalar):
            self.failed.add(target.value.id)
            return [stmt]
        value = _Reductions(self).visit(stmt.value)
        if isinstance(stmt, gast.AugAssign):
            value = gast.BinOp(left=name(parts[c]), op=stmt.op, right=value)
        self.check(value)
        return _keep_comment(stmt, [located(assign(parts[c], value), stmt)])

    def check(self, node) -> None:
        """Every candidate still named in `node` is used in a way left as an array."""
        self.failed |= {n.id for n in walk(node)
                        if isinstance(n, gast.Name) and n.id in self.candidates}

    # ------------------------------------------------------------------ expressions
    def element(self, node, c: int, k: int):
        """Element `c` of the k-vector expression `node` (a scalar expression: itself)."""
        shape = self.shapes.expr(node)
        if isinstance(shape, Scalar):
            if _simple(node, self.shapes):
                return copy_tree(node)
            return name(self.hoist(node))
        if not is_vector(shape, k):
            raise _NotElementwise(node)
        method = getattr(self, "_element_" + type(node).__name__, None)
        if method is None:
            raise _NotElementwise(node)
        return method(node, c, k)

    def _element_Name(self, node, c, k):
        if node.id in self.parts:
            return name(self.parts[node.id][c])
        return subscript(name(node.id), const(c))      # an array left as it is

    def _element_Subscript(self, node, c, k):
        items = node.slice.elts if isinstance(node.slice, gast.Tuple) else [node.slice]
        if not isinstance(node.value, gast.Name) or \
                not all(_simple(i, self.shapes) for i in items):
            raise _NotElementwise(node)
        index = gast.Tuple(elts=copy_tree(items) + [const(c)], ctx=gast.Load())
        return subscript(name(node.value.id), index)

    def _element_BinOp(self, node, c, k):
        left, right = self.element(node.left, c, k), self.element(node.right, c, k)
        if isinstance(node.op, _PLAIN_OPS):
            return gast.BinOp(left=left, op=type(node.op)(), right=right)
        if type(node.op) in _UFUNC_OPS:
            ufunc = gast.Attribute(value=name(self.np), attr=_UFUNC_OPS[type(node.op)],
                                   ctx=gast.Load())
            return gast.Call(func=ufunc, args=[left, right], keywords=[])
        raise _NotElementwise(node)

    def _element_UnaryOp(self, node, c, k):
        if not isinstance(node.op, (gast.USub, gast.UAdd)):
            raise _NotElementwise(node)
        return gast.UnaryOp(op=type(node.op)(), operand=self.element(node.operand, c, k))

    def _element_Call(self, node, c, k):
        target, known = self.shapes.target(node), self.shapes.helpers
        if node.keywords:
            raise _NotElementwise(node)
        if is_elementwise(target):
            return gast.Call(func=copy_tree(node.func), keywords=[],
                             args=[self.element(a, c, k) for a in node.args])
        if target is known["unbroadcast"] and len(node.args) == 2:
            return self.element(node.args[0], c, k)
        if target is known["broadcast_reduced"] and _whole_reduction(node, self.shapes):
            return self.element(node.args[0], c, k)
        if target in (known["matmul_grad_left"], known["matmul_grad_right"]):
            # the adjoints of a @ b for vectors: g * b and a * g
            g, a, b = node.args
            if target is known["matmul_grad_left"]:
                return gast.BinOp(left=self.element(g, c, k), op=gast.Mult(),
                                  right=self.element(b, c, k))
            return gast.BinOp(left=self.element(a, c, k), op=gast.Mult(),
                              right=self.element(g, c, k))
        if target is known["cast_like"] and len(node.args) == 2:
            like = node.args[1]
            like = self.element(like, c, k) if is_vector(self.shapes.expr(like)) else like
            return gast.Call(func=copy_tree(node.func), keywords=[],
                             args=[self.element(node.args[0], c, k), copy_tree(like)])
        if target in (known["zeros_like"], known["float_zeros"]) and node.args:
            rest = copy_tree(node.args[1:])
            return gast.Call(func=copy_tree(node.func), keywords=[],
                             args=[self.element(node.args[0], c, k)] + rest)
        raise _NotElementwise(node)

    def elements(self, node):
        shape = self.shapes.expr(node)
        return [self.element(node, c, shape.last) for c in range(shape.last)]


class _Reductions(gast.NodeTransformer):
    """Reductions of k-vectors become sums of their elements; v[c] becomes v_c."""

    def __init__(self, rewriter: _Rewriter):
        self.r = rewriter

    def visit_Call(self, node):
        return self._reduced(node) or self.generic_visit(node)

    def visit_BinOp(self, node):
        if isinstance(node.op, gast.MatMult):
            vectors = self._vectors(node.left, node.right)
            if vectors is not None:
                return _dot(*vectors)
        return self.generic_visit(node)

    def visit_Subscript(self, node):
        base = node.value
        if isinstance(base, gast.Name) and base.id in self.r.parts and \
                isinstance(node.slice, gast.Constant) and type(node.slice.value) is int:
            parts = self.r.parts[base.id]
            if -len(parts) <= node.slice.value < len(parts):
                return name(parts[node.slice.value])
        return self.generic_visit(node)

    def _reduced(self, node):
        target, shapes = self.r.shapes.target(node), self.r.shapes
        args = node.args
        if node.keywords:
            return None
        if target in SUMS and len(args) == 1:
            vectors = self._vectors(args[0])
            if vectors is not None:
                return _total(vectors[0], from_zero=shapes.expr(args[0]).dtype == "other")
        if target in DOTS and len(args) == 2:
            vectors = self._vectors(*args)
            if vectors is not None:
                return _dot(*vectors)
        if target in NORMS and len(args) == 1:
            vectors = self._vectors(args[0], args[0])
            if vectors is not None:       # NumPy's own formula: sqrt(dot(x, x))
                sqrt = gast.Attribute(value=name(self.r.np), attr="sqrt", ctx=gast.Load())
                return gast.Call(func=sqrt, args=[_dot(*vectors)], keywords=[])
        if target is shapes.helpers["unbroadcast"] and len(args) == 2 and \
                isinstance(shapes.expr(args[1]), Scalar):
            vectors = self._vectors(args[0])
            if vectors is not None:
                from_zero = shapes.expr(args[0]).dtype == "other"
                return gast.Call(func=copy_tree(node.func), keywords=[],
                                 args=[_total(vectors[0], from_zero), self.visit(args[1])])
        return None

    def _vectors(self, *nodes):
        """The elements of each of `nodes`, all vectors of one length; else None."""
        shapes = [self.r.shapes.expr(n) for n in nodes]
        if not all(is_vector(s, shapes[0].last if is_vector(shapes[0]) else -1)
                   for s in shapes):
            return None
        try:
            return [self.r.elements(n) for n in nodes]
        except _NotElementwise:
            return None


# ---------------------------------------------------------------------------- helpers


def _element_names(v: str, k: int, namer: Namer) -> list[str]:
    for pattern in ("{}_{}", "{}{}"):
        names = [pattern.format(v, c) for c in range(k)]
        if not set(names) & namer.taken:
            for n in names:
                namer.reserve(n)
            return names
    return [namer.fresh(f"{v}_{c}") for c in range(k)]


def _assigned_name(stmt):
    if isinstance(stmt, gast.Assign) and len(stmt.targets) == 1 and \
            isinstance(stmt.targets[0], gast.Name):
        return stmt.targets[0].id
    if isinstance(stmt, gast.AugAssign) and isinstance(stmt.target, gast.Name):
        return stmt.target.id
    return None


def _element_write(stmt, shapes: Shapes):
    """(buf, index items, op, value) of an in-place write of a row, or None."""
    if isinstance(stmt, gast.Assign) and len(stmt.targets) == 1 and \
            isinstance(stmt.targets[0], gast.Subscript):
        target, op, value = stmt.targets[0], None, stmt.value
        buf, index = target.value, target.slice
    elif isinstance(stmt, gast.AugAssign) and isinstance(stmt.target, gast.Subscript) and \
            isinstance(stmt.op, _PLAIN_OPS):
        buf, index, op, value = stmt.target.value, stmt.target.slice, stmt.op, stmt.value
    elif isinstance(stmt, gast.Expr) and isinstance(stmt.value, gast.Call) and \
            shapes.target(stmt.value) is shapes.helpers["scatter_add"] and \
            len(stmt.value.args) == 3 and not stmt.value.keywords:
        buf, index, value = stmt.value.args
        op = gast.Add()
    else:
        return None
    base = shapes.expr(buf) if isinstance(buf, gast.Name) else None
    items = index.elts if isinstance(index, gast.Tuple) else [index]
    if not isinstance(base, Array) or base.last is None or len(items) != base.ndim - 1 or \
            not all(is_int(shapes.expr(i)) and _simple(i, shapes) for i in items):
        return None
    return buf, items, op, value


def _whole_reduction(call: gast.Call, shapes: Shapes) -> bool:
    """broadcast_reduced(g, like[, axis[, keepdims]]) of a scalar `g` over every axis."""
    args = call.args
    if len(args) < 2 or not isinstance(shapes.expr(args[0]), Scalar):
        return False
    axis_ok = len(args) < 3 or (isinstance(args[2], gast.Constant) and args[2].value in
                                (None, 0, -1) and args[2].value is not False)
    keep_ok = len(args) < 4 or (isinstance(args[3], gast.Constant) and args[3].value is False)
    return axis_ok and keep_ok


def _simple(node, shapes: Shapes) -> bool:
    """A scalar expression cheap and safe to repeat once per element: names, constants,
    global constants and arithmetic of them (no calls, no array reads)."""
    if isinstance(node, gast.Name):
        return isinstance(shapes.name(node), Scalar)
    if isinstance(node, gast.Constant):
        return True
    if isinstance(node, gast.Attribute):
        return _root(node) not in shapes.locals and isinstance(shapes.expr(node), Scalar)
    if isinstance(node, gast.UnaryOp):
        return _simple(node.operand, shapes)
    if isinstance(node, gast.BinOp):
        return _simple(node.left, shapes) and _simple(node.right, shapes)
    return False


def _label(node) -> str:
    """A name for what `node` computes, from the names in it: sqrt_sum_d_times_d."""
    if isinstance(node, gast.Name):
        return node.id
    if isinstance(node, gast.Call) and isinstance(node.func, (gast.Name, gast.Attribute)):
        func = node.func.attr if isinstance(node.func, gast.Attribute) else node.func.id
        return f"{func}_{_label(node.args[0])}" if node.args else func
    if isinstance(node, gast.BinOp):
        word = _OP_WORDS.get(type(node.op), "op")
        return f"{_label(node.left)}_{word}_{_label(node.right)}"
    if isinstance(node, gast.Subscript):
        return f"{_label(node.value)}_item"
    return "factor"


def _keep_comment(stmt, out: list) -> list:
    """The statements replacing `stmt`, the first carrying its `# grad of:` comment."""
    comment = emit.comment_of(stmt)
    if comment:
        emit.annotate(out[0], comment)
    return out


def _reads(node) -> set:
    return {n.id for n in walk(node) if isinstance(n, gast.Name)}


def _dot(left: list, right: list):
    return _total([gast.BinOp(left=a, op=gast.Mult(), right=b) for a, b in zip(left, right)])


def _total(terms: list, from_zero: bool = False):
    """terms[0] + terms[1] + ... ; from 0.0 to accumulate in float64 like np.sum."""
    result = const(0.0) if from_zero else terms[0]
    for term in terms if from_zero else terms[1:]:
        result = gast.BinOp(left=result, op=gast.Add(), right=term)
    return result
