"""Reverse mode: a Function in, its vector-Jacobian product as one new Function out.

Input: any Function, normalized first by `prepare.prepare` (ANF, exits lowered
to flags, one assignment per value where possible, loops instrumented). Activity
(`activity.py`) picks the variables that get adjoints; `tape.py` decides which values the
reverse sweep recomputes and which it records; `tidy.py` removes work on adjoints
known to be zero; `dce.py` removes work whose results nobody reads. For grad and
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

The pass runs in stages, one module each, every stage a class extending the one before
(each `__init__` does its stage's work on the shared state, so a stage reads the results of
the earlier ones by attribute): `facts.BodyFacts` (where statements and names sit),
`classify.Classify` (how each statement passes derivatives, which names are active),
`adjoints.Adjoints` (each statement's adjoint), `reads.Reads` (what the reverse sweep reads,
the tape plan), `forward_sweep.ForwardSweep` and `reverse_sweep.ReverseSweep` (emission);
`_Reverse.build` below assembles the function and tidies it (`tidy.py`, `dce.py`).
"""
from __future__ import annotations

import builtins
import threading

import gast

from .. import runtime
from ..aliases import written_params, written_params_of_source
from ..function import Function
from ..names import free_names
from ..nodes import copy_tree, walk
from ..syntax import located
from .classify import GRAD, VALUE_AND_GRAD, VJP
from .dce import (eliminate_dead_code, forget_weak_reads, mark_unneeded_reads, pure_calls,
                  weak_reads_bound)
from .facts import _cheap_pure_function
from .prepare import prepare
from .reads import shape_argument
from .reverse_sweep import ReverseSweep
from .seeds import float_zeros, unit_cotangent
from .tidy import tidy_reverse

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
        built = _build(fn, tuple(wrt), mode, has_aux, tuple_grads, False, label)
        if mode == VALUE_AND_GRAD or not _loop_count(fn.node):
            return built
        lean = _build(fn, tuple(wrt), mode, has_aux, tuple_grads, True, label)
        return lean if lean is not None and \
            _loop_count(lean.node) < _loop_count(built.node) else built
    finally:
        _in_progress.pop()


def _build(fn: Function, wrt: tuple, mode: str, has_aux: bool, tuple_grads: bool,
           lean: bool, label: str) -> Function | None:
    """One build of the pass. A vjp whose reverse sweep writes into a cotangent it was
    passed, in place (`bh[i] = bh[i] + v` right after `bh = b_h`, or `bresult[i] = 0.0`
    where a batched result's adjoint is taken apart), is built again with that cotangent
    copied first: the caller's array is left as it was, so forward mode, vmap and a second
    reverse pass can take the vjp (a call that writes into its arguments is refused there)."""
    reverse = _Reverse(prepare(fn), wrt, mode, has_aux, tuple_grads, lean=lean)
    built = reverse.build(label)
    if built is None or mode != VJP or not reverse.cotangent_params:
        return built
    written = set(written_params(built))
    positions = [k for k, cot in enumerate(reverse.cotangent_params) if cot in written]
    if positions:                                       # on some path, as forward mode reads
        on_some_path = set(written_params_of_source(built))
        positions = [k for k in positions if reverse.cotangent_params[k] in on_some_path]
    if not positions:
        return built
    reverse = _Reverse(prepare(fn), wrt, mode, has_aux, tuple_grads, lean=lean)
    reverse.copied_cotangents = frozenset(positions)
    return reverse.build(label)


def _loop_count(node) -> int:
    return sum(isinstance(n, (gast.For, gast.While)) for n in walk(node))


class _Reverse(ReverseSweep):
    """All stages of the pass on one function; `build` assembles and tidies the result."""

    def differentiate_callee(self, callee: Function, positions: tuple) -> Function:
        return reverse_function(callee, positions, VJP)

    def build(self, label: str) -> Function:
        mark_unneeded_reads(self.body + [self.ret], pure_calls(self.env, _cheap_pure_function))
        forward = self.tape_setup() + self.forward_block(self.body)
        reverse = self.reverse_block(self.body, top=True)
        node = copy_tree(self.fn.node)
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
            adjoint_names = {n.id for n in walk(node) if isinstance(n, gast.Name)}
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


def drop_dead_code(fn: Function) -> Function:
    """`fn` (generated) without the statements whose results nobody reads."""
    node = copy_tree(fn.node)
    eliminate_dead_code(node.body, pure_calls(fn.env, _cheap_pure_function))
    return fn.replace(node=node)


# shape_argument, float_zeros and unit_cotangent are named `reverse.<name>` by the rules of
# helper_rules, rules.batching, vector_shapes and the CUDA lowering
__all__ = ["reverse_function", "drop_dead_code", "prepare", "shape_argument", "float_zeros",
           "unit_cotangent", "GRAD", "VALUE_AND_GRAD", "VJP"]
