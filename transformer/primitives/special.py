"""Special functions: angles, `np.sinc`, the error and gamma functions of `math`, and the
elementwise functions of `scipy.special` that JAX offers (expit, logit, erf, erfc, erfinv,
gammaln, gamma, digamma, ndtr, log_ndtr, ndtri, entr, xlogy, xlog1py, rel_entr, kl_div,
betaln, beta), one family line each.

Numerics follow JAX: `sinc` has value 1 and slope 0 at 0; `expit`/`logit` stay finite at the
tails; `xlogy(0, y) = 0` (also at y = 0) with JAX's derivatives `log(y)` and `x / y`.
SciPy is optional and costs import time, so its functions are described once the user
imports `scipy.special` (`registry.defer`); its ufuncs do not compile under Numba, so each
runs there as its `transformer.runtime.special` form (same values, float64 results).
"""
from __future__ import annotations

import math

import numpy as np

from transformer.runtime import special as forms

from . import registry
from .families import broadcasting, elementwise, lowered

_TWO_OVER_SQRT_PI = "1.1283791670955126"

elementwise(np.rad2deg, np.degrees, math.degrees, derivative="57.29577951308232")
elementwise(np.radians, derivative="0.017453292519943295")
elementwise(np.sinc, derivative="sinc_slope(x)",
            scalar="1.0 if x == 0.0 else math.sin(3.141592653589793 * x) "
                   "/ (3.141592653589793 * x)")
elementwise(math.erfc, derivative=f"-{_TWO_OVER_SQRT_PI} * np.exp(-x * x)")
elementwise(math.lgamma, derivative="digamma(x)")
elementwise(math.gamma, derivative="z * digamma(x)")

# the derivatives' own derivatives, so that hessian and grad(grad(...)) work
elementwise(forms.sinc_slope, derivative="sinc_curvature(x)")
elementwise(forms.digamma, derivative="trigamma(x)")
for _form in (forms.sinc_slope, forms.digamma):
    registry.record(_form).elementwise = False     # internal: not split into scalars
for _form, _what in [(forms.sinc_curvature, "the third derivative of np.sinc"),
                     (forms.trigamma, "the third derivative of lgamma")]:
    for _transform in ("grad", "jvp"):
        registry.unsupported(_form, _transform, f"{_what} is not registered")
    registry.unsupported(_form, "cuda", "no scalar form in CUDA kernels")


# ---------------------------------------------------------------- scipy.special


def _describe_scipy(special) -> None:
    """The elementwise functions of `scipy.special` (called once it is imported)."""
    unary = [
        (special.expit, "z * (1.0 - z)",
         "math.exp(min(x, 0.0)) / (1.0 + math.exp(-abs(x)))", forms.expit),
        (special.logit, "1.0 / (x * (1.0 - x))", "math.log(x / (1.0 - x))", forms.logit),
        (special.erf, f"{_TWO_OVER_SQRT_PI} * np.exp(-x * x)", "math.erf(x)", forms.erf),
        (special.erfc, f"-{_TWO_OVER_SQRT_PI} * np.exp(-x * x)", "math.erfc(x)",
         forms.erfc),
        (special.gammaln, "digamma(x)", "math.lgamma(x)", forms.gammaln),
        (special.gamma, "z * digamma(x)", "math.gamma(x)", forms.gamma),
        (special.ndtr, "0.3989422804014327 * np.exp(-0.5 * x * x)",
         "0.5 * math.erfc(-x * 0.7071067811865476)", forms.ndtr),
        (special.entr, "-(np.log(x) + 1.0)", "-x * math.log(x) if x > 0.0 else "
         "(0.0 if x == 0.0 else (-math.inf if x < 0.0 else x))", forms.entr),
        # derivatives from the result: stable where ndtr underflows, and for the inverses
        (special.log_ndtr, "np.exp(-0.5 * x * x - 0.9189385332046727 - z)", None,
         forms.log_ndtr),
        (special.ndtri, "2.5066282746310002 * np.exp(0.5 * z * z)", None, forms.ndtri),
        (special.erfinv, "0.886226925452758 * np.exp(z * z)", None, forms.erfinv),
    ]
    for key, derivative, scalar, form in unary:
        elementwise(key, derivative=derivative, scalar=scalar)
        _from_scipy(special, key, form)
        if scalar is None:
            registry.unsupported(key, "cuda", "no scalar form in CUDA kernels yet (a "
                                 "branch or a Newton iteration); compute it on the host")
    for key in (special.digamma, special.psi):
        elementwise(key, derivative="trigamma(x)")
        _from_scipy(special, key, forms.digamma)
        registry.unsupported(key, "cuda", "no scalar form in CUDA kernels yet")
    _describe_scipy_binary(special)


def _describe_scipy_binary(special) -> None:
    """Binary functions of `scipy.special`; `x`/`y` are `g` times the partial derivatives."""
    beyond = "(math.inf if x == x and y == y else math.nan)"
    for key, x, y, scalar, form in [
            (special.xlogy, "g * np.log(y)", "g * x / y",
             "0.0 if x == 0.0 else x * math.log(y)", forms.xlogy),
            (special.xlog1py, "g * np.log1p(y)", "g * x / (1.0 + y)",
             "0.0 if x == 0.0 else x * math.log1p(y)", forms.xlog1py),
            (special.rel_entr, "g * (np.log(x / y) + 1.0)", "-(g * x / y)",
             f"x * math.log(x / y) if x > 0.0 and y > 0.0 else "
             f"(0.0 if x == 0.0 and y >= 0.0 else {beyond})", forms.rel_entr),
            (special.kl_div, "g * np.log(x / y)", "g * (1.0 - x / y)",
             f"x * math.log(x / y) - x + y if x > 0.0 and y > 0.0 else "
             f"(y if x == 0.0 and y >= 0.0 else {beyond})", forms.kl_div),
            (special.betaln, "g * (digamma(x) - digamma(x + y))",
             "g * (digamma(y) - digamma(x + y))",
             "math.lgamma(x) + math.lgamma(y) - math.lgamma(x + y)", forms.betaln),
            (special.beta, "g * z * (digamma(x) - digamma(x + y))",
             "g * z * (digamma(y) - digamma(x + y))", None, forms.beta)]:
        broadcasting(key, x=x, y=y, float_result=True, scalar=scalar)
        _from_scipy(special, key, form)
    registry.unsupported(special.beta, "cuda", "no scalar form in CUDA kernels yet; write "
                         "math.exp(math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)) "
                         "for positive a, b")


def _from_scipy(special, key, form) -> None:
    """`key`, a ufunc of `scipy.special`, is named by its path and runs as `form` under
    Numba (which cannot call SciPy's ufuncs)."""
    name = next(n for n in dir(special) if getattr(special, n) is key)
    registry.named(key, f"scipy.special.{name}")
    lowered(key, form)


registry.defer("scipy.special", _describe_scipy)
