"""Dead-code elimination on a generated gradient: drop work whose results nobody reads.

Input: the body of a function built by the reverse package (forward sweep, reverse sweep, return)
in the statement shapes anf.py allows plus `for ... in range(...)`. A statement is
*effectful* when it may change more than the names it assigns: an in-place write
(`x[i] = v`, `bx[i] += v`), a call the `pure` predicate does not vouch for (`push`,
`scatter_add`, a user function, a check such as `check_shape`), a return. Any other
statement stays only when a name it assigns is *live*: read later by a statement that
stays. Loops are solved to their least fixpoint, so an accumulation that only feeds
itself (`e = e + t` in a loop whose `e` nobody reads afterwards) is dead together with
everything computing `t`; an `if` or `for` left without a body goes.

A Name node marked `secant_weak` reads only the shape and float type of a variable, where
any value the variable ever holds will do (reads.py marks them where a shape check
guarantees it): it keeps alive only an assignment marked `secant_weak_definition` (one
computing a value from weakly read operands, `out = 0.5 * e` for the seed's sake), no
other. `weak_reads_bound` checks afterwards that each such read still finds its
variable bound.

A body with statements outside those shapes (`break`, `try`, `with`, ...) is left as is.

A statement that the function's own program did not need but that indexes an array
(`t = w[-5]` with `t` never read) is marked by `mark_unneeded_reads` on the primal
before the gradient is built, and kept: Python raises IndexError there when the index is
out of range, and the derivative must raise where the function does, not return a value.

Output invariant: every kept statement computes the values it computed before, and reads
only names assigned by kept statements (weak reads aside).
"""
from __future__ import annotations

from typing import Callable

import gast
import numpy as np

from codegen.backends import is_user_function

from .. import runtime, tape
from ..callbacks import pure_callback
from ..function import resolve_in
from ..nodes import copy_tree, walk
from ..runtime import host

# set on a primal statement (and so on its copies in the forward sweep) that DCE must keep
KEEP_FOR_ERRORS = "secant_keep_for_errors"
_SIMPLE = (gast.Assign, gast.AugAssign, gast.Expr, gast.Return, gast.Assert, gast.Pass)
_COMPOUND = (gast.If, gast.For, gast.While)


def eliminate_dead_code(body: list, pure: Callable[[gast.Call], bool]) -> None:
    """Remove the dead statements of a function body, in place."""
    if not _supported(body):
        return
    _block(body, set(), pure, sweep=True)


def mark_unneeded_reads(body: list, pure: Callable[[gast.Call], bool]) -> None:
    """Mark the statements of the primal `body` (its return included) that its program does
    not need and that index something with more than slices: each may raise IndexError.
    `eliminate_dead_code` keeps marked statements, so a gradient raises where `f` does."""
    if not _supported(body):
        return
    twin = copy_tree(body)
    pairs = [(copied, original) for c, o in zip(twin, body)
             for copied, original in zip(walk(c), walk(o)) if isinstance(copied, gast.stmt)]
    _block(twin, set(), pure, sweep=True)
    kept = {id(stmt) for c in twin for stmt in walk(c)}
    for copied, original in pairs:
        if id(copied) not in kept and _indexes(copied):
            setattr(original, KEEP_FOR_ERRORS, True)


def _indexes(stmt) -> bool:
    """Whether the simple statement `stmt` reads a subscript whose index is not only
    slices (a write's target is not a read)."""
    if not isinstance(stmt, _SIMPLE):
        return False
    for node in walk(stmt):
        if isinstance(node, gast.Subscript) and isinstance(node.ctx, gast.Load):
            parts = node.slice.elts if isinstance(node.slice, gast.Tuple) else [node.slice]
            if not all(isinstance(part, gast.Slice) for part in parts):
                return True
    return False


def weak_reads_bound(body: list, params) -> bool:
    """Whether every weak read finds its variable assigned on each path to it."""
    return _bound_block(body, set(params)) is not None


