"""Reverse mode: a Function in, its vector-Jacobian product as one new Function out.

Input: any Function, normalized first by `reverse_prepare.prepare` (ANF, exits lowered
to flags, one assignment per value where possible, loops instrumented). Activity
(`activity.py`) picks the variables that get adjoints; `tape.py` decides which values the
reverse sweep recomputes and which it records; `reverse_tidy.py` removes work on adjoints
known to be zero; `reverse_dce.py` removes work whose results nobody reads. For grad and
vjp a second, *lean* variant is also built, where the forward sweep's loops feed nothing
the reverse sweep reads (see `lean_reads`): the dead-code pass then drops them, and the
variant is taken when it has fewer loops. Output invariant: a function

    def grad_f(<f's parameters>[, cotangents]):
        <forward sweep: f's statements, plus tape records where tape.py asks for them>
        <adjoint initialisation and seeding>
        <reverse sweep: each statement's adjoint, last statement first>
        return <gradients (and value / aux, by mode)>

using only constructs `anf.py` accepts plus `for ... in range(...)` with computed
bounds, so every transformation can take it as input again. Adjoint variables are
named after their primal (`bx` for `x`) and every adjoint block carries a
`# grad of: <source line>` comment. Adjoints of array values are fresh arrays owned by
the reverse sweep, so rules may accumulate into them in place (`bpos[i] += bd`).

Statements are differentiated with the adjoint templates of `transformer.templates`;
calls to the user's own functions (plain, `jit`-wrapped, `numba.njit`, `custom_vjp`)
become calls to their own generated vjp Function, placed in the environment; an object
with a custom rule supplies that Function itself (`__secant_vjp__(positions)`: a
custom_vjp's fwd/bwd, a custom_jvp's rule transposed).
"""
from __future__ import annotations

import builtins
import copy
import re
import dataclasses
import threading

import gast
import numba
import numpy as np

from codegen import emit
from codegen.backends import is_user_function

from .. import activity, runtime, tape
from ..errors import TransformError, copy_hint
from ..function import Function, resolve
from ..input_dtypes import input_kind, refusal
from ..names import Namer, free_names
from .dce import eliminate_dead_code, forget_weak_reads, pure_calls, weak_reads_bound
from .prepare import bind_helper, prepare
from .tidy import tidy_reverse
from .views import view_copies
from ..specialize import is_literal
from ..syntax import assign, call, const, located, name, store, subscript
from ..templates import (ADJOINTS, MissingRule, _lookup, describe, expand_adjoint, has_adjoint,
                        is_nondifferentiable, nondifferentiable)

GRAD, VALUE_AND_GRAD, VJP = "grad", "value_and_grad", "vjp"
# attributes that describe an array's structure, not its values: never differentiable
_STRUCTURE_ATTRIBUTES = {"shape", "ndim", "dtype", "size", "itemsize", "nbytes", "strides"}
_guard = threading.local()   # per thread: another thread's gradient is not a recursion


def reverse_function(fn: Function, wrt: tuple[int, ...], mode: str = GRAD,
                     has_aux: bool = False, label: str | None = None,
                     tuple_grads: bool = False) -> Function:
    """The generated gradient (`mode` GRAD / VALUE_AND_GRAD) or vjp Function of `fn`."""
    key = (fn.origin.filename, fn.origin.lineno, fn.origin.name, fn.name)
    _in_progress = _guard.__dict__.setdefault("keys", [])
    if key in _in_progress:
        raise fn.origin.error(fn.node, f"{fn.name} calls itself (recursion): reverse mode "
                              "cannot differentiate it", "rewrite the recursion as a loop")
    _in_progress.append(key)
    label = label or f"{mode}(argnums={tuple(wrt)})"
    try:
        built = _Reverse(prepare(fn), tuple(wrt), mode, has_aux, tuple_grads).build(label)
        if mode == VALUE_AND_GRAD or not _loop_count(fn.node):
            return built
        lean = _Reverse(prepare(fn), tuple(wrt), mode, has_aux, tuple_grads,
                        lean=True).build(label)
        return lean if lean is not None and \
            _loop_count(lean.node) < _loop_count(built.node) else built
    finally:
        _in_progress.pop()


def _loop_count(node) -> int:
    return sum(isinstance(n, (gast.For, gast.While)) for n in gast.walk(node))


# ---------------------------------------------------------------- statement kinds


@dataclasses.dataclass
class Prim:
    """How one simple statement passes derivatives."""

    kind: str                 # template, copy, call, tuple, none, opaque, setitem
    target: str
    sources: tuple = ()
    key: object = None
    args: list = dataclasses.field(default_factory=list)
    keywords: dict = dataclasses.field(default_factory=dict)


def _names(nodes) -> tuple:
    found = []
    for node in nodes:
        for sub in gast.walk(node):
            if isinstance(sub, gast.Name) and isinstance(sub.ctx, gast.Load):
                found.append(sub.id)
    return tuple(found)


def _rule_reads_result_items(obj) -> bool:
    """Whether the adjoint rule of `obj` takes its result as a tuple (`d[z][1]`, `z[0]`):
    an array result read with constant indices (`a = np.array(...); a[0]`) is not one."""
    template = _lookup(ADJOINTS, obj)
    if template is None or not template.has_result:
        return False
    result = template.params[0]

    def is_result(node):
        return isinstance(node, gast.Name) and node.id == result or \
            isinstance(node, gast.Subscript) and isinstance(node.value, gast.Name) and \
            node.value.id == "d" and is_result(node.slice)
    return any(isinstance(node, gast.Subscript) and is_result(node.value) and
               isinstance(node.slice, gast.Constant)
               for stmt in template.body for node in gast.walk(stmt))


