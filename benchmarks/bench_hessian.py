"""W4: Hessians and Hessian-vector products, secant against its peers, in one process.

    PYTHONPATH=. python benchmarks/bench_hessian.py [--sizes 64 512] [--json out.json]

Hessians of f1(x) = sum(tanh(x)) and f2(x) = sum(tanh(A @ x)) (dense A) at each size:
secant `jit(hessian(f))` (forward over reverse: every basis vector pushed at once, so a
batch of matrix-vector products is one matrix-matrix product), the hand-written analytic
NumPy Hessian (the baseline), JAX `jit(hessian(f))` and `autograd.hessian(f)`; then the
Hessian-vector product of f2, forward over reverse: secant `jit(jvp(grad(f)))`, the
analytic NumPy product, and JAX `jit(jvp(grad(f)))`. Medians exclude compilation, which
is reported separately; ratios are to the analytic NumPy row of the same group.
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks import peers, workloads  # noqa: E402
from benchmarks.timing import Row, compile_time, median_time, print_table, write_json  # noqa: E402
from transformer import grad, hessian, jit, jvp  # noqa: E402

BASELINE = "numpy analytic"


def hvp_sum_tanh_linear_numpy(x, v, A):
    """Analytic H(x) v of sum(tanh(A @ x)) without forming H: A.T @ (s * (A @ v))."""
    t = np.tanh(A @ x)
    return A.T @ ((-2.0 * t * (1.0 - t * t)) * (A @ v))


def _timed(rows, workload, size, impl, fn, args, repeat):
    first = compile_time(fn, *args)
    rows.append(Row(workload, size, impl, median_time(fn, *args, repeat=repeat), first))
    return fn(*args)


def bench_hessians(rows, n: int, repeat: int) -> None:
    x, A, _ = workloads.hessian_inputs(n)
    cases = [("f1 hessian", workloads.sum_tanh, (x,), peers.hessian_sum_tanh_numpy),
             ("f2 hessian", workloads.sum_tanh_linear, (x, A),
              peers.hessian_sum_tanh_linear_numpy)]
    for name, fn, args, analytic in cases:
        reference = _timed(rows, name, str(n), BASELINE, analytic, args, repeat)
        got = _timed(rows, name, str(n), "secant jit(hessian)", jit(hessian(fn)), args, repeat)
        assert np.allclose(got, reference, atol=1e-10), name
        _timed(rows, name, str(n), "jax jit(hessian)", peers.hessian_jax(fn), args, repeat)
        # autograd builds one graph per output row in Python: fewer repeats at n = 512
        _timed(rows, name, str(n), "autograd.hessian", peers.hessian_autograd(fn), args,
               max(1, repeat // 4) if n > 100 else repeat)


def bench_hvp(rows, n: int, repeat: int) -> None:
    x, A, v = workloads.hessian_inputs(n)
    fn = workloads.sum_tanh_linear
    forward_over_reverse = jit(jvp(grad(fn)))

    def secant_hvp(x, v, A):
        return forward_over_reverse(x, A, v, np.zeros_like(A))[1]

    name = "f2 hvp"
    reference = _timed(rows, name, str(n), BASELINE, hvp_sum_tanh_linear_numpy, (x, v, A),
                       repeat)
    got = _timed(rows, name, str(n), "secant jit(jvp(grad))", secant_hvp, (x, v, A), repeat)
    assert np.allclose(got, reference, atol=1e-10)
    _timed(rows, name, str(n), "jax jit(jvp(grad))", peers.hvp_jax(fn), (x, v, A), repeat)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[64, 512])
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--json", help="also write the rows to this JSON file")
    args = parser.parse_args(argv)
    rows: list[Row] = []
    for n in args.sizes:
        bench_hessians(rows, n, args.repeat)
    for n in args.sizes:
        bench_hvp(rows, n, args.repeat)
    print_table(rows, BASELINE)
    if args.json:
        write_json(args.json, rows)


if __name__ == "__main__":
    main()
