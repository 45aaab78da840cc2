"""Programs that index near and past the bounds, and a runner for them.

`python tests/bounds_programs.py` runs every case of `CASES` under its transformation and
prints one JSON line per case as it finishes: the value, or the exception type and
message. tests/compiled/test_bounds.py runs it in a subprocess, so a case that kills the process
(an out-of-bounds write corrupting memory) shows as a failure rather than a dead pytest.
"""
from __future__ import annotations

import json
import sys

import numpy as np
from numba import prange


def read_const(x):
    return x[5] * 2.0


def read_var(x, i):
    return x[i] * x[i]


def write_var(x, i):
    y = np.zeros(x.shape[0])
    y[i] = 1.0
    return np.sum(y * x)


def loop_shift(x):
    s = 0.0
    for k in range(x.shape[0]):
        s += x[k] * x[k + 1]
    return s


def read_2d(a, i, j):
    return a[i, j] ** 2


def fancy(x, idx):
    return np.sum(x[idx] ** 2)


def masked(x, m):
    return np.sum(x[m])


def loop_n(x, n):
    s = 0.0
    for k in range(n):
        s += x[k] ** 2
    return s


def guarded(x, n):
    s = 0.0
    for k in range(n):
        if k < x.shape[0]:
            s += x[k] ** 2
    return s


def sorted_item(x, i):
    return np.sort(x)[i]


def computed_write(x, i):
    np.asarray(x)[i] = 1.0
    return x


def gather(x, idx):
    out = np.zeros(idx.shape[0])
    for b in prange(idx.shape[0]):
        out[b] = x[idx[b]] * 2.0
    return out


def twice_at(x, i):
    return x[i] * 2.0


def gather_helper(x, idx):
    out = np.zeros(idx.shape[0])
    for b in prange(idx.shape[0]):
        out[b] = twice_at(x, idx[b])
    return out


def accumulate_helper(x, idx):
    out = np.zeros(idx.shape[0])
    for b in prange(idx.shape[0]):
        out[b] += twice_at(x, idx[b])
    return out


def branch_helper(x, idx):
    out = np.zeros(idx.shape[0])
    for b in prange(idx.shape[0]):
        if idx[b] % 2 == 0:
            out[b] = twice_at(x, idx[b])
        else:
            out[b] = -twice_at(x, idx[b])
    return out


def inner_loop_helper(x, idx):
    out = np.zeros(idx.shape[0])
    for b in prange(idx.shape[0]):
        for r in range(2):
            out[b] = out[b] + twice_at(x, idx[b] - r)
    return out


def rescale_helper(x, idx):
    out = np.ones(idx.shape[0])
    for b in prange(idx.shape[0]):
        out[b] = out[b] * twice_at(x, idx[b])
    return out


def shifted_twice(x, i):
    return twice_at(x, i + 1) + 1.0


def nested_helper(x, idx):
    total = np.zeros(idx.shape[0])
    for b in prange(idx.shape[0]):
        total[b] += shifted_twice(x, idx[b])
    return total


def scatter(x, idx):
    out = np.zeros(x.shape[0])
    for b in prange(idx.shape[0]):
        out[idx[b]] = x[b] + 1.0
    return out


def computed_column(x, j):
    return np.sum(np.tanh(x).reshape(4, 2)[1:, j] ** 2)


def paired_by_length(x, y):
    out = np.zeros_like(x)
    for i in range(len(x)):
        out[i] = x[i] * y[i]
    return out


def energy(pos):
    """The Lennard-Jones shape of W1: every index comes from range(pos.shape[0])."""
    e = 0.0
    n = pos.shape[0]
    for i in range(n):
        for j in range(i + 1, n):
            d = pos[i] - pos[j]
            r2 = np.sum(d * d)
            s6 = (1.0 / r2) ** 3
            e += 4.0 * (s6 * s6 - s6)
    return e


