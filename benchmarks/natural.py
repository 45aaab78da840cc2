"""Natural forms of the W1 energy: the same Lennard-Jones pair loop written three ways.

`workloads.lj_energy` is the vector form (`d = pos[i] - pos[j]`, a 3-element array per
pair). A NumPy user writes it just as often with the separation spelled out per component,
either as three scalars `dx, dy, dz` or with an inner `for k in range(3)` loop. Each form is
differentiated by secant's `jit(grad)` in benchmarks/bench_grad.py and must come out within
1.3x of the hand-written Numba forces (issue 16).

All three compute the same energy to rounding (the order of the `r2` sum is the same).
"""
from __future__ import annotations

import numpy as np

from benchmarks.workloads import lj_energy as lj_energy_vector  # noqa: F401  (the third form)


def lj_energy_scalars(pos, eps, sigma, box, rcut):
    """`workloads.lj_energy` with the separation as three scalars `dx, dy, dz`."""
    n = pos.shape[0]
    rcut2 = rcut * rcut
    sigma2 = sigma * sigma
    energy = 0.0
    for i in range(n):
        for j in range(i + 1, n):
            dx = pos[i, 0] - pos[j, 0]
            dy = pos[i, 1] - pos[j, 1]
            dz = pos[i, 2] - pos[j, 2]
            dx -= box * np.round(dx / box)
            dy -= box * np.round(dy / box)
            dz -= box * np.round(dz / box)
            r2 = dx * dx + dy * dy + dz * dz
            if r2 < rcut2:
                s6 = (sigma2 / r2) ** 3
                energy += 4.0 * eps * (s6 * s6 - s6)
    return energy


def lj_energy_components(pos, eps, sigma, box, rcut):
    """`workloads.lj_energy` with the separation summed over an inner `for k in range(3)`."""
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


# (label in the tables, energy function)
LJ_FORMS = (
    ("vector d", lj_energy_vector),
    ("dx, dy, dz", lj_energy_scalars),
    ("for k in 3", lj_energy_components),
)
