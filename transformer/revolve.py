"""Binomial checkpointing (Revolve, Griewank & Walther 2000) of a loop's reverse sweep:
`checkpoint_loop(body, snapshots=s, schedule="revolve")`.

The loop `for i in range(lower, upper): c1, ..., cn = body(i, c1, ..., cn, k1, ..., km)`
(T = upper - lower steps) is differentiated by a generated vjp that keeps at most `s`
carry states (snapshots, the loop's input state counted) and runs the schedule that
`transformer.runtime.revolve` streams (O(s) integers of state): forward steps from a
snapshot, saves, restores, and each step's own vjp exactly once, last step first. The
forward steps it runs are the fewest any schedule with `s` snapshots can run:

    optimal_advances(T, s) = r * T - C(s + r, r - 1),   r the least with C(s + r, s) >= T

so with s fixed the recomputation grows as O(T log T) (r ~ log T), and with
s ~ log T as well, memory is O(log T) states. The carries must be floats (numbers or
arrays) and `body` must not write into its arguments (a stored snapshot is the state
itself, not a copy).
"""
from __future__ import annotations

from math import comb
from typing import Sequence

import gast

from .function import Function
from .nodes import walk
from .runtime.revolve import (ADVANCE, DONE, RESTORE, REVERSE, SAVE, revolve_actions,
                              revolve_next, revolve_start)
from .syntax import parsed_at

__all__ = ["schedule", "optimal_advances", "varied_carries", "revolve_vjp_function"]

_NAMES = {ADVANCE: "advance", SAVE: "save", RESTORE: "restore", REVERSE: "reverse"}


def schedule(steps: int, snapshots: int) -> list[tuple]:
    """The Revolve schedule as readable tuples: ("advance", a, b) runs steps a..b-1,
    ("save", k) / ("restore", k) a snapshot slot, ("reverse", i) step i's adjoint."""
    rows = []
    for kind, a, b in revolve_actions(steps, snapshots).tolist():
        rows.append((_NAMES[kind], a, b) if kind == ADVANCE else (_NAMES[kind], a))
    return rows


def optimal_advances(steps: int, snapshots: int) -> int:
    """The fewest forward steps any schedule with `snapshots` stored states (the first
    one holding the loop's input) runs to reverse `steps` steps (Griewank's bound)."""
    if steps <= 1:
        return 0
    r = 0
    while comb(snapshots + r, snapshots) < steps:
        r += 1
    return r * steps - comb(snapshots + r, r - 1)


def varied_carries(primal: Function, carries: int, positions: Sequence[int]) -> list[int]:
    """The carries (0-based) whose value may depend on a differentiated loop input: the
    fixed point of a flow-insensitive, syntactic dependence over the body (every name an
    assignment reads flows into its targets; return element j into carry j). Carries
    outside it (an integer step counter) get no cotangent of their own."""
    params = primal.params
    varied = {params[p - 1] for p in positions if p >= 2}
    flows = []
    for node in walk(primal.node):
        if isinstance(node, (gast.Assign, gast.AugAssign, gast.AnnAssign, gast.For)):
            targets = node.targets if isinstance(node, gast.Assign) else [node.target]
            value = node.iter if isinstance(node, gast.For) else node.value
            written = {n.id for t in targets for n in walk(t) if isinstance(n, gast.Name)}
            read = {n.id for n in walk(value) if isinstance(n, gast.Name)} if value \
                else set()
            if isinstance(node, gast.AugAssign):
                read |= written
            flows += [(w, read) for w in written]
        elif isinstance(node, gast.Return) and node.value is not None:
            parts = node.value.elts if isinstance(node.value, gast.Tuple) else [node.value]
            flows += [(f"carry {j}", {n.id for n in walk(e) if isinstance(n, gast.Name)})
                      for j, e in enumerate(parts)]
    changed = True
    while changed:
        changed = False
        for j in range(carries):                 # carry j's output is its next input
            if f"carry {j}" in varied and params[1 + j] not in varied:
                varied.add(params[1 + j])
                changed = True
        for target, read in flows:
            if target not in varied and read & varied:
                varied.add(target)
                changed = True
    return [j for j in range(carries) if params[1 + j] in varied]


def revolve_vjp_function(body, primal: Function, body_vjp: Function, carries: int,
                         tuple_out: bool, snapshots: int, positions: Sequence[int],
                         active: Sequence[int]) -> Function:
    """`loop_vjp(lower, upper, *carries, *constants, *cotangents)` returning the
    cotangents of the loop's parameters at `positions` (0 and 1, the bounds, get 0.0).

    `body` is the loop body, `primal` its Function, `body_vjp` its vjp with respect to
    the carries `active` (`varied_carries`), then the constants at `positions` (body
    parameter p - 1 for loop parameter p)."""
    k = len(primal.params) - 1 - carries
    cs = [f"c{j}" for j in range(carries)]
    ks = [f"k{j}" for j in range(k)]
    gs = [f"g{j}" for j in range(carries)]
    active_k = [p - 2 - carries for p in positions if p >= 2 + carries]
    carried = ", ".join(cs) + ("," if carries == 1 and tuple_out else "")
    state = ", ".join(cs + ks)
    # an active carry may start as an integer (`loss = 0`) and hold floats after a step:
    # its snapshots and the body's vjp take it as a float from the start
    lines = [f"c{j} = cast_like(c{j}, c{j})" for j in active]
    lines += [f"state = revolve_start(upper - lower, {snapshots})", "kind = 0"]
    lines += [f"s{j} = [c{j}] * {snapshots}" for j in range(carries)]
    lines += [f"gk{j} = zeros_like(k{j})" for j in active_k]
    lines += [f"while kind != {DONE}:",
              "    action = revolve_next(state)",
              "    kind = action[0]",
              "    a = action[1]",
              f"    if kind == {ADVANCE}:",
              "        for i in range(lower + a, lower + action[2]):",
              f"            {carried} = body(i, {state})",
              f"    elif kind == {SAVE}:"]
    lines += [f"        s{j}[a] = c{j}" for j in range(carries)]
    lines += [f"    elif kind == {RESTORE}:"]
    lines += [f"        c{j} = s{j}[a]" for j in range(carries)]
    lines += [f"    elif kind == {REVERSE}:",
              f"        grads = body_vjp(lower + a, {state}, {', '.join(gs)})"]
    lines += [f"        g{j} = grads[{n}]" for n, j in enumerate(active)]
    lines += [f"        gk{j} = gk{j} + grads[{len(active) + n}]" for n, j in enumerate(active_k)]
    results = ["0.0" if p < 2 else f"g{p - 2}" if p < 2 + carries else f"gk{p - 2 - carries}"
               for p in positions]
    lines.append(f"return ({', '.join(results)},)")
    name = f"{primal.name}_revolve_vjp"
    text = (f"def {name}(lower, upper, {state}, {', '.join(gs)}):\n" +
            "".join(f"    {line}\n" for line in lines))
    node = parsed_at(text, primal.node)     # errors point at body's def line
    from .runtime import cast_like, zeros_like
    env = {"body": body, "body_vjp": body_vjp, "revolve_start": revolve_start,
           "revolve_next": revolve_next, "cast_like": cast_like,
           "zeros_like": zeros_like, "range": range}
    return Function(node, env, primal.origin, primal.chain + ("checkpoint_loop",))
