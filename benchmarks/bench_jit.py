"""secant's `jit` against its peers, and what compiling costs.

    python benchmarks/bench_jit.py [--json results.json]

- SELU on 10^6 float32: NumPy (baseline), JAX jit, a hand-written numba.njit, secant jit.
- Pairwise distances of 400 points in 3-D (a loop nest): pure Python (baseline), a hand
  numba.njit, secant jit.
- Compiling: the first call of secant jit in this process with an empty cache (cold), the
  first call after the same function is defined again (a reloaded module: nothing is
  compiled), and a second process running the same program, start to first result, which
  loads the machine code from Numba's on-disk cache.

The ratio column is baseline time / time, so larger is faster. Runs in a private cache
directory under a temporary folder, so "cold" really is cold.
"""
from __future__ import annotations

import argparse
import importlib.util
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:                 # run as a script from anywhere
    sys.path.insert(0, str(ROOT))

from benchmarks.timing import Row, _seconds, compile_time, median_time, write_json  # noqa: E402

ALPHA = np.float32(1.6732632423543772)
SCALE = np.float32(1.0507009873554805)


# ---------------------------------------------------------------- workloads
def selu(x):
    return SCALE * np.where(x > 0, x, ALPHA * np.exp(x) - ALPHA)


def pairwise(x):
    """Distance matrix of the rows of `x`, written as the loop nest it is."""
    n = x.shape[0]
    out = np.zeros((n, n))
    for i in range(n):
        for j in range(i + 1, n):
            r2 = 0.0
            for k in range(x.shape[1]):
                d = x[i, k] - x[j, k]
                r2 += d * d
            out[i, j] = math.sqrt(r2)
            out[j, i] = out[i, j]
    return out


# ---------------------------------------------------------------- peers
def selu_jax():
    import jax
    import jax.numpy as jnp

    def f(x):
        return SCALE * jnp.where(x > 0, x, ALPHA * jnp.exp(x) - ALPHA)
    return jax.jit(f)


def hand_njit(fun):
    import numba
    return numba.njit(fun)


# ---------------------------------------------------------------- measurements
def peer_rows(rows: list[Row]) -> None:
    from transformer import jit
    x32 = np.random.default_rng(0).standard_normal(10**6).astype(np.float32)
    selu_peers = [("NumPy", selu), ("JAX jit", selu_jax()), ("numba.njit by hand",
                                                             hand_njit(selu)),
                  ("secant jit", jit(selu))]
    for impl, fun in selu_peers:
        compiled = compile_time(fun, x32) if impl != "NumPy" else None
        np.testing.assert_allclose(np.asarray(fun(x32)), selu(x32), rtol=1e-5, atol=1e-6)
        rows.append(Row("selu", "1e6 f32", impl, median_time(fun, x32), compiled))
    pts = np.random.default_rng(1).random((400, 3))
    pair_peers = [("Python", pairwise), ("numba.njit by hand", hand_njit(pairwise)),
                  ("secant jit", jit(pairwise))]
    for impl, fun in pair_peers:
        compiled = compile_time(fun, pts) if impl != "Python" else None
        np.testing.assert_allclose(fun(pts), pairwise(pts), rtol=1e-12)
        repeat = 3 if impl == "Python" else 7
        rows.append(Row("pairwise", "400x3", impl, median_time(fun, pts, repeat=repeat),
                        compiled))


SECOND_PROCESS = """\
import time
start = time.perf_counter()
import sys
import numpy as np
sys.path.insert(0, {root!r})
{setup}
result = f(np.random.default_rng(1).random((400, 3)))
print(time.time(), time.perf_counter() - start, {disk_hits})
"""
SECANT_SETUP = """\
from transformer import jit
from benchmarks.bench_jit import pairwise
f = jit(pairwise)"""
NUMBA_SETUP = """\
import numba
from benchmarks.bench_jit import pairwise
f = numba.njit(cache=True)(pairwise)"""
DISK_HITS = {SECANT_SETUP: "f.cache_info().disk_hits",
             NUMBA_SETUP: "sum(f.stats.cache_hits.values())"}


def compile_rows(rows: list[Row]) -> None:
    """First-call times of secant jit on `pairwise`: cold, redefined, a second process."""
    from transformer import jit
    pts = np.random.default_rng(1).random((400, 3))
    # peer_rows made the first, cold compile (empty cache directory)
    cold = next(r.compile_s for r in rows if (r.workload, r.impl) == ("pairwise", "secant jit"))
    rows.append(Row("compile", "pairwise", "cold (empty cache)", cold, cold))
    # the same file imported as a second module: a new, identical function object
    again = _reimport(Path(__file__), "bench_jit_again").pairwise
    first = compile_time(jit(again), pts)
    rows.append(Row("compile", "pairwise", "redefined, same process", first, first))
    for setup, impl in ((SECANT_SETUP, "2nd process start->result"),
                        (NUMBA_SETUP, "same, numba cache=True")):
        _second_process(setup)                  # the first process fills the cache
        wall, inside, disk_hits = _second_process(setup)
        if disk_hits < 1:
            raise RuntimeError(f"{impl}: the process did not load from Numba's disk cache")
        rows.append(Row("compile", "pairwise", impl, wall, inside))


def _reimport(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _second_process(setup: str) -> tuple[float, float, int]:
    """(seconds from spawning the process to its first result, seconds of that inside the
    script, disk hits). Interpreter shutdown is not counted: the result is already there."""
    script = SECOND_PROCESS.format(root=str(ROOT), setup=setup, disk_hits=DISK_HITS[setup])
    spawned = time.time()
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         check=True).stdout.split()
    return float(out[0]) - spawned, float(out[1]), int(out[2])


# ---------------------------------------------------------------- report
BASELINES = {"selu": "NumPy", "pairwise": "Python", "compile": "cold (empty cache)"}


def print_report(rows: list[Row]) -> None:
    base = {(r.workload, r.size): r.median_s for r in rows if r.impl == BASELINES[r.workload]}
    header = (f"{'workload':<9} {'case':<12} {'implementation':<27} {'time':>10} "
              f"{'1st call':>10} {'speedup':>9}")
    print(header)
    print("-" * len(header))
    for r in rows:
        ref = base.get((r.workload, r.size))
        ratio = f"{ref / r.median_s:.1f}x" if ref and r.impl != BASELINES[r.workload] else ""
        first = _seconds(r.compile_s) if r.compile_s is not None else ""
        print(f"{r.workload:<9} {r.size:<12} {r.impl:<27} {_seconds(r.median_s):>10} "
              f"{first:>10} {ratio:>9}")
    print("\n'1st call' is compile + one run; for a 2nd process it is the time inside the "
          "script (imports included)\nand 'time' runs from spawning the process to its first "
          "result. 'speedup' is baseline time / time:\nNumPy for selu, Python for pairwise, "
          "the cold first call for compile.")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="also write the rows to this JSON file")
    args = parser.parse_args(argv)
    scratch = tempfile.mkdtemp(prefix="secant-bench-")
    os.environ["SECANT_CACHE_DIR"] = os.path.join(scratch, "secant")
    os.environ["NUMBA_CACHE_DIR"] = os.path.join(scratch, "numba")   # the hand-njit peer
    rows: list[Row] = []
    peer_rows(rows)
    compile_rows(rows)
    print_report(rows)
    if args.json:
        write_json(args.json, rows)


if __name__ == "__main__":
    main()
