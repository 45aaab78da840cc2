"""Groups of names that may hold one array that is written in place.

`written_alias_groups(fn)` looks at a normalized Function (desugared, ANF) and returns
the groups of names that may hold an array written in place (`z[i] = v`, an
`update_in_place`, a registered effect). A statement that may make a name hold another's
arrays (`z = y`, `z = y[1:]`, `z = np.reshape(y, s)`, `z = update_in_place(y, v)`, a `for`
loop's row, a container `t = (g, x)`: see `desugar.view_sources`) links the name to them
one way: `t` holds the arrays of `g` and of `x`, `g` does not hold those of `x`, so two
containers holding one item do not join their other items. Invariant: the analysis is
flow-insensitive and over-approximates: two names in different groups never share an
array that either writes.
Transformations that keep one derived value per name (a tangent, a batch flag) use the
groups to treat every member alike, or to refuse.

Whether a call changes its caller's arrays (`parameter_writes`, read by vmap and CUDA
kernels, and `written_params_of_source`, read by the refusals of calls that write into
their arguments) is read along every path instead (`argument_writes`): `a = x`, then
`a = a + 1.0` on every path, then `a += v` writes a new array.
"""
from __future__ import annotations

import inspect
import types

import gast
import numpy as np

from codegen.backends import is_user_function

from . import pyforms
from .anf import anf
from .argument_writes import argument_writes, write_hint
from .desugar import desugar, view_sources
from .errors import TransformError
from .freshness import once_per_build
from .frontend import parse_callee
from .function import Function, resolve
from .helper_effects import WRITING_FUNCTIONS
from .names import assigned_names
from .nodes import walk
from .param_updates import updates_in_place
from .rebind import split_rebound_names
from .runtime import update_in_place


def written_alias_groups(fn: Function, effects=(), call_writes=None) -> list[set[str]]:
    """The groups (of two names or more) that may share an array written in place;
    `effects` are functions writing into their first argument, `call_writes(call)` the
    names any other call writes into (the arguments a user function writes)."""
    held = _held_arrays(fn)
    written = set().union(*(held.get(n, {n}) for n in _written(fn, effects, call_writes)))
    parent: dict[str, str] = {}

    def find(n: str) -> str:
        while parent.setdefault(n, n) != n:
            n = parent[n]
        return n

    for n, arrays in held.items():        # a name joins the holders of each written array
        for array in arrays & written:
            parent[find(n)] = find(array)
    groups: dict[str, set[str]] = {}
    for n in list(parent):
        groups.setdefault(find(n), set()).add(n)
    return [g for g in groups.values() if len(g) > 1]


def _held_arrays(fn: Function, leave_out=None) -> dict[str, set[str]]:
    """Each linked name -> the arrays it may hold or reach through its items, an array
    named by a name binding it (every name stands for the arrays it binds itself): the
    least sets where a link `z <- y` (`_links`) puts what `y` holds into what `z` holds,
    one way. A write through `z` reaches every array `z` holds, and the names holding
    one: `z = y[1:]` holds `y`'s array, so a write through either reaches both. Links
    made by statement `leave_out` are left out."""
    links = [(t, s) for t, sources in _links(fn, leave_out) for s in sources]
    held = {n: {n} for link in links for n in link}
    changed = True
    while changed:
        changed = False
        for target, source in links:
            if not held[source] <= held[target]:
                held[target] |= held[source]
                changed = True
    return held


def _links(fn: Function, leave_out=None):
    returned_only = _returned_only(fn)
    tuples = _tuples_bound_once(fn)
    for node in walk(fn.node):
        if node is leave_out:
            continue
        if isinstance(node, gast.Assign) and isinstance(node.targets[0], gast.Name):
            item = _constant_item(node.value, tuples)
            sources = view_sources(fn, node.value)
            if item is not None and (isinstance(item, gast.Constant) or
                                     view_sources(fn, item)):
                sources = view_sources(fn, item)   # a new array inline: `t`'s, as before
            # a tuple that is only returned (a jvp's `(y, dy)`) makes no name share its
            # items' arrays: linking through it would join the items to each other
            if isinstance(node.value, (gast.Tuple, gast.List)) and \
                    node.targets[0].id in returned_only:
                continue
            if sources:
                yield node.targets[0].id, sources
        elif isinstance(node, gast.For) and isinstance(node.target, gast.Name) and \
                resolve(fn, getattr(node.iter, "func", None), None) is not range:
            sources = view_sources(fn, node.iter)
            if sources:
                yield node.target.id, sources