X3, X8 = np.arange(1.0, 4.0), np.arange(1.0, 9.0)
A = np.arange(12.0).reshape(3, 4)
B = np.arange(24.0).reshape(3, 8)
MASK9 = np.arange(9) % 2 == 0
MASK8 = np.arange(8) % 2 == 0
IDX = np.arange(48) % 8
IDX_PAST = np.where(np.arange(48) == 40, 8, IDX)
IDX_BELOW = np.where(np.arange(48) == 3, -9, IDX)
PERM = np.arange(48)[::-1].copy()           # each element written once: no race
PERM_PAST = np.where(np.arange(48) == 40, 48, PERM)
POS = np.array([[0.0, 0.0, 0.0], [1.1, 0.0, 0.0], [0.0, 1.2, 0.1], [1.0, 1.0, 1.3]])

# (id, function, transformation, arguments, source text of the line that must raise or
# None where the call is valid); transformations: jit, grad (jit of grad), vmap0 (jit of
# vmap over x only), vmap00 (jit of vmap over both), nocheck (jit, boundscheck=False),
# par (jit, parallel=True), vmaploop (jit of vmap over the index, loop strategy, parallel)
CASES = [
    ("const-short-jit", "read_const", "jit", (X3,), "return x[5] * 2.0"),
    ("const-short-grad", "read_const", "grad", (X3,), "return x[5] * 2.0"),
    ("const-ok-jit", "read_const", "jit", (X8,), None),
    ("const-ok-grad", "read_const", "grad", (X8,), None),
    ("var-past-jit", "read_var", "jit", (X8, 8), "return x[i] * x[i]"),
    ("var-below-jit", "read_var", "jit", (X8, -9), "return x[i] * x[i]"),
    ("var-past-grad", "read_var", "grad", (X8, 8), "return x[i] * x[i]"),
    ("var-below-grad", "read_var", "grad", (X8, -9), "return x[i] * x[i]"),
    ("var-short-grad", "read_var", "grad", (X3, 3), "return x[i] * x[i]"),
    ("var-negative-jit", "read_var", "jit", (X8, -8), None),
    ("var-negative-grad", "read_var", "grad", (X8, -1), None),
    ("write-past-jit", "write_var", "jit", (X8, 8), "y[i] = 1.0"),
    ("write-below-grad", "write_var", "grad", (X8, -9), "y[i] = 1.0"),
    ("write-negative-grad", "write_var", "grad", (X8, -8), None),
    ("loop-shift-jit", "loop_shift", "jit", (X8,), "s += x[k] * x[k + 1]"),
    ("loop-shift-grad", "loop_shift", "grad", (X8,), "s += x[k] * x[k + 1]"),
    ("2d-axis1-jit", "read_2d", "jit", (A, 1, 4), "return a[i, j] ** 2"),
    ("2d-axis0-grad", "read_2d", "grad", (A, 3, 0), "return a[i, j] ** 2"),
    ("2d-negative-jit", "read_2d", "jit", (A, -1, -4), None),
    ("2d-negative-grad", "read_2d", "grad", (A, -3, -1), None),
    ("fancy-past-jit", "fancy", "jit", (X8, np.array([0, 8])), "return np.sum(x[idx] ** 2)"),
    ("fancy-below-grad", "fancy", "grad", (X8, np.array([0, -9])),
     "return np.sum(x[idx] ** 2)"),
    ("fancy-negative-grad", "fancy", "grad", (X8, np.array([2, -8, 2])), None),
    ("mask-length-jit", "masked", "jit", (X8, MASK9), "return np.sum(x[m])"),
    ("mask-ok-jit", "masked", "jit", (X8, MASK8), None),
    ("loop-n-jit", "loop_n", "jit", (X8, 9), "s += x[k] ** 2"),
    ("loop-n-grad", "loop_n", "grad", (X8, 9), "s += x[k] ** 2"),
    ("loop-n-ok-grad", "loop_n", "grad", (X8, 8), None),
    ("guarded-jit", "guarded", "jit", (X8, 12), None),
    ("guarded-grad", "guarded", "grad", (X8, 12), None),
    ("computed-past-jit", "sorted_item", "jit", (X8, 8), "return np.sort(x)[i]"),
    # an index of slices and a number into a computed array: checked as one tuple
    ("computed-column-past-jit", "computed_column", "jit", (X8, 2),
     "return np.sum(np.tanh(x).reshape(4, 2)[1:, j] ** 2)"),
    ("computed-column-ok-jit", "computed_column", "jit", (X8, -2), None),
    ("computed-column-ok-grad", "computed_column", "grad", (X8, 1), None),
    ("vmap-index-jit", "read_var", "vmap0", (B, 8), "return x[i] * x[i]"),
    ("vmap-batched-index-jit", "read_var", "vmap00", (B, np.array([1, 8, 0])),
     "return x[i] * x[i]"),
    ("vmap-batched-ok-jit", "read_var", "vmap00", (B, np.array([1, -8, 7])), None),
    ("lj-grad", "energy", "grad", (POS,), None),
    ("nocheck-ok", "read_var", "nocheck", (X8, -8), None),
    ("prange-read-past", "gather", "par", (X8, IDX_PAST), "out[b] = x[idx[b]] * 2.0"),
    ("prange-read-below", "gather", "par", (X8, IDX_BELOW), "out[b] = x[idx[b]] * 2.0"),
    ("prange-read-ok", "gather", "par", (X8, IDX - 8), None),
    ("prange-helper-past", "gather_helper", "par", (X8, IDX_PAST), "return x[i] * 2.0"),
    ("prange-helper-ok", "gather_helper", "par", (X8, IDX - 8), None),
    # a helper called from a body that cannot run twice (+=, if, an inner loop, a read of
    # what it writes), or through another helper: its failure is flagged, then raised
    ("prange-accumulate-helper-past", "accumulate_helper", "par", (X8, IDX_PAST),
     "return x[i] * 2.0"),
    ("prange-accumulate-helper-ok", "accumulate_helper", "par", (X8, IDX - 8), None),
    ("prange-branch-helper-below", "branch_helper", "par", (X8, IDX_BELOW),
     "return x[i] * 2.0"),
    ("prange-branch-helper-ok", "branch_helper", "par", (X8, IDX), None),
    ("prange-inner-loop-helper-past", "inner_loop_helper", "par", (X8, IDX_PAST),
     "return x[i] * 2.0"),
    ("prange-inner-loop-helper-ok", "inner_loop_helper", "par", (X8, IDX), None),
    ("prange-read-written-helper-below", "rescale_helper", "par", (X8, IDX_BELOW),
     "return x[i] * 2.0"),
    ("prange-read-written-helper-ok", "rescale_helper", "par", (X8, IDX - 8), None),
    ("prange-nested-helper-past", "nested_helper", "par", (X8, IDX_PAST),
     "return x[i] * 2.0"),
    ("prange-nested-helper-ok", "nested_helper", "par", (X8, IDX - 8), None),
    ("prange-write-past", "scatter", "par", (np.arange(48.0), PERM_PAST),
     "out[idx[b]] = x[b] + 1.0"),
    ("prange-write-ok", "scatter", "par", (np.arange(48.0), PERM), None),
    ("vmap-loop-past", "read_var", "vmaploop", (X8, IDX_PAST), "return x[i] * x[i]"),
    ("vmap-loop-below", "read_var", "vmaploop", (X8, IDX_BELOW), "return x[i] * x[i]"),
    ("vmap-loop-ok", "read_var", "vmaploop", (X8, IDX - 8), None),
]


def transformed(name: str, how: str, backend: str = "cpu"):
    """The callable for function `name` under transformation `how`."""
    from transformer import grad, jit, vmap
    fn = globals()[name]
    if how == "grad":
        return jit(grad(fn), backend=backend)
    if how in ("vmap0", "vmap00"):
        return jit(vmap(fn, in_axes=(0, None) if how == "vmap0" else (0, 0)), backend=backend)
    if how == "vmaploop":
        return jit(vmap(fn, in_axes=(None, 0), method="loop"), backend=backend, parallel=True)
    return jit(fn, backend=backend, boundscheck=how != "nocheck", parallel=how == "par")


def run(case) -> dict:
    ident, name, how, args, _ = case
    try:
        value = transformed(name, how)(*args)
    except Exception as exc:        # reported, not raised: the test decides what is right
        return {"case": ident, "error": type(exc).__name__, "message": str(exc)}
    return {"case": ident, "value": np.asarray(value).tolist()}


def main(selected) -> None:
    for case in CASES:
        if not selected or case[0] in selected:
            print(json.dumps(run(case)), flush=True)


if __name__ == "__main__":
    main(set(sys.argv[1:]))
