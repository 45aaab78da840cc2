"""Checkpointing (rematerialization) in reverse mode: `checkpoint` (alias `remat`),
`checkpoint_policies`, `checkpoint_name`, and `checkpoint_loop` for long loops.

`checkpoint(fun)` is JAX's `jax.checkpoint`: reverse mode stores only the inputs of `fun`
and recomputes its body in the reverse sweep. In secant this is how every call to a
user's function is differentiated (the callee's vjp runs its forward code again; the
caller's tape holds the call's arguments, never the callee's intermediates), so
`checkpoint` makes that schedule explicit and checks its precondition: a checkpointed
function must not write into its arguments (running it twice would write twice).
Values and gradients equal those of `fun`.

Policies: every policy of `checkpoint_policies` is accepted and checked;
`checkpoint_name(x, name)` marks a value (the identity, under every transformation).
`everything_saveable` is no checkpoint at all (`SavingEverything`: `grad` of the whole
function keeps its own tape and runs the body once). A policy by name keeps the named
values it saves: the caller's forward sweep computes them and holds them (once per trip
in a loop), the reverse sweep reads them instead of recomputing them and what only they
needed (`checkpoint_names`); the rest of the body is recomputed, as under
`nothing_saveable`.

`checkpoint_loop(body, snapshots=s, levels=1)` is beyond JAX: the loop

    for i in range(lower, upper): c1, ..., cn = body(i, c1, ..., cn, k1, ..., km)

as one call `c1, ..., cn = loop(lower, upper, c1, ..., cn, k1, ..., km)`, differentiated
with nested segment checkpoints: `levels` levels each split their range into at most `s`
segments and keep the carries at segment starts, the innermost runs the steps. Reverse
mode then keeps at most `levels * (s + 1) + ceil(T / s**levels) + 1` carries alive (T =
upper - lower) instead of T + 1, and runs each step's forward code `levels + 3` times: the
primal run, one run in the vjp of each of the `levels + 1` nested functions, and the one
in the step's own vjp (which, as for any called function, recomputes its body). With
`s = ceil(sqrt(T))` and one level: O(sqrt(T)) carries, 4 forward runs instead of 2.
"""
from __future__ import annotations

import functools
from typing import Callable, Sequence

import gast
import numpy as np

from .errors import TransformError
from .function import Function
from .nodes import copy_tree, walk
from .syntax import parsed_at

__all__ = ["checkpoint", "remat", "checkpoint_policies", "checkpoint_name", "checkpoint_loop",
           "checkpoint_range"]


# ---------------------------------------------------------------- policies


class _Policy:
    """A checkpoint policy of `checkpoint_policies` (what reverse mode may save)."""

    def __init__(self, label: str, names: tuple = ()) -> None:
        for n in names:
            if not isinstance(n, str):
                raise TransformError(f"{label} takes the names given to checkpoint_name "
                                     f"(strings), got {n!r}",
                                     hint=f'write {label}("name1", "name2")')
        self.label, self.names = label, names

    def __call__(self, *args, **kwargs) -> bool:        # JAX calls a policy per primitive
        return self.label == "everything_saveable"

    def by_name(self) -> bool:
        """Whether the policy decides by the names given to `checkpoint_name`."""
        return self.label.startswith("save_")

    def saves(self, name: str) -> bool:
        """Whether the value named `name` (by `checkpoint_name`) is kept for the reverse
        sweep."""
        if self.label == "save_only_these_names":
            return name in self.names
        if self.label in ("save_any_names_but_these", "save_anything_except_these_names"):
            return name not in self.names
        return self.label == "everything_saveable"

    def __repr__(self) -> str:
        names = f"({', '.join(map(repr, self.names))})" if self.by_name() else ""
        return f"checkpoint_policies.{self.label}{names}"


