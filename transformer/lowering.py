"""Lowering for Numba: calls to NumPy forms that Numba's nopython mode lacks are
redirected to equivalents in `transformer.runtime` (e.g. `np.mean(x, axis=0)`).

Invariant of the output: every Call whose function has an entry in the lowering table
calls the runtime equivalent instead, bound in the environment under a fresh name; and
`x += matmul_grad_left(g, a, b)` (or `_right`) on a name is `x = matmul_grad_left_add(x, g,
a, b)`, which adds an outer product in place rather than allocating it (the reverse sweep
accumulates a matrix parameter's adjoint this way on every loop trip).
"""
from __future__ import annotations

import copy

import gast

from codegen import emit

from .function import Function, resolve
from .names import Namer


def lower_for_numba(fn: Function) -> Function:
    from .rules.lowering import PYTHON_ONLY, needs_lowering, numba_equivalent

    node = copy.deepcopy(fn.node)
    env = dict(fn.env)
    namer = Namer.for_function(fn)
    bound: dict[int, str] = {}
    changed = _InPlaceAdds(fn, env, namer, bound).rewrite(node)
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


class _InPlaceAdds(gast.NodeTransformer):
    """`x += helper(g, a, b)` -> `x = helper_add(x, g, a, b)` for the matmul adjoints."""

    def __init__(self, fn: Function, env: dict, namer: Namer, bound: dict):
        from . import runtime
        self.fn, self.env, self.namer, self.bound = fn, env, namer, bound
        self.adders = {id(runtime.matmul_grad_left): runtime.matmul_grad_left_add,
                       id(runtime.matmul_grad_right): runtime.matmul_grad_right_add}
        self.changed = False

    def rewrite(self, node) -> bool:
        self.visit(node)
        return self.changed

    def visit_AugAssign(self, node):
        call = node.value
        if not (isinstance(node.op, gast.Add) and isinstance(node.target, gast.Name) and
                isinstance(call, gast.Call) and not call.keywords and len(call.args) == 3 and
                not any(isinstance(a, gast.Starred) for a in call.args)):
            return node
        adder = self.adders.get(id(resolve(self.fn, call.func, None)))
        if adder is None:
            return node
        if id(adder) not in self.bound:
            self.bound[id(adder)] = self.namer.fresh(adder.__name__)
            self.env[self.bound[id(adder)]] = adder
        func = gast.Name(id=self.bound[id(adder)], ctx=gast.Load(), annotation=None,
                         type_comment=None)
        acc = gast.Name(id=node.target.id, ctx=gast.Load(), annotation=None, type_comment=None)
        new = gast.Assign(targets=[node.target], type_comment=None,
                          value=gast.Call(func=func, args=[acc] + call.args, keywords=[]))
        self.changed = True
        gast.copy_location(new, node)
        if emit.comment_of(node):
            emit.annotate(new, emit.comment_of(node))
        return new
