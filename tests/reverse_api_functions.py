"""Functions for the reverse-mode API tests (they need source files to be parsed)."""
# ruff: noqa: F821  (``d`` is template syntax in adjoint templates)
import numba
import numpy as np

from transformer import custom_vjp, defadjoint, jit, stop_gradient


def pair(x, y):
    return x * y, x + y


def uses_pair(x, y):
    a, b = pair(x, y)
    return a * b


def loss(params, x):
    h = np.tanh(params["W"] @ x + params["b"])
    return np.sum(h * h) * params["scale"]


@custom_vjp
def clip_grad(x):
    return x * 1.0


def clip_fwd(x):
    return x * 1.0, x


def clip_bwd(res, g):
    return (np.clip(g, -0.5, 0.5),)


clip_grad.defvjp(clip_fwd, clip_bwd)


def uses_custom(x):
    return np.sum(clip_grad(x) * 3.0)


def softplus(x):
    return np.log1p(np.exp(x))


@defadjoint(softplus)
def softplus_adjoint(z, x):
    d[x] += d[z] / (1.0 + np.exp(-x))


def uses_softplus(x):
    return np.sum(softplus(x) * x)


def aux_fn(x):
    y = np.sum(x * x)
    return y, x * 2.0


def vec_out(x):
    return x * x


def with_sg(x):
    return x * stop_gradient(x * x)


jitted_helper = jit(lambda u: u * u * 2.0)


def uses_jitted(x):
    return jitted_helper(x) + x


def f32(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i] * x[i] * 0.5
    return s


def static_n(x, n):
    s = 0.0
    for i in range(n):
        s += x[i] * x[i]
    return s


def vector_output(x):
    return np.sum(x) * x


def returns_int_and_float(n, x):
    return x * n


def missing_rule(x):
    return np.fft.fft(x).real.sum()


def tuple_output(x):
    return x * 2.0, x * 3.0


def recursive(x, n):
    if n == 0:
        return x
    return recursive(x * 2.0, n - 1)


@numba.njit
def njit_cube(x):
    return x * x * x


def alias_write(x):
    y = x * 1.0
    z = y
    s = 0.0
    for i in range(y.shape[0]):
        a = y[i] * y[i]
        z[i] = a * 0.5
        s += a * y[i]
    return s + np.sum(z)


def fill_first(y, v):
    y[0] = v
    return np.sum(y)


def calls_fill_first(x):
    buffer = np.zeros(3)
    return fill_first(buffer, x) * x


def view_changed_after_read(X0):
    X = X0.copy()
    row = X[0]
    X[0, 1] = X[0, 1] * 3.0
    return np.sum(row * row)