class checkpoint_policies:       # noqa: N801 (JAX's name: a namespace of policies)
    """The policies `checkpoint(fun, policy=...)` accepts, with JAX's names."""

    everything_saveable = _Policy("everything_saveable")
    nothing_saveable = _Policy("nothing_saveable")

    @staticmethod
    def save_only_these_names(*names: str) -> _Policy:
        return _Policy("save_only_these_names", names)

    @staticmethod
    def save_any_names_but_these(*names: str) -> _Policy:
        return _Policy("save_any_names_but_these", names)

    @staticmethod
    def save_anything_except_these_names(*names: str) -> _Policy:
        return _Policy("save_anything_except_these_names", names)


def _checked_policy(policy):
    if policy is None or isinstance(policy, _Policy):
        return policy
    raise TransformError(f"unknown checkpoint policy {policy!r}",
                         hint="use None or one of transformer.checkpoint_policies: "
                              "everything_saveable, nothing_saveable, "
                              "save_only_these_names(...), save_any_names_but_these(...)")


def checkpoint_name(x, name):
    """`x` itself, named `name` for a checkpoint policy (as `jax.ad_checkpoint.checkpoint_name`).
    `x` must be an array or a number, `name` a string."""
    if not isinstance(name, str):
        raise TypeError(f"checkpoint_name: the name must be a string, got {name!r}")
    if not isinstance(x, (np.ndarray, np.generic, int, float, complex)) or \
            isinstance(x, bool):
        raise TypeError(f"checkpoint_name: {name!r} names a {type(x).__name__}, not an "
                        "array or a number; name each array of a container separately")
    return x


def _register_checkpoint_name_for_numba():
    from numba import types
    from numba.core.errors import TypingError
    from transformer.runtime.numba_api import overload

    @overload(checkpoint_name)
    def _checkpoint_name_nb(x, name):
        if not isinstance(x, (types.Array, types.Number)):
            raise TypingError(f"checkpoint_name names a {x}, not an array or a number")
        return lambda x, name: x


_register_checkpoint_name_for_numba()


# ---------------------------------------------------------------- checkpoint


class _Wrapped:
    """`fun` under `checkpoint`, whatever the policy: called, it is `fun`."""

    def __init__(self, fun: Callable, policy, prevent_cse: bool, static_argnums) -> None:
        self.fun = fun
        self.policy = _checked_policy(policy)
        self.prevent_cse = prevent_cse
        self.static_argnums = (static_argnums,) if isinstance(static_argnums, int) \
            else tuple(static_argnums)
        functools.update_wrapper(self, fun, updated=())

    def __call__(self, *args, **kwargs):
        return self.fun(*args, **kwargs)

    def __secant_function__(self) -> Function:
        from .frontend import parse
        primal = parse(self.fun)
        _check_names(primal)
        return primal


class SavingEverything(_Wrapped):
    """`checkpoint(fun, policy=everything_saveable)`: every residual saveable, so `fun` is
    differentiated as if it were not checkpointed (no `__secant_vjp__` of its own: the
    whole function under `grad` runs its body once; a call is differentiated as any call
    to a user function)."""


