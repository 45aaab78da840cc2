"""Reverse mode against its peers: Lennard-Jones forces (W1) and a recurrence (W7).

W1  the pair-loop Lennard-Jones energy of benchmarks/workloads.py at N = 128, 512, 2048:
    secant jit(energy), secant jit(grad(energy)), analytic forces hand-written in Numba,
    JAX jit(grad) of the vectorized energy, autograd grad of the vectorized energy; and
    secant jit(grad) of the same energy written per vector component.
W7  h <- tanh(W h + U x_t + b) over T = 1000 steps, hidden 32, gradient with respect to W:
    secant jit(grad) of the plain Python loop vs JAX jit(grad) of the lax.scan rewrite,
    each with its compile (first call) time.

One process; medians of repeated calls after a warm-up; ratios against the hand-written
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
from benchmarks.timing import Row  # noqa: E402
from transformer import grad, jit  # noqa: E402

HAND = "numba hand forces"


def lj_energy_components(pos, eps, sigma, box, rcut):
    """`workloads.lj_energy` with the separation written per component (no small arrays).

    Timed beside the workload to separate what secant's reverse mode costs from what
    Numba's per-pair 3-element temporaries cost.
    """
    n = pos.shape[0]
    rcut2 = rcut * rcut
    sigma2 = sigma * sigma
    energy = 0.0
    for i in range(n):
        for j in range(i + 1, n):
            r2 = 0.0
            for k in range(3):
                dk = pos[i, k] - pos[j, k]
                dk = dk - box * np.round(dk / box)
                r2 += dk * dk
            if r2 < rcut2:
                s6 = (sigma2 / r2) ** 3
                energy += 4.0 * eps * (s6 * s6 - s6)
    return energy
SCAN = "jax lax.scan"


def _repeats(seconds_per_call: float) -> int:
    """Enough repeats for a stable median without spending more than ~2 s per row."""
    return int(min(15, max(3, 2.0 / max(seconds_per_call, 1e-6))))


def _timed(rows, workload, size, impl, fn, args, check=None):
    """Time `fn(*args)`: first call (compile) and median of the rest; append a Row."""
    first = timing.compile_time(fn, *args)
    result = fn(*args)
    if check is not None:
        check(result)
    median = timing.median_time(fn, *args, repeat=_repeats(first), warmup=0)
    rows.append(Row(workload, size, impl, median, first))
    return median


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
    energy = jit(workloads.lj_energy)
    forces_grad = jit(grad(workloads.lj_energy))
    components_grad = jit(grad(lj_energy_components))
    for n in sizes:
        args = workloads.lj_inputs(n)
        size = f"N={n}"
        hand = peers.lj_forces_numba(*args)
        _timed(rows, "W1 LJ", size, HAND, peers.lj_forces_numba, args)
        _timed(rows, "W1 LJ", size, "secant jit(energy)", energy, args,
               _same_energy(args) if n <= 128 else None)   # plain Python is slow
        _timed(rows, "W1 LJ", size, "secant jit(grad)", forces_grad, args,
               _close_to(-hand, "secant jit(grad(energy))"))
        _timed(rows, "W1 LJ", size, "secant grad, components", components_grad, args,
               _close_to(-hand, "secant jit(grad(lj_energy_components))"))
        if "jax" not in skip:
            _timed(rows, "W1 LJ", size, "jax jit(grad) vector", peers.lj_grad_jax(), args,
                   _close_to(-hand, "jax"))
        if "autograd" not in skip:
            _timed(rows, "W1 LJ", size, "autograd vectorized", peers.lj_grad_autograd(), args,
                   _close_to(-hand, "autograd"))


def bench_rnn(rows, skip):
    args = workloads.rnn_inputs(steps=1000, hidden=32)
    expected = peers.rnn_grad_numpy(*args)
    size = "T=1000 H=32"
    if "jax" not in skip:
        _timed(rows, "W7 RNN", size, SCAN, peers.rnn_grad_jax(), args, _close_to(expected, "jax"))
    _timed(rows, "W7 RNN", size, "secant jit(grad) loop", jit(grad(workloads.rnn_loss)), args,
           _close_to(expected, "secant jit(grad(rnn_loss))"))
    _timed(rows, "W7 RNN", size, "numpy hand BPTT", peers.rnn_grad_numpy, args)


def _median(rows, workload, size, impl):
    found = [r for r in rows if (r.workload, r.size, r.impl) == (workload, size, impl)]
    return found[0] if found else None


def print_targets(rows, sizes):
    print("\nTargets")
    for n in sizes:
        if n < 512:
            continue
        size = f"N={n}"
        g = _median(rows, "W1 LJ", size, "secant jit(grad)")
        h = _median(rows, "W1 LJ", size, HAND)
        e = _median(rows, "W1 LJ", size, "secant jit(energy)")
        print(f"  W1 {size}: jit(grad) / hand forces = {g.median_s / h.median_s:.2f} "
              f"(target <= 1.3), jit(grad) / jit(energy) = {g.median_s / e.median_s:.2f} "
              "(target <= 3)")
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