def _tuples_bound_once(fn: Function) -> dict:
    """Names bound once in `fn`, to a tuple display without a starred item -> that tuple."""
    bindings: dict[str, list] = {}
    for node in walk(fn.node):
        if isinstance(node, gast.Name) and not isinstance(node.ctx, gast.Load):
            bindings.setdefault(node.id, []).append(node)
    tuples = {}
    for node in walk(fn.node):
        if isinstance(node, gast.Assign) and len(node.targets) == 1 and \
                isinstance(node.targets[0], gast.Name) and \
                isinstance(node.value, gast.Tuple) and \
                not any(isinstance(e, gast.Starred) for e in node.value.elts) and \
                bindings.get(node.targets[0].id) == [node.targets[0]]:
            tuples[node.targets[0].id] = node.value
    return tuples


def _constant_item(value, tuples: dict):
    """The item `value`, a constant index into a tuple of `tuples` (`t[1]`, `t[-1]`),
    selects (a tuple cannot change its items, so `r = t[1]` holds only what `t`'s second
    item holds); None for any other value."""
    if not (isinstance(value, gast.Subscript) and isinstance(value.value, gast.Name) and
            value.value.id in tuples):
        return None
    index, sign = value.slice, 1
    if isinstance(index, gast.UnaryOp) and isinstance(index.op, gast.USub):
        index, sign = index.operand, -1
    if not (isinstance(index, gast.Constant) and type(index.value) is int):
        return None
    items = tuples[value.value.id].elts
    i = sign * index.value
    return items[i] if -len(items) <= i < len(items) else None


def _returned_only(fn: Function) -> set[str]:
    """Names read nowhere but as the whole value of a `return`."""
    returned = {node.value.id for node in walk(fn.node)
                if isinstance(node, gast.Return) and isinstance(node.value, gast.Name)}
    read_elsewhere = {child.id for node in walk(fn.node) if not isinstance(node, gast.Return)
                      for child in gast.iter_child_nodes(node)
                      if isinstance(child, gast.Name) and isinstance(child.ctx, gast.Load)}
    return returned - read_elsewhere


def _written(fn: Function, effects, call_writes=None) -> set[str]:
    """Names an array is written in place through."""
    written: set[str] = set()
    for node in walk(fn.node):
        written |= _writes_of(fn, node, effects, call_writes)
    return written


def _writes_of(fn: Function, node, effects, call_writes) -> set[str]:
    """The names one node (a subscript assignment, a call) writes in place through."""
    if isinstance(node, gast.Assign) and isinstance(node.targets[0], gast.Subscript):
        return view_sources(fn, node.targets[0].value)
    if isinstance(node, gast.Call):
        func = resolve(fn, node.func, None)
        if node.args and (func is update_in_place or any(_same(func, e) for e in effects)):
            return view_sources(fn, node.args[0])
        if call_writes is not None:
            return call_writes(node)
    return set()


def _same(func, effect) -> bool:
    # a bound method such as `np.add.at` is a new object per access: equal, not identical
    return func is effect or (inspect.isbuiltin(effect) and func == effect)


def write_through(fn: Function, names: set[str]):
    """The earliest statement writing in place through one of `names`, or None."""
    writes = [node for node in walk(fn.node) if isinstance(node, gast.Assign) and
              view_sources(fn, _written_expr(fn, node)) & names]
    return min(writes, key=lambda n: getattr(n, "lineno", 0) or 0, default=None)


def _written_expr(fn: Function, stmt: gast.Assign):
    """What `stmt` writes in place: the array of `a[i] = v`, the first argument of
    `update_in_place(a, v)`; None for an assignment that only binds a name."""
    if isinstance(stmt.targets[0], gast.Subscript):
        return stmt.targets[0].value
    value = stmt.value
    if isinstance(value, gast.Call) and value.args and \
            resolve(fn, value.func, None) is update_in_place:
        return value.args[0]
    return None


