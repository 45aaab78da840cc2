"""`jit(..., parallel=True)`: a user's `range` loop whose trips are independent runs as
`numba.prange`.

Numba runs only `prange` loops and array expressions on several threads; a loop written
with `range` stays serial under `parallel=True` (Numba warns that no transformation for
parallel execution was possible). This pass runs on the top function of a parallel cpu
compile, before its lowering and index checks, and writes each outermost loop
`for v in range(stop)` or `for v in range(start, stop)` that qualifies as

    if scalar_elements("1,1,0", out, x, scale):     # decided from the types by Numba
        for v in prange(stop): <body>
    else:
        for v in range(stop): <body>

so that it runs in parallel when its trips, run in any order and at once, compute what
the serial loop computes. Invariant - the `prange` form exists only when

- its `range` has no step and no start, or a non-negative int constant one, and the loop
  has no `else`; its body holds only assignments (to names, tuples of names, items),
  expression statements, `if`, `pass` and inner `for` loops (no `break`, `continue`,
  `return`, `raise`, `while`, `try`, `with`, `del`, nested function or `:=`), and no
  `//` or `%` (which raise on a zero in the serial loop and give 0 in a `prange`);
- every array it writes is *fresh*: bound once in the function, by a NumPy allocation
  (`np.empty_like(x)`, `np.zeros(n)`, ...), and named anywhere else only as `a[...]`, by a
  shape attribute (`a.shape`) or in a `return` (no other name, call or view reaches its
  memory); in the loop it is read and written only at indices whose first item is the
  loop variable, which the body never rebinds: each trip owns its rows;
- every name the body binds is bound before it is read on every path through a trip (no
  value passes from one trip to the next: no reduction either, since a parallel sum
  rounds differently), and neither those names nor the loop variable are read outside
  the loop;
- every call in it is to an elementwise function that writes no memory and draws no
  random numbers: `math`, NumPy's ufuncs (without `out=`), NumPy's scalar types and
  `_PURE_BUILTINS`;
- and, checked by `runtime.element_kinds.scalar_elements` when Numba types the function,
  every subscript in the loop gives a number (each array is indexed by as many items as
  it has axes) and every other value the loop reads from outside is a number: no trip
  works on arrays, whose broadcasting errors a `prange` would not raise.

Any other loop stays as written; inner loops of a converted one stay `range`. In every
one-argument `prange` loop of the function, the user's own included, the loop variable
is read as an unsigned number only where that is right (a subscript's item, `v != 0`):
every other read, and the whole body where it rebinds the variable, uses a signed copy
`v_signed = intp(v)` (Numba types that index unsigned: `-v` would be 1.8e19). Under the
`prange` form a float division by zero gives NumPy's infinity or NaN (Numba's parallel
loops follow NumPy's error model) where the serial loop raises ZeroDivisionError.
"""
from __future__ import annotations

import builtins
import math
import types

import gast
import numba
import numpy as np

from . import index_checks
from .function import Function, resolve
from .names import Namer, assigned_names, name_counts
from .nodes import copy_tree, walk
from .syntax import assign, call, const, located, name, store
from .runtime.element_kinds import scalar_elements

_PURE_BUILTINS = {abs, min, max, float, int, bool, round, len}
_ALLOCATORS = {np.empty, np.zeros, np.ones, np.full, np.empty_like, np.zeros_like,
               np.ones_like, np.full_like, np.arange, np.copy}
_SHAPE_ATTRIBUTES = {"shape", "size", "ndim"}
_STATEMENTS = (gast.Assign, gast.AugAssign, gast.AnnAssign, gast.Expr, gast.If, gast.Pass,
               gast.For)
_REFUSED_NODES = (gast.NamedExpr, gast.Lambda, gast.Yield, gast.YieldFrom, gast.Await,
                  gast.ListComp, gast.SetComp, gast.DictComp, gast.GeneratorExp,
                  gast.FloorDiv, gast.Mod, gast.Starred, gast.Slice)