class _Reverse:
    def __init__(self, fn: Function, wrt: tuple, mode: str, has_aux: bool,
                 tuple_grads: bool = False, lean: bool = False):
        self.fn, self.mode, self.has_aux = fn, mode, has_aux
        self.lean = lean
        self.tuple_grads = tuple_grads
        self.namer = Namer.for_function(fn)
        self.env: dict = dict(fn.env)
        params = fn.params
        for i in wrt:
            if not -len(params) <= i < len(params):
                raise TransformError(f"argnums {i} is out of range for {fn.name} with "
                                     f"parameters {params}")
        self.wrt = [params[i] for i in wrt]
        body = fn.node.body
        if not body or not isinstance(body[-1], gast.Return):
            raise fn.origin.error(fn.node, f"{fn.name} must end with a return statement to "
                                  "be differentiated", "return the value to differentiate")
        self.body, self.ret = body[:-1], body[-1]
        self.collect()
        self.prims = {id(s): self.classify(s) for s in self.simple}
        self.outputs()
        flows = [(p.target, p.sources) for p in self.prims.values() if p.sources]
        self.active = activity.active(flows, self.wrt, [o for o in self.diff_outputs
                                                        if isinstance(o, str)])
        self.refuse_effects(activity.varied(flows, self.wrt))
        self.adjoint = {v: self.namer.fresh("b" + v) for v in sorted(self.active)}
        self.elements: dict = {}      # tuple-valued call result -> {k: adjoint of item k}
        self.callees: dict = {}       # (callee, active positions) -> (vjp name, outputs)
        self._homes: dict | None = None
        self._branch_defined: set | None = None
        # last statement first, as in the reverse sweep: element uses name the adjoints
        # of a call's tuple result before the call's own adjoint passes them on
        self.adjoints = {}
        errors = []
        for stmt in reversed(self.simple):
            try:
                self.adjoints[id(stmt)] = self.adjoint_stmts(stmt)
            except TransformError as exc:       # report the first one in source order
                errors.append(exc)
        if errors:
            raise errors[-1]
        self.counters: dict = {}
        self.plan = tape.plan_tape(self.facts, self.needed(), set(self.env),
                                   self.promoted_names())
        for var, sites in sorted(self.moved_guards.items()):
            for site, expr in sites:
                self.adjoints[id(site)][:0] = self.shape_check(var, expr)
        self.plan.after, self.plan.skipped, self.plan.anchors = tape.summarize_loops(
            self.body, self.plan.taped, self.reverse_reads)
        self.plan.writes = tape.recorded_writes(self.facts, self.body, self.plan.taped,
                                                self.plan.after, self.plan.skipped)
        self.refuse_accumulator_reads()
        self.view_copies = view_copies(self, self.value_reads | self.recomputed_reads())

    def helper(self, key: str, obj) -> str:
        return bind_helper(self.env, self.namer, key, obj)

    def reverse_reads(self, stmt) -> set:
        """Names whose values the reverse of `stmt` itself (not nested ones) reads: its
        adjoint, its re-run if recomputed, the test or bounds of a compound statement."""
        if isinstance(stmt, gast.Assign):
            found = _reads(self.adjoints.get(id(stmt), []), self.env)[0]
            target = stmt.targets[0]
            if isinstance(target, gast.Name) and target.id in self.plan.recomputed:
                found |= set(tape.operand_names(stmt.value))
            if isinstance(target, gast.Subscript):       # restore_items indexes again
                found |= set(_names([target.slice]))
            return found
        if isinstance(stmt, gast.If):
            return set(_names([stmt.test]))
        if isinstance(stmt, gast.For):
            last, start, step = stmt.secant_reverse
            return {last} | set(_names([start, step]))
        if isinstance(stmt, gast.While):
            return {stmt.secant_trips}
        return set(_names([stmt]))

    # ------------------------------------------------------------ facts about the body
    def collect(self) -> None:
        self.defs: dict = {p: [] for p in self.fn.params}
        self.loads: dict = {}
        self.loops_of: dict = {}
        self.block_of: dict = {}
        self.chain_of: dict = {}
        self.inside: dict = {}
        self.written: set = set()
        self.simple: list = []
        self.order: dict = {}
        self.loops: list = []
        self._walk(self.body, (), (id(self.body),))
        self.accumulating = _accumulating()
        self.accumulators = self._accumulators()
        self.written |= self.accumulators
        self._close_written_over_aliases()
        self.view_checks = self._views_read_across_writes()
        self.loads_add(self.ret, _names([self.ret.value]))
        self.carried = {var: loop for loop in reversed(self.loops)
                        for var in _carried(loop)}        # the outermost loop wins
        self.facts = tape.Facts(
            {k: v for k, v in self.defs.items() if v or k in self.fn.params}, self.loads,
            self.loops_of, self.block_of, self.inside, set(self.fn.params), self.written,
            self.pure, self.order, set(self.carried))
        self.loops_of[id(self.ret)] = ()

    def _accumulators(self) -> set:
        """Names of arrays that `b = accumulated(b, i, v)` (a rewritten `scatter_add`)
        changes in place: the target and the result are one array."""
        found = set()
        for stmt in self.simple:
            value = stmt.value
            if isinstance(stmt.targets[0], gast.Name) and isinstance(value, gast.Call) and \
                    resolve(self.fn, value.func, None) in self.accumulating:
                found |= {stmt.targets[0].id} | set(_names(value.args[:1]))
        return found

    def tape_buffers(self) -> set:
        """Names only ever bound to a tape or element buffer (or a copy of one)."""
        makers = _tape_makers()
        found = {v for v in self.accumulators if self.defs.get(v)}
        changed = True
        while changed:
            changed = False
            for var in list(found):
                if not all(isinstance(d, gast.Assign) and (
                        isinstance(d.value, gast.Name) and d.value.id in found or
                        isinstance(d.value, gast.Call) and
                        resolve(self.fn, d.value.func, None) in makers)
                        for d in self.defs[var]):
                    found.discard(var)
                    changed = True
        return found

    def refuse_accumulator_reads(self) -> None:
        """The reverse sweep may read an accumulated array only for its shape: its values
        change in place and are not recorded."""
        read = (self.value_reads | self.recomputed_reads()) & self.accumulators
        if read:
            var = sorted(read)[0]
            raise self.fn.origin.error(
                self.defs[var][0] if self.defs.get(var) else self.fn.node,
                f"reverse mode would need the values of {var!r}, an array accumulated in "
                "place (np.add.at, or the gradient of an indexed read), which it does not "
                "record", f"use forward mode over it (jacfwd), or build {var!r} without "
                "in-place accumulation")

    def recomputed_reads(self) -> set:
        """Names recomputed in the reverse sweep and the names their recomputation reads."""
        return self.plan.recomputed | {n for v in self.plan.recomputed
                                       for n in tape.operand_names(self.defs[v][0].value)}

    def _close_written_over_aliases(self) -> None:
        """`z = y; z[0] = v` writes `y` too. Adjoints are per name, so an array written
        through one name and read through another afterwards is refused; a copy whose
        source is not read again (a renamed value, a swap's temporary) just shares the
        record of writes."""
        copies = [s for s in self.simple
                  if isinstance(s.targets[0], gast.Name) and isinstance(s.value, gast.Name)]
        changed = True
        while changed:
            changed = False
            for stmt in copies:
                pair = {stmt.targets[0].id, stmt.value.id}
                if pair & self.written and not pair <= self.written:
                    self._refuse_observed_alias(stmt)
                    self.written |= pair
                    changed = True

    def _views_read_across_writes(self) -> dict:
        """id(write) -> names read from the written array before it and used after it:
        each may be a view the write changes, which the forward sweep checks."""
        checks: dict = {}
        reads = [s for s in self.simple if isinstance(s.targets[0], gast.Name) and
                 isinstance(s.value, gast.Subscript) and
                 isinstance(s.value.value, gast.Name)]
        for write in self.simple:
            site = self._write_site(write)
            if site is None:
                continue
            (base, index), at = site, self.order[id(write)]
            for read in reads:
                var = read.targets[0].id
                if read.value.value.id == base and self.order[id(read)] < at and \
                        _may_overlap(read.value.slice, index) and \
                        len(self.defs.get(var, [])) == 1 and \
                        self.chain_of[id(write)][:len(self.chain_of[id(read)])] == \
                        self.chain_of[id(read)] and \
                        any(self.order[id(u)] > at for u in self.loads.get(var, [])):
                    checks.setdefault(id(write), []).append(var)
        return checks

    def _write_site(self, stmt):
        """(array, index) an in-place write `y[i] = v` or `y = accumulated(y, i, v)`
        changes; None for other statements."""
        target, value = stmt.targets[0], stmt.value
        if isinstance(target, gast.Subscript):
            return target.value.id, target.slice
        if isinstance(value, gast.Call) and len(value.args) > 1 and \
                isinstance(value.args[0], gast.Name) and \
                resolve(self.fn, value.func, None) in self.accumulating:
            return value.args[0].id, value.args[1]
        return None

    def _refuse_observed_alias(self, stmt) -> None:
        target, source = stmt.targets[0].id, stmt.value.id
        for name_ in (target, source):
            other = source if name_ == target else target
            later = [u for u in self.loads.get(other, [])
                     if self.order[id(u)] > self.order[id(stmt)]]
            writes = [u for u in self.simple if isinstance(u.targets[0], gast.Subscript)
                      and u.targets[0].value.id == name_ and
                      self.order[id(u)] > self.order[id(stmt)]]
            if writes and later:
                raise self.fn.origin.error(
                    writes[0], f"{name_!r} and {other!r} are the same array here, written "
                    f"through {name_!r} and read through {other!r}: reverse mode keeps one "
                    "adjoint per name", copy_hint(target, source))

    def loads_add(self, stmt, names) -> None:
        for n in names:
            self.loads.setdefault(n, []).append(stmt)

    def _walk(self, stmts, loops, chain) -> None:
        self.inside[id(stmts)] = set()
        for stmt in stmts:
            self.order[id(stmt)] = len(self.order)
            self.block_of[id(stmt)] = id(stmts)
            self.loops_of[id(stmt)] = loops
            self.chain_of[id(stmt)] = chain
            for block in chain:
                self.inside[block].add(id(stmt))
            self._walk_statement(stmt, loops, chain)

    def _walk_statement(self, stmt, loops, chain) -> None:
        if isinstance(stmt, gast.Assign):
            target = stmt.targets[0]
            self.simple.append(stmt)
            if isinstance(target, gast.Name):
                self.defs.setdefault(target.id, []).append(stmt)
                self.loads_add(stmt, _names([stmt.value]))
            else:
                self.written.add(target.value.id)
                self.loads_add(stmt, _names([target, stmt.value]))
        elif isinstance(stmt, gast.If):
            self.loads_add(stmt, _names([stmt.test]))
            for block in (stmt.body, stmt.orelse):
                self._walk(block, loops, chain + (id(block),))
        elif isinstance(stmt, gast.For):
            self.loops.append(stmt)
            self.defs.setdefault(stmt.target.id, []).append(stmt)
            last, start, step = stmt.secant_reverse
            self.loads_add(stmt, _names([stmt.iter, start, step]) + (last,))
            self._walk(stmt.body, loops + (stmt,), chain + (id(stmt.body),))
        elif isinstance(stmt, gast.While):
            self.loops.append(stmt)
            self.loads_add(stmt, _names([stmt.test]) + (stmt.secant_trips,))
            self._walk(stmt.body, loops + (stmt,), chain + (id(stmt.body),))
        elif isinstance(stmt, (gast.Expr, gast.Assert, gast.Return)):
            self.loads_add(stmt, _names([stmt]))

    def refuse_effects(self, varied: set) -> None:
        """A call made for its effect passes no derivative through the analysis: refuse
        it rather than return zeros (`reverse_prepare` turns in-place accumulations,
        `scatter_add(bx, i, v)` and `np.add.at`, into assignments first)."""
        for stmt in gast.walk(gast.Module(body=self.body, type_ignores=[])):
            if not (isinstance(stmt, gast.Expr) and isinstance(stmt.value, gast.Call)):
                continue
            if resolve(self.fn, stmt.value.func, None) in (print, tape.check_shape,
                                                          tape.check_not_view,
                                                          tape.check_not_shared):
                continue
            if set(_names(stmt.value.args)) & varied:
                raise self.fn.origin.error(
                    stmt, "reverse mode cannot differentiate a call made for its effect on "
                    "a differentiated value", "assign its result, or use forward mode over "
                    "it (jacfwd)")

    def pure(self, stmt) -> bool:
        """Whether re-running `stmt` in the reverse sweep has no effect but its value."""
        value = stmt.value
        if isinstance(value, gast.Call):
            obj = resolve(self.fn, value.func, None)
            module = getattr(obj, "__module__", "") or ""
            if self.prims[id(stmt)].kind == "call":
                return _cheap_pure_function(obj)
            return obj is not None and "random" not in module and \
                obj not in self.accumulating
        return not isinstance(value, (gast.Dict, gast.List))

    # ------------------------------------------------------------ classification
    def classify(self, stmt) -> Prim:
        target, value = stmt.targets[0], stmt.value
        if isinstance(target, gast.Subscript):
            return Prim("setitem", target.value.id, _names([value]), "setitem",
                        [target.value, target.slice, value])
        t = target.id
        if isinstance(value, gast.Constant) or not _names([value]):
            return Prim("none", t)
        if isinstance(value, gast.Name):
            return Prim("copy", t, (value.id,))
        if isinstance(value, (gast.BinOp, gast.UnaryOp)):
            key = type(value.op)
            if isinstance(value.op, gast.UAdd):
                return Prim("copy", t, _names([value.operand]))
            operands = [value.left, value.right] if isinstance(value, gast.BinOp) \
                else [value.operand]
            return self.rule(t, key, operands, {})
        if isinstance(value, (gast.Tuple, gast.List)):
            return Prim("tuple", t, (), args=value.elts)
        if isinstance(value, gast.Subscript):
            if self.call_result(value.value) and isinstance(value.slice, gast.Constant):
                return Prim("element", t, (value.value.id,), value.slice.value)
            if self.rule_result(value.value) is not None:
                # the rule of the call reads this item's adjoint itself (see `expand`)
                return Prim("item", t, (value.value.id,), value.slice.value)
            element = self.tuple_element(value)
            if element is not None:
                return Prim("copy", t, _names([element])) if isinstance(element, gast.Name) \
                    else Prim("none", t)
            return Prim("template", t, _names([value.value]), "getitem",
                        [value.value, value.slice])
        if isinstance(value, gast.Call):
            return self.classify_call(t, value)
        if isinstance(value, gast.Compare) or (isinstance(value, gast.Attribute) and
                                               value.attr in _STRUCTURE_ATTRIBUTES):
            return Prim("none", t)
        return Prim("opaque", t, _names([value]), value)   # x.real, dict literals

    def call_result(self, atom) -> bool:
        """Whether `atom` holds a tuple returned by a differentiated user function, or is a
        container parameter (`params["W"]`): only read item by item, with constant keys,
        so each item gets its own adjoint."""
        if not isinstance(atom, gast.Name) or not self.itemwise(atom.id):
            return False
        if atom.id in self.fn.params:
            # integer keys may index an array parameter, whose gradient is an array: only
            # string keys (a dict of parameters) are taken item by item
            return not self.defs.get(atom.id) and \
                all(isinstance(k, str) for k in self.container_keys(atom.id))
        defs = self.defs.get(atom.id, [])
        return len(defs) == 1 and isinstance(defs[0], gast.Assign) and \
            isinstance(defs[0].value, gast.Call) and \
            self.classify_call(atom.id, defs[0].value).kind == "call"

    def rule_result(self, atom):
        """For `a, b = np.linalg.slogdet(x)` (a rule's tuple result read item by item):
        the result as the tuple the rule's template expects, `(a, b)`; else None."""
        if not isinstance(atom, gast.Name) or not self.itemwise(atom.id):
            return None
        defs = self.defs.get(atom.id, [])
        if len(defs) != 1 or not isinstance(defs[0], gast.Assign) or \
                not isinstance(defs[0].value, gast.Call):
            return None
        obj = resolve(self.fn, defs[0].value.func, None)
        if obj is None or not has_adjoint(obj) or not _rule_reads_result_items(obj):
            return None
        items: dict = {}
        for use in self.loads[atom.id]:
            k, target = use.value.slice.value, use.targets[0].id
            if not isinstance(k, int) or len(self.defs.get(target, [])) != 1:
                return None
            items.setdefault(k, target)
        return gast.Tuple(elts=[name(items[k]) if k in items else
                                subscript(name(atom.id), const(k))
                                for k in range(max(items) + 1)], ctx=gast.Load())

    def itemwise(self, var: str) -> bool:
        uses = self.loads.get(var, [])
        return bool(uses) and all(
            isinstance(use, gast.Assign) and isinstance(use.value, gast.Subscript) and
            isinstance(use.value.value, gast.Name) and use.value.value.id == var and
            isinstance(use.value.slice, gast.Constant) for use in uses)

    def container_keys(self, var: str) -> list:
        return list(dict.fromkeys(use.value.slice.value for use in self.loads[var]))

    def rule(self, t, key, args, keywords) -> Prim:
        if is_nondifferentiable(key):
            return Prim("none", t)
        args = [self.literal_tuple(a) for a in args]
        keywords = {k: self.literal_tuple(v) for k, v in keywords.items()}
        sources = _names(args + list(keywords.values()))
        kind = "template" if has_adjoint(key) else "opaque"
        return Prim(kind, t, sources, key, args, keywords)

    def literal_tuple(self, atom):
        """A name bound once to a tuple literal, as that literal (templates want it so)."""
        if isinstance(atom, gast.Name):
            defs = self.defs.get(atom.id, [])
            if len(defs) == 1 and isinstance(defs[0], gast.Assign) and \
                    isinstance(defs[0].value, (gast.Tuple, gast.List)):
                return gast.Tuple(elts=[self.literal_tuple(e) for e in defs[0].value.elts],
                                  ctx=gast.Load())
            if len(defs) == 1 and isinstance(defs[0], gast.Assign) and \
                    isinstance(defs[0].value, gast.Name) and defs[0].value.id != atom.id:
                # `retval = pair` (an early-return lowering) aliases the tuple literal
                literal = self.literal_tuple(defs[0].value)
                if isinstance(literal, gast.Tuple):
                    return literal
        return atom

    def tuple_element(self, value):
        literal = self.literal_tuple(value.value)
        index = value.slice
        if isinstance(literal, gast.Tuple) and isinstance(index, gast.Constant) and \
                isinstance(index.value, int) and -len(literal.elts) <= index.value < \
                len(literal.elts):
            return literal.elts[index.value]
        return None

    def classify_call(self, t, value) -> Prim:
        obj = resolve(self.fn, value.func, None)
        keywords = {k.arg: k.value for k in value.keywords}
        if obj is None:
            return Prim("opaque", t, _names(value.args + list(keywords.values())), value.func)
        if has_adjoint(obj) or is_nondifferentiable(obj):
            return self.rule(t, obj, list(value.args), keywords)
        if hasattr(obj, "__secant_vjp__") or hasattr(obj, "__secant_function__") or \
                isinstance(obj, numba.core.dispatcher.Dispatcher) or is_user_function(obj):
            args = self.bind_call(obj, value)
            return Prim("call", t, _names(args), obj, args)
        return Prim("opaque", t, _names(value.args + list(keywords.values())), obj)

    def bind_call(self, obj, value) -> list:
        """The call's arguments, one per parameter of the callee, defaults filled in: the
        callee's vjp takes every primal parameter before the cotangents."""
        from ..frontend import parse
        from ..function import signature
        parameters = signature(parse(obj)).parameters
        if not value.keywords and len(value.args) == len(parameters):
            return list(value.args)
        bound = signature(parse(obj)).bind(*value.args,
                                          **{k.arg: k.value for k in value.keywords})
        bound.apply_defaults()
        return [v if isinstance(v, gast.AST) else self.default_atom(name_, v)
                for name_, v in bound.arguments.items()]

    def default_atom(self, parameter: str, value):
        """A default value as an atom: a literal, or a name bound to it in the env."""
        if is_literal(value):
            return const(value)
        return name(self.helper(f"default_{parameter}", value))

    # ------------------------------------------------------------ outputs
    def outputs(self) -> None:
        ret = self.ret.value
        literal = self.literal_tuple(ret)
        elements = literal.elts if isinstance(literal, gast.Tuple) else None
        self.aux = None
        if self.has_aux:
            if elements is None or len(elements) != 2:
                raise self.fn.origin.error(self.ret, "with has_aux=True the function must "
                                           "return a pair (output, aux)",
                                           "return out, aux")
            self.out_atom, self.aux = elements
            elements = None
        else:
            self.out_atom = ret
        if elements is not None and self.mode != VJP:
            raise self.fn.origin.error(self.ret, f"{self.mode} needs a scalar output, but "
                                       f"{self.fn.name} returns a tuple",
                                       "use vjp for several outputs, or has_aux=True")
        self.out_elements = elements
        atoms = elements if elements is not None else [self.out_atom]
        self.diff_outputs = [a.id if isinstance(a, gast.Name) else None for a in atoms]
        for atom in atoms:
            if isinstance(atom, gast.Name) and atom.id in self.defs:
                continue
            if not isinstance(atom, gast.Constant):
                raise self.fn.origin.error(self.ret, "this returned value cannot be "
                                           "differentiated", "return a variable")

    # ------------------------------------------------------------ adjoint statements
    def adjoint_stmts(self, stmt) -> list:
        prim = self.prims[id(stmt)]
        if prim.target not in self.active:
            return []
        if prim.kind == "copy":
            source = prim.sources[0]
            if source not in self.active:
                return []
            return [self.accumulate(source, name(self.adjoint[prim.target]))]
        if prim.kind == "template" and self.sequence_array(prim):
            return self.sequence_array_adjoint(prim)
        if prim.kind in ("template", "setitem"):
            return self.expand(stmt, prim)
        if prim.kind == "element":
            source = prim.sources[0]
            if source not in self.active:
                return []
            adj = self.element_adjoint(source, prim.key)
            return [assign(adj, gast.BinOp(left=name(adj), op=gast.Add(),
                                           right=name(self.adjoint[prim.target])))]
        if prim.kind == "call":
            return self.call_adjoint(stmt, prim)
        if prim.kind in ("tuple", "none", "item"):
            return []
        what = describe(prim.key) if not isinstance(prim.key, gast.AST) else \
            emit.expression_source(prim.key)
        raise self.fn.origin.error(stmt, f"no adjoint rule for {what}",
                                   "register one with @transformer.defadjoint, wrap it with "
                                   "custom_vjp, or apply stop_gradient")

    @staticmethod
    def sequence_array(prim) -> bool:
        """Whether `prim` is `np.array([a, b, ...])` of a literal sequence."""
        return any(prim.key is f for f in (np.array, np.asarray)) and bool(prim.args) and \
            isinstance(prim.args[0], gast.Tuple)

    def sequence_array_adjoint(self, prim) -> list:
        """Each active item of the literal gets its slice of the array's adjoint: the
        generic rule would assign to the whole literal, constants included."""
        out = []

        def visit(node, index):
            if isinstance(node, gast.Tuple):
                for k, elt in enumerate(node.elts):
                    visit(elt, index + (k,))
            elif isinstance(node, gast.Name) and node.id in self.active:
                key = const(index[0]) if len(index) == 1 else \
                    gast.Tuple(elts=[const(k) for k in index], ctx=gast.Load())
                out.append(self.accumulate(node.id, subscript(
                    name(self.adjoint[prim.target]), key)))
        visit(prim.args[0], ())
        return out

    def element_adjoint(self, var: str, k: int) -> str:
        """The adjoint of element `k` of the tuple a user function returned into `var`."""
        elements = self.elements.setdefault(var, {})
        if k not in elements:
            elements[k] = self.namer.fresh(f"{self.adjoint[var]}_{k}")
        return elements[k]

    def zero_adjoints(self, var: str, by_items: bool = False) -> list:
        """`bv = zeros_like(v)`, one per element for a tuple-valued call result (shaped
        like the names its items are read into, with `by_items`)."""
        zeros = self.helper("zeros_like", runtime.zeros_like)
        elements = self.elements.get(var)
        if elements is None:
            return [assign(self.adjoint[var], call(name(zeros), name(var)))]
        items = self.element_items(var) if by_items and self.shaped_by_items(var) else {}
        return [assign(adj, call(name(zeros), name(items[k]) if k in items else
                                 subscript(name(var), const(k))))
                for k, adj in sorted(elements.items())]

    def element_items(self, var: str) -> dict:
        """k -> the name `t = var[k]` binds, each once and beside the call, for a
        tuple-valued call result `var` assigned once."""
        found = {}
        defs = self.defs.get(var, [])
        if len(defs) != 1 or var in self.fn.params:
            return found
        for stmt in self.simple:
            prim = self.prims[id(stmt)]
            if prim.kind == "element" and prim.sources == (var,) and \
                    len(self.defs.get(prim.target, [])) == 1 and \
                    self.block_of[id(stmt)] == self.block_of[id(defs[0])]:
                found.setdefault(prim.key, prim.target)
        return found

    def shaped_by_items(self, var: str) -> bool:
        """Whether only the names its items are read into give `var`'s adjoints their
        shapes (a tuple of gradients from a callee's vjp need not be recorded)."""
        elements = self.elements.get(var)
        if elements is None or var in self.fn.params or len(self.defs.get(var, [])) != 1:
            return False                # a container parameter: its gradient is returned
        return set(elements) <= set(self.element_items(var)) and \
            var not in self.branch_defined() and not self.reset(var, self.defs[var][0])

    def accumulate(self, source: str, value) -> gast.Assign:
        adj = self.adjoint[source]
        return assign(adj, gast.BinOp(left=name(adj), op=gast.Add(), right=value))

    def expand(self, stmt, prim) -> list:
        target = prim.target
        items = self.rule_result(name(target)) if prim.kind == "template" else None
        try:
            stmts, env = expand_adjoint(
                prim.key, copy.deepcopy(prim.args), copy.deepcopy(prim.keywords),
                items if items is not None else name(target), self.adjoint.get,
                fresh_name=lambda tmp: self.namer.fresh(f"{target}_{tmp}"))
        except MissingRule as exc:
            raise self.fn.origin.error(stmt, str(exc), "register a rule with "
                                       "@transformer.defadjoint") from None
        return self.bind_env(stmts, env)

    def bind_env(self, stmts, env) -> list:
        renames = {}
        for key, obj in env.items():
            bound = self.helper(key, obj)
            if bound != key:
                renames[key] = bound
        if renames:
            for stmt in stmts:
                for sub in gast.walk(stmt):
                    if isinstance(sub, gast.Name) and sub.id in renames:
                        sub.id = renames[sub.id]
        return stmts

    def call_adjoint(self, stmt, prim) -> list:
        positions = tuple(i for i, a in enumerate(prim.args)
                          if isinstance(a, gast.Name) and a.id in self.active)
        if not positions:
            return []
        vjp_name, outputs = self.callee_vjp(prim.key, positions, stmt)
        grads = self.namer.fresh(prim.target + "_grads")
        elements = self.elements.get(prim.target)
        if outputs == 1 and elements is None:
            cotangents = [name(self.adjoint[prim.target])]
        elif elements is None:
            raise self.fn.origin.error(stmt, "the tuple this call returns must be unpacked "
                                       "to be differentiated", "write `a, b = f(x)`")
        else:
            zeros = self.helper("zeros_like", runtime.zeros_like)
            cotangents = [name(elements[k]) if k in elements else
                          call(name(zeros), subscript(name(prim.target), const(k)))
                          for k in range(outputs)]
        args = [copy.deepcopy(a) for a in prim.args] + cotangents
        out = [assign(grads, call(name(vjp_name), *args))]
        for k, position in enumerate(positions):
            out.append(self.accumulate(prim.args[position].id,
                                       subscript(name(grads), const(k))))
        return out

    def callee_vjp(self, obj, positions, stmt) -> str:
        from ..frontend import parse
        cache = self.callees
        key = (id(obj), positions)
        if key not in cache:
            custom = getattr(obj, "__secant_vjp__", None)      # custom_vjp, custom_jvp
            if custom is not None:
                generated = custom(positions)
            else:
                callee = parse(obj)
                _refuse_argument_writes(callee, stmt, self.fn)
                generated = reverse_function(callee, positions, VJP)
            base = re.sub(r"\W", "", getattr(obj, "__name__", "")) or "callee"
            outputs = len(generated.params) - len(_primal_params(obj))
            cache[key] = (self.helper(base + "_vjp", generated), outputs)
        return cache[key]

    # ------------------------------------------------------------ what the reverse reads
    def needed(self) -> set:
        """Primal names the reverse sweep reads; sets `self.guarded` (see shape_guards)."""
        primal = set(self.defs)
        values, shapes = set(), set(self.active)    # adjoint zeros read each active shape
        for stmts in self.adjoints.values():
            read_values, read_shapes = _reads(stmts, self.env)
            values |= read_values
            shapes |= read_shapes
        for _stmt, names in self._control_reads():
            values |= names
        values &= primal
        self.value_reads = values
        for var in [v for v in shapes if v in self.elements and self.shaped_by_items(v)]:
            shapes.discard(var)
            shapes |= set(self.element_items(var).values())
        # a tape of differentiated code is read only for its length, by the rules of its
        # helpers and by zeros: its final length serves every row, so it is not recorded
        shapes -= self.tape_buffers()
        shapes = (shapes & primal) - values
        multiple = {v for v in primal if len(self.defs[v]) > 1 or
                    (v in self.fn.params and self.defs[v])}
        self.guarded = {v for v in shapes & multiple if self.first_definition(v)}
        self.moved_guards = {}
        if self.lean:
            values |= self.lean_reads(shapes - values)
        fixed = {v for v in primal if tape.invariant(self.facts, v)} | self.guarded | \
            self.copied_into_guarded() | \
            (values & multiple) | {v for v in primal
                                   if all(isinstance(d, gast.For) for d in self.defs[v])}
        stable = tape.shape_stable(self.facts, fixed, self.env)
        return values | (shapes - fixed - stable)

    # ------------------------------------------------------------ a gradient without its
    # forward loops: when nothing the reverse sweep reads needs the forward loop's results,
    # the loop is dead (reverse_dce drops it). The lean variant makes that so where it can:
    # values read only for their shape are recomputed in the reverse sweep where they are
    # cheap to, and an accumulator's shape check moves next to its assignment's adjoint,
    # where the operands are at hand again, so the accumulator itself is read only for
    # its shape (weakly: its first value will do, the checks guarantee its shape).
    def lean_reads(self, shape_only: set) -> set:
        """Values the lean reverse sweep reads in addition; sets `self.moved_guards`."""
        extra = shape_only & tape.recomputable(self.facts, set(self.env))
        for var in sorted(self.guarded):
            sites = self.check_sites(var)
            if sites is not None:
                self.moved_guards[var] = sites
                extra |= {n for _, expr in sites for n in _names([expr])
                          if n != var and n in self.defs}
        return extra

    def check_sites(self, var: str):
        """[(statement, value)] whose adjoint can check each later assignment of `var`
        keeps its shape, by evaluating the value again; None where one cannot."""
        pure = pure_calls(self.env)
        sites = []
        for d in self.defs[var]:
            if d is self.first_definition(var):
                continue
            if not isinstance(d, gast.Assign):
                return None
            site = d
            if isinstance(d.value, gast.Name) and self.copy_source(d) is not None:
                site = self.copy_source(d)
            if not self.adjoints.get(id(site)) or \
                    any(isinstance(n, gast.Call) and not pure(n) or
                        isinstance(n, (gast.Dict, gast.List)) for n in gast.walk(site.value)):
                return None
            sites.append((site, site.value))
        return sites

    def shape_check(self, var: str, expr) -> list:
        """`t = <expr>; check_shape(t, var_shape)`, `var` read in `expr` only weakly."""
        expr = copy.deepcopy(expr)
        for node in gast.walk(expr):
            if isinstance(node, gast.Name) and node.id == var:
                node.secant_weak = True
        checked = self.namer.fresh(var + "_checked")
        check = call(name(self.helper("check_shape", tape.check_shape)), name(checked),
                     name(self.shape_name(var)))
        return [assign(checked, expr), gast.Expr(value=check)]

    def mark_weak_reads(self, node) -> None:
        """Shape and float-type reads of guarded accumulators, where any of their values
        serves; and of values computed from them only for such reads (`out = 0.5 * e`
        read by the seed alone), whose assignments read their operands weakly in turn."""
        positions = {id(sub.args[k]) for sub in gast.walk(node)
                     if isinstance(sub, gast.Call) and isinstance(sub.func, gast.Name)
                     for k in [_WEAK_ARGUMENTS.get(self.env.get(sub.func.id))]
                     if k is not None and k < len(sub.args) and
                     isinstance(sub.args[k], gast.Name)}
        weak = set(self.guarded)
        for stmt in reversed(node.body):
            if self._weak_definition(node, stmt, positions):
                stmt.secant_weak_definition = True
                weak.add(stmt.targets[0].id)
                positions |= {id(n) for n in gast.walk(stmt.value) if isinstance(n, gast.Name)}
        for sub in gast.walk(node):
            if isinstance(sub, gast.Name) and id(sub) in positions and sub.id in weak:
                sub.secant_weak = True

    def _weak_definition(self, node, stmt, positions: set) -> bool:
        """Whether top-level `t = <expr>`, assigned once, is read only in weak positions
        and `<expr>`'s shape and type follow from its operands'."""
        if not (isinstance(stmt, gast.Assign) and isinstance(stmt.targets[0], gast.Name) and
                _shape_follows_operands(stmt.value, self.env)):
            return False
        var = stmt.targets[0].id
        names = [n for n in gast.walk(node) if isinstance(n, gast.Name) and n.id == var]
        return sum(not isinstance(n.ctx, gast.Load) for n in names) == 1 and \
            all(id(n) in positions for n in names if isinstance(n.ctx, gast.Load))

    def copied_into_guarded(self) -> set:
        """Names `t` copied into a guarded accumulator right after their assignment
        (`e_next = e + w; e = e_next`): the accumulator's check fixes their shape too."""
        found = set()
        for var in self.guarded:
            for d in self.defs[var]:
                if isinstance(d, gast.Assign) and isinstance(d.value, gast.Name) and \
                        self.copy_source(d) is not None:
                    found.add(d.value.id)
        return found

    def copy_source(self, copy_stmt):
        """The single assignment of the name `copy_stmt` copies, in the same block."""
        defs = self.defs.get(copy_stmt.value.id, [])
        if len(defs) == 1 and isinstance(defs[0], gast.Assign) and \
                self.block_of[id(defs[0])] == self.block_of[id(copy_stmt)] and \
                self.order[id(defs[0])] < self.order[id(copy_stmt)]:
            return defs[0]
        return None

    def first_definition(self, var: str):
        """The assignment that defines `var` before any other can run (None if unclear);
        the function entry for a parameter."""
        if var in self.fn.params:
            return self.fn.node
        defs = sorted(self.defs[var], key=lambda d: self.order[id(d)])
        first = defs[0]
        if isinstance(first, gast.Assign) and self.block_of[id(first)] == id(self.body):
            return first
        return None

    def _control_reads(self):
        for stmt in gast.walk(gast.Module(body=self.body, type_ignores=[])):
            if isinstance(stmt, gast.If):
                yield id(stmt), set(_names([stmt.test])) & set(self.defs)
            elif isinstance(stmt, gast.For):
                last, start, step = stmt.secant_reverse
                yield id(stmt), ({last} | set(_names([start, step]))) & set(self.defs)
            elif isinstance(stmt, gast.While):
                yield id(stmt), {stmt.secant_trips}

    def promoted_names(self) -> set:
        """Names that start as an integer constant but may hold floats later: float
        tapes. Counters and indices (every assignment an integer) keep exact tapes."""
        integers = tape.integer_names(self.facts, self.env)
        return {var for var, defs in self.defs.items() if var not in integers and any(
            isinstance(d, gast.Assign) and isinstance(d.value, gast.Constant) and
            isinstance(d.value.value, int) for d in defs)}

    # ------------------------------------------------------------ emission: forward
    def build(self, label: str) -> Function:
        forward = self.tape_setup() + self.forward_block(self.body)
        reverse = self.reverse_block(self.body, top=True)
        node = copy.deepcopy(self.fn.node)
        prefix = {GRAD: "grad", VALUE_AND_GRAD: "value_and_grad", VJP: "vjp"}[self.mode]
        node.name = self.namer.fresh(f"{prefix}_{self.fn.name}")
        if self.mode == VJP:      # called positionally: every primal, then the cotangents
            args = node.args
            node.args = gast.arguments(
                args=args.posonlyargs + args.args + args.kwonlyargs + [
                    gast.Name(id=c, ctx=gast.Param(), annotation=None, type_comment=None)
                    for c in self.cotangent_params],
                posonlyargs=[], vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None,
                defaults=[])
        # the reverse sweep restores overwritten variables, the returned ones included:
        # keep what the function returned before it starts
        forward += self.keep_returned_values()
        node.body = forward + reverse + [located(self.final_return(), self.ret)]
        if "zeros_like" in self.env:
            adjoint_names = {n.id for n in gast.walk(node) if isinstance(n, gast.Name)}
            adjoint_names -= set(self.defs) | set(self.env)
            owned = {self.adjoint[v] for v in self.wrt if v in self.adjoint and
                     v not in self.elements}
            tidy_reverse(node.body, self.helper("zeros_like", runtime.zeros_like),
                         adjoint_names, owned)
        if self.lean:
            self.mark_weak_reads(node)
        eliminate_dead_code(node.body, pure_calls(self.env, _cheap_pure_function))
        if self.lean and not weak_reads_bound(node.body, self.fn.params):
            return None
        forget_weak_reads(node)          # a transform of this code decides for itself
        located(node, self.fn.node)          # generated lines point at the def line
        for free in free_names(node):       # builtins a rule's code names (slice, ...)
            if free not in self.env and hasattr(builtins, free):
                self.env[free] = getattr(builtins, free)
        return self.fn.with_transform(node, label, self.env)

    def counter(self, var: str, kind: str) -> tuple[str, str]:
        if (var, kind) not in self.counters:
            base = var if kind == "tape" else var + "_old"
            self.counters[(var, kind)] = (self.namer.fresh(base + "_tape"),
                                          self.namer.fresh(base + "_top"))
        return self.counters[(var, kind)]

    def tape_setup(self) -> list:
        out = []
        for var in sorted(self.plan.taped):
            out.append(located(assign(self.counter(var, "tape")[1], const(0)), self.fn.node))
        for var in sorted(self.plan.saved_items):
            out.append(located(assign(self.counter(var, "items")[1], const(0)), self.fn.node))
        for var in sorted(self.plan.taped & set(self.fn.params)):
            out.extend(self.record(var, None))
        for var in sorted(self.guarded & set(self.fn.params)):
            out.extend(self.shape_guard(var, self.fn.node))
        return out

    def forward_block(self, stmts) -> list:
        out = []
        for stmt in stmts:
            out.extend(self.forward_statement(stmt))
            if isinstance(stmt, gast.Assign) and isinstance(stmt.targets[0], gast.Name) and \
                    stmt.targets[0].id in self.branch_defined():
                out.extend(located(s, stmt) for s in self.zero_adjoints(stmt.targets[0].id))
        return out

    def branch_defined(self) -> set:
        """Active names whose adjoint lives in the whole function but which are assigned
        only inside compound statements: their value may be unbound in the branch not
        taken, so the adjoint is zeroed where the value is assigned, not at the top."""
        if self._branch_defined is None:
            top = id(self.body)
            self._branch_defined = {
                var for var, home in self.home_blocks().items()
                if home == top and var not in self.fn.params and
                var not in self.diff_outputs and self.rule_result(name(var)) is None and
                self.defs.get(var) and all(
                    isinstance(d, gast.Assign) and isinstance(d.targets[0], gast.Name) and
                    id(d) in self.block_of and self.block_of[id(d)] != top
                    for d in self.defs[var])}
        return self._branch_defined

    def forward_statement(self, stmt) -> list:
        if isinstance(stmt, gast.Assign):
            target = stmt.targets[0]
            guards = self.view_guards(stmt)
            if isinstance(target, gast.Subscript):
                saves = self.save_items(stmt) if target.value.id in self.plan.saved_items \
                    else []
                records = self.record(target.value.id, stmt) if id(stmt) in self.plan.writes \
                    else []
                return guards + saves + [copy.deepcopy(stmt)] + records
            skipped = (target.id, id(stmt)) in self.plan.skipped
            records = self.record(target.id, stmt) if target.id in self.plan.taped and \
                not skipped else []
            primal = copy.deepcopy(stmt)
            if id(stmt) in self.view_copies:     # a view the reverse reads after a write
                primal = located(assign(target.id, call(name(self.helper(
                    "own_value", tape.own_value)), primal.value)), stmt)
            return guards + [primal] + records + \
                self.shape_guard(target.id, stmt) + \
                self.summary_guard(target.id, stmt)
        if isinstance(stmt, gast.If):
            return [located(gast.If(test=copy.deepcopy(stmt.test),
                                    body=self.forward_block(stmt.body) or [gast.Pass()],
                                    orelse=self.forward_block(stmt.orelse)), stmt)]
        if isinstance(stmt, gast.For):
            reserve = self.reserve_before(stmt)
            loop = gast.For(target=copy.deepcopy(stmt.target), iter=copy.deepcopy(stmt.iter),
                            body=self.forward_block(stmt.body) or [gast.Pass()], orelse=[],
                            type_comment=None)
            records = [r for var in sorted(self.plan.after.get(id(stmt), ()))
                       for r in self.record(var, stmt)]
            return reserve + [located(loop, stmt)] + records
        if isinstance(stmt, gast.While):
            return [located(gast.While(test=copy.deepcopy(stmt.test),
                                       body=self.forward_block(stmt.body) or [gast.Pass()],
                                       orelse=[]), stmt)]
        return [copy.deepcopy(stmt)]

    def view_guards(self, stmt) -> list:
        """`check_not_view(v, y, 'v', 'y')` before an in-place write to `y` (see view_checks)."""
        if id(stmt) not in self.view_checks:
            return []
        base = self._write_site(stmt)[0]
        check = self.helper("check_not_view", tape.check_not_view)
        return [located(gast.Expr(value=call(name(check), name(var), name(base), const(var),
                                             const(base))), stmt)
                for var in self.view_checks[id(stmt)]]

    def shape_guard(self, var: str, stmt) -> list:
        """Accumulators read only for their shape are not recorded: their first shape is
        kept, and each later assignment is checked against it."""
        if var not in self.guarded:
            return []
        reference = self.shape_name(var)
        if var in self.moved_guards and self.first_definition(var) is not stmt:
            return []                           # checked in the reverse sweep instead
        if self.first_definition(var) is stmt:
            return [located(assign(reference, call(name(self.helper(
                "shape_of", tape.shape_of)), name(var))), stmt)]
        return [located(gast.Expr(value=call(name(self.helper("check_shape", tape.check_shape)),
                                             name(var), name(reference))), stmt)]

    def summary_guard(self, var: str, stmt) -> list:
        """Values of `var` not recorded (tape.summarize_loops) keep the shape of the one
        before the loop, which its record after the loop checks against its tape: so a
        shape read in the loop's reverse, which sees that record, gets the right shape."""
        if (var, id(stmt)) in self.plan.anchors:
            return [located(assign(self.shape_name(var), call(name(self.helper(
                "shape_of", tape.shape_of)), name(var))), stmt)]
        if (var, id(stmt)) in self.plan.skipped:             # an update in the loop
            return [located(gast.Expr(value=call(name(self.helper(
                "check_shape", tape.check_shape)), name(var), name(self.shape_name(var)))),
                stmt)]
        return []

    def shape_name(self, var: str) -> str:
        if (var, "shape") not in self.counters:
            self.counters[(var, "shape")] = (self.namer.fresh(var + "_shape"), None)
        return self.counters[(var, "shape")][0]

    def capacity(self, stmt):
        """Tape rows to reserve at the first record: the trip count when it is known."""
        loops = self.loops_of.get(id(stmt), ()) if stmt is not None else ()
        if len(loops) == 1 and isinstance(loops[0], gast.For) and \
                self.block_of[id(stmt)] == id(loops[0].body):
            return self.trip_count(loops[0])
        return const(1 if not loops else tape.MIN_CAPACITY)

    def trip_count(self, loop):
        args = [copy.deepcopy(a) for a in loop.iter.args]
        if len(args) == 1:
            args = [const(0)] + args
        if len(args) == 2:
            args.append(const(1))
        return call(name(self.helper("trip_count", tape.trip_count)), *args)

    def record(self, var: str, stmt) -> list:
        tape_name, top = self.counter(var, "tape")
        maker = "float_tape" if var in self.plan.float_tapes else "exact_tape"
        create = gast.If(test=gast.Compare(left=name(top), ops=[gast.Eq()],
                                           comparators=[const(0)]),
                         body=[assign(tape_name, call(
                             name(self.helper(maker, getattr(tape, maker))), name(var),
                             self.capacity(stmt)))], orelse=[])
        push = assign(tape_name, call(name(self.helper("push", tape.push)), name(tape_name),
                                      name(top), name(var)))
        bump = assign(top, gast.BinOp(left=name(top), op=gast.Add(), right=const(1)))
        origin = stmt if stmt is not None else self.fn.node
        return [located(s, origin) for s in (create, push, bump)]

    def reserve_before(self, loop) -> list:
        """Grow the tapes an outermost `for` loop will fill to their final size at once."""
        if self.loops_of[id(loop)]:
            return []
        out = []
        for var in sorted(self.plan.taped):
            sites = [d for d in self.defs[var] if isinstance(d, gast.Assign) and
                     (var, id(d)) not in self.plan.skipped] + \
                [s for s in self.simple if id(s) in self.plan.writes and
                 s.targets[0].value.id == var]
            inside = [d for d in sites + [s for s in loop.body if isinstance(s, gast.For)
                                          and var in self.plan.after.get(id(s), ())]
                      if self.block_of[id(d)] == id(loop.body)]
            before = [d for d in sites if self.block_of[id(d)] == self.block_of[id(loop)]
                      and self.order[id(d)] < self.order[id(loop)]] or \
                (var in self.fn.params and not self.loops_of[id(loop)])
            if inside and before:
                tape_name, top = self.counter(var, "tape")
                rows = gast.BinOp(left=name(top), op=gast.Add(), right=gast.BinOp(
                    left=const(len(inside)), op=gast.Mult(), right=self.trip_count(loop)))
                out.append(located(assign(tape_name, call(
                    name(self.helper("reserve", tape.reserve)), name(tape_name), rows)), loop))
        return out

    def save_items(self, stmt) -> list:
        target = stmt.targets[0]
        var = target.value.id
        buf, top = self.counter(var, "items")
        old = subscript(name(var), copy.deepcopy(target.slice))
        create = gast.If(test=gast.Compare(left=name(top), ops=[gast.Eq()],
                                           comparators=[const(0)]),
                         body=[assign(buf, call(name(self.helper("items_buffer",
                                                                 tape.items_buffer)),
                                                name(var), const(tape.MIN_CAPACITY)))],
                         orelse=[])
        push = assign(gast.Tuple(elts=[store(buf), store(top)], ctx=gast.Store()),
                      call(name(self.helper("push_items", tape.push_items)), name(buf),
                           name(top), old))
        return [located(create, stmt), located(push, stmt)]

    # ------------------------------------------------------------ emission: reverse
    def reverse_block(self, stmts, top: bool = False) -> list:
        body = []
        comment = [None]
        for stmt in reversed(stmts):
            body.extend(self.reverse_statement(stmt, comment))
        if not body and not top:
            return []
        prefix = [copy.deepcopy(s) for s in stmts if isinstance(s, gast.Assign) and
                  isinstance(s.targets[0], gast.Name) and s.targets[0].id in
                  self.plan.recomputed]
        inits = self.inits(id(stmts), top)
        if top:
            inits += self.seeds()
        return prefix + inits + body

    def reverse_statement(self, stmt, comment) -> list:
        if isinstance(stmt, gast.Assign):
            out = [copy.deepcopy(s) for s in self.adjoints[id(stmt)]]
            text = self.fn.origin.source_line(getattr(stmt, "lineno", None))
            if out and text and text.strip() != comment[0]:
                comment[0] = text.strip()
                emit.annotate(out[0], "grad of: " + comment[0])
            target = stmt.targets[0]
            if isinstance(target, gast.Subscript):
                if target.value.id in self.plan.saved_items:
                    out += self.restore_items(stmt)
                if id(stmt) in self.plan.writes:
                    out += self.restore(target.value.id)
            else:
                out += self.reset(target.id, stmt)
                if target.id in self.plan.taped and \
                        (target.id, id(stmt)) not in self.plan.skipped and \
                        not getattr(stmt, "secant_late_restore", False):
                    out += self.restore(target.id)
            return [located(s, stmt) for s in out]
        if isinstance(stmt, gast.If):
            body, orelse = self.reverse_block(stmt.body), self.reverse_block(stmt.orelse)
            if not body and not orelse:
                return []
            comment[0] = None
            return [located(gast.If(test=copy.deepcopy(stmt.test), body=body or [gast.Pass()],
                                    orelse=orelse), stmt)]
        if isinstance(stmt, gast.For):
            restores = [located(s, stmt) for var in sorted(self.plan.after.get(id(stmt), ()))
                        for s in self.restore(var)]
            return self.reverse_for(stmt, comment) + restores
        if isinstance(stmt, gast.While):
            return self.reverse_while(stmt, comment)
        return []

    def reverse_for(self, loop, comment) -> list:
        body = self.reverse_block(loop.body)
        if not body:
            return []
        comment[0] = None
        last, start, step = loop.secant_reverse
        if isinstance(start, gast.Constant) and isinstance(step, gast.Constant):
            stop = const(start.value - step.value)
        else:
            stop = gast.BinOp(left=copy.deepcopy(start), op=gast.Sub(),
                              right=copy.deepcopy(step))
        back = const(-step.value) if isinstance(step, gast.Constant) else \
            gast.UnaryOp(op=gast.USub(), operand=copy.deepcopy(step))
        header = call(name(self.helper("range", range)), name(last), stop, back)
        rev = gast.For(target=copy.deepcopy(loop.target), iter=header, body=body, orelse=[],
                       type_comment=None)
        return [located(rev, loop)]

    def reverse_while(self, loop, comment) -> list:
        body = self.reverse_block(loop.body)
        trips = loop.secant_trips
        out = []
        if body:
            comment[0] = None
            index = self.namer.fresh("trip")
            out.append(located(gast.For(target=store(index), iter=call(
                name(self.helper("range", range)), name(trips)), body=body, orelse=[],
                type_comment=None), loop))
        if trips in self.plan.taped:
            out += [located(s, loop) for s in self.restore(trips)]
        return out

    def restore(self, var: str) -> list:
        tape_name, top = self.counter(var, "tape")
        value = subscript(name(tape_name), gast.BinOp(left=name(top), op=gast.Sub(),
                                                       right=const(1)))
        if var in self.written:
            value = call(name(self.helper("copy_array", np.copy)), value)
        pop = assign(top, gast.BinOp(left=name(top), op=gast.Sub(), right=const(1)))
        back = gast.If(test=gast.Compare(left=name(top), ops=[gast.Gt()],
                                         comparators=[const(0)]),
                       body=[assign(var, value)], orelse=[])
        return [pop, back]

    def restore_items(self, stmt) -> list:
        target = stmt.targets[0]
        var = target.value.id
        buf, top = self.counter(var, "items")
        old = self.namer.fresh(var + "_old")
        pop = assign(gast.Tuple(elts=[store(old), store(top)], ctx=gast.Store()),
                     call(name(self.helper("pop_items", tape.pop_items)), name(buf), name(top),
                          subscript(name(var), copy.deepcopy(target.slice))))
        write = assign(subscript(name(var), copy.deepcopy(target.slice), gast.Store()),
                       name(old))
        return [pop, write]

    # ------------------------------------------------------------ adjoint initialisation
    def home_blocks(self) -> dict:
        """Active name -> the innermost block holding all its assignments and reads, and
        the loops whose trips pass its value on to the next (`_carried`)."""
        if self._homes is not None:
            return self._homes
        homes = {}
        for var in self.active:
            stmts = [s for s in self.defs.get(var, []) + self.loads.get(var, [])
                     if id(s) in self.chain_of]
            chains = [self.chain_of[id(s)] for s in stmts]
            if var in self.carried:
                chains.append(self.chain_of[id(self.carried[var])])
            if var in self.fn.params or not chains or var in self.diff_outputs:
                homes[var] = id(self.body)
                continue
            common = chains[0]
            for chain in chains[1:]:
                n = 0
                while n < min(len(common), len(chain)) and common[n] == chain[n]:
                    n += 1
                common = common[:n]
            homes[var] = common[-1] if common else id(self.body)
        self._homes = homes
        return homes

    def inits(self, block_id, top) -> list:
        out = []
        first = {v: min((self.order.get(id(d), -1) for d in self.defs.get(v, [])),
                        default=-1) for v in self.active}
        for var in sorted((v for v, b in self.home_blocks().items() if b == block_id),
                          key=lambda v: (first[v], v)):
            if self.rule_result(name(var)) is not None or \
                    (top and var in self.branch_defined()):
                continue                  # its items carry the adjoints, or it is zeroed
                                          # where assigned
            if var in self.wrt and top and var not in self.elements:
                check = self.helper("float_zeros", float_zeros)
                out.append(assign(self.adjoint[var], call(name(check), name(var),
                                                          const(var))))
            else:
                out.extend(self.zero_adjoints(var, by_items=True))
        return out

    def reset(self, var: str, stmt) -> list:
        """Zero the adjoint after its value's assignment consumed it, if anything may add
        to it afterwards: another assignment (a parameter's entry value counts as one) or
        this one again in a loop outside the adjoint's home block."""
        if var not in self.active or self.rule_result(name(var)) is not None:
            return []
        defs = self.defs[var]
        home = self.home_blocks()[var]
        home_loops = self._loops_of_block(home)
        if len(defs) > 1 or var in self.fn.params or \
                len(self.loops_of[id(stmt)]) > len(home_loops):
            return self.zero_adjoints(var)
        return []

    def _loops_of_block(self, block_id):
        if block_id == id(self.body):
            return ()
        for stmt_id, bid in self.block_of.items():
            if bid == block_id:
                return self.loops_of[stmt_id]
        return ()

    def param_gradient(self, var: str):
        """The returned gradient of parameter `var`: a dict (or tuple) for a container."""
        if self.call_result(name(var)):
            keys = self.container_keys(var)
            zeros = self.helper("zeros_like", runtime.zeros_like)
            items = [name(self.elements[var][k]) if k in self.elements.get(var, {}) else
                     call(name(zeros), subscript(name(var), const(k))) for k in keys]
            if all(isinstance(k, str) for k in keys):
                return gast.Dict(keys=[const(k) for k in keys], values=items)
            if sorted(keys) == list(range(len(keys))):
                return gast.Tuple(elts=[items[keys.index(k)] for k in range(len(keys))],
                                  ctx=gast.Load())
            raise self.fn.origin.error(self.fn.node, f"the gradient of container argument "
                                       f"{var!r} needs every item read with one kind of key",
                                       "read all items as p[0], p[1], ... or p['a'], ...")
        if var in self.active:
            return name(self.adjoint[var])
        return call(name(self.helper("float_zeros", float_zeros)), name(var), const(var))

    def seeds(self) -> list:
        out = []
        atoms = self.out_elements if self.out_elements is not None else [self.out_atom]
        self.cotangent_params = []
        for k, atom in enumerate(atoms):
            if self.mode == VJP:
                base = "b_" + atom.id if isinstance(atom, gast.Name) else f"b_out{k}"
                cot = self.namer.fresh(base)
                self.cotangent_params.append(cot)
                seed = name(cot)
            else:
                seed = call(name(self.helper("unit_cotangent", unit_cotangent)),
                            copy.deepcopy(atom))
            if isinstance(atom, gast.Name) and atom.id in self.active:
                out.append(self.accumulate(atom.id, seed))
        return out

    def keep_returned_values(self) -> list:
        """Copies of the returned value and aux taken at the end of the forward sweep."""
        kept = []
        if self.mode == VALUE_AND_GRAD and isinstance(self.out_atom, gast.Name):
            value = self.namer.fresh(f"{self.out_atom.id}_value")
            kept.append(assign(store(value), self.out_atom))
            self.out_atom = name(value)
        if self.has_aux and isinstance(self.aux, gast.Name):
            aux = self.namer.fresh(f"{self.aux.id}_aux")
            kept.append(assign(store(aux), self.aux))
            self.aux = name(aux)
        return kept

    def final_return(self) -> gast.Return:
        grads = [self.param_gradient(v) for v in self.wrt]
        if self.mode == VJP:
            return gast.Return(value=gast.Tuple(elts=grads, ctx=gast.Load()))
        value = grads[0] if len(grads) == 1 and not self.tuple_grads else \
            gast.Tuple(elts=grads, ctx=gast.Load())
        if self.has_aux:
            aux = copy.deepcopy(self.aux)
            if self.mode == GRAD:
                return gast.Return(value=gast.Tuple(elts=[value, aux], ctx=gast.Load()))
            out = gast.Tuple(elts=[copy.deepcopy(self.out_atom), aux], ctx=gast.Load())
            return gast.Return(value=gast.Tuple(elts=[out, value], ctx=gast.Load()))
        if self.mode == GRAD:
            return gast.Return(value=value)
        return gast.Return(value=gast.Tuple(elts=[copy.deepcopy(self.out_atom), value],
                                            ctx=gast.Load()))


