"""`secant demo`: jit a pair loop and SELU, time them against Python and NumPy.

Self-contained and short (a few seconds, most of it Numba's first compile). When the
installed transformer has `grad`, the demo also checks a gradient against central
finite differences.
"""
from __future__ import annotations

import math
import time

import numpy as np

# float32 constants keep SELU in float32 under Numba, which would promote
# `float32_array * 1.67` (a Python float) to float64
SELU_ALPHA = np.float32(1.6732632423543772)
SELU_SCALE = np.float32(1.0507009873554805)


def pair_energy(pos):
    """Sum over pairs i < j of 1 / |pos_i - pos_j|: a loop nest NumPy cannot vectorize well."""
    n = pos.shape[0]
    total = 0.0
    for i in range(n):
        for j in range(i + 1, n):
            r2 = 0.0
            for k in range(pos.shape[1]):
                d = pos[i, k] - pos[j, k]
                r2 += d * d
            total += 1.0 / math.sqrt(r2)
    return total


def selu(x):
    return SELU_SCALE * np.where(x > 0, x, SELU_ALPHA * np.exp(x) - SELU_ALPHA)


def smooth_loss(w, x):
    """A small scalar loss for the gradient check."""
    return np.sum(np.tanh(x @ w) ** 2) + 0.5 * np.sum(w * w)


def best_time(fun, *args, repeat: int = 3) -> float:
    best = math.inf
    for _ in range(repeat):
        start = time.perf_counter()
        fun(*args)
        best = min(best, time.perf_counter() - start)
    return best


def _row(label: str, seconds: float, baseline: float | None = None) -> str:
    ratio = f"{baseline / seconds:8.1f}x" if baseline else " " * 9
    return f"  {label:<34}{seconds * 1e3:10.2f} ms {ratio}"


def demo_pair_loop(jit, source) -> None:
    pos = np.random.default_rng(0).random((300, 3))
    fast = jit(pair_energy)
    start = time.perf_counter()
    value = fast(pos)
    first = time.perf_counter() - start
    expected = pair_energy(pos)
    print("pair_energy on 300 points (3 nested loops)")
    print(f"  jit value {value:.10g}, Python value {expected:.10g}, "
          f"match: {math.isclose(value, expected, rel_tol=1e-12)}")
    python = best_time(pair_energy, pos, repeat=1)
    print(_row("Python", python))
    print(_row("secant jit, first call (compile)", first))
    print(_row("secant jit", best_time(fast, pos), python))
    print(f"  cache: {fast.cache_info()}")
    print()
    print(source(fast))


def demo_selu(jit) -> None:
    x = np.random.default_rng(1).standard_normal(1_000_000).astype(np.float32)
    fast = jit(selu)
    out = fast(x)
    print("SELU on 10^6 float32")
    print(f"  jit dtype {out.dtype}, max |jit - NumPy| = {np.max(np.abs(out - selu(x))):.2e}")
    numpy = best_time(selu, x)
    print(_row("NumPy", numpy))
    print(_row("secant jit", best_time(fast, x), numpy))


def demo_grad(transformer) -> None:
    rng = np.random.default_rng(2)
    w, x = rng.standard_normal(4), rng.standard_normal((8, 4))
    g = transformer.grad(smooth_loss)(w, x)
    eps = 1e-6
    fd = np.array([(smooth_loss(w + eps * e, x) - smooth_loss(w - eps * e, x)) / (2 * eps)
                   for e in np.eye(w.size)])
    print("grad(smooth_loss) against central finite differences")
    print(f"  max |grad - fd| = {np.max(np.abs(g - fd)):.2e}")


def run() -> None:
    import transformer
    print("secant demo: source-to-source transformation of NumPy code, compiled by Numba\n")
    demo_pair_loop(transformer.jit, transformer.source)
    demo_selu(transformer.jit)
    if hasattr(transformer, "grad"):
        print()
        demo_grad(transformer)