class Checkpointed(_Wrapped):
    """`fun` under `checkpoint`: reverse mode stores its inputs and recomputes its body
    (`__secant_vjp__`), except the named values its policy saves (`saved_sites`)."""

    def saved_sites(self):
        """The `checkpoint_names.NamedSites` of the values the policy saves (none without a
        policy by name); a saved name placed where it names no single value is refused."""
        from .checkpoint_names import NamedSites
        from .frontend import parse
        if "_sites" not in self.__dict__:
            policy = self.policy
            saves = policy.saves if policy is not None and policy.by_name() else None
            primal = parse(self.fun)
            _check_names(primal)
            self._sites = NamedSites(primal, saves, repr(policy), checkpoint_name)
        return self._sites

    def fwd_function(self) -> Function:
        """`f_fwd(*args)` -> `(f(*args), *saved)`: the forward sweep's run of the body."""
        return self.saved_sites().fwd()

    def saved_count(self) -> int:
        return len(self.saved_sites().sites)

    def bwd_function(self, positions: Sequence[int]) -> Function:
        """`f_bwd(*args, *saved, *g)`: the cotangents of the arguments at `positions`,
        recomputing the body but for the saved values and what only they needed."""
        from .checkpoint_names import substitute
        from .reverse import VJP, reverse_function
        sites = self.saved_sites()
        marked = sites.marked()
        _refuse_argument_writes(marked)
        node = copy_tree(marked.node)
        node.name = f"{marked.name}_checkpointed"
        vjp = reverse_function(marked.replace(node=node), tuple(positions), VJP)
        return substitute(vjp, len(sites.sites))

    def __secant_jvp__(self, active) -> Function:
        """Forward mode stores nothing: the jvp of the body, as for any function."""
        from .forward import jvp_function
        from .frontend import parse
        return jvp_function(parse(self.fun), active)

    def __secant_vjp__(self, positions: Sequence[int]) -> Function:
        from .frontend import parse
        from .reverse import VJP, reverse_function
        primal = parse(self.fun)
        _refuse_argument_writes(primal)
        _check_names(primal)
        # its own name: grad(checkpoint(f)) differentiates a caller of f named f too
        node = copy_tree(primal.node)
        node.name = f"{primal.name}_checkpointed"
        return reverse_function(primal.replace(node=node), tuple(positions), VJP)


def checkpoint(fun: Callable, *, policy=None, prevent_cse: bool = True,
               static_argnums: int | Sequence[int] = ()) -> _Wrapped:
    """`fun` whose reverse-mode derivative stores only its inputs and recomputes its body
    (`jax.checkpoint`). Use as a decorator, `checkpoint(step)(h, x)` in a loop body, or
    around a whole function. `prevent_cse` and `static_argnums` are accepted for JAX
    compatibility (secant never merges the recomputation with the primal, and static
    arguments are constants of the generated code already)."""
    if not callable(fun):
        raise TransformError(f"checkpoint takes a function, got {fun!r}",
                             hint="write checkpoint(f) or @checkpoint above a def")
    if policy is checkpoint_policies.everything_saveable:
        return SavingEverything(fun, policy, prevent_cse, static_argnums)
    return Checkpointed(fun, policy, prevent_cse, static_argnums)


remat = checkpoint


def _refuse_argument_writes(fn: Function) -> None:
    rebound = {n.id for n in walk(fn.node)
               if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store)}
    params = set(fn.params) - rebound          # `x = x.copy()` first makes x the function's
    for sub in walk(fn.node):
        if isinstance(sub, gast.Subscript) and isinstance(sub.ctx, gast.Store) and \
                isinstance(sub.value, gast.Name) and sub.value.id in params:
            raise fn.origin.error(sub, f"checkpointed function {fn.name} writes into its "
                                  f"argument {sub.value.id!r}: its body runs again in the "
                                  "reverse sweep, which would write twice",
                                  f"copy first ({sub.value.id} = {sub.value.id}.copy()) and "
                                  "return the result")


def _check_names(fn: Function) -> None:
    """Each `checkpoint_name(x, name)` in `fn` names a value with a string constant, and
    `x` is not a container or string literal (located TransformError otherwise)."""
    from .function import resolve
    for sub in walk(fn.node):
        if not (isinstance(sub, gast.Call) and
                resolve(fn, sub.func, None) is checkpoint_name):
            continue
        args = list(sub.args) + [k.value for k in sub.keywords]
        if len(args) != 2 or not (isinstance(args[1], gast.Constant) and
                                  isinstance(args[1].value, str)):
            raise fn.origin.error(sub, "checkpoint_name takes a value and its name, a string "
                                  "constant", 'write checkpoint_name(x, "name")')
        if isinstance(args[0], (gast.List, gast.Tuple, gast.Dict, gast.Set)) or \
                isinstance(args[0], gast.Constant) and not \
                isinstance(args[0].value, (int, float, complex)):
            raise fn.origin.error(args[0], "checkpoint_name names an array or a number, not "
                                  "a container or a string",
                                  "name each array separately: checkpoint_name(a, \"a\")")


