"""Per-element functions for the CUDA backend tests (kernels are built from their source)."""
import math

import numpy as np

from benchmarks import workloads


def particle_energy(xi, pos, i, eps, sigma):
    """Lennard-Jones energy of particle `i` at position `xi` against all others."""
    e = 0.0
    for j in range(pos.shape[0]):
        if j != i:
            d = xi - pos[j]
            r2 = np.sum(d * d)
            if r2 < 9.0:
                s6 = (sigma * sigma / r2) ** 3
                e += 4.0 * eps * (s6 * s6 - s6)
    return e


def softplus_scaled(x, y):
    if x > 0.0:
        return x + np.log1p(np.exp(-x)) * y
    return np.log1p(np.exp(x)) * y


def collatz_steps(n0, limit):
    n = n0
    steps = 0
    while n != 1:
        if steps >= limit:
            break
        if n % 2 == 0:
            n = n // 2
        else:
            n = 3 * n + 1
        steps += 1
    return steps


def bucket_stats(row):
    """Sums of |row| into 4 buckets (in-place writes to a local array), with if/elif."""
    buckets = np.zeros(4)
    for k in range(row.shape[0]):
        v = row[k]
        if v > 1.0:
            buckets[0] += v
        elif v > 0.0:
            buckets[1] += v
        elif v > -1.0:
            buckets[2] -= v
        else:
            buckets[3] -= v
    return np.max(buckets), buckets


def recurrence(x, w, steps):
    """A scalar recurrence over a static number of steps (reverse mode tapes `h`)."""
    h = x
    for _step in range(steps):
        h = np.tanh(w * h + 0.5)
    return h * h


def scratch_product(x, w):
    """Writes and overwrites elements of a local array (reverse mode saves them)."""
    buf = np.zeros(3)
    for k in range(3):
        buf[k] = x * (k + 1.0)
        buf[k] = buf[k] * w
    return np.sum(buf * buf)


def scratch_permuted(x, w):
    """Writes a local array at indices read from an array (which may repeat, so reverse
    mode reads the cotangent through `kept_writes`)."""
    buf = np.zeros(3)
    order = np.array([2, 0, 1])
    for k in range(3):
        buf[order[k]] = x * (k + 1.0) * w
    return np.sum(buf * buf)


def gelu(x):
    return 0.5 * x * (1.0 + math.tanh(0.7978845608 * (x + 0.044715 * x ** 3)))


def sized_by_argument(x, n):
    buf = np.zeros(n)
    buf[0] = x
    return buf[0]


def damped(x, w):
    h = x
    while h > 0.1:
        h = np.sin(w * h)
    return h


mlp_loss = workloads.mlp_loss_arrays


def mlp_params(n_in, hidden, n_out, batch, seed=0):
    rng = np.random.default_rng(seed)
    weights = [rng.normal(size=(hidden, n_in)) / np.sqrt(n_in), rng.normal(size=hidden) * 0.1,
               rng.normal(size=(n_out, hidden)) / np.sqrt(hidden), rng.normal(size=n_out) * 0.1]
    x = rng.normal(size=(batch, n_in))
    return [w.astype(np.float32) for w in weights], x.astype(np.float32), \
        rng.integers(0, n_out, size=batch)


periodic_particle_energy = workloads.lj_particle_energy


def soft_clip(v, limit):
    if v > limit:
        return limit + 0.1 * (v - limit)
    return v


def clipped_energy(x, w):
    """Calls a user helper with a branch: it and its adjoint become device functions."""
    e = 0.0
    for k in range(4):
        e += soft_clip(w * x * k, 1.0) ** 2
    return e


def centered(col):
    return col - np.sum(col) / col.shape[0]


def spring_energy(x, y, k):
    """Builds a small array from scalars (np.array of a list) and reduces it."""
    v = np.array([x - 1.0, y + 0.5, x * y])
    return 0.5 * k * np.dot(v, v)


def power_iteration(W, x0, steps):
    """A loop-carried matrix-vector product: `h = W @ h` reads the array it replaces."""
    h = x0
    for _step in range(steps):
        h = W @ h
        h = h / np.sqrt(np.sum(h * h))
    return h


def registry_additions(x):
    """The primitives the registry added or gave a CUDA form: erf, deg2rad, cbrt, exp2,
    the inverse hyperbolic functions."""
    return math.erf(np.deg2rad(x)) + np.cbrt(x) + np.exp2(x) + np.arcsinh(x) + \
        np.arctanh(0.5 * np.tanh(x)) + np.arccosh(1.5 + x * x)