def _accumulating() -> tuple:
    """The helpers that return their first argument after writing into it in place
    (or a larger copy of it, for a tape that grows)."""
    from ..helper_rules import accumulated, items_pushed   # helper_rules imports reverse
    return (accumulated, items_pushed, tape.push)


def _tape_makers() -> tuple:
    """The helpers whose result is a tape or an element buffer."""
    from ..helper_rules import items_pushed
    return (tape.push, tape.reserve, tape.exact_tape, tape.float_tape, tape.items_buffer,
            items_pushed)


def _carried(loop) -> set:
    """Names the body of `loop` may read before assigning them, and assigns: a read sees
    the value of the previous trip (`if i > 0: s = s + t` then `t = x * i`)."""
    entry = {loop.target.id} if isinstance(loop, gast.For) else set()
    exposed, _ = _exposed(loop.body, entry)
    return exposed & {n.id for s in loop.body for n in gast.walk(s)
                      if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store)}


def _exposed(stmts, defined: set) -> tuple[set, set]:
    """(names `stmts` may read before assigning them when `defined` are assigned on
    entry, the names surely assigned at their end)."""
    exposed, defined = set(), set(defined)
    for stmt in stmts:
        if isinstance(stmt, gast.If):
            exposed |= set(_names([stmt.test])) - defined
            body, after_body = _exposed(stmt.body, defined)
            orelse, after_orelse = _exposed(stmt.orelse, defined)
            exposed |= body | orelse
            defined = after_body & after_orelse
        elif isinstance(stmt, (gast.For, gast.While)):    # the body may not run
            head = stmt.iter if isinstance(stmt, gast.For) else stmt.test
            exposed |= set(_names([head])) - defined
            inner = {stmt.target.id} if isinstance(stmt, gast.For) else set()
            exposed |= _exposed(stmt.body, defined | inner)[0]
        else:
            exposed |= set(_names([stmt])) - defined
            if isinstance(stmt, gast.Assign) and isinstance(stmt.targets[0], gast.Name):
                defined.add(stmt.targets[0].id)
    return exposed, defined


