"""Lennard-Jones molecular dynamics with forces from `jit(grad(energy))`.

Needs: numpy, numba (secant's own requirements) and scipy (`pip install -e ".[test]"`
or `pip install scipy`) for the fits in parts 2 and 3.

The energy is written the way a physicist writes it: an explicit loop over pairs, the
periodic minimum image as branches, a cutoff branch, and the potential shifted to zero at
the cutoff. secant differentiates that loop as written; nobody derives the forces.

1. NVE dynamics: velocity Verlet with forces = -jit(grad(energy)); checks the forces
   against central differences of the energy and prints the total energy drift.
2. Force-field fitting: recover the parameters {"eps", "sigma"} - a pytree - from
   reference energies with scipy.optimize.minimize, handed jit(value_and_grad(loss))
   through tree_util.ravel_pytree (`minimize_pytree`): L-BFGS-B with bounds, and SLSQP
   with bounds and an inequality constraint whose Jacobian is grad(constraint).
3. Force matching (second order): recover (epsilon, sigma) from reference *forces*. The
   loss calls grad(energy) itself; its gradient with respect to the parameters is
   jit(jacfwd(loss)), forward mode over the generated reverse-mode forces.

Every part prints what it checked against what; a failed check exits with status 1.

Run: python examples/molecular_dynamics.py [--backend cpu|python] [--steps N]
                                           [--atoms-per-side K]
"""
from __future__ import annotations

import argparse
import time

import numpy as np
from checks import check, check_true

from transformer import grad, jacfwd, jit, value_and_grad
from transformer.tree_util import ravel_pytree


def minimum_image(d, box):
    """The component of a separation vector nearest to zero under periodic boundaries."""
    half = 0.5 * box
    if d > half:
        return d - box
    if d < -half:
        return d + box
    return d


def energy(pos, eps, sigma, box, cutoff):
    """Shifted Lennard-Jones energy of particles `pos` (n, 3) in a periodic cube."""
    n = pos.shape[0]
    rc2 = cutoff * cutoff
    sc6 = (sigma * sigma / rc2) ** 3
    shift = 4.0 * eps * (sc6 * sc6 - sc6)
    e = 0.0
    for i in range(n):
        for j in range(i + 1, n):
            dx = minimum_image(pos[i, 0] - pos[j, 0], box)
            dy = minimum_image(pos[i, 1] - pos[j, 1], box)
            dz = minimum_image(pos[i, 2] - pos[j, 2], box)
            r2 = dx * dx + dy * dy + dz * dz
            if r2 < rc2:
                s6 = (sigma * sigma / r2) ** 3
                e += 4.0 * eps * (s6 * s6 - s6) - shift
    return e


def fit_loss(params, configs, targets, box, cutoff):
    """Mean squared error of the model energies of `configs` against `targets`;
    `params` is a pytree, {"eps": ..., "sigma": ...}."""
    total = 0.0
    for k in range(configs.shape[0]):
        r = energy(configs[k], params["eps"], params["sigma"], box, cutoff) - targets[k]
        total += r * r
    return total / configs.shape[0]


def product_margin(params):
    """An inequality constraint, >= 0 when eps * sigma <= 1.5."""
    return 1.5 - params["eps"] * params["sigma"]


energy_gradient = grad(energy)


def force_matching_loss(params, configs, ref_forces, box, cutoff):
    """Mean squared error of the model forces -dE/dpos against `ref_forces`."""
    total = 0.0
    for k in range(configs.shape[0]):
        residual = energy_gradient(configs[k], params[0], params[1], box, cutoff) + ref_forces[k]
        total += np.sum(residual * residual)
    return total / configs.shape[0]


# ------------------------------------------------------------------ set-up
def lattice(per_side, density, rng):
    """A simple cubic lattice at `density`, slightly jittered; returns (pos, box)."""
    n = per_side ** 3
    box = (n / density) ** (1.0 / 3.0)
    grid = (np.arange(per_side) + 0.5) * (box / per_side)
    pos = np.stack(np.meshgrid(grid, grid, grid, indexing="ij"), axis=-1).reshape(-1, 3)
    return pos + rng.uniform(-0.05, 0.05, size=pos.shape), box


def maxwell_velocities(n, temperature, rng):
    v = rng.normal(scale=np.sqrt(temperature), size=(n, 3))
    return v - v.mean(axis=0)


