"""Lennard-Jones forces on the GPU: one CUDA thread per particle, from the gradient of
that particle's energy.

Needs: the `cuda` extra for a GPU (`pip install -e ".[cuda]"`); with `--backend cpu`,
nothing beyond secant itself. No scipy.

`particle_energy(xi, pos, i, ...)` is the energy of particle `i` placed at `xi` against
every other particle, written as plain loops and branches (periodic minimum image, a
cutoff, the potential shifted to zero there). Its gradient in `xi` is minus the force on
particle `i`, so

    forces = -jit(vmap(grad(particle_energy), in_axes=(0, None, 0, None, None, None, None)),
                  backend="cuda")(pos, pos, np.arange(n), eps, sigma, box, cutoff)

runs `grad(particle_energy)` - loops, branches, the called helper and all - in one thread
per particle. The same vmap(grad) compiles for the CPU with `backend="cpu"`, which is the
check this example makes (and the fallback it takes without a GPU, saying so). Both are
also checked against -jit(grad(energy)) of the whole system, and for Newton's third law.

    python examples/lj_cuda.py [--backend cuda|cpu] [--atoms N]

`--atoms N` (8 to 100,000; default 4096) is rounded to the nearest cube, K**3 atoms on a
K x K x K lattice.
"""
from __future__ import annotations

import argparse
import time

import numpy as np
from checks import check
from molecular_dynamics import energy, lattice, minimum_image  # the same system and helpers

from transformer import grad, jit, vmap

MAX_ATOMS = 100_000

IN_AXES = (0, None, 0, None, None, None, None)


def particle_energy(xi, pos, i, eps, sigma, box, cutoff):
    """Shifted Lennard-Jones energy of particle `i` at position `xi` (3,)."""
    rc2 = cutoff * cutoff
    sc6 = (sigma * sigma / rc2) ** 3
    shift = 4.0 * eps * (sc6 * sc6 - sc6)
    e = 0.0
    for j in range(pos.shape[0]):
        if j != i:
            d = xi - pos[j]
            dx = minimum_image(d[0], box)
            dy = minimum_image(d[1], box)
            dz = minimum_image(d[2], box)
            r2 = dx * dx + dy * dy + dz * dz
            if r2 < rc2:
                s6 = (sigma * sigma / r2) ** 3
                e += 4.0 * eps * (s6 * s6 - s6) - shift
    return e


def force_function(backend: str):
    """forces(pos, eps, sigma, box, cutoff) -> (n, 3), one thread (or loop step) per atom."""
    gradient = jit(vmap(grad(particle_energy), in_axes=IN_AXES), backend=backend)

    def forces(pos, eps, sigma, box, cutoff):
        result = gradient(pos, pos, np.arange(pos.shape[0]), eps, sigma, box, cutoff)
        if hasattr(result, "copy_to_host"):
            result = result.copy_to_host()
        return -result
    return forces


def atom_count(text: str) -> int:
    """--atoms: a count between 8 and MAX_ATOMS (the pair loop is O(N**2) per atom)."""
    try:
        count = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of atoms, got {text!r}") from None
    if not 8 <= count <= MAX_ATOMS:
        raise argparse.ArgumentTypeError(f"--atoms must be between 8 and {MAX_ATOMS:,}, "
                                         f"got {count:,}")
    return count


def cuda_unavailable_error():
    """codegen.cuda's CudaUnavailableError, or a stand-in when the cuda extra is missing
    (the cuda backend then says what to install when it is used)."""
    try:
        from codegen.cuda import CudaUnavailableError
    except ImportError:
        return ImportError
    return CudaUnavailableError


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=("cuda", "cpu"), default="cuda")
    parser.add_argument("--atoms", type=atom_count, default=4096, metavar="N",
                        help="about N atoms: the nearest cube K**3, 8 to 100,000 "
                             "(default 4096)")
    args = parser.parse_args(argv)
    per_side = max(2, round(args.atoms ** (1.0 / 3.0)))
    pos, box = lattice(per_side, 0.7, np.random.default_rng(0))
    params = (1.0, 1.0, box, min(2.5, 0.45 * box))
    backend = args.backend
    forces = force_function(backend)
    try:
        start = time.perf_counter()
        f = forces(pos, *params)
    except cuda_unavailable_error() as exc:
        print(f"{exc}\nfalling back to backend='cpu' (for a GPU: pip install -e \".[cuda]\")")
        backend, forces = "cpu", force_function("cpu")
        start = time.perf_counter()
        f = forces(pos, *params)
    first = time.perf_counter() - start
    start = time.perf_counter()
    forces(pos, *params)
    print(f"{pos.shape[0]} atoms, backend {backend}: first call (with compile) {first:.2f} s, "
          f"then {1e3 * (time.perf_counter() - start):.1f} ms per force evaluation")
    scale = np.abs(f).max()
    check("net force (Newton's third law)", f.sum(axis=0), np.zeros(3), atol=1e-9 * scale)
    whole = -jit(grad(energy))(pos, *params)
    check("per-atom vmap(grad) forces vs -jit(grad(energy)) of the whole system", f, whole,
          rtol=1e-9, atol=1e-9 * scale)
    if backend == "cuda":
        reference = force_function("cpu")(pos, *params)
        check("CUDA forces vs the CPU backend", f, reference, rtol=1e-9, atol=1e-9 * scale)


if __name__ == "__main__":
    main()
