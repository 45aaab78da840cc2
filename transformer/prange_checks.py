"""Failed index checks inside a `prange` loop, carried out of it.

Numba runs a `prange` body on worker threads and drops an exception raised there: the
thread's share of the loop stops (so the out-of-bounds access never happens), but the
caller sees a value computed from unwritten memory, or a `SystemError`. This pass, run
after `transformer.bounds`, rewrites every `for v in prange(...)` loop that holds checks:

    err = index_errors()                      # int64[4], err[0] = -1: nothing failed
    for v in prange(...):
        ... checked_rec(x, i, 0, "f.py:3:9", err, 0) ...
    raise_recorded(err, "f.py:3:9\n...")     # the sites' locations, one a line

A `*_rec` check records its failure (site, index, axis, size) into `err` before it raises
(the raise still ends that thread's share, so nothing reads or writes out of bounds), and
`raise_recorded` raises after the loop the `IndexError(where, index, axis, size)` that
the serial check would have raised, which `with_source_line` locates. When several
threads fail at once, one failure is reported: any of them is a true one.

A check inside a function that the loop body calls (the example function of vmap's loop
strategy, a helper of the user's) cannot see `err`. For a loop whose body only binds
names and writes into arrays that it does not read (so running an iteration twice does
what running it once does), each trip marks itself done as its last statement, and after
the loop the trips left undone (a thread whose share a dropped exception ended) run again
serially: the failing one raises its located error there, and the others complete their
work. A callee that can fail only through the shapes of its operands (`_shape_only`:
elementwise arithmetic and math, no indexing, division or raise), called once before the
loop and given operands of the same shapes on every trip (vmap's example 0, then the
others), cannot fail inside the loop, and needs neither: its trips stay unmarked, which
keeps the loop vectorizable. Any other body (`+=`, an `if` with an `else`, an inner loop,
a read of what it writes) calls each function secant compiles as
`error_flags.Flagged(f)`, with `err` as its last argument: its checks record into `err`
(as site `error_flags.site_number` of their location) before they raise, and so do the
functions it calls in turn (`record_in_flag`), so `raise_recorded` raises their failure
after the loop.
"""
from __future__ import annotations

import inspect
import math

import gast
import numba
import numpy as np

from . import error_flags, index_checks
from .bound_calls import compiled_callee
from .function import Function, hashable, resolve
from .nodes import copy_tree, walk
from .runtime import vector_math

_RECORDING = {
    index_checks.checked: index_checks.checked_rec,
    index_checks.checked_item: index_checks.checked_item_rec,
    index_checks.checked_range: index_checks.checked_range_rec,
}


def record_in_prange(checker, node: gast.FunctionDef) -> gast.FunctionDef:
    """`node` with the checks of its `prange` loops recorded and raised after each loop."""
    plain = {checker.names[id(obj)]: rec for obj, rec in _RECORDING.items()
             if id(obj) in checker.names}
    if plain:
        node.body = _statements(checker, node.body, plain)
    return node


def record_in_flag(checker, node: gast.FunctionDef, flag: str) -> gast.FunctionDef:
    """`node`, a function called as `error_flags.Flagged`, with every check recording into
    its parameter `flag` (site: `error_flags.site_number`) and passing it on."""
    plain = {checker.names[id(obj)]: rec for obj, rec in _RECORDING.items()
             if id(obj) in checker.names}
    for call in [n for n in walk(node) if isinstance(n, gast.Call)]:
        if isinstance(call.func, gast.Name) and call.func.id in plain:
            where = call.args[-1].value
            recording = plain[call.func.id]
            call.func = checker.bind(recording, recording.__name__)
            call.args += [_load(flag), gast.Constant(error_flags.site_number(where), None)]
        elif _compiled(checker, call) is not None:
            _flag_call(checker, call, flag)
    return node


def _compiled(checker, call) -> Function | None:
    """The Function secant compiles for the function `call` calls (it can be flagged)."""
    if isinstance(checker.facts.callee(call), error_flags.Flagged):
        return None
    return compiled_callee(checker.fn, call.func)