def parallelize(fn: Function) -> Function:
    """`fn` with its independent outermost `range` loops given a `prange` form."""
    fn = fn.replace(node=fn.copy_node())
    chosen, inside = [], set()
    for loop in walk(fn.node):              # breadth first: an outer loop comes first
        if isinstance(loop, gast.For) and id(loop) not in inside:
            ranks = _independent(fn, loop)
            if ranks is not None:
                chosen.append((loop, ranks))
                inside.update(id(n) for n in walk(loop))
    written = [loop for loop in walk(fn.node) if _unsigned_prange(fn, loop)]
    if not chosen and not written:
        return fn
    node = fn.node
    namer = Namer.for_function(fn)
    names = {"prange": namer.fresh("prange"), "check": namer.fresh("scalar_elements"),
             "intp": namer.fresh("intp")}
    replaced = {}
    for loop, ranks in chosen:
        names["signed"] = namer.fresh(f"{loop.target.id}_signed")
        replaced[id(loop)] = _guarded(loop, ranks, names)
    _replace_statements(node, replaced)
    # the user's own `prange(stop)` loops (in both copies of a converted loop around one)
    for loop in walk(node):
        if _unsigned_prange(fn, loop):
            names["signed"] = namer.fresh(f"{loop.target.id}_signed")
            _signed_values(loop, None, names, fn)
    return fn.replace(node=node, env={**fn.env, names["prange"]: numba.prange,
                                      names["check"]: scalar_elements,
                                      names["intp"]: np.intp})


def _unsigned_prange(fn: Function, loop) -> bool:
    """A loop the user wrote as `for v in prange(stop)`, whose `v` Numba types unsigned
    (`-v` is then 1.8e19, not -1, in plain Numba too)."""
    it = getattr(loop, "iter", None)
    return isinstance(loop, gast.For) and isinstance(loop.target, gast.Name) and \
        isinstance(it, gast.Call) and len(it.args) == 1 and not it.keywords and \
        resolve(fn, it.func, None) is numba.prange


def _guarded(loop: gast.For, ranks: dict, names: dict) -> gast.If:
    parallel = copy_tree(loop)
    parallel.iter.func = name(names["prange"])
    # Numba types the index of a one-argument prange unsigned, and that of
    # prange(start, stop) signed: every x[v] would then wrap a negative index, and the
    # loop's contiguous loads and stores become gathers (2.5-5x slower)
    start = parallel.iter.args[0] if len(parallel.iter.args) == 2 else None
    parallel.iter.args = parallel.iter.args[-1:]
    _signed_values(parallel, start, names)
    names_ = sorted(ranks)
    test = call(name(names["check"]), const(",".join(str(ranks[n]) for n in names_)),
                *[name(n) for n in names_])
    return located(gast.If(test=test, body=[parallel], orelse=[loop]), loop)


def _signed_values(loop: gast.For, start, names: dict, fn: Function | None = None) -> None:
    """The unsigned index serves as an item of a subscript (`x[v]`, `a[v, j]`) only; every
    other use of the loop variable (`v - 4`, `-v`, `float(v)`, `x[v + 1]`) and the test of
    a start past 0 read a signed copy: an unsigned `v - 4` wraps around (Numba computes
    it so in a prange, where the serial loop gives -4)."""
    var = loop.target.id
    if var in set().union(*(assigned_names(s) for s in loop.body)):
        # a body that rebinds the variable (only a user's prange does) reads and
        # writes the signed copy throughout
        others = [n for s in loop.body for n in walk(s)
                  if isinstance(n, gast.Name) and n.id == var]
    else:
        safe = _unsigned_uses(loop, var, fn)
        others = [n for s in loop.body for n in walk(s) if isinstance(n, gast.Name)
                  and n.id == var and isinstance(n.ctx, gast.Load) and id(n) not in safe]
    needs_start = start is not None and start.value > 0
    if not others and not needs_start:
        return
    signed = names["signed"]
    for n in others:
        n.id = signed
    body = loop.body
    if needs_start:
        body = [gast.If(test=gast.Compare(left=name(signed), ops=[gast.GtE()],
                                          comparators=[start]), body=body, orelse=[])]
    loop.body = [assign(store(signed), call(name(names["intp"]), name(var)))] + body