# ---------------------------------------------------------------- checkpoint_loop


class CheckpointLoop:
    """`loop(lower, upper, *carries, *constants)`: the steps `body(i, *carries,
    *constants)` for i in range(lower, upper), differentiated with nested segment
    checkpoints (module docstring). Called, it runs the steps."""

    def __init__(self, body: Callable, snapshots: int, levels: int) -> None:
        from .frontend import parse
        _check_budget("checkpoint_loop", snapshots, levels, "segments")
        self.body, self.snapshots, self.levels = body, snapshots, levels
        primal = parse(body)
        self.carries = _carry_count(primal)
        if len(primal.params) < 1 + self.carries:
            raise primal.origin.error(primal.node, f"{primal.name} returns {self.carries} "
                                      f"carries but takes {len(primal.params)} parameters",
                                      "write body(i, c1, ..., cn, k1, ..., km) returning "
                                      "(c1, ..., cn)")
        self.tuple_out = _returns_tuple(primal)
        functools.update_wrapper(self, body, updated=())
        self.__name__ = f"{primal.name}_loop"       # names its vjp in generated code
        self._built = None

    def __call__(self, lower, upper, *args):
        carries, constants = list(args[:self.carries]), args[self.carries:]
        for i in range(lower, upper):
            out = self.body(i, *carries, *constants)
            carries = list(out) if self.tuple_out else [out]
        return tuple(carries) if self.tuple_out else carries[0]

    def __secant_function__(self) -> Function:
        from .frontend import parse
        if self._built is None:
            self._built = self._level(parse(self.body), 0)
        return self._built

    def _level(self, primal: Function, depth: int) -> Function:
        """The Function running range(lower, upper): split into segments (a call of the
        next level each) while depth < levels, else the steps themselves."""
        k = len(primal.params) - 1 - self.carries
        cs = [f"c{j}" for j in range(self.carries)]
        ks = [f"k{j}" for j in range(k)]
        carried = ", ".join(cs) + ("," if self.carries == 1 and self.tuple_out else "")
        result = ", ".join(cs) if self.tuple_out else cs[0]
        everything = ", ".join(cs + ks)
        if depth == self.levels:
            env = {"body": self.body}
            lines = ["for i in range(lower, upper):",
                     f"    {carried} = body(i, {everything})"]
        else:
            env = {"segment": self._level(primal, depth + 1)}
            s = self.snapshots
            lines = ["n = upper - lower",
                     f"stride = (n + {s - 1}) // {s}",
                     "if stride < 1:",
                     "    stride = 1",
                     "count = (n + stride - 1) // stride",
                     "for j in range(count):",
                     "    start = lower + j * stride",
                     "    end = start + stride",
                     "    if end > upper:",
                     "        end = upper",
                     f"    {carried} = segment(start, end, {everything})"]
        fname = f"{primal.name}_segments{depth}" if depth < self.levels \
            else f"{primal.name}_steps"
        text = (f"def {fname}(lower, upper, {everything}):\n" +
                "".join(f"    {line}\n" for line in lines) + f"    return {result}\n")
        node = parsed_at(text, primal.node)     # errors point at body's def line
        env["range"] = range
        return Function(node, env, primal.origin, primal.chain + ("checkpoint_loop",))


