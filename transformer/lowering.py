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


def lower_for_numba(fn: Function) -> Function:
    from .rules.lowering import PYTHON_ONLY, needs_lowering, numba_equivalent

    node = copy.deepcopy(fn.node)
    env = dict(fn.env)
    namer = Namer.for_function(fn)
    bound: dict[int, str] = {}
    changed = False
    for call in gast.walk(node):
        if not isinstance(call, gast.Call):
            continue
        target = resolve(fn, call.func, None)
        keywords = {k.arg: k.value for k in call.keywords}
        # only the call forms Numba lacks: plain np.sum(x) stays Numba's own fast version
        if target is None or not needs_lowering(target, keywords, len(call.args)):
            continue
        if target in PYTHON_ONLY:   # no compiled equivalent: let Numba name the NumPy call
            continue
        replacement = numba_equivalent(target)
        if id(replacement) not in bound:
            bound[id(replacement)] = namer.fresh(replacement.__name__)
            env[bound[id(replacement)]] = replacement
        call.func = gast.Name(id=bound[id(replacement)], ctx=gast.Load(), annotation=None,
                              type_comment=None)
        changed = True
    return fn.replace(node=node, env=env) if changed else fn