# ------------------------------------------------------------------ dynamics
def run_nve(energy_fn, force_grad, pos, vel, params, dt, steps, report_every):
    """Velocity Verlet (unit masses); returns the total energies at the reported steps."""
    eps, sigma, box, cutoff = params
    forces = -force_grad(pos, eps, sigma, box, cutoff)
    totals = []
    for step in range(steps + 1):
        if step % report_every == 0:
            potential = energy_fn(pos, eps, sigma, box, cutoff)
            kinetic = 0.5 * np.sum(vel * vel)
            totals.append(potential + kinetic)
            print(f"  step {step:4d}  potential {potential:10.4f}  kinetic {kinetic:9.4f}  "
                  f"total {potential + kinetic:10.5f}")
        if step == steps:
            break
        vel = vel + 0.5 * dt * forces
        pos = (pos + dt * vel) % box
        forces = -force_grad(pos, eps, sigma, box, cutoff)
        vel = vel + 0.5 * dt * forces
    return np.array(totals)


def dynamics(backend, steps, per_side, rng):
    pos, box = lattice(per_side, 0.7, rng)
    vel = maxwell_velocities(pos.shape[0], 0.8, rng)
    params = (1.0, 1.0, box, min(2.5, 0.45 * box))
    energy_fn = jit(energy, backend=backend)
    force_grad = jit(grad(energy), backend=backend)
    start = time.perf_counter()
    force_grad(pos, *params)
    first = time.perf_counter() - start
    print(f"NVE run: {pos.shape[0]} atoms, box {box:.3f}, {steps} steps of dt = 0.004 "
          f"(backend {backend}; first gradient call incl. compile {first:.2f} s)")
    start = time.perf_counter()
    totals = run_nve(energy_fn, force_grad, pos, vel, params, 0.004, steps, max(1, steps // 10))
    elapsed = time.perf_counter() - start
    drift = (totals[-1] - totals[0]) / abs(totals[0])
    spread = (totals.max() - totals.min()) / abs(totals[0])
    print(f"  relative energy drift {drift:+.2e}, fluctuation {spread:.2e} "
          f"({elapsed / steps * 1e3:.2f} ms per step)")
    check("relative total-energy drift of velocity Verlet", drift, 0.0, atol=1e-2)
    check_forces(force_grad, pos, params)


def check_forces(force_grad, pos, params, h=1e-6):
    """The gradient of atom 0 against central differences of the energy."""
    expected = np.zeros(3)
    for k in range(3):
        step = np.zeros_like(pos)
        step[0, k] = h
        expected[k] = (energy(pos + step, *params) - energy(pos - step, *params)) / (2 * h)
    check("dE/dpos of atom 0 vs central differences", force_grad(pos, *params)[0], expected,
          rtol=1e-5, atol=1e-6)


# ------------------------------------------------------------------ fitting
def reference_data(per_side, count, true_params, rng):
    base, box = lattice(per_side, 0.6, rng)
    configs = np.stack([(base + rng.uniform(-0.12, 0.12, size=base.shape)) % box
                        for _ in range(count)])
    eps, sigma = true_params
    cutoff = min(2.5, 0.45 * box)    # within half the box: one image per pair
    targets = np.array([energy(c, eps, sigma, box, cutoff) for c in configs])
    return configs, targets, box, cutoff


def minimize_pytree(loss_and_grad, params, args=(), bounds=None, constraints=(),
                    **options):
    """scipy.optimize.minimize over a pytree of parameters, with `loss_and_grad(params,
    *args) -> (value, gradient pytree)` such as jit(value_and_grad(loss)).

    The pytree is raveled to SciPy's vector by `tree_util.ravel_pytree` and unraveled
    back on every call. `bounds` is a pair of pytrees shaped like `params` (lower, upper);
    each constraint is `{"type": "ineq" or "eq", "fun": c, "jac": grad(c)}` with `c` a
    function of the pytree. Returns (the parameters found, SciPy's result).
    """
    from scipy.optimize import Bounds, minimize

    x0, unravel = ravel_pytree(params)

    def fun(x):
        value, gradient = loss_and_grad(unravel(x), *args)
        return float(value), ravel_pytree(gradient)[0]

    def on_vector(constraint):
        c, jac = constraint["fun"], constraint["jac"]
        return {"type": constraint["type"], "fun": lambda x: c(unravel(x)),
                "jac": lambda x: ravel_pytree(jac(unravel(x)))[0]}

    if bounds is not None:
        bounds = Bounds(ravel_pytree(bounds[0])[0], ravel_pytree(bounds[1])[0])
    result = minimize(fun, x0, jac=True, bounds=bounds,
                      constraints=[on_vector(c) for c in constraints], **options)
    return unravel(result.x), result


def fitting(backend, per_side, rng):
    true_params = {"eps": 1.2, "sigma": 0.95}
    configs, targets, box, cutoff = reference_data(
        per_side, 8, (true_params["eps"], true_params["sigma"]), rng)
    loss_and_grad = jit(value_and_grad(fit_loss), backend=backend)
    start_params = {"eps": 0.8, "sigma": 1.05}
    bounds = ({"eps": 0.1, "sigma": 0.7}, {"eps": 5.0, "sigma": 1.3})
    constraint = {"type": "ineq", "fun": product_margin, "jac": grad(product_margin)}
    print(f"\nForce-field fit: {configs.shape[0]} configurations of {configs.shape[1]} atoms, "
          f"start {start_params}")
    for method, constraints in (("L-BFGS-B", ()), ("SLSQP", (constraint,))):
        start = time.perf_counter()
        found, result = minimize_pytree(
            loss_and_grad, start_params, (configs, targets, box, cutoff), bounds=bounds,
            constraints=constraints, method=method, options={"maxiter": 200})
        print(f"  {method:8s}: {result.nit} iterations, loss {result.fun:.2e}, "
              f"{time.perf_counter() - start:.2f} s"
              + (", subject to eps * sigma <= 1.5" if constraints else ""))
        for name in ("eps", "sigma"):
            check(f"{method} {name} vs the value the data was made with", found[name],
                  true_params[name], rtol=1e-4)
        if constraints:
            check_true("SLSQP constraint", product_margin(found) >= -1e-9,
                       f"eps * sigma = {found['eps'] * found['sigma']:.6f} <= 1.5")


def force_matching(backend, per_side, rng):
    true_params = np.array([1.2, 0.95])
    configs, _, box, cutoff = reference_data(per_side, 4, true_params, rng)
    forces = jit(grad(energy), backend=backend)
    ref_forces = np.stack([-forces(c, *true_params, box, cutoff) for c in configs])
    loss = jit(force_matching_loss, backend=backend)
    loss_gradient = jit(jacfwd(force_matching_loss), backend=backend)

    scale = np.mean(ref_forces * ref_forces)    # a relative error keeps steps well sized

    def objective(p):
        return (float(loss(p, configs, ref_forces, box, cutoff)) / scale,
                np.asarray(loss_gradient(p, configs, ref_forces, box, cutoff)) / scale)

    # forces grow like sigma**12 / r**13: from a sigma far above the truth the first step
    # overshoots into the bounds, so start at the textbook (1, 1)
    start_params = np.array([1.0, 1.0])
    print(f"\nForce matching: {configs.shape[0]} configurations of {configs.shape[1]} atoms, "
          f"gradient of a loss built from grad(energy), start = (1.0, 1.0)")
    start = time.perf_counter()
    from scipy.optimize import minimize
    result = minimize(objective, start_params, jac=True, method="L-BFGS-B",
                      bounds=[(0.1, 5.0), (0.7, 1.3)], options={"maxiter": 200})
    print(f"  L-BFGS-B: relative loss {result.fun:.2e}, {result.nit} iterations, "
          f"{time.perf_counter() - start:.2f} s (first call compiles)")
    check("force matching (eps, sigma) vs the values the forces were made with", result.x,
          true_params, rtol=1e-4)


def positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text}")
    return value


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=("cpu", "python"), default="cpu")
    parser.add_argument("--steps", type=positive, default=None,
                        help="MD steps (default 300 on cpu, 20 with the python backend)")
    parser.add_argument("--atoms-per-side", type=positive, default=None, metavar="K",
                        help="K**3 atoms in the MD run, 2 to 12 (default 5 on cpu, 3 with "
                             "the python backend)")
    args = parser.parse_args(argv)
    python = args.backend == "python"
    steps = args.steps if args.steps is not None else (20 if python else 300)
    per_side = args.atoms_per_side or (3 if python else 5)
    if not 2 <= per_side <= 12:
        parser.error(f"--atoms-per-side must be between 2 and 12, got {per_side}")
    rng = np.random.default_rng(7)
    dynamics(args.backend, steps, per_side, rng)
    fitting(args.backend, 3, rng)
    force_matching(args.backend, 3, np.random.default_rng(3))
    print("\nall checks passed")


if __name__ == "__main__":
    main()
