"""Newton's method on a Rosenbrock chain, with compiled gradient and Hessian.

Needs: nothing beyond secant itself (numpy, numba).

    python examples/newton.py [n]        (n >= 2 variables, default 10)

The chain couples neighbours, f(x) = sum_i 100 (x[i+1] - x[i]^2)^2 + (1 - x[i])^2, and
has its minimum at x = (1, ..., 1). The Hessian is generated from the loop below by
forward mode over reverse mode (`hessian`) and compiled with Numba (`jit`); each Newton
step solves H p = -g and backtracks along p until f decreases enough. From near the
minimum the convergence is quadratic: the gradient norm squares every step. The script
checks the gradient at the start against central differences of f, and the minimum found
against (1, ..., 1).
"""
from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from checks import check  # noqa: E402

from transformer import grad, hessian, jit  # noqa: E402


def rosenbrock(x):
    total = 0.0
    for i in range(x.shape[0] - 1):
        total += 100.0 * (x[i + 1] - x[i] * x[i]) ** 2 + (1.0 - x[i]) ** 2
    return total


def newton(f, x, tol=1e-10, max_steps=50, backend="cpu"):
    """Minimize `f` from `x` by damped Newton steps; returns (x, gradient norms)."""
    value, gradient, curvature = (jit(g, backend=backend) for g in (f, grad(f), hessian(f)))
    norms = []
    for _ in range(max_steps):
        g = gradient(x)
        norms.append(float(np.linalg.norm(g)))
        if norms[-1] < tol:
            break
        step = np.linalg.solve(curvature(x), -g)
        t, fx, slope = 1.0, value(x), float(g @ step)
        if slope >= 0.0:                        # not a descent direction: take -g instead
            step, slope = -g, -float(g @ g)
        while value(x + t * step) > fx + 1e-4 * t * slope and t > 1e-8:
            t *= 0.5                            # Armijo backtracking
        x = x + t * step
    return x, norms


def central_differences(f, x, h=1e-6):
    return np.array([(f(x + h * e) - f(x - h * e)) / (2 * h) for e in np.eye(x.shape[0])])


def main(n: int = 10) -> None:
    start = np.full(n, 1.0) + 0.1 * np.cos(np.arange(n))
    check("grad(rosenbrock) at the start vs central differences", grad(rosenbrock)(start),
          central_differences(rosenbrock, start), rtol=1e-6, atol=1e-6)
    x, norms = newton(rosenbrock, start)
    for k, norm in enumerate(norms):
        print(f"step {k:2d}   |grad f| = {norm:.3e}")
    print(f"minimum at {np.round(x, 8)} (f = {rosenbrock(x):.2e}) after {len(norms) - 1} steps")
    check("minimum found vs the known minimum (1, ..., 1)", x, np.ones(n), atol=1e-8)


if __name__ == "__main__":
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    if count < 2:
        sys.exit(f"newton.py: n must be at least 2 (the chain couples neighbours), got {count}")
    main(count)