def parameter_writes(fn: Function, effects=(), call_writes=None) -> dict:
    """Each parameter of `fn` whose array it may write in place on some path, directly or
    through a name holding that array there (`argument_writes`: `x = x.copy()` in one
    branch and `x = x * 2.0` in the other, then `x[0] = v`, writes a new array), mapped to
    the first statement writing it; `effects` and `call_writes` as for
    `written_alias_groups`."""
    first: dict = {}
    for write in argument_writes(fn, lambda node: _writes_of(fn, node, effects, call_writes)):
        first.setdefault(write.param, write.stmt)
    return {p: first[p] for p in fn.params if p in first}


def written_params(fn: Function, effects=(), call_writes=None) -> list[str]:
    """The parameters of `fn` whose arrays it writes in place, directly or through a name
    sharing their array, read across the whole function (`written_names`) unless the first
    statement naming one binds it to a new array. Forward mode reads it for the tangents
    it emits beside `fn`'s names (a copy's tangent may be the tangent passed in, so a
    write after `x = x.copy()` can still reach the caller's tangent); what `fn` itself
    writes into its caller's arrays is `parameter_writes`."""
    written = written_names(fn, effects, call_writes)
    return [p for p in fn.params if p in written and not _rebound_first(fn, p)]


def written_params_of_source(fn: Function, seen: frozenset = frozenset()) -> list[str]:
    """`written_params` of a Function as parsed, not yet normalized: its augmented
    assignments (`z = p; z += v`) become the in-place updates the analysis sees, and so do
    NumPy's writes (`np.copyto(p, v)`, `out=p`, `np.add.at(p, i, v)`), those of array
    methods (`p.fill(v)`) and those of the user functions it calls (`seen`: the functions
    whose analysis holds this one, a recursive call's writes are found there). A name
    rebound in straight-line code is one name per binding first (`a = p; a = a + 1.0;
    a += v` writes into a new array, not into `p`), and the reading is path-aware
    (`argument_writes`): `a = p`, then `a = a + 1.0` in one branch and `a = a * 2.0` in
    the other, then `a += v` writes into a new array on every path."""
    return list(dict.fromkeys(w.param for w in argument_writes_of_source(fn, seen)))


def env_arrays_written_of_source(fn: Function) -> list[str]:
    """The names of arrays of `fn`'s env (a global, a closed-over array) that `fn` writes
    into in place, directly or through a name or a call (`written_params_of_source`'s
    reading)."""
    prepared = anf(split_rebound_names(desugar(updates_in_place(fn))))
    call_writes = _source_call_writes(prepared, frozenset({fn.origin.describe()}))
    local = assigned_names(prepared.node) | set(prepared.params)
    return sorted(n for n in written_names(prepared, WRITING_FUNCTIONS, call_writes)
                  if n not in local and isinstance(prepared.env.get(n), np.ndarray))


def refuse_env_array_writes(fn: Function, transformation: str, runs: str,
                            otherwise: str) -> None:
    """A TransformError at `fn` when it writes into an array of its env in place and the
    `transformation` runs it more than once (`runs` says when): each run would start
    from the array the last one left."""
    written = env_arrays_written_of_source(fn)
    if written:
        raise fn.origin.error(
            fn.node, f"{transformation} of {fn.name}, which writes into the array "
            f"{written[0]!r} of its module (or closure) in place: {runs}, and each run "
            "would start from the array the last one left",
            f"pass {written[0]} as an argument (each run then starts from the array "
            f"passed), or {otherwise}")


def argument_writes_of_source(fn: Function, seen: frozenset = frozenset()) -> list:
    """The `ArgumentWrite`s of a Function as parsed (see `written_params_of_source`),
    their statements at the user's lines."""
    prepared = anf(split_rebound_names(desugar(updates_in_place(fn))))
    call_writes = _source_call_writes(prepared, seen | {fn.origin.describe()})
    return argument_writes(prepared, lambda node: _writes_of(prepared, node,
                                                             WRITING_FUNCTIONS, call_writes))


# array methods that write into the array they are called on (NumPy's functions that write
# into their first argument: helper_effects.WRITING_FUNCTIONS)
_WRITING_METHODS = {"fill", "sort", "put", "itemset", "resize", "partition", "setfield"}


