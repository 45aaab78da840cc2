"""The binomial (Revolve) checkpointing schedule of Griewank & Walther, streamed action by
action to generated code (`transformer.revolve` documents it; plain NumPy and Numba).

The schedule reverses the steps 0..steps-1 of a loop whose state before step i is x_i,
keeping at most `snapshots` states stored at once (slot 0 holds x_0), with the fewest
forward steps possible. `state = revolve_start(steps, snapshots)` (O(snapshots) integers,
so the schedule never costs O(steps) memory), then `revolve_next(state)` gives one action
(kind, a, b) per call until DONE; `revolve_actions` collects them all (for tests):

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
test_revolve.py checks it against the dynamic programme for every l < 70, c <= 6).
"""
from __future__ import annotations

import numba
import numpy as np
from transformer.runtime.numba_api import overload

ADVANCE, SAVE, RESTORE, REVERSE, DONE = 0, 1, 2, 3, 4
_STACK = 13                  # where the stack starts in the state array


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


    def start(steps, snapshots):
        """The state: [stack size, current, queued, read, queue (3 x 3), stack (lo, hi,
        slot, free slots) x (snapshots + 2)]; the first action saves x_0 in slot 0."""
        st = np.zeros(_STACK + 4 * (snapshots + 2), np.int64)
        st[0], st[2] = 1, 1
        st[4], st[5], st[6] = SAVE, 0, 0
        st[_STACK], st[_STACK + 1], st[_STACK + 2], st[_STACK + 3] = 0, steps, 0, snapshots
        return st

    def queue(st, kind, a, b):
        k = 4 + 3 * st[2]
        st[k], st[k + 1], st[k + 2] = kind, a, b
        st[2] += 1

    def push(st, lo, hi, slot, c):
        k = _STACK + 4 * st[0]
        st[k], st[k + 1], st[k + 2], st[k + 3] = lo, hi, slot, c
        st[0] += 1

    def refill(st):
        """Queue the actions of the next segment on the stack (none left: DONE)."""
        st[2], st[3] = 0, 0
        while st[0] > 0:
            st[0] -= 1
            k = _STACK + 4 * st[0]
            lo, hi, slot, c = st[k], st[k + 1], st[k + 2], st[k + 3]
            if hi - lo <= 0:
                continue
            if st[1] != lo:
                queue(st, RESTORE, slot, 0)
            if hi - lo == 1 or c == 1:      # the last step, reached from x_lo
                if hi - lo > 1:
                    queue(st, ADVANCE, lo, hi - 1)
                    push(st, lo, hi - 1, slot, c)
                queue(st, REVERSE, hi - 1, 0)
                st[1] = -1
                return
            m = lo + split(hi - lo, c)
            queue(st, ADVANCE, lo, m)
            queue(st, SAVE, slot + 1, 0)
            st[1] = m
            push(st, lo, m, slot, c)
            push(st, m, hi, slot + 1, c - 1)
            return
        queue(st, DONE, 0, 0)

    def next_action(st):
        if st[3] == st[2]:
            refill(st)
        k = 4 + 3 * st[3]
        st[3] += 1
        return st[k], st[k + 1], st[k + 2]

    split, queue, push, refill = wrap(split), wrap(queue), wrap(push), wrap(refill)
    return wrap(start), wrap(next_action)


_start_py, _next_py = _make(lambda f: f)
_start_jit, _next_jit = _make(numba.njit)      # compiled on first use only


def revolve_start(steps, snapshots):
    """The schedule's state (O(snapshots) integers) before its first action."""
    if snapshots < 1:
        raise ValueError(f"revolve needs at least one snapshot slot, got {snapshots}")
    return _start_py(int(steps), int(snapshots))


def revolve_next(state):
    """The next action (kind, a, b) of the schedule, advancing `state`; DONE at the end."""
    return _next_py(state)


def revolve_actions(steps, snapshots):
    """The whole schedule as an (actions, 3) array (for inspection and tests)."""
    state, rows = revolve_start(steps, snapshots), []
    while True:
        row = revolve_next(state)
        if row[0] == DONE:
            return np.array(rows, np.int64).reshape(len(rows), 3)
        rows.append(row)


@overload(revolve_start)
def _revolve_start_nb(steps, snapshots):
    def impl(steps, snapshots):
        if snapshots < 1:
            raise ValueError("revolve needs at least one snapshot slot")
        return _start_jit(steps, snapshots)
    return impl


@overload(revolve_next)
def _revolve_next_nb(state):
    return lambda state: _next_jit(state)
