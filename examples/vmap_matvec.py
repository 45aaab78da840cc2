"""A matrix-vector product lifted to a matrix-matrix product by vmap.

`matvec` multiplies one vector. `vmap(matvec, in_axes=(None, 0))` maps it over a stack
of vectors; secant rewrites the source so that the whole stack goes through one
matrix-matrix product (one BLAS call) instead of a loop. The generated source is
printed, then checked against NumPy's `V @ M.T`, with and without Numba.

Needs: nothing beyond secant itself (numpy, numba).

    python examples/vmap_matvec.py
"""
import numpy as np
from checks import check

from transformer import jit, show_vmap, vmap


def matvec(M, v):
    """M @ v for one vector v."""
    return M @ v


def main():
    rng = np.random.default_rng(0)
    M = rng.normal(size=(512, 512)).astype(np.float32)
    V = rng.normal(size=(256, 512)).astype(np.float32)

    print(show_vmap(matvec, in_axes=(None, 0)))

    batched = vmap(matvec, in_axes=(None, 0))
    expected = V @ M.T
    check("vmap(matvec) vs NumPy's V @ M.T", batched(M, V), expected, rtol=1e-4, atol=1e-3)
    check("jit(vmap(matvec)) vs NumPy's V @ M.T", jit(batched)(M, V), expected, rtol=1e-4,
          atol=1e-3)
    print(f"vmap(matvec) over {V.shape[0]} vectors of length {V.shape[1]} equals V @ M.T "
          "(python backend and Numba)")


if __name__ == "__main__":
    main()
