"""Lowering for Numba: calls to NumPy forms that Numba's nopython mode lacks are
redirected to equivalents in `transformer.runtime` (e.g. `np.mean(x, axis=0)`).

Invariant of the output: every Call whose function has an entry in the lowering table
calls the runtime equivalent instead, bound in the environment under a fresh name.
"""
from __future__ import annotations

import copy

import gast

from .function import Function, resolve
from .names import Namer


def _table():
    try:
        from .rules.lowering import numba_equivalent
    except ImportError:  # rules not installed yet in a partial checkout
        return lambda obj, keywords=(): None
    return numba_equivalent


def lower_for_numba(fn: Function) -> Function:
    equivalent_of = _table()
    node = copy.deepcopy(fn.node)
    env = dict(fn.env)
    namer = Namer.for_function(fn)
    bound: dict[int, str] = {}
    changed = False
    for call in gast.walk(node):
        if not isinstance(call, gast.Call):
            continue
        target = resolve(fn, call.func, None)
        if target is None:
            continue
        try:
            replacement = equivalent_of(target, [k.arg for k in call.keywords])
        except TypeError:
            replacement = equivalent_of(target)
        if replacement is None:
            continue
        if id(replacement) not in bound:
            bound[id(replacement)] = namer.fresh(replacement.__name__)
            env[bound[id(replacement)]] = replacement
        call.func = gast.Name(id=bound[id(replacement)], ctx=gast.Load(), annotation=None,
                              type_comment=None)
        changed = True
    return fn.replace(node=node, env=env) if changed else fn