def _flag_call(checker, call: gast.Call, flag: str) -> None:
    callee = checker.facts.callee(call)
    if id(callee) not in checker.flagged:
        checker.flagged[id(callee)] = (callee, error_flags.Flagged(_compiled(checker, call)))
    flagged = checker.flagged[id(callee)][1]
    call.func = checker.bind(flagged, f"{flagged.__name__}_flagged")
    call.args = call.args + [_load(flag)]


def _statements(checker, body, plain) -> list:
    out: list = []
    for stmt in body:
        if isinstance(stmt, gast.For) and checker.facts.callee(stmt.iter) is numba.prange:
            out.extend(_loop(checker, stmt, plain, out))
            continue
        for field in ("body", "orelse", "finalbody"):
            if isinstance(stmt, (gast.For, gast.While, gast.If, gast.Try, gast.With)) \
                    and isinstance(getattr(stmt, field, None), list):
                setattr(stmt, field, _statements(checker, getattr(stmt, field), plain))
        out.append(stmt)
    return out


def _loop(checker, loop: gast.For, plain, before: list) -> list:
    calls = [n for s in loop.body + loop.orelse for n in walk(s)
             if isinstance(n, gast.Call) and isinstance(n.func, gast.Name)
             and n.func.id in plain]
    safe = _safe_callees(checker, loop, before)
    rerun = _rerun(checker, loop, safe)
    # a body that can run twice reruns its unfinished trips serially instead: its calls
    # stay as they are (a flag passed to a call in every trip costs W6 about 15%)
    helpers = [] if rerun else [n for s in loop.body + loop.orelse for n in walk(s)
                                if isinstance(n, gast.Call) and _compiled(checker, n) is not None
                                and id(checker.facts.callee(n)) not in safe]
    if not calls and not helpers:
        return rerun if rerun else [loop]
    err = checker.namer.fresh("index_error")
    wheres = []
    for site, call in enumerate(calls):
        wheres.append(call.args[-1].value)
        recording = plain[call.func.id]
        call.func = checker.bind(recording, recording.__name__)
        call.args += [_load(err), gast.Constant(site, None)]
    for call in helpers:
        _flag_call(checker, call, err)
    make = gast.Call(func=checker.bind(index_checks.index_errors, "index_errors"),
                     args=[], keywords=[])
    before = gast.Assign(targets=[gast.Name(id=err, ctx=gast.Store(), annotation=None,
                                            type_comment=None)], value=make)
    after = gast.Expr(value=gast.Call(
        func=checker.bind(index_checks.raise_recorded, "raise_recorded"),
        args=[_load(err), gast.Constant("\n".join(wheres), None)], keywords=[]))
    for stmt in (before, after):
        gast.copy_location(stmt, loop)
        for sub in walk(stmt):
            gast.copy_location(sub, loop)
    if rerun:
        return [before, *rerun[:2], after, *rerun[2:]]
    return [before, loop, after]


def _rerun(checker, loop: gast.For, safe: set) -> list:
    """[done = ..., loop marking done, serial rerun of undone trips], or [] if unsafe."""
    args = loop.iter.args
    start = args[0] if len(args) == 2 else gast.Constant(0, None)
    if not 1 <= len(args) <= 2 or loop.iter.keywords or loop.orelse \
            or not isinstance(start, gast.Constant) or not isinstance(start.value, int) \
            or start.value < 0 or not isinstance(loop.target, gast.Name):
        return []
    calls_generated = any(_may_raise(checker.facts.callee(n))
                          and id(checker.facts.callee(n)) not in safe
                          for s in loop.body for n in walk(s))
    if not calls_generated or not _idempotent(loop.body):
        return []
    done = checker.namer.fresh("trip_done")
    stop = args[-1]
    make = gast.Call(func=checker.bind(index_checks.trips_done, "trips_done"),
                     args=[_copy(stop)], keywords=[])
    before = gast.Assign(targets=[_store(done)], value=make)
    var = loop.target.id
    mark = gast.Assign(targets=[gast.Subscript(value=_load(done), slice=_load(var),
                                               ctx=gast.Store())],
                       value=gast.Constant(True, None))
    body = [_copy(s) for s in loop.body]
    loop.body = loop.body + [mark]
    again = gast.For(
        target=_store(var),
        iter=gast.Call(func=checker.bind(range, "range"), args=[_copy(start), _copy(stop)],
                       keywords=[]),
        body=[gast.If(test=gast.UnaryOp(op=gast.Not(), operand=gast.Subscript(
            value=_load(done), slice=_load(var), ctx=gast.Load())), body=body, orelse=[])],
        orelse=[], type_comment=None)
    for stmt in (before, mark, again):
        for sub in walk(stmt):
            gast.copy_location(sub, loop)
    return [before, loop, again]