def call_writes(fn: Function):
    """`call -> the names of fn whose arrays the call may write into`, for a Function as
    the passes hold it: through an `out=` argument, a writing method, a ufunc's `.at`, a
    NumPy function writing into its first argument, or a user function's parameter."""
    writes = _source_call_writes(fn, frozenset({fn.origin.describe()}))

    def written(node: gast.Call) -> set:
        found = writes(node)
        if any(resolve(fn, node.func, None) is w for w in WRITING_FUNCTIONS) and node.args:
            found |= view_sources(fn, node.args[0])
        return found
    return written


def _source_call_writes(fn: Function, seen: frozenset):
    """`call_writes` for `written_params_of_source`: the names a call writes into through
    an `out=` argument, a writing method, a ufunc's `.at`, or a user function's parameter
    (every array argument of one whose source cannot be read)."""
    def writes(node: gast.Call) -> set:
        written = set().union(*(view_sources(fn, k.value) for k in node.keywords
                                if k.arg == "out"))
        func = node.func
        if isinstance(func, gast.Attribute):
            owner = resolve(fn, func.value, None)
            if func.attr in _WRITING_METHODS and not isinstance(owner, types.ModuleType):
                written |= view_sources(fn, func.value)
            elif func.attr == "at" and isinstance(owner, np.ufunc) and node.args:
                written |= view_sources(fn, node.args[0])
        target = resolve(fn, func, None)
        if is_user_function(target):
            written |= _arguments_written(fn, node, target, seen)
        return written
    return writes


def _arguments_written(fn: Function, node: gast.Call, target, seen: frozenset) -> set:
    """The names of `fn` that call `node` of user function `target` passes to parameters
    `target` writes in place."""
    arguments = node.args + [k.value for k in node.keywords]
    if not arguments:
        return set()
    try:
        callee = parse_callee(target)
        written = set() if callee.origin.describe() in seen else set(once_per_build(
            ("written params", callee, *sorted(seen)),      # each call, each build: once
            lambda: written_params_of_source(callee, seen)))
    except TransformError:      # no source to read, or a form the passes refuse: it
        callee = None           # may write any of them
    if callee is None or any(isinstance(a, gast.Starred) for a in node.args) or \
            any(k.arg is None for k in node.keywords):
        return set().union(*(view_sources(fn, a) for a in arguments))
    return set().union(*(view_sources(fn, a) for p, a in _bound(callee, node).items()
                         if p in written))


def _bound(callee: Function, call: gast.Call) -> dict:
    """Parameter of `callee` -> the expression `call` passes it (`**kwargs` aside)."""
    bound = dict(zip(callee.params, call.args))
    bound.update({k.arg: k.value for k in call.keywords if k.arg is not None})
    return bound


def writes_into_arguments(target) -> bool:
    """Whether a call of user function `target` may write into an array passed to it:
    a parameter it writes in place (`written_params_of_source`), or a source that cannot
    be read."""
    try:
        return bool(written_params_of_source(parse_callee(target)))
    except TransformError:
        return True


pyforms.ARGUMENT_WRITES.append(writes_into_arguments)


def written_names(fn: Function, effects=(), call_writes=None) -> set[str]:
    """The names whose arrays `fn` may write in place, directly or through a name that
    may share their array (parameters, locals and free names alike)."""
    written = _written(fn, effects, call_writes)
    for group in written_alias_groups(fn, effects, call_writes):
        written |= group
    return written


def first_write(fn: Function, names: set[str], effects=(), call_writes=None):
    """The earliest statement that may write in place into an array of `names` (given
    with every name that may share their arrays), or None."""
    found = [stmt for stmt in walk(fn.node) if isinstance(stmt, (gast.Assign, gast.Expr))
             and any(_writes_of(fn, node, effects, call_writes) & names
                     for node in walk(stmt))]
    return min(found, key=lambda n: getattr(n, "lineno", 0) or 0, default=None)


def _rebound_first(fn: Function, param: str) -> bool:
    """Whether the first statement that mentions `param` binds it to a new array
    (`a = a.copy()`), so that no later write reaches the caller's argument."""
    for stmt in fn.node.body:
        if any(isinstance(n, gast.Name) and n.id == param for n in walk(stmt)):
            return isinstance(stmt, gast.Assign) and len(stmt.targets) == 1 and \
                isinstance(stmt.targets[0], gast.Name) and stmt.targets[0].id == param \
                and param not in view_sources(fn, stmt.value)
    return False