def _may_overlap(read_index, write_index) -> bool:
    """Whether a read and a write of one array may touch the same elements: they do unless
    their first indices are different names or constants (`X[i]` and `X[i_plus_1]`)."""
    def first(index):
        return index.elts[0] if isinstance(index, gast.Tuple) and index.elts else index
    a, b = first(read_index), first(write_index)
    if isinstance(a, gast.Slice) or isinstance(b, gast.Slice):
        return True
    if isinstance(a, gast.Name) and isinstance(b, gast.Name):
        return a.id == b.id
    if isinstance(a, gast.Constant) and isinstance(b, gast.Constant):
        return a.value == b.value
    return False


def _cheap_pure_function(obj, depth: int = 0) -> bool:
    """Whether a user function computes its result from its arguments alone and without
    loops: running it again in the reverse sweep costs about what recording it would
    (`minimum_image(d, box)` in a pair loop)."""
    from ..api_reverse import CustomVJP
    from ..frontend import parse
    if isinstance(obj, CustomVJP) or depth > 3:
        return False
    try:
        fn = parse(obj)
    except TransformError:
        return False
    pure = pure_calls(fn.env, lambda callee: _cheap_pure_function(callee, depth + 1))
    for node in gast.walk(gast.Module(body=fn.node.body, type_ignores=[])):
        if isinstance(node, (gast.For, gast.While, gast.Global, gast.Nonlocal, gast.Raise,
                             gast.Assert, gast.FunctionDef, gast.Lambda, gast.Try,
                             gast.With)) or \
                isinstance(node, (gast.Subscript, gast.Attribute)) and \
                isinstance(node.ctx, gast.Store) or \
                isinstance(node, gast.Call) and not pure(node):
            return False
    return True