def _may_raise(callee) -> bool:
    """`callee` is compiled from Python source (and so checks its indices, and raises),
    and is not one of the elementwise functions that never raise."""
    if any(callee is never for never in _NEVER_RAISE):
        return False
    return isinstance(callee, Function) or inspect.isfunction(callee) \
        or hasattr(callee, "py_func")


# ---------------------------------------------------------------- callees that cannot fail

# elementwise functions that return NaN or an infinity under Numba instead of raising
_NEVER_RAISE = {abs, np.abs, np.sqrt, math.sqrt, np.sin, math.sin, np.cos, math.cos,
                np.exp, math.exp, np.expm1, math.expm1, np.log, math.log, np.log1p,
                math.log1p, np.tanh, math.tanh, np.where, np.maximum, np.minimum,
                vector_math.vector_exp, vector_math.vector_expm1, vector_math.vector_log,
                vector_math.vector_log1p, vector_math.vector_tanh, vector_math.vector_expit}
_SHAPE_ONLY_NODES = (gast.Name, gast.Constant, gast.Load, gast.Store, gast.BinOp,
                     gast.UnaryOp, gast.Compare, gast.BoolOp, gast.IfExp, gast.Tuple,
                     gast.Call, gast.Assign, gast.If, gast.Return, gast.Pass, gast.Expr,
                     gast.Add, gast.Sub, gast.Mult, gast.USub, gast.UAdd, gast.Not,
                     gast.And, gast.Or, gast.Eq, gast.NotEq, gast.Lt, gast.LtE, gast.Gt,
                     gast.GtE, gast.arguments, gast.Param)


def _safe_callees(checker, loop: gast.For, before: list) -> set:
    """ids of the generated callees of `loop` that cannot fail in it: `_shape_only`, and
    called with the same arguments but for the loop's index in a statement that ran just
    before (nothing it reads rebound since), so every trip passes the shapes that call did."""
    if not isinstance(loop.target, gast.Name):
        return set()
    var = loop.target.id
    safe, unsafe = set(), set()
    for node in (n for s in loop.body for n in walk(s) if isinstance(n, gast.Call)):
        callee = checker.facts.callee(node)
        if not _may_raise(callee):
            continue
        if isinstance(callee, Function) and _shape_only(callee, 4) and \
                _ran_before(checker, node, callee, before, var, _bound(loop.body)):
            safe.add(id(callee))
        else:
            unsafe.add(id(callee))
    return safe - unsafe


def _bound(statements) -> set:
    return {n.id for s in statements for n in walk(s)
            if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store)}


def _ran_before(checker, call, callee, before: list, var: str, bound: set) -> bool:
    """A top-level statement of `before` calls `callee` with `call`'s arguments, an index
    constant (checked or not) where `call` has `var`, and no name they read is rebound in
    the statements after it or in the loop."""
    for k in range(len(before) - 1, -1, -1):
        if not isinstance(before[k], (gast.Assign, gast.Expr)):
            continue
        rebound = bound | _bound(before[k + 1:])
        for early in walk(before[k].value):
            if isinstance(early, gast.Call) and checker.facts.callee(early) is callee \
                    and _same_but_index(checker, call, early, var) \
                    and not any(isinstance(n, gast.Name) and n.id in rebound - {var}
                                for n in walk(call) if n is not call.func):
                return True
    return False