# what to write instead, formatted with the parameter and the function's name
READ_AFTER_HINT = ("end {1} with `return {0}` and read its result where the array is read "
                   "after the call (`x = {1}(x, ...)`), or copy inside {1} ({0} = {0}.copy())")


def argument_write_hint(callee: Function, param: str, read_after: bool = False) -> str:
    """The hint for a call of `callee` refused for writing into `param`'s array: the
    statement writing and what to write there instead; `read_after` (a call refused by
    `writes_read_by_caller`) adds, for a write through the parameter itself,
    `READ_AFTER_HINT`."""
    write = next((w for w in argument_writes_of_source(callee) if w.param == param), None)
    if write is None:
        return READ_AFTER_HINT.format(param, callee.name) if read_after else \
            f"copy inside {callee.name} ({param} = {param}.copy()) and return the result"
    hint = write_hint(callee, write)
    if read_after and write.binding is None:
        hint += "; or " + READ_AFTER_HINT.format(param, callee.name)
    return hint


def writes_read_by_caller(callee: Function, call, call_stmt, caller: Function) -> list[str]:
    """The parameters `callee` writes in place (`written_params_of_source`: `p *= k`, or a
    write through a name sharing `p`'s array) whose array the caller may read after
    `call`, a Call in `call_stmt` of `caller`: the derivative of the write would not reach
    those reads. An argument is safe when it is a temporary (not a name), or a name that
    shares its array with no other name of the caller and is not read after the statement
    (`p = wrap(p, box)`, then only `p`'s new value is read). A number rebinds rather than
    writes, but its type is not known here, so it is counted as an array."""
    written = written_params_of_source(callee)
    if not written:
        return []
    bound = _bound(callee, call)
    shared = _sharing_names(caller, call_stmt)
    read_after = []
    for param in written:
        arg = bound.get(param)
        if arg is not None and not isinstance(arg, gast.Name):
            continue                       # a temporary: nothing else holds its array
        if isinstance(arg, gast.Name) and arg.id not in shared and \
                not _read_after(caller, call_stmt, arg.id):
            continue
        read_after.append(param)
    return read_after


def _read_after(fn: Function, stmt, name: str) -> bool:
    """Whether `fn` may read `name`'s array after statement `stmt` runs: in a later
    statement, in `stmt` itself outside its call, or anywhere in a loop holding `stmt`;
    never when `stmt` rebinds `name`."""
    order: list = []                # (statement, the loops holding it), in program order

    def visit(stmts, loops):
        for s in stmts:
            order.append((s, loops))
            inner = loops + (s,) if isinstance(s, (gast.For, gast.While)) else loops
            for field in ("body", "orelse", "finalbody"):
                block = getattr(s, field, None)
                if isinstance(block, list) and block and isinstance(block[0], gast.stmt):
                    visit(block, inner)

    def reads(node) -> bool:
        return any(isinstance(n, gast.Name) and n.id == name and
                   isinstance(n.ctx, gast.Load) for n in walk(node))

    visit(fn.node.body, ())
    # `stmt`, or the statement of `fn` it was copied from (holding the same value)
    value = getattr(stmt, "value", None)
    index = next((i for i, (s, _) in enumerate(order) if s is stmt or
                  value is not None and getattr(s, "value", None) is value), None)
    if index is None:
        return True
    stmt = order[index][0]
    if any(isinstance(t, gast.Name) and t.id == name for t in getattr(stmt, "targets", ())):
        return False                 # `p = wrap(p, box)`: later reads see the result
    loops = order[index][1]
    if loops and reads(loops[0]):
        return True
    value = getattr(stmt, "value", None)
    if value is not None and not isinstance(value, gast.Call) and reads(value):
        return True                  # `wrap(p) + p`: the second read comes after the call
    return any(reads(s) for s, _ in order[index + 1:])


def _sharing_names(fn: Function, leave_out) -> set[str]:
    """The names of `fn` that may share an array with another name (`q = p`, a view, a
    container holding `p`), links made by statement `leave_out` aside."""
    held = _held_arrays(fn, leave_out)
    holders: dict[str, int] = {}
    for arrays in held.values():
        for array in arrays:
            holders[array] = holders.get(array, 0) + 1
    return {n for n, arrays in held.items() if any(holders[a] > 1 for a in arrays)}
