"""Special functions for generated code: what Numba lacks of `scipy.special` and the
derivatives of the gamma family and of `np.sinc`.

Each unary function takes a number (giving a number) or an array (giving a float64 array of
its shape), in plain Python and under Numba (`array_form` over a `register_jitable` scalar
kernel); the binary ones (`xlogy`, `xlog1py`) broadcast their arguments. The values follow
`scipy.special` (and JAX where SciPy says nothing of derivatives):
- `expit`/`logit` stay finite at the tails (no `exp` of a large positive number);
- `xlogy(0, y)` is 0 for every y but NaN (so `xlogy(0, 0) = 0`);
- `digamma`/`trigamma` reach ~1e-14 relative accuracy away from their poles (the
  non-positive integers, where they are NaN), by recurrence up to 10 then the asymptotic
  series;
- `sinc_slope(0) = 0` and `sinc_curvature(0) = -pi**2/3`, the limits at the removable point.
"""
from __future__ import annotations

import math

import numpy as np
from numba import types
from numba.extending import overload, register_jitable

from .elementwise import array_form

# ---------------------------------------------------------------- scalar kernels


@register_jitable
def _expit(x):
    if x >= 0.0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)


@register_jitable
def _logit(x):
    if x == 1.0:           # math.log(x / 0.0) would raise in Python
        return math.inf
    if x < 0.0 or x > 1.0 or x != x:
        return math.nan
    if x == 0.0:
        return -math.inf
    return math.log(x / (1.0 - x))


@register_jitable
def _digamma(x):
    if x != x or (x <= 0.0 and x == math.floor(x)):
        return math.nan
    result = 0.0
    if x < 0.0:            # reflection: psi(1 - x) - psi(x) = pi / tan(pi x)
        result = -math.pi / math.tan(math.pi * x)
        x = 1.0 - x
    while x < 10.0:
        result -= 1.0 / x
        x += 1.0
    f = 1.0 / (x * x)
    series = f * (1.0 / 12 - f * (1.0 / 120 - f * (1.0 / 252 - f * (1.0 / 240 - f / 132))))
    return result + math.log(x) - 0.5 / x - series


@register_jitable
def _trigamma_positive(x):
    result = 0.0
    while x < 10.0:
        result += 1.0 / (x * x)
        x += 1.0
    f = 1.0 / (x * x)
    series = 1.0 / 6 - f * (1.0 / 30 - f * (1.0 / 42 - f * (1.0 / 30 - f * 5.0 / 66)))
    return result + 1.0 / x + 0.5 * f + series * f / x


@register_jitable
def _trigamma(x):
    if x != x or (x <= 0.0 and x == math.floor(x)):
        return math.nan
    if x < 0.0:            # reflection: psi1(1 - x) + psi1(x) = pi^2 / sin^2(pi x)
        s = math.sin(math.pi * x)
        return math.pi * math.pi / (s * s) - _trigamma_positive(1.0 - x)
    return _trigamma_positive(x)


@register_jitable
def _sinc_slope(x):
    if abs(x) < 1e-4:      # Taylor: -pi^2 x / 3 + pi^4 x^3 / 30
        p2 = math.pi * math.pi
        return -p2 * x / 3.0 + p2 * p2 * x * x * x / 30.0
    t = math.pi * x
    return (math.cos(t) - math.sin(t) / t) / x


@register_jitable
def _sinc_curvature(x):
    p2 = math.pi * math.pi
    if abs(x) < 1e-3:      # Taylor: -pi^2 / 3 + pi^4 x^2 / 10
        return -p2 / 3.0 + p2 * p2 * x * x / 10.0
    t = math.pi * x
    s, c = math.sin(t), math.cos(t)
    return (-math.pi * s - 2.0 * (c - s / t) / x) / x


@register_jitable
def _xlogy(x, y):
    if x == 0.0 and y == y:
        return 0.0
    if y == 0.0:           # math.log(0.0) would raise in Python
        return -math.copysign(math.inf, x) if x == x else math.nan
    return x * math.log(y) if y > 0.0 or y != y else math.nan


@register_jitable
def _xlog1py(x, y):
    if x == 0.0 and y == y:
        return 0.0
    if y == -1.0:
        return -math.copysign(math.inf, x) if x == x else math.nan
    return x * math.log1p(y) if y > -1.0 or y != y else math.nan


# ---------------------------------------------------------------- unary forms

expit = array_form(_expit)
logit = array_form(_logit)
erf = array_form(math.erf)
erfc = array_form(math.erfc)
gammaln = array_form(math.lgamma)
gamma = array_form(math.gamma)
digamma = array_form(_digamma)
trigamma = array_form(_trigamma)
sinc_slope = array_form(_sinc_slope)
sinc_curvature = array_form(_sinc_curvature)
for _fn, _name in [(expit, "expit"), (logit, "logit"), (erf, "erf"), (erfc, "erfc"),
                   (gammaln, "gammaln"), (gamma, "gamma"), (digamma, "digamma"),
                   (trigamma, "trigamma"), (sinc_slope, "sinc_slope"),
                   (sinc_curvature, "sinc_curvature")]:
    _fn.__name__ = _fn.__qualname__ = _name      # generated code names them so


# ---------------------------------------------------------------- binary forms


def _binary(kernel, name: str):
    """`kernel(x, y)` with NumPy broadcasting; numbers give a number, else float64 arrays."""
    def python(x, y):
        if np.ndim(x) == 0 and np.ndim(y) == 0:
            return kernel(float(x), float(y))
        bx, by = np.broadcast_arrays(np.asarray(x, np.float64), np.asarray(y, np.float64))
        out = np.empty(bx.shape, np.float64)
        for index in np.ndindex(bx.shape):
            out[index] = kernel(bx[index], by[index])
        return out

    python.__name__ = python.__qualname__ = name

    @overload(python)
    def _nb(x, y):
        if not isinstance(x, types.Array) and not isinstance(y, types.Array):
            return lambda x, y: kernel(x, y)

        def impl(x, y):
            zeros = np.zeros_like(x + y, np.float64)      # the broadcast shape
            bx = np.ascontiguousarray(zeros + x).ravel()
            by = np.ascontiguousarray(zeros + y).ravel()
            out = np.empty(bx.shape, np.float64)
            for i in range(bx.size):
                out[i] = kernel(bx[i], by[i])
            return out.reshape(zeros.shape)
        return impl
    return python


xlogy = _binary(_xlogy, "xlogy")
xlog1py = _binary(_xlog1py, "xlog1py")