def _refuse_argument_writes(callee: Function, call_stmt, caller: Function) -> None:
    """A callee's vjp runs its forward code again: writing into an argument would then
    write twice, so it is refused."""
    params = set(callee.params)
    for sub in gast.walk(callee.node):
        if isinstance(sub, gast.Subscript) and isinstance(sub.ctx, gast.Store) and \
                isinstance(sub.value, gast.Name) and sub.value.id in params:
            raise caller.origin.error(call_stmt, f"{callee.name} writes into its argument "
                                      f"{sub.value.id!r}; reverse mode cannot differentiate "
                                      "a call that changes its arguments",
                                      f"copy inside {callee.name} ({sub.value.id} = "
                                      f"{sub.value.id}.copy()) and return the result")


def _primal_params(obj) -> list:
    from ..api_reverse import CustomVJP
    from ..frontend import parse
    return parse(obj.fun if isinstance(obj, CustomVJP) else obj).params


# arguments that only carry a float type or a shape: reading a variable there does not
# make the reverse sweep need its value at that point (tape.py decides whether its shape
# needs anything)
_DTYPE_ARGUMENTS = {runtime.cast_like: 1}
_SHAPE_ARGUMENTS = {runtime.unbroadcast: 1, runtime.zeros_like: 0,
                    runtime.broadcast_reduced: 1, runtime.reshape_like: 1}


