"""Calls that write into an array whose earlier values the reverse sweep reads.

The reverse sweep reads the arrays the adjoints need when it runs, after the forward
sweep. An array written in place by the function itself (`M[0, 0] += 10.0`) has the
items it overwrites recorded and restored (`tape.plan_tape`'s `saved`), so each adjoint
reads the values its statement read. A call that writes into an array - a helper of the
user's writing into its argument (`bump(M)`), a helper changing a global array
(`bump()` with `W[0, 0] += 10.0` in its body), `out=`, `M.fill(0.0)` - records nothing:
an adjoint of a statement before the call would read the values after it, a wrong
gradient. `refuse_call_writes` refuses such a call, located, when the reverse of a
statement before the call (or anywhere in a loop around it, where a later trip's call
comes before an earlier trip's reverse) reads the array's values.

Input: a `Reads` stage whose `reverse_value_reads` holds every name (the env's included)
whose values the adjoints read. Output: nothing, or a TransformError at the call.
"""
from __future__ import annotations

import gast
import numpy as np

from ..aliases import call_writes
from ..function import resolve
from ..helper_effects import called_function, may_change
from ..nodes import walk
from ..spelling import spelled, user_names


def refuse_call_writes(stage) -> None:
    """Refuse a call that writes into an array the reverse sweep reads from before it."""
    fn = stage.fn
    read = stage.reverse_value_reads
    statements = [s for s in walk(gast.Module(body=stage.body, type_ignores=[]))
                  if isinstance(s, (gast.Assign, gast.Expr)) and isinstance(s.value, gast.Call)
                  and id(s) in stage.order]
    if not statements:
        return
    writes = call_writes(fn)
    arrays = {n: v for n, v in stage.env.items()
              if n in read and isinstance(v, np.ndarray) and n not in stage.defs}
    for stmt in statements:
        written = writes(stmt.value) & read
        callee = called_function(resolve(fn, stmt.value.func, None))
        if callee is not None:
            written |= {n for n, v in arrays.items() if may_change(callee, v)}
        for var in sorted(written):
            if _read_before(stage, var, stmt):
                _refuse(stage, stmt, var, callee)


def _read_before(stage, var: str, call) -> bool:
    """Whether the reverse of a statement before `call` (or in a loop around it) reads
    the values of `var`: it would read them as the call left them."""
    at, loops = stage.order[id(call)], stage.loops_of[id(call)]
    for stmt in stage.loads.get(var, []):
        if stmt is call or id(stmt) not in stage.order or \
                var not in stage.reverse_reads(stmt):
            continue
        if stage.order[id(stmt)] < at or \
                any(loop is outer for loop in stage.loops_of[id(stmt)] for outer in loops):
            return True
    return False


def _refuse(stage, call, var: str, callee) -> None:
    fn = stage.fn
    shown = spelled(fn, var, user_names(fn))
    who = f"{callee.__name__}" if callee is not None else "this call"
    raise fn.origin.error(
        call, f"{who} writes into {shown} here, which the function reads before: reverse "
        "mode reads the values of such an array when the gradient runs, after the call, "
        "and records only the writes the function makes itself",
        f"make the write in this function ({var}[...] = ... or {var} += ...), where the "
        f"values it overwrites are recorded; or hand the call a copy ({var}.copy()); "
        "forward mode (jvp, jacfwd) takes the write as it is")
