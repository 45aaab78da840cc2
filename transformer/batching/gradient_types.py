"""Gradients batched by vmap keep their argument's float type.

The reverse sweep accumulates an argument's adjoint in place (`bb = float_zeros(b, 'b')`,
then `bb += e`), so a float32 argument's gradient stays float32 even where a contribution
`e` is float64 (Numba types `1.5 * x` for float32 `x` as float64). vmap batches the
desugared form `bb = bb + e`, which takes `e`'s wider type; `keep_gradient_types` casts each
such accumulator back to its argument's float type where it is returned. Values are unchanged:
the cast only narrows back to the type the unbatched gradient has.
"""
from __future__ import annotations

import gast

from ..desugar import bound_name
from ..function import Function, resolve
from ..names import Namer
from ..nodes import copy_tree, walk
from ..runtime import keep_float_type
from ..syntax import assign, call, name, store


def keep_gradient_types(fn: Function) -> Function:
    """`fn` with `bb = keep_float_type(bb, b)` (no copy where the type already agrees)
    before each top-level return of an accumulator
    `bb = float_zeros(b, label)` (the adjoint of argument `b`)."""
    sources = _accumulators(fn)
    if not sources:
        return fn
    body, env, namer = list(fn.node.body), dict(fn.env), Namer.for_function(fn)
    returns = [i for i, stmt in enumerate(body)
               if isinstance(stmt, gast.Return) and stmt.value is not None]
    for i in reversed(returns):
        start, returned = _packing(body, i)
        casts = [gast.copy_location(assign(store(acc), call(
            name(bound_name(env, namer, keep_float_type)), name(acc), name(sources[acc]))), body[i])
                 for acc in sources if acc in returned]
        body[start:start] = casts
    if len(body) == len(fn.node.body):
        return fn
    node = copy_tree(fn.node)
    node.body = [copy_tree(stmt) for stmt in body]
    return fn.replace(node=node, env=env)


def _packing(body: list, i: int) -> tuple[int, set]:
    """(where the statements packing `body[i]`'s returned value start, the names they
    pack): the return and the `t = (a, b)` / `t = a` statements right before it."""
    returned = {n.id for n in walk(body[i].value) if isinstance(n, gast.Name)}
    start = i
    while start > 0:
        stmt = body[start - 1]
        if not (isinstance(stmt, gast.Assign) and len(stmt.targets) == 1 and
                isinstance(stmt.targets[0], gast.Name) and stmt.targets[0].id in returned and
                isinstance(stmt.value, (gast.Tuple, gast.Name))):
            break
        returned |= {n.id for n in walk(stmt.value) if isinstance(n, gast.Name)}
        start -= 1
    return start, returned


def _accumulators(fn: Function) -> dict:
    """Accumulator name -> the argument it is the adjoint of, for top-level
    `bb = float_zeros(b, label)` on a parameter `b` that no statement assigns again."""
    from ..reverse.seeds import float_zeros
    params, found = set(fn.params), {}
    for stmt in fn.node.body:
        value = getattr(stmt, "value", None)
        if isinstance(stmt, gast.Assign) and len(stmt.targets) == 1 and \
                isinstance(stmt.targets[0], gast.Name) and isinstance(value, gast.Call) and \
                value.args and isinstance(value.args[0], gast.Name) and \
                value.args[0].id in params and resolve(fn, value.func, None) is float_zeros:
            found[stmt.targets[0].id] = value.args[0].id
    assigned = {n.id for n in walk(fn.node) if isinstance(n, gast.Name) and
                isinstance(n.ctx, gast.Store)}
    return {acc: arg for acc, arg in found.items() if arg not in assigned}