def _unsigned_uses(loop: gast.For, var: str, fn: Function | None) -> set:
    """ids of the reads of `var` in `loop` for which its unsigned value is right: an item
    of a subscript, `v != 0` / `v == 0`, and (given `fn`) the argument of `np.intp(v)`."""
    safe = set()
    for sub in walk(loop):
        if isinstance(sub, gast.Subscript):
            index = sub.slice.elts if isinstance(sub.slice, gast.Tuple) else [sub.slice]
            safe.update(id(n) for n in index if isinstance(n, gast.Name) and n.id == var)
        elif isinstance(sub, gast.Call) and fn is not None and \
                resolve(fn, sub.func, None) is np.intp:
            safe.update(id(n) for n in sub.args if isinstance(n, gast.Name))
        elif isinstance(sub, gast.Compare) and len(sub.ops) == 1 and \
                isinstance(sub.ops[0], (gast.Eq, gast.NotEq)) and \
                isinstance(sub.comparators[0], gast.Constant) and \
                sub.comparators[0].value == 0 and type(sub.comparators[0].value) is int:
            safe.add(id(sub.left))
    return safe


def _replace_statements(node, replaced: dict) -> None:
    """Put `replaced[id(s)]` (a statement or a list of them) in place of each statement s."""
    for sub in list(walk(node)):
        for field in ("body", "orelse"):
            stmts = getattr(sub, field, None)
            if isinstance(stmts, list):
                out = []
                for s in stmts:
                    new = replaced.get(id(s), s)
                    out.extend(new if isinstance(new, list) else [new])
                setattr(sub, field, out)


def _independent(fn: Function, loop: gast.For) -> dict | None:
    """{outside name: rank} that `scalar_elements` must confirm when `loop`'s trips are
    independent (see the module's invariant); None when they may not be."""
    if not _plain_range(fn, loop) or not isinstance(loop.target, gast.Name) or \
            not all(_allowed(stmt) for stmt in loop.body):
        return None
    var = loop.target.id
    bound = set().union(*(assigned_names(s) for s in loop.body))
    if var in bound:
        return None                         # the body rebinds the loop variable
    bound.add(var)
    if _flow(loop.body, {var}, bound) is None:
        return None
    inside = {id(n) for n in walk(loop)}
    if any(isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load) and n.id in bound
           and id(n) not in inside for n in walk(fn.node)):
        return None                         # a value of the loop read outside it
    if not _calls_pure(fn, loop) or not _writes_own_rows(fn, loop, var):
        return None
    return _ranks(fn, loop, bound)


def _plain_range(fn: Function, loop: gast.For) -> bool:
    it = loop.iter
    if loop.orelse or not isinstance(it, gast.Call) or it.keywords \
            or resolve(fn, it.func, None) is not builtins.range:
        return False
    if len(it.args) == 1:
        return True
    start = it.args[0]
    return len(it.args) == 2 and isinstance(start, gast.Constant) \
        and type(start.value) is int and start.value >= 0


def _allowed(stmt) -> bool:
    if not isinstance(stmt, _STATEMENTS) or \
            any(isinstance(n, _REFUSED_NODES) for n in walk(stmt)):
        return False
    if isinstance(stmt, gast.If):
        return all(_allowed(s) for s in stmt.body + stmt.orelse)
    if isinstance(stmt, gast.For):
        return not stmt.orelse and all(_allowed(s) for s in stmt.body)
    return True


# ---------------------------------------------------------------- no value between trips

def _flow(body: list, bound: set, loop_names: set) -> set | None:
    """The names bound after running `body` from `bound` on every path; None where a name
    that the loop binds (`loop_names`) is read before this trip bound it."""
    bound = set(bound)
    for stmt in body:
        if isinstance(stmt, gast.If):
            if not _reads_ok(stmt.test, bound, loop_names):
                return None
            then = _flow(stmt.body, bound, loop_names)
            other = _flow(stmt.orelse, bound, loop_names)
            if then is None or other is None:
                return None
            bound = then & other
        elif isinstance(stmt, gast.For):
            if not _reads_ok(stmt.iter, bound, loop_names):
                return None
            if _flow(stmt.body, bound | assigned_names(stmt.target), loop_names) is None:
                return None                 # an inner loop may run no trip: binds nothing
        elif isinstance(stmt, gast.AugAssign):
            if not _reads_ok(stmt.value, bound, loop_names) or \
                    not _reads_ok(stmt.target, bound, loop_names, augmented=True):
                return None
        elif isinstance(stmt, (gast.Assign, gast.AnnAssign)):
            targets = stmt.targets if isinstance(stmt, gast.Assign) else [stmt.target]
            if stmt.value is None or not _reads_ok(stmt.value, bound, loop_names) or \
                    not all(_reads_ok(t, bound, loop_names) for t in targets):
                return None
            for target in targets:
                bound |= assigned_names(target)
        elif isinstance(stmt, gast.Expr):
            if not _reads_ok(stmt.value, bound, loop_names):
                return None
    return bound