def forget_weak_reads(node) -> None:
    """Unmark the weak reads under `node`: their guarantee holds for this code only."""
    for sub in walk(node):
        if isinstance(sub, gast.Name) and hasattr(sub, "secant_weak"):
            del sub.secant_weak


# ---------------------------------------------------------------- which calls are pure

# builtins and runtime helpers that compute a value from their arguments and nothing else
_PURE_BUILTINS = {range, len, abs, min, max, float, int, bool, complex, round, slice, tuple,
                  divmod, pow}
_PURE_HELPERS = {runtime.cast_like, runtime.zeros_like, runtime.unbroadcast,
                 runtime.broadcast_like, runtime.broadcast_reduced, runtime.reshape_like,
                 runtime.axis_count, runtime.matmul_grad_left, runtime.matmul_grad_right,
                 tape.shape_of, tape.range_last, tape.trip_count,
                 # these write only into the tape they return, held by the name they
                 # assign (`t = push(t, n, v)`): a tape nobody reads is dead
                 tape.push, tape.reserve, tape.float_tape, tape.exact_tape}
_MUTATING = {np.copyto, np.put, np.place, np.putmask, np.fill_diagonal, np.put_along_axis}


def pure_calls(env: dict, user: Callable = lambda obj: False) -> Callable[[gast.Call], bool]:
    """A predicate: whether a call only computes its value (its function resolved in
    `env`; a local or unknown function is not pure, a user's function when `user` says
    so)."""
    def pure(node: gast.Call) -> bool:
        obj = resolve_in(env, node.func, None)
        if obj is None or any(k.arg == "out" for k in node.keywords) or \
                any(obj is f for f in _MUTATING):
            return False
        if is_user_function(obj):
            return user(obj)
        if obj is pure_callback:       # its result may be dropped, as in JAX
            return True
        if obj is host.host_call:      # the same, lowered
            site = resolve_in(env, node.args[0], None) if node.args else None
            return isinstance(site, host.HostSite) and site.kind == "pure"
        if isinstance(obj, np.ufunc) or any(obj is f for f in _PURE_HELPERS | _PURE_BUILTINS):
            return True
        module = getattr(obj, "__module__", None) or ""
        return module == "math" or \
            (module == "numpy" or module.startswith("numpy.")) and "random" not in module
    return pure


# ---------------------------------------------------------------- liveness


def _block(stmts: list, live: set, pure, sweep: bool) -> set:
    """Live names before `stmts` given those live after; with `sweep`, drop dead ones."""
    kept = []
    for stmt in reversed(stmts):
        live, keep = _statement(stmt, live, pure, sweep)
        if keep:
            kept.append(stmt)
    if sweep:
        stmts[:] = kept[::-1]
    return live


def _statement(stmt, live: set, pure, sweep: bool) -> tuple[set, bool]:
    if isinstance(stmt, gast.If):
        return _if(stmt, live, pure, sweep)
    if isinstance(stmt, gast.For):
        return _for(stmt, live, pure, sweep)
    if isinstance(stmt, gast.While):
        return _while(stmt, live, pure, sweep)
    if isinstance(stmt, gast.Pass):
        return live, False
    if isinstance(stmt, gast.Return):
        return _uses(stmt), True
    defined = _defined(stmt)
    wanted = set(defined or ()) | {_weakly(d) for d in defined or ()} \
        if getattr(stmt, "secant_weak_definition", False) else defined
    marked = getattr(stmt, KEEP_FOR_ERRORS, False)    # stays as an effect: it may raise
    if defined is not None and not (wanted & live) and not marked and \
            not _effectful(stmt.value, pure):
        return live, False
    if isinstance(stmt, gast.Expr) and not marked and not _effectful(stmt.value, pure):
        return live, False
    reads = _uses(stmt)
    if isinstance(stmt, gast.AugAssign) and isinstance(stmt.target, gast.Name):
        reads.add(stmt.target.id)
    return (live - (defined or set()) - {_weakly(d) for d in defined or ()}) | reads, True