def _shape_follows_operands(value, env) -> bool:
    """Elementwise arithmetic or a shape-keeping call of atoms (`0.5 * e`, `np.sum(e)`)."""
    def atom(node):
        return isinstance(node, (gast.Name, gast.Constant))
    if isinstance(value, gast.BinOp) and not isinstance(value.op, gast.MatMult):
        return atom(value.left) and atom(value.right)
    if isinstance(value, gast.UnaryOp):
        return atom(value.operand)
    if isinstance(value, gast.Call) and not value.keywords:
        func = tape.resolve_in(env, value.func)
        return (isinstance(func, np.ufunc) or any(func is f for f in tape.SHAPE_KEEPING)) \
            and all(atom(a) for a in value.args)
    return False


# the argument a helper reads only for its shape and float type
_WEAK_ARGUMENTS = {runtime.unbroadcast: 1, runtime.zeros_like: 0, runtime.cast_like: 1,
                   runtime.broadcast_reduced: 1, runtime.reshape_like: 1}


def shape_argument(helper, position: int) -> None:
    """Declare that `helper` reads argument `position` only for its shape."""
    _SHAPE_ARGUMENTS[helper] = position
    _WEAK_ARGUMENTS[helper] = position


def _reads(stmts, env) -> tuple[set, set]:
    """(names whose values the statements read, names read only for their shape)."""
    skipped, shape_reads = set(), {}
    for stmt in stmts:
        for sub in gast.walk(stmt):
            if isinstance(sub, gast.Call) and isinstance(sub.func, gast.Name):
                helper = env.get(sub.func.id)
                for table, shape in ((_DTYPE_ARGUMENTS, False), (_SHAPE_ARGUMENTS, True)):
                    position = table.get(helper)
                    if position is not None and position < len(sub.args) and \
                            isinstance(sub.args[position], gast.Name):
                        skipped.add(id(sub.args[position]))
                        if shape:
                            shape_reads[id(sub.args[position])] = sub.args[position].id
    loads = [sub for stmt in stmts for sub in gast.walk(stmt)
             if isinstance(sub, gast.Name) and isinstance(sub.ctx, gast.Load)]
    return {n.id for n in loads if id(n) not in skipped}, set(shape_reads.values())