def _reads_ok(node, bound: set, loop_names: set, augmented: bool = False) -> bool:
    """Every name `node` reads (for an augmented target, the name it updates too) that the
    loop binds is already bound in this trip."""
    for n in walk(node):
        if isinstance(n, gast.Name) and n.id in loop_names and n.id not in bound and \
                (isinstance(n.ctx, gast.Load) or augmented):
            return False
    return True


# ---------------------------------------------------------------- calls, writes, ranks

def _calls_pure(fn: Function, loop: gast.For) -> bool:
    for site in (n for n in walk(loop) if isinstance(n, gast.Call)):
        callee = resolve(fn, site.func, None)
        if isinstance(site.func, gast.Attribute) and callee is None:
            return False                    # a method: it may write its object
        if callee is builtins.range and any(c is site for c in _ranges(loop)):
            continue
        if isinstance(callee, np.ufunc):
            if site.keywords:
                return False                # out=, where=: writes or array operands
        elif (callee is min or callee is max) and len(site.args) < 2:
            return False                    # min of a sequence raises when it is empty
        elif not _pure(callee):
            return False
    return True


def _ranges(loop: gast.For) -> list:
    return [n.iter for n in walk(loop) if isinstance(n, gast.For)]


def _pure(callee) -> bool:
    if callee is None:
        return False
    if isinstance(callee, types.BuiltinFunctionType) and \
            getattr(math, getattr(callee, "__name__", ""), None) is callee:
        return True
    if isinstance(callee, type) and issubclass(callee, np.generic):
        return True                         # np.float32(x): a conversion
    try:
        return callee in _PURE_BUILTINS
    except TypeError:                       # unhashable
        return False


def _writes_own_rows(fn: Function, loop: gast.For, var: str) -> bool:
    """Every array the loop writes is fresh, and the loop reaches it only at rows `var`."""
    written = set()
    for stmt in walk(loop):
        targets = stmt.targets if isinstance(stmt, gast.Assign) else \
            [stmt.target] if isinstance(stmt, (gast.AugAssign, gast.AnnAssign)) else []
        for target in targets:
            for sub in walk(target):
                if isinstance(sub, gast.Subscript):
                    if not isinstance(sub.value, gast.Name):
                        return False        # a[i][j] = ...: a view's item
                    written.add(sub.value.id)
    for array in written:
        if not _fresh(fn, array) or not all(
                _row_of(sub, var) for sub in _subscripts(loop, array)):
            return False
        # elsewhere too, each item is a number: no view of the array (a slice, fewer
        # items than its axes) can be bound to another name
        counts = {_items(sub) for sub in _subscripts(fn.node, array)}
        if len(counts) != 1 or None in counts:
            return False
    return True


def _subscripts(node, array: str) -> list:
    return [sub for sub in walk(node) if isinstance(sub, gast.Subscript)
            and isinstance(sub.value, gast.Name) and sub.value.id == array]


def _items(sub: gast.Subscript) -> int | None:
    """How many items index `sub`; None if one is a slice, `...` or `None`."""
    items = sub.slice.elts if isinstance(sub.slice, gast.Tuple) else [sub.slice]
    if any(isinstance(item, gast.Slice) or (isinstance(item, gast.Constant)
                                            and item.value in (None, Ellipsis))
           for item in items):
        return None
    return len(items)


def _row_of(sub: gast.Subscript, var: str) -> bool:
    index = sub.slice
    first = index.elts[0] if isinstance(index, gast.Tuple) and index.elts else index
    return isinstance(first, gast.Name) and first.id == var


