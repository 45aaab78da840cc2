"""User-style functions the tests transform; they live in a real file so they have source."""
import functools
import math

import numba
import numpy as np

from transformer import jit

SCALE = 3.0


def sqdist(a, b):
    d = 0.0
    for k in range(a.shape[0]):
        d += (a[k] - b[k]) * (a[k] - b[k])
    return d


def pair_sum(x):
    """Sum of distances over pairs i < j; calls a user helper from a loop nest."""
    total = 0.0
    for i in range(x.shape[0]):
        for j in range(i + 1, x.shape[0]):
            total += math.sqrt(sqdist(x[i], x[j]))
    return total


def running(x, mode, n):
    s = 0.0
    if mode == "train":
        for i in range(n):
            s += x[i] * SCALE
    else:
        s = -1.0
    return s


def scaled_norm(x):
    return np.linalg.norm(x) * SCALE


def registered(fn):
    """A decorator that returns the function itself (registration style)."""
    fn.registered = True
    return fn


def logged(fn):
    @functools.wraps(fn)
    def wrapper(*args):
        return fn(*args)
    return wrapper


@registered
def plain_decorated(x):
    return np.sum(x) + SCALE


@logged
def wrapped(x):
    return np.sum(x * x)


def make_scaler(factor):
    offset = 1.0

    def scale(x):
        return x * factor + offset
    return scale


@numba.njit
def numba_kernel(x):
    acc = 0.0
    for i in range(x.shape[0]):
        acc += x[i] * x[i]
    return acc


def cubic(x):
    return x * x * x


def with_lambda_arg(f):
    """Returns the lambda passed in, as user code holding `jit(lambda ...)` would."""
    return f


def affine(params, xs, weights):
    """Dict, tuple and list arguments; a dict result."""
    h = params["W"] @ xs[0] + params["b"]
    total = weights[0] * np.sum(h) + weights[1] * np.sum(xs[1])
    return {"h": h, "total": total}


def layer_norm(layer, x):
    return np.sum(layer.scale * x + layer.shift)


def early_exit(x, mode):
    if mode == "train":
        return np.sum(x)
    return -np.sum(x)


@jit(static_argnums=1, backend="python")
def power_sum(x, p):
    return np.sum(x ** p)


@jit
def decorated_cubic(x):
    return x * x * x


def doubled_a(params):
    return params["a"] * 2.0


def uses_tensordot(a, b):
    c = a + b
    return np.tensordot(c, c, 1)