class RevolveLoop(CheckpointLoop):
    """`checkpoint_loop(..., schedule="revolve")`: the loop's vjp runs the binomial
    schedule of `transformer.revolve` with at most `snapshots` carry states kept."""

    def __secant_function__(self) -> Function:
        from .frontend import parse
        if self._built is None:          # the plain loop: primal, forward mode, vmap
            self._built = self._level(parse(self.body), self.levels)
        return self._built

    def __secant_jvp__(self, active) -> Function:
        from .forward import jvp_function
        return jvp_function(self.__secant_function__(), active)

    def __secant_vjp__(self, positions: Sequence[int]) -> Function:
        from .frontend import parse
        from .reverse import VJP, reverse_function
        from .revolve import revolve_vjp_function, varied_carries
        primal = parse(self.body)
        _refuse_argument_writes(primal)
        active = varied_carries(primal, self.carries, positions)
        wrt = tuple(1 + j for j in active) + \
            tuple(p - 1 for p in positions if p >= 2 + self.carries)
        body_vjp = reverse_function(primal, wrt, VJP)
        return revolve_vjp_function(self.body, primal, body_vjp, self.carries,
                                    self.tuple_out, self.snapshots, tuple(positions), active)


def checkpoint_loop(body: Callable, *, snapshots: int, levels: int = 1,
                    schedule: str = "segments") -> CheckpointLoop:
    """The loop of `body` with a bounded tape: `loop(lower, upper, *carries, *constants)`
    returns the carries after `body(i, *carries, *constants)` for i in range(lower,
    upper); reverse mode keeps at most `levels * (snapshots + 1) + ceil(T /
    snapshots**levels) + 1` carries and runs each step `levels + 3` times (module
    docstring). `body` returns the
    new carries (a tuple, or one value for one carry)."""
    _check_budget("checkpoint_loop", snapshots, levels, schedule)
    if schedule == "revolve":
        return RevolveLoop(body, snapshots, 1)
    return CheckpointLoop(body, snapshots, levels)


def checkpoint_range(*bounds: int, snapshots: int, schedule: str = "revolve",
                     levels: int = 1) -> range:
    """`range(*bounds)`. In a function secant transforms, `for t in checkpoint_range(lower,
    upper, snapshots=s)` is the loop of `checkpoint_loop(step, snapshots=s,
    schedule=schedule, levels=levels)` (transformer/checkpoint_for.py): reverse mode keeps
    at most `s` carry states (Revolve) instead of one per step."""
    _check_budget("checkpoint_range", snapshots, levels, schedule)
    return range(*bounds)


def _range_loop(body: Callable, *, snapshots: int, schedule: str, levels: int):
    _check_budget("checkpoint_range", snapshots, levels, schedule)
    return checkpoint_loop(body, snapshots=snapshots, levels=levels, schedule=schedule)


checkpoint_range.__secant_loop__ = _range_loop     # how checkpoint_for lowers the loop


def _check_budget(caller: str, snapshots, levels, schedule) -> None:
    for label, value, least in (("snapshots", snapshots, 2), ("levels", levels, 1)):
        if isinstance(value, bool) or not isinstance(value, int) or value < least:
            raise TransformError(f"{caller}: {label} must be an int >= {least}, "
                                 f"got {value!r}",
                                 hint="snapshots=s keeps about levels * s carries "
                                      "(s near sqrt(T) for one level)")
    if schedule not in ("revolve", "segments"):
        raise TransformError(f"{caller}: unknown schedule {schedule!r}",
                             hint='use schedule="segments" (levels of segments) or '
                                  'schedule="revolve" (binomial, optimal)')


def _returns(fn: Function) -> list:
    return [n for n in walk(fn.node) if isinstance(n, gast.Return)]


def _returns_tuple(fn: Function) -> bool:
    return any(isinstance(r.value, gast.Tuple) for r in _returns(fn))


def _carry_count(fn: Function) -> int:
    counts = {len(r.value.elts) if isinstance(r.value, gast.Tuple) else 1
              for r in _returns(fn) if r.value is not None}
    if len(counts) != 1:
        raise fn.origin.error(fn.node, f"checkpoint_loop: {fn.name} must return its new "
                              "carries, the same number at every return",
                              "end the body with `return c1, ..., cn`")
    return counts.pop()
