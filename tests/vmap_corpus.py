"""Per-example functions for the vmap tests: each takes one array (and maybe more) and
is written as ordinary NumPy code. vmap over a stack of inputs must equal a Python loop."""
import math

import numpy as np


def elementwise(x):
    return np.sin(x) * np.exp(-x * x) + 1.5


def scalar_times_vector(x):
    s = np.sum(x)
    return s * x + x[0]


def reductions(x):
    return np.max(x) - np.min(x) + np.mean(x) * np.prod(x[:2])


def matrix_reductions(a):
    cols = np.sum(a, axis=0)
    rows = np.mean(a, axis=-1)
    return np.sum(cols * cols) + np.sum(rows)


def matvec_fixed(x):
    w = np.arange(12.0).reshape(4, 3) / 10.0
    return np.dot(w, x[:3])


def vecmat(x):
    w = np.arange(12.0).reshape(3, 4) / 10.0
    return x[:3] @ w


def self_outer(x):
    return np.outer(x, x) + np.transpose(np.outer(x, np.ones(2)))[0, 0]


def indexing(x):
    head = x[0]
    tail = x[1:]
    last = x[-1]
    return head * tail + last


def accumulate_loop(x):
    total = 0.0
    for i in range(x.shape[0]):
        total += x[i] * (i + 1)
    return total


def prefix_sums(x):
    out = np.zeros(x.shape[0])
    acc = 0.0
    for i in range(x.shape[0]):
        acc = acc + x[i]
        out[i] = acc
    return out


def fixed_while(x):
    y = x.copy()
    k = 0
    while k < 3:
        y = 0.5 * (y + 2.0 / (y + 1.0))
        k += 1
    return y


def math_builtins(x):
    a = math.exp(x[0]) + math.sqrt(abs(x[1]))
    return max(a, x[2]) + min(x[0], 0.25)


def where_clip(x):
    return np.where(x > 0.5, x, -x) + np.clip(x, 0.2, 0.8)


def argmax_gather(x):
    i = np.argmax(x)
    return x[i] + float(i)


def shapes(x):
    n = len(x)
    m = x.shape[0]
    return np.reshape(x, (2, -1)).sum(axis=1) * n / m


def helper(v, c):
    return np.tanh(v) * c


def calls_helper(x):
    return helper(x, 2.0) + helper(x * x, 0.5)


def tuple_result(x):
    s = np.sum(x)
    return s, x / s


def branchy(x):
    if np.sum(x) > 1.5:
        y = x * 2.0
    else:
        y = x - 1.0
    return y


def newton_sqrt(x):
    """A while loop whose trip count depends on the example."""
    a = np.sum(x * x) + 1.0
    guess = a
    steps = 0
    while abs(guess * guess - a) > 1e-10:
        guess = 0.5 * (guess + a / guess)
        steps += 1
    return guess + 0.0 * steps


def data_dependent_count(x):
    n = int(np.sum(np.where(x > 0.5, 1.0, 0.0)))
    total = 0.0
    for i in range(n):
        total += x[i]
    return total


def scatter_write(x):
    out = np.zeros(x.shape[0])
    j = np.argmin(x)
    out[j] = 1.0
    return out + x


CORPUS = [elementwise, scalar_times_vector, reductions, matvec_fixed, vecmat, self_outer,
          indexing, accumulate_loop, prefix_sums, fixed_while, math_builtins, where_clip,
          argmax_gather, shapes, calls_helper, tuple_result, branchy, newton_sqrt,
          data_dependent_count, scatter_write]
MATRIX_CORPUS = [matrix_reductions]
# functions whose batch changes control flow or writes: vmap must loop over examples
LOOPED = {branchy, newton_sqrt, data_dependent_count, scatter_write}
