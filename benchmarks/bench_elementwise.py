"""W5: SELU on 10^6 elements, float32 and float64, in the forms a NumPy user writes.

    python benchmarks/bench_elementwise.py [--json results.json] [--repeat 11]

Forms timed under secant: `jit` of the `np.where` form, `jit` of a loop over the elements
(without and with `parallel=True`, which runs the loop as a `prange`), and
`jit(vmap(scalar selu))` without and with `parallel=True`. Each runs twice: with
secant's vectorizable `exp` (`runtime.vector_math`, the default) and with Numba's call of
the C library's `exp` (the lowering switched off, marked "libm"), so the table shows what
the kernels bring. Peers: NumPy (the baseline), JAX CPU (`jax.jit` of the `jnp.where`
form), and hand-written Numba (`numba.njit` of the loop, and of a `prange` loop with
`parallel=True`). Every result is checked against NumPy before it is timed.

Columns: the median of `repeat` calls, the first call (transform + compile, in a private
empty cache), and the ratio time / baseline time (below 1 is faster), printed once against
NumPy and once against JAX. One process, peers side by side; on a loaded machine compare
ratios, not absolute times.
"""
from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:                 # run as a script from anywhere
    sys.path.insert(0, str(ROOT))
os.environ.setdefault("SECANT_CACHE_DIR", tempfile.mkdtemp(prefix="secant-bench-ew-"))

from benchmarks.timing import Row, compile_time, median_time, print_table, write_json  # noqa: E402,E501

ALPHA, SCALE = 1.6732632423543772, 1.0507009873554805


def forms(dtype):
    """The three user forms of SELU for one dtype (constants of that dtype, as a float32
    user writes them, so every peer computes in the same type)."""
    alpha, scale = dtype(ALPHA), dtype(SCALE)

    def selu_where(x):
        return scale * np.where(x > 0, x, alpha * np.exp(x) - alpha)

    def selu_loop(x):
        out = np.empty_like(x)
        for i in range(x.shape[0]):
            v = x[i]
            out[i] = scale * v if v > 0 else scale * (alpha * math.exp(v) - alpha)
        return out

    def selu_scalar(v):
        return scale * v if v > 0 else scale * (alpha * math.exp(v) - alpha)
    return selu_where, selu_loop, selu_scalar


def peers(dtype):
    import jax
    import jax.numpy as jnp
    import numba
    alpha, scale = dtype(ALPHA), dtype(SCALE)
    selu_where, selu_loop, _ = forms(dtype)

    def selu_prange(x):
        out = np.empty_like(x)
        for i in numba.prange(x.shape[0]):
            v = x[i]
            out[i] = scale * v if v > 0 else scale * (alpha * math.exp(v) - alpha)
        return out
    if dtype == np.float64:
        jax.config.update("jax_enable_x64", True)
    jax_where = jax.jit(lambda x: scale * jnp.where(x > 0, x, alpha * jnp.exp(x) - alpha))
    return [("NumPy", selu_where), ("JAX jit", jax_where),
            ("numba.njit loop by hand", numba.njit(selu_loop)),
            ("numba.njit prange by hand, parallel", numba.njit(parallel=True)(selu_prange))]


def secant_forms(dtype, label=""):
    from transformer import jit, vmap
    selu_where, selu_loop, selu_scalar = forms(dtype)
    return [(f"secant jit, np.where form{label}", jit(selu_where)),
            (f"secant jit, loop form{label}", jit(selu_loop)),
            (f"secant jit, loop form, parallel{label}", jit(selu_loop, parallel=True)),
            (f"secant jit(vmap(scalar)){label}", jit(vmap(selu_scalar))),
            (f"secant jit(vmap(scalar)), parallel{label}",
             jit(vmap(selu_scalar), parallel=True))]


def measure(rows, dtype, impls, x, want, repeat):
    size = f"1e6 {np.dtype(dtype).name}"
    for impl, fun in impls:
        first = compile_time(fun, x) if impl != "NumPy" else None
        got = np.asarray(fun(x))
        # alpha * exp(x) - alpha cancels near 0: an ulp of exp is an absolute error there
        eps = np.finfo(dtype).eps
        np.testing.assert_allclose(got, want, rtol=8 * eps, atol=8 * eps, err_msg=impl)
        impl += "" if got.dtype == want.dtype else f" (gives {got.dtype})"
        rows.append(Row("selu", size, impl, median_time(fun, x, repeat=repeat), first))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="also write the rows to this file")
    parser.add_argument("--repeat", type=int, default=11)
    args = parser.parse_args(argv)
    from transformer import lowering
    rows: list[Row] = []
    for dtype in (np.float32, np.float64):
        x = np.random.default_rng(0).standard_normal(10**6).astype(dtype)
        want = forms(dtype)[0](x)
        measure(rows, dtype, peers(dtype) + secant_forms(dtype), x, want, args.repeat)
        vector_form = lowering._vector_form
        lowering._vector_form = lambda target, call: None     # Numba's own libm exp
        try:
            measure(rows, dtype, secant_forms(dtype, " [libm exp]"), x, want, args.repeat)
        finally:
            lowering._vector_form = vector_form
    print_table(rows, baseline="NumPy")
    print()
    print_table(rows, baseline="JAX jit")
    if args.json:
        write_json(args.json, rows)


if __name__ == "__main__":
    main()
