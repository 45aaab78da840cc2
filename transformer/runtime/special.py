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
- `sinc_slope(0) = 0` and `sinc_curvature(0) = -pi**2/3`, the limits at the removable point;
- `log_ndtr` stays accurate below -30 (asymptotic series) and above 0 (`log1p`); `ndtri` and
  `erfinv` refine a rational start by Newton steps on residuals of full relative precision;
- `betaln` is `lgamma(a) + lgamma(b) - lgamma(a + b)` (1e-12 relative at large arguments,
  where the terms cancel), `beta` its exponential with the signs of the gamma factors.
"""
from __future__ import annotations

import math

import numpy as np
from numba import types
from transformer.runtime.numba_api import overload, register_jitable

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


@register_jitable
def _ndtr(x):
    return 0.5 * math.erfc(-x * 0.7071067811865476)


@register_jitable
def _log_ndtr(x):
    if x > 0.0:
        return math.log1p(-_ndtr(-x))
    if x > -30.0:
        return math.log(_ndtr(x))
    # asymptotic series of Mills' ratio: ndtr(x) = pdf(x) / -x * (1 - 1/x^2 + 3/x^4 - ...)
    f = 1.0 / (x * x)
    series = 1.0 - f * (1.0 - f * (3.0 - f * (15.0 - f * (105.0 - f * 945.0))))
    return -0.5 * x * x - math.log(-x) - 0.9189385332046727 + math.log(series)


@register_jitable
def _ndtri_guess(p):
    """Acklam's rational approximation of the normal quantile (1e-9 relative)."""
    q = min(p, 1.0 - p)
    if q < 0.02425:
        r = math.sqrt(-2.0 * math.log(q))
        z = (((((-7.784894002430293e-03 * r - 3.223964580411365e-01) * r
                - 2.400758277161838e+00) * r - 2.549732539343734e+00) * r
              + 4.374664141464968e+00) * r + 2.938163982698783e+00) / \
            ((((7.784695709041462e-03 * r + 3.224671290700398e-01) * r
               + 2.445134137142996e+00) * r + 3.754408661907416e+00) * r + 1.0)
        return z if p < 0.5 else -z
    r = (p - 0.5) * (p - 0.5)
    return (((((-3.969683028665376e+01 * r + 2.209460984245205e+02) * r
               - 2.759285104469687e+02) * r + 1.383577518672690e+02) * r
             - 3.066479806614716e+01) * r + 2.506628277459239e+00) * (p - 0.5) / \
        (((((-5.447609879822406e+01 * r + 1.615858368580409e+02) * r
            - 1.556989798598866e+02) * r + 6.680131188771972e+01) * r
          - 1.328068155288572e+01) * r + 1.0)


@register_jitable
def _ndtri(p):
    if p != p or p < 0.0 or p > 1.0:
        return math.nan
    if p == 0.0 or p == 1.0:
        return -math.inf if p == 0.0 else math.inf
    z = _ndtri_guess(p)
    for _ in range(2):             # Newton on a residual with full relative precision
        if 0.25 <= p <= 0.75:
            residual = 0.5 * math.erf(z * 0.7071067811865476) - (p - 0.5)
        elif p < 0.5:
            residual = _ndtr(z) - p
        else:
            residual = (1.0 - p) - _ndtr(-z)
        z -= residual / (0.3989422804014327 * math.exp(-0.5 * z * z))
    return z


@register_jitable
def _erfinv(x):
    if x != x or x < -1.0 or x > 1.0:
        return math.nan
    if x == 1.0 or x == -1.0:
        return math.copysign(math.inf, x)
    a = abs(x)
    z = -_ndtri(0.5 * (1.0 - a)) * 0.7071067811865476
    for _ in range(2):
        if a <= 0.5:
            residual = math.erf(z) - a
        else:
            residual = (1.0 - a) - math.erfc(z)
        z -= residual / (1.1283791670955126 * math.exp(-z * z))
    return math.copysign(z, x)


@register_jitable
def _entr(x):
    if x > 0.0:
        return -x * math.log(x)
    return 0.0 if x == 0.0 else (-math.inf if x < 0.0 else math.nan)


@register_jitable
def _rel_entr(x, y):
    if x > 0.0 and y > 0.0:
        return x * math.log(x / y)
    if x == 0.0 and y >= 0.0:
        return 0.0
    return math.nan if x != x or y != y else math.inf


@register_jitable
def _kl_div(x, y):
    if x > 0.0 and y > 0.0:
        return x * math.log(x / y) - x + y
    if x == 0.0 and y >= 0.0:
        return y
    return math.nan if x != x or y != y else math.inf


@register_jitable
def _lgamma(x):
    if x <= 0.0 and x == math.floor(x):      # a pole (math.lgamma raises in Python)
        return math.inf
    return math.lgamma(x)


@register_jitable
def _betaln(a, b):
    return _lgamma(a) + _lgamma(b) - _lgamma(a + b)


@register_jitable
def _gamma_sign(x):
    return 1.0 if x > 0.0 or math.floor(-x) % 2 == 1 else -1.0


@register_jitable
def _beta(a, b):
    sign = _gamma_sign(a) * _gamma_sign(b) * _gamma_sign(a + b)
    return sign * math.exp(_betaln(a, b))


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
ndtr = array_form(_ndtr)
log_ndtr = array_form(_log_ndtr)
ndtri = array_form(_ndtri)
erfinv = array_form(_erfinv)
entr = array_form(_entr)
for _fn, _name in [(expit, "expit"), (logit, "logit"), (erf, "erf"), (erfc, "erfc"),
                   (gammaln, "gammaln"), (gamma, "gamma"), (digamma, "digamma"),
                   (trigamma, "trigamma"), (sinc_slope, "sinc_slope"),
                   (sinc_curvature, "sinc_curvature"), (ndtr, "ndtr"),
                   (log_ndtr, "log_ndtr"), (ndtri, "ndtri"), (erfinv, "erfinv"),
                   (entr, "entr")]:
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
rel_entr = _binary(_rel_entr, "rel_entr")
kl_div = _binary(_kl_div, "kl_div")
betaln = _binary(_betaln, "betaln")
beta = _binary(_beta, "beta")