def _same_but_index(checker, node, early, var: str) -> bool:
    """`node` and `early` are one expression, but for an int constant in `early` (a
    `checked` one too) where `node` has the name `var`."""
    if isinstance(early, gast.Call) and isinstance(early.func, gast.Name) \
            and early.func.id == checker.names.get(id(index_checks.checked)):
        early = early.args[1]
    if isinstance(node, gast.Name) and node.id == var:
        return isinstance(early, gast.Constant) and type(early.value) is int
    if type(node) is not type(early):
        return False
    for field in node._fields:
        if field == "ctx":
            continue
        a, b = getattr(node, field), getattr(early, field)
        if isinstance(a, list):
            if not isinstance(b, list) or len(a) != len(b) or not all(
                    _same_but_index(checker, x, y, var) for x, y in zip(a, b)):
                return False
        elif isinstance(a, gast.AST):
            if not _same_but_index(checker, a, b, var):
                return False
        elif a != b:
            return False
    return True


def _shape_only(fn: Function, depth: int) -> bool:
    """`fn` can raise only where its operands' shapes disagree (a broadcast, the truth of
    an array): it indexes nothing, divides nothing, and calls only elementwise functions
    that never raise and functions of this kind."""
    called = {id(n) for c in walk(fn.node) if isinstance(c, gast.Call)
              for n in walk(c.func)}
    for node in walk(fn.node):
        if node is fn.node or id(node) in called:
            continue
        if not isinstance(node, _SHAPE_ONLY_NODES):
            return False
        if isinstance(node, gast.Assign) and not all(
                isinstance(t, (gast.Name, gast.Tuple)) for t in node.targets):
            return False
        if isinstance(node, gast.Call) and not _never_raises(fn, node, depth):
            return False
    return True


def _never_raises(fn: Function, call: gast.Call, depth: int) -> bool:
    if call.keywords or any(isinstance(a, gast.Starred) for a in call.args):
        return False
    target = resolve(fn, call.func, None)
    if not hashable(target):
        return False
    if target in _NEVER_RAISE:
        return True
    return isinstance(target, Function) and depth > 0 and _shape_only(target, depth - 1)


def _idempotent(body) -> bool:
    """Every statement binds a name or writes into an array that the body never reads (an
    `if` without `else` counts as its statements, its test as a read: vmap's loop skips
    example 0 so)."""
    assigns, tests = [], []
    if not _assignments(body, assigns, tests):
        return False
    written = {s.targets[0].value.id for s in assigns
               if isinstance(s.targets[0], gast.Subscript)}
    parts = tests + [s.value for s in assigns] + [s.targets[0].slice for s in assigns
                                                  if isinstance(s.targets[0], gast.Subscript)]
    read = {n.id for p in parts for n in walk(p) if isinstance(n, gast.Name)}
    return not (written & read)


def _assignments(body, assigns: list, tests: list) -> bool:
    """Collect `body`'s single-target assignments into `assigns` (and the tests of the `if`s
    holding them into `tests`); False if another kind of statement or target is there."""
    for stmt in body:
        if isinstance(stmt, gast.If) and not stmt.orelse:
            tests.append(stmt.test)
            if not _assignments(stmt.body, assigns, tests):
                return False
            continue
        if not isinstance(stmt, gast.Assign) or len(stmt.targets) != 1:
            return False
        target = stmt.targets[0]
        if not isinstance(target, gast.Name) and not (
                isinstance(target, gast.Subscript) and isinstance(target.value, gast.Name)):
            return False
        assigns.append(stmt)
    return True


def _copy(node):
    return copy_tree(node)


def _store(name: str) -> gast.Name:
    return gast.Name(id=name, ctx=gast.Store(), annotation=None, type_comment=None)


def _load(name: str) -> gast.Name:
    return gast.Name(id=name, ctx=gast.Load(), annotation=None, type_comment=None)
