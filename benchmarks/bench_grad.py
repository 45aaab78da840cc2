"""Reverse mode against its peers: Lennard-Jones forces (W1) and a recurrence (W7).

W1  the pair-loop Lennard-Jones energy at N = 128, 512, 2048 in its three natural forms
    (benchmarks/natural.py: vector `d = pos[i] - pos[j]`, scalars `dx, dy, dz`, inner
    `for k in range(3)`), each under secant jit(grad); beside secant jit(energy), analytic
    forces hand-written in Numba, JAX jit(grad) of the vectorized energy and autograd grad
    of the vectorized energy (N <= 512).
W7  h <- tanh(W h + U x_t + b) over T = 1000 steps, hidden 32, gradient with respect to W:
    secant jit(grad) of the plain Python loop vs JAX jit(grad) of the lax.scan rewrite,
    each with its compile (first call) time.

One process; medians of interleaved rounds (every implementation once per round) after
the first call, which is the compile column (at the first size: later sizes reuse the
compiled code, same argument types); ratios against the hand-written
Numba forces (W1) and JAX's scan (W7). Compile times are cold: the secant cache directory
is a fresh temporary one unless SECANT_CACHE_DIR is set. Every gradient is checked against
the hand-written one before it is timed.

Run: python -m benchmarks.bench_grad [--sizes 128 512 2048] [--json out.json]
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

if not os.environ.get("SECANT_CACHE_DIR"):  # cold compiles: nothing cached from earlier runs
    os.environ["SECANT_CACHE_DIR"] = tempfile.mkdtemp(prefix="secant-bench-")

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script from anywhere

from benchmarks import peers, timing, workloads  # noqa: E402
from benchmarks.natural import LJ_FORMS  # noqa: E402
from benchmarks.timing import Row  # noqa: E402
from transformer import grad, jit  # noqa: E402

HAND = "numba hand forces"


SCAN = "jax lax.scan"


def _repeats(seconds_per_call: float) -> int:
    """Enough repeats for a stable median without spending more than ~2 s per row."""
    return int(min(15, max(3, 2.0 / max(seconds_per_call, 1e-6))))


def _close_to(expected, what):
    def check(got):
        err = np.max(np.abs(np.asarray(got) - expected)) / max(1.0, np.max(np.abs(expected)))
        if err > 1e-8:
            raise AssertionError(f"{what}: gradient differs from the hand-written one by {err:.2e}")
    return check


def _same_energy(args):
    expected = workloads.lj_energy(*args)
    return lambda got: np.testing.assert_allclose(got, expected, rtol=1e-10)


def bench_lj(sizes, rows, skip):
    """W1: every natural form under jit(grad) beside the hand forces and the peers.

    First calls are timed one by one (the compile column); the steady-state medians are
    taken interleaved, every implementation once per round, so the machine's changing load
    hits all of them alike.
    """
    energy = jit(workloads.lj_energy)
    forms = [(f"secant grad {label}", jit(grad(fn))) for label, fn in LJ_FORMS]
    for n in sizes:
        args = workloads.lj_inputs(n)
        size = f"N={n}"
        hand = peers.lj_forces_numba(*args)
        fns = {HAND: (peers.lj_forces_numba, None),
               "secant jit(energy)": (energy, _same_energy(args) if n <= 128 else None)}
        for label, fn in forms:
            fns[label] = (fn, _close_to(-hand, label))
        if "jax" not in skip:
            fns["jax jit(grad) vector"] = (peers.lj_grad_jax(), _close_to(-hand, "jax"))
        if "autograd" not in skip and n <= 512:   # all-pairs arrays: minutes at N=2048
            fns["autograd vectorized"] = (peers.lj_grad_autograd(), _close_to(-hand, "ag"))
        _timed_interleaved(rows, "W1 LJ", size, fns, args)


def _timed_interleaved(rows, workload, size, fns, args):
    """First call of each of `fns` {label: (fn, check)}, then medians of interleaved rounds.

    JAX rows are timed on their own after the rounds: its thread pool keeps spinning after
    a call and would slow down whichever implementation ran next.
    """
    firsts = {}
    for label, (fn, check) in fns.items():
        firsts[label] = timing.compile_time(fn, *args)
        if check is not None:
            check(fn(*args))
    repeat = _repeats(max(timing.median_time(fn, *args, repeat=1, warmup=0)
                          for fn, _ in fns.values()))
    ours = {k: f for k, (f, _) in fns.items() if not k.startswith("jax")}
    medians = timing.interleaved_medians(ours, args, repeat)
    for label, (fn, _) in fns.items():
        if label not in medians:
            medians[label] = timing.median_time(fn, *args, repeat=repeat, warmup=0)
        rows.append(Row(workload, size, label, medians[label], firsts[label]))


def bench_rnn(rows, skip):
    args = workloads.rnn_inputs(steps=1000, hidden=32)
    expected = peers.rnn_grad_numpy(*args)
    fns = {}
    if "jax" not in skip:
        fns[SCAN] = (peers.rnn_grad_jax(), _close_to(expected, "jax"))
    fns["secant jit(grad) loop"] = (jit(grad(workloads.rnn_loss)),
                                    _close_to(expected, "secant jit(grad(rnn_loss))"))
    fns["numpy hand BPTT"] = (peers.rnn_grad_numpy, None)
    _timed_interleaved(rows, "W7 RNN", "T=1000 H=32", fns, args)


def _median(rows, workload, size, impl):
    found = [r for r in rows if (r.workload, r.size, r.impl) == (workload, size, impl)]
    return found[0] if found else None


def print_targets(rows, sizes):
    print("\nTargets")
    for n in sizes:
        if n < 512:
            continue
        size = f"N={n}"
        h = _median(rows, "W1 LJ", size, HAND)
        for label, _ in LJ_FORMS:
            g = _median(rows, "W1 LJ", size, f"secant grad {label}")
            print(f"  W1 {size} {label}: jit(grad) / hand forces = "
                  f"{g.median_s / h.median_s:.2f} (target <= 1.3)")
    s, j = _median(rows, "W7 RNN", "T=1000 H=32", "secant jit(grad) loop"), \
        _median(rows, "W7 RNN", "T=1000 H=32", SCAN)
    if s is not None:
        versus = f"{s.median_s / j.median_s:.2f} x jax scan (target <= 1)" if j else ""
        print(f"  W7: secant steady {versus}; secant compile {s.compile_s:.2f} s (target <= 3 s)"
              + (f", jax compile {j.compile_s:.2f} s" if j else ""))


def main(argv=None):
    parser = argparse.ArgumentParser(description="secant reverse mode vs peers")
    parser.add_argument("--sizes", type=int, nargs="+", default=[128, 512, 2048])
    parser.add_argument("--skip", nargs="*", default=[], choices=["jax", "autograd"])
    parser.add_argument("--json", help="also write the rows to this JSON file")
    args = parser.parse_args(argv)
    rows: list[Row] = []
    bench_lj(args.sizes, rows, set(args.skip))
    bench_rnn(rows, set(args.skip))
    print(f"secant cache: {os.environ['SECANT_CACHE_DIR']}; python {sys.version.split()[0]}\n")
    timing.print_table([r for r in rows if r.workload.startswith("W1")], baseline=HAND)
    print()
    timing.print_table([r for r in rows if r.workload.startswith("W7")], baseline=SCAN)
    print_targets(rows, args.sizes)
    if args.json:
        timing.write_json(args.json, rows)


if __name__ == "__main__":
    main()