def _defined(stmt):
    """Names a plain assignment binds; None for a write through a subscript or a call."""
    if isinstance(stmt, gast.AugAssign):
        return {stmt.target.id} if isinstance(stmt.target, gast.Name) else None
    if not isinstance(stmt, gast.Assign):
        return None
    names = set()
    for target in stmt.targets:
        for node in walk(target):
            if isinstance(node, (gast.Subscript, gast.Attribute, gast.Starred)):
                return None
            if isinstance(node, gast.Name):
                names.add(node.id)
    return names


def _if(stmt, live, pure, sweep):
    body = _block(stmt.body, live, pure, sweep)
    orelse = _block(stmt.orelse, live, pure, sweep)
    if sweep and not stmt.body and not stmt.orelse and not _effectful(stmt.test, pure):
        return live, False
    if sweep and not stmt.body:
        stmt.body = [gast.Pass()]
    return body | orelse | _uses(stmt.test), True


def _for(stmt, live, pure, sweep):
    targets = {n.id for n in walk(stmt.target) if isinstance(n, gast.Name)}
    carried: set = set()
    while True:                      # least fixpoint: what the next trip reads
        inside = _block(stmt.body, live | carried, pure, sweep=False) - targets
        if inside <= carried:
            break
        carried |= inside
    if sweep:
        _block(stmt.body, live | carried, pure, sweep=True)
        if not stmt.body and not targets & live and not _effectful(stmt.iter, pure):
            return live, False
        stmt.body = stmt.body or [gast.Pass()]
    return live | carried | _uses(stmt.iter), True


def _while(stmt, live, pure, sweep):
    carried = _uses(stmt.test)
    while True:
        inside = _block(stmt.body, live | carried, pure, sweep=False)
        if inside <= carried:
            break
        carried |= inside
    if sweep:
        _block(stmt.body, live | carried, pure, sweep=True)
        stmt.body = stmt.body or [gast.Pass()]
    return live | carried, True


def _uses(node) -> set:
    """Names read; a weak read as `_weakly(name)`, which only a weak definition serves."""
    return {_weakly(n.id) if getattr(n, "secant_weak", False) else n.id
            for n in walk(node) if isinstance(n, gast.Name) and
            isinstance(n.ctx, gast.Load)}


def _weakly(name: str) -> str:
    return "~" + name                   # no identifier starts with "~"


def _effectful(expr, pure) -> bool:
    for node in walk(expr):
        if isinstance(node, gast.Call) and not pure(node):
            return True
        if isinstance(node, (gast.Yield, gast.YieldFrom, gast.Await, gast.NamedExpr)):
            return True
    return False


def _supported(stmts: list) -> bool:
    for stmt in stmts:
        if isinstance(stmt, _COMPOUND):
            if isinstance(stmt, (gast.For, gast.While)) and stmt.orelse:
                return False
            if not all(_supported(getattr(stmt, f, [])) for f in ("body", "orelse")):
                return False
        elif not isinstance(stmt, _SIMPLE):
            return False
    return True


# ---------------------------------------------------------------- definite assignment


def _bound_block(stmts: list, bound: set):
    """Names bound after `stmts`, or None when a weak read may find its name unbound."""
    for stmt in stmts:
        if isinstance(stmt, gast.If):
            if not _weak_ok(stmt.test, bound):
                return None
            body, orelse = _bound_block(stmt.body, set(bound)), \
                _bound_block(stmt.orelse, set(bound))
            if body is None or orelse is None:
                return None
            bound = body & orelse
        elif isinstance(stmt, (gast.For, gast.While)):
            head = stmt.iter if isinstance(stmt, gast.For) else stmt.test
            targets = {n.id for n in walk(stmt.target) if isinstance(n, gast.Name)} \
                if isinstance(stmt, gast.For) else set()
            if not _weak_ok(head, bound) or \
                    _bound_block(stmt.body, bound | targets) is None:
                return None
        else:
            if not _weak_ok(stmt, bound):
                return None
            bound = bound | (_defined(stmt) or set())
    return bound


def _weak_ok(node, bound: set) -> bool:
    return all(n.id in bound for n in walk(node)
               if isinstance(n, gast.Name) and getattr(n, "secant_weak", False))
