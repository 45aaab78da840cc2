"""The binomial (Revolve) checkpointing schedule of Griewank & Walther, as an action array
that generated code executes (`transformer.revolve` documents it; plain NumPy and Numba).

`revolve_actions(steps, snapshots)` reverses the steps 0..steps-1 of a loop whose state
before step i is x_i, keeping at most `snapshots` states stored at once (slot 0 holds x_0),
with the fewest forward steps possible. Each row is (action, a, b):

    ADVANCE a b   run steps a..b-1 from the current state x_a (the current state is x_b)
    SAVE    k     store the current state in slot k
    RESTORE k     the current state becomes the state stored in slot k
    REVERSE i     the adjoint of step i, from the current state x_i

Schedule: the segment [lo, hi) whose first state sits in slot k, with c slots free counting
k, is reversed by advancing to lo + m, saving in slot k + 1, reversing [lo + m, hi) with c - 1
slots, then [lo, lo + m) with c slots; with c = 1 each step is reached from x_lo. The split
m lies where both halves need one repetition fewer and one the same (beta(c, r) = C(c + r, c)
is the most steps c slots reverse with r repetitions):
m = clamp(beta(c, r - 2), l - beta(c - 1, r), beta(c, r - 1)), optimal (tests/reverse/
test_revolve.py checks it against the dynamic programme for every l < 400, c < 7).
"""
from __future__ import annotations

import numba
import numpy as np
from numba.extending import overload

ADVANCE, SAVE, RESTORE, REVERSE = 0, 1, 2, 3


def _beta(c, r):
    """C(c + r, c) for r >= 0, else 0: the most steps c slots reverse with r repetitions."""
    if r < 0:
        return 0
    b = 1
    for k in range(1, c + 1):
        b = b * (r + k) // k
    return b


def _make(wrap):
    """The generator with its helpers passed through `wrap` (the identity for plain
    Python, `numba.njit` for Numba, whose compiled code calls compiled helpers only)."""
    beta = wrap(_beta)

    def split(length, c):
        r = 0
        while beta(c, r) < length:
            r += 1
        low = max(1, length - beta(c - 1, r))
        high = min(length - 1, beta(c, r - 1))
        return max(low, min(high, beta(c, r - 2)))

    split = wrap(split)

    def actions(steps, snapshots):
        rows = [(SAVE, 0, 0)]
        stack = [(0, steps, 0, snapshots)]       # segment lo..hi, its slot, slots free
        current = 0                              # the step whose input is the current state
        while len(stack) > 0:
            lo, hi, slot, c = stack.pop()
            if hi - lo <= 0:
                continue
            if hi - lo == 1 or c == 1:
                for j in range(hi - 1, lo - 1, -1):
                    if current != lo:
                        rows.append((RESTORE, slot, 0))
                    if j > lo:
                        rows.append((ADVANCE, lo, j))
                    rows.append((REVERSE, j, 0))
                    current = -1
                continue
            if current != lo:
                rows.append((RESTORE, slot, 0))
            m = lo + split(hi - lo, c)
            rows.append((ADVANCE, lo, m))
            rows.append((SAVE, slot + 1, 0))
            current = m
            stack.append((lo, m, slot, c))
            stack.append((m, hi, slot + 1, c - 1))
        out = np.empty((len(rows), 3), np.int64)
        for k in range(len(rows)):
            out[k, 0], out[k, 1], out[k, 2] = rows[k]
        return out

    return actions


_revolve_py = _make(lambda f: f)
_revolve_jit = numba.njit(_make(numba.njit))     # compiled on first use only


def revolve_actions(steps, snapshots):
    """The action array (module docstring) reversing `steps` steps with `snapshots` slots."""
    if snapshots < 1:
        raise ValueError(f"revolve needs at least one snapshot slot, got {snapshots}")
    return _revolve_py(int(steps), int(snapshots))


@overload(revolve_actions)
def _revolve_actions_nb(steps, snapshots):
    def impl(steps, snapshots):
        if snapshots < 1:
            raise ValueError("revolve needs at least one snapshot slot")
        return _revolve_jit(steps, snapshots)
    return impl
