"""Checkpointing: peak memory and time of grad of the W7 recurrence with and without it.

W7  h <- tanh(W h + U x_t + b), loss = sum_t |h_t|^2 (benchmarks/workloads.py), hidden 32,
T = 10^5 steps by default, gradient with respect to (W, U, b):

    plain          grad(rnn_loss): the tape keeps every h_t (T * hidden floats)
    checkpointed   grad of the same loop written with checkpoint_loop(step, snapshots=s,
                   levels=L): at most L * (s + 1) + ceil(T / s**L) + 1 carries kept,
                   each step's forward code run L + 3 times (once without)
    revolve        checkpoint_loop(step, snapshots=R, schedule="revolve"): at most R carries
                   kept, the fewest forward steps any R-snapshot schedule runs
                   (transformer.revolve.optimal_advances), plus its action array
    revolve-for    the plain loop with `for t in checkpoint_range(T, snapshots=R)`: the same
                   schedule, written in place

backend="python" (plain NumPy): peak of tracemalloc during the gradient call, after a
warm-up call at small T has built everything. jit (Numba): each variant in its own
subprocess, which compiles at small T, then runs at T; the figure is the growth of the
peak RSS (ru_maxrss) over the peak after the warm-up, so compile memory does not count.
Both variants are checked against each other before the figures are printed.

Run: python -m benchmarks.bench_remat [--steps 100000] [--snapshots S] [--levels 1]
     [--revolve-snapshots R]
     [--backends python jit]
"""
from __future__ import annotations

import argparse
import json
import math
import os
import resource
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script from anywhere

from benchmarks.workloads import rnn_inputs, rnn_loss  # noqa: E402
from transformer import checkpoint_loop, checkpoint_range, grad, jit  # noqa: E402
from transformer.revolve import optimal_advances  # noqa: E402

ARGNUMS = (0, 1, 2)


def rnn_step(t, h, loss, W, U, b, xs):
    """One step of `workloads.rnn_loss`: the carries (h, loss) after step t."""
    h = np.tanh(W @ h + U @ xs[t] + b)
    return h, loss + np.sum(h * h)


def make_checkpointed(snapshots: int, levels: int, schedule: str = "segments"):
    loop = checkpoint_loop(rnn_step, snapshots=snapshots, levels=levels, schedule=schedule)

    def rnn_loss_checkpointed(W, U, b, xs, h0):
        h, loss = loop(0, xs.shape[0], h0, 0.0, W, U, b, xs)
        return loss

    return rnn_loss_checkpointed


FOR_SNAPSHOTS = 24      # checkpoint_range's budget: a module constant, read at transformation


def rnn_loss_for(W, U, b, xs, h0):
    """`workloads.rnn_loss` with its loop over checkpoint_range."""
    h, loss = h0, 0.0
    for t in checkpoint_range(xs.shape[0], snapshots=FOR_SNAPSHOTS):
        h = np.tanh(W @ h + U @ xs[t] + b)
        loss = loss + np.sum(h * h)
    return loss


def gradient(variant: str, snapshots: int, levels: int, backend: str):
    global FOR_SNAPSHOTS
    if variant == "revolve-for":
        FOR_SNAPSHOTS, fun = snapshots, rnn_loss_for
    elif variant == "revolve":        # --snapshots carries --revolve-snapshots to the child
        fun = make_checkpointed(snapshots, 1, "revolve")
    else:
        fun = rnn_loss if variant == "plain" else make_checkpointed(snapshots, levels)
    g = grad(fun, argnums=ARGNUMS)
    return jit(g) if backend == "jit" else g


def python_figures(variant, steps, snapshots, levels) -> dict:
    g = gradient(variant, snapshots, levels, "python")
    g(*rnn_inputs(steps=8))                       # builds the generated code
    args = rnn_inputs(steps=steps)
    tracemalloc.start()
    start = time.perf_counter()
    result = g(*args)
    seconds = time.perf_counter() - start
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return {"seconds": seconds, "peak_bytes": peak, "result": result}


def _maxrss_bytes() -> int:
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss if sys.platform == "darwin" else rss * 1024


def jit_child(variant, steps, snapshots, levels) -> None:
    """In a subprocess: compile at small T, run at `steps`, print the figures as JSON."""
    g = gradient(variant, snapshots, levels, "jit")
    g(*rnn_inputs(steps=8))
    args = rnn_inputs(steps=steps)
    before = _maxrss_bytes()
    start = time.perf_counter()
    result = g(*args)
    seconds = time.perf_counter() - start
    grown = _maxrss_bytes() - before
    print(json.dumps({"seconds": seconds, "peak_rss_growth_bytes": grown,
                      "peak_rss_bytes": _maxrss_bytes(),
                      "result": [r.tolist() for r in result]}))


def jit_figures(variant, steps, snapshots, levels) -> dict:
    cmd = [sys.executable, "-m", "benchmarks.bench_remat", "--child", variant,
           "--steps", str(steps), "--snapshots", str(snapshots), "--levels", str(levels)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True,
                         cwd=Path(__file__).resolve().parents[1],
                         env=dict(os.environ, PYTHONPATH=str(Path(__file__).parents[1])))
    figures = json.loads(out.stdout.strip().splitlines()[-1])
    figures["result"] = tuple(np.array(r) for r in figures["result"])
    return figures


def _agree(a, b) -> bool:
    return all(np.allclose(x, y, rtol=1e-9, atol=1e-9) for x, y in zip(a, b))


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=100_000)
    parser.add_argument("--snapshots", type=int, default=0, help="default ceil(sqrt(T))")
    parser.add_argument("--levels", type=int, default=1)
    parser.add_argument("--backends", nargs="+", default=["python", "jit"])
    parser.add_argument("--revolve-snapshots", type=int, default=24)
    parser.add_argument("--child", choices=["plain", "checkpointed", "revolve", "revolve-for"])
    opts = parser.parse_args(argv)
    s = opts.snapshots or math.isqrt(opts.steps - 1) + 1
    if opts.child:
        jit_child(opts.child, opts.steps, s, opts.levels)
        return
    bound = opts.levels * (s + 1) + -(-opts.steps // s ** opts.levels) + 1
    print(f"W7 grad, T={opts.steps}, hidden 32; checkpoint_loop snapshots={s}, "
          f"levels={opts.levels}: at most {bound} carries kept (plain: {opts.steps + 1}); "
          f"revolve: {opts.revolve_snapshots} carries, "
          f"{optimal_advances(opts.steps, opts.revolve_snapshots)} forward steps recomputed")
    sizes = {"plain": s, "checkpointed": s, "revolve": opts.revolve_snapshots,
             "revolve-for": opts.revolve_snapshots}
    for backend in opts.backends:
        measure = python_figures if backend == "python" else jit_figures
        rows = {v: measure(v, opts.steps, sizes[v], opts.levels) for v in sizes}
        for v in ("checkpointed", "revolve", "revolve-for"):
            if not _agree(rows["plain"]["result"], rows[v]["result"]):
                raise SystemExit(f"{backend}: the {v} gradient differs from the plain one")
        key = "peak_bytes" if backend == "python" else "peak_rss_growth_bytes"
        what = "tracemalloc peak" if backend == "python" else "peak RSS growth"
        for variant, row in rows.items():
            total = f"   (peak RSS {row['peak_rss_bytes'] / 2**20:.1f} MiB)" \
                if backend == "jit" else ""
            print(f"  {backend:6s} {variant:12s} {row['seconds']:8.2f} s   "
                  f"{what} {row[key] / 2**20:9.2f} MiB{total}")


if __name__ == "__main__":
    main()
