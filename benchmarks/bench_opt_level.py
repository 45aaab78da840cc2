"""Steady state of secant's generated code at LLVM -O2 (its default) against -O3.

    PYTHONPATH=. python benchmarks/bench_opt_level.py [--repeat 15] [--levels 2 3] [--only W2]

`SECANT_OPT_LEVEL` sets the level secant's generated functions are optimized at
(`codegen/numba_opt_level.py`); a level that is not the default gets a module of its own,
so one process holds each workload compiled at every level. Each is checked against the
first level's result, then the levels are timed interleaved (alternating which runs
first), and the table gives each level's median and its ratio to the first level.
Workloads, written as users write them:

    W1  jit(grad) of the Lennard-Jones energy, N = 512, its three natural forms
    W2  jit(vmap(grad(mlp_loss), in_axes=(None, 0, 0))), B = 128, float32
    W5  jit of SELU's `np.where` form on 10^6 float32
    W7  jit(grad) of the RNN loop, T = 1000, hidden 32

Never part of the test run.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.dirname(HERE)]

import numpy as np  # noqa: E402

from benchmarks import natural, workloads  # noqa: E402
from transformer import grad, jit, vmap  # noqa: E402


def selu(x):
    return 1.0507 * np.where(x > 0, x, 1.6733 * (np.exp(x) - 1.0))


def _cases():
    pos = np.random.default_rng(0).normal(size=(512, 3)) * 4
    lj_args = (pos, 1.0, 1.0, 10.0, 2.5)
    params, X, Y = workloads.mlp_inputs(batch=128)
    xs = np.random.default_rng(1).normal(size=10 ** 6).astype(np.float32)

    def per_example():
        return jit(vmap(grad(workloads.mlp_loss), in_axes=(None, 0, 0)))
    return [(f"W1 {label}", (lambda e=energy: jit(grad(e))), lj_args)
            for label, energy in natural.LJ_FORMS] + [
        ("W2 per-example MLP grads", per_example, (params, X, Y)),
        ("W5 SELU np.where f32", (lambda: jit(selu)), (xs,)),
        ("W7 RNN grad", (lambda: jit(grad(workloads.rnn_loss))), workloads.rnn_inputs()),
    ]


def _leaves(value):
    if isinstance(value, dict):
        return [leaf for item in value.values() for leaf in _leaves(item)]
    if isinstance(value, (tuple, list)):
        return [leaf for item in value for leaf in _leaves(item)]
    return [value]


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--levels", type=int, nargs="+", default=[2, 3])
    parser.add_argument("--only", nargs="+", default=[], help="workload name prefixes")
    options = parser.parse_args(argv)
    os.environ.setdefault("SECANT_CACHE_DIR", tempfile.mkdtemp(prefix="secant-bench-"))
    levels = options.levels
    print(f"{'workload':28s}" + "".join(f"{'-O%d' % level:>12s}" for level in levels)
          + "".join(f"{'O%d/O%d' % (level, levels[0]):>10s}" for level in levels[1:]))
    for name, make, args in _cases():
        if options.only and not name.startswith(tuple(options.only)):
            continue
        compiled = {}
        for level in levels:
            os.environ["SECANT_OPT_LEVEL"] = str(level)
            compiled[level] = make()
            compiled[level](*args)                       # compile outside the timing
        want = _leaves(compiled[levels[0]](*args))
        for level in levels[1:]:
            for got, ref in zip(_leaves(compiled[level](*args)), want, strict=True):
                np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-7)
        times = {level: [] for level in levels}
        for round_ in range(options.repeat):
            for level in (levels if round_ % 2 else levels[::-1]):
                start = time.perf_counter()
                compiled[level](*args)
                times[level].append(time.perf_counter() - start)
        medians = {level: statistics.median(times[level]) for level in levels}
        print(f"{name:28s}" + "".join(f"{medians[level] * 1e3:9.3f} ms" for level in levels)
              + "".join(f"{medians[level] / medians[levels[0]]:10.3f}" for level in levels[1:]))
    os.environ.pop("SECANT_OPT_LEVEL", None)


if __name__ == "__main__":
    main()
