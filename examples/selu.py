"""SELU (the activation from JAX's quickstart) compiled with secant's jit, against NumPy.

Needs: nothing beyond secant itself (numpy, numba).

    python examples/selu.py [--sizes N,M,...]

The constants are np.float32 on purpose: Numba promotes `float32_array * 1.67` (a Python
float) to float64, where NumPy 2 keeps float32. Module-level np.float32 constants are
frozen into the compiled code with their type, so the result stays float32 - the script
checks the dtype and prints the generated source.
"""
import argparse
import time

import numpy as np
from checks import check, check_true

import transformer
from transformer import jit

ALPHA = np.float32(1.6732632423543772)
SCALE = np.float32(1.0507009873554805)


def selu(x):
    return SCALE * np.where(x > 0, x, ALPHA * np.exp(x) - ALPHA)


def best_of(fun, x, repeat=5):
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fun(x)
        best = min(best, time.perf_counter() - start)
    return best


def sizes(text: str) -> list[int]:
    values = [int(part) for part in text.split(",")]
    if not all(1 <= v <= 10**8 for v in values):
        raise argparse.ArgumentTypeError(f"sizes must be between 1 and 10**8, got {text}")
    return values


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=sizes, default=[10**6, 10**7], metavar="N,M,...",
                        help="array lengths to time (default 1000000,10000000)")
    args = parser.parse_args(argv)
    variants = {"jit": jit(selu), "jit parallel": jit(selu, parallel=True, fastmath=True)}
    rng = np.random.default_rng(0)
    print(f"{'n':>10} {'variant':>14} {'ms':>8} {'NumPy ms':>9} {'speedup':>8}  dtype")
    results = []
    for n in args.sizes:
        x = rng.standard_normal(n).astype(np.float32)
        numpy_s = best_of(selu, x)
        for label, fast in variants.items():
            out = fast(x)                   # compiles on the first size only
            results.append((n, label, out, selu(x)))
            jit_s = best_of(fast, x)
            print(f"{n:>10} {label:>14} {jit_s * 1e3:>8.2f} {numpy_s * 1e3:>9.2f} "
                  f"{numpy_s / jit_s:>7.1f}x  {out.dtype}")
    for n, label, out, expected in results:
        check_true(f"{label} dtype, n={n}", out.dtype == np.float32,
                   f"{out.dtype} (NumPy gives {expected.dtype})")
        check(f"{label} vs NumPy, n={n}", out, expected, rtol=1e-5, atol=1e-6)
    fast = variants["jit"]
    print()
    print(transformer.source(fast))


if __name__ == "__main__":
    main()