def _fresh(fn: Function, array: str) -> bool:
    """`array` is bound once, by a NumPy allocation, and is named elsewhere only as
    `array[...]`, by a shape attribute or in a `return`."""
    if name_counts(fn.node, gast.Store).get(array, 0) != 1 or array in fn.params:
        return False
    allocation = [s for s in walk(fn.node) if isinstance(s, gast.Assign)
                  and len(s.targets) == 1 and isinstance(s.targets[0], gast.Name)
                  and s.targets[0].id == array]
    if len(allocation) != 1 or not isinstance(allocation[0].value, gast.Call) or \
            not _is_allocator(resolve(fn, allocation[0].value.func, None)):
        return False
    allowed = set()
    for node in walk(fn.node):
        if isinstance(node, gast.Subscript) or (
                isinstance(node, gast.Attribute) and node.attr in _SHAPE_ATTRIBUTES):
            allowed.add(id(node.value))
        elif isinstance(node, gast.Return) and node.value is not None:
            allowed.update(id(n) for n in walk(node.value) if isinstance(n, gast.Name))
    return all(id(n) in allowed for n in walk(fn.node) if isinstance(n, gast.Name)
               and n.id == array and isinstance(n.ctx, gast.Load))


def _is_allocator(callee) -> bool:
    try:
        return callee in _ALLOCATORS
    except TypeError:
        return False


def _ranks(fn: Function, loop: gast.For, bound: set) -> dict | None:
    """{name: rank}: each array the loop subscripts with the number of its index items,
    each other value it reads from outside (not a callee, module or shape) as 0; None
    when one array is subscripted with different numbers of items."""
    ranks: dict = {}
    skip = {id(n) for site in walk(loop) if isinstance(site, gast.Call)
            for n in walk(site.func)}
    skip |= {id(n) for n in walk(loop.iter)}   # evaluated once, before any trip
    for node in walk(loop):
        if id(node) in skip:
            continue
        if isinstance(node, gast.Attribute) and node.attr in _SHAPE_ATTRIBUTES:
            skip.add(id(node.value))
        elif isinstance(node, gast.Attribute):
            return None                     # another attribute of a value: not a number
        elif isinstance(node, gast.Subscript) and isinstance(node.value, gast.Name):
            if node.value.id in bound:
                return None                 # an array the trip binds: typed only inside
            items = len(node.slice.elts) if isinstance(node.slice, gast.Tuple) else 1
            if ranks.setdefault(node.value.id, items) != items:
                return None
            skip.add(id(node.value))
        elif isinstance(node, gast.Subscript) and not isinstance(node.value, gast.Attribute):
            return None                     # x[i][j]: a row first
    for node in walk(loop):
        if isinstance(node, gast.Name) and isinstance(node.ctx, gast.Load) and \
                id(node) not in skip and node.id not in bound:
            if isinstance(resolve(fn, node, None), types.ModuleType):
                continue
            if ranks.setdefault(node.id, 0) != 0:
                return None                 # an array read both whole and by item
    return ranks


# ---------------------------------------------------------------- after the index checks

def serial_where_checked(fn: Function) -> Function:
    """`fn` (after `bounds.check_indices`) with the serial loop alone where the `prange`
    form holds an index check the loop's bounds did not prove: the check raises inside
    the loop, and Numba runs a `prange` with a second exit serially (and warns)."""
    def checked_guard(stmt) -> bool:
        """A `scalar_elements` guard whose prange form records index checks."""
        return isinstance(stmt, gast.If) and isinstance(stmt.test, gast.Call) and \
            resolve(fn, stmt.test.func, None) is scalar_elements and \
            any(isinstance(n, gast.Call) and
                resolve(fn, n.func, None) is index_checks.index_errors
                for s in stmt.body for n in walk(s))

    if not any(checked_guard(s) for s in walk(fn.node)):
        return fn
    fn = fn.replace(node=fn.copy_node())
    # the serial branch, with the checks hoisted before its loop
    _replace_statements(fn.node, {id(s): s.orelse for s in walk(fn.node) if checked_guard(s)})
    return fn