# ---------------------------------------------------------------- runtime helpers


def unit_cotangent(out):
    """1 in the float type of a scalar output; an error naming the shape otherwise."""
    if np.ndim(out) != 0:
        raise TypeError(f"grad requires a scalar output, but the function returned an array "
                        f"of shape {np.shape(out)}; use vjp or jacrev for non-scalar outputs")
    return runtime.cast_like(1.0, out)


def float_zeros(x, label):
    """Zeros shaped like argument `x`; an error naming it when it is an integer, a
    boolean or complex (see `input_dtypes`)."""
    if input_kind(x) is not None:
        raise refusal("grad", label, x, allow_int_hint=False)
    return runtime.zeros_like(x)


def _install_overloads():
    from numba import types
    from numba.core.errors import TypingError
    from numba.extending import overload

    @overload(unit_cotangent)
    def _unit_nb(out):
        if isinstance(out, types.Array) and out.ndim > 0:
            raise TypingError(f"grad requires a scalar output, but the function returned a "
                              f"{out.ndim}-d array; use vjp or jacrev for non-scalar outputs")
        return lambda out: runtime.cast_like(1.0, out)

    @overload(float_zeros)
    def _zeros_nb(x, label):
        dtype = x.dtype if isinstance(x, types.Array) else x
        if isinstance(dtype, (types.Integer, types.Boolean, types.Complex)):
            which = getattr(label, "literal_value", "an argument")
            kind = "complex" if isinstance(dtype, types.Complex) else "an integer"
            raise TypingError(f"grad requires real-valued inputs (input dtype that is a "
                              f"sub-dtype of np.floating), but argument {which!r} is {kind} "
                              f"({dtype})")
        return lambda x, label: runtime.zeros_like(x)


_install_overloads()
_WEAK_ARGUMENTS[unit_cotangent] = 0
# helpers whose results do not depend on their arguments' values (shapes, types, zeros)
nondifferentiable(unit_cotangent, float_zeros, tape.float_tape, tape.exact_tape,
                  tape.items_buffer, tape.trip_count, tape.range_last)
__all__ = ["reverse_function", "prepare", "GRAD", "VALUE_AND_GRAD", "VJP"]
