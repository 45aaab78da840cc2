"""Binary elementwise primitives with broadcasting, and the operators that share their
rules; ``x``/``y`` are ``g`` times the partial derivatives."""
from __future__ import annotations

import math

import gast
import numpy as np

from . import registry
from .families import broadcasting, lowered

broadcasting(gast.Add, np.add, x="g", y="g", broadcast=True, keeps_int=True)
broadcasting(gast.Sub, np.subtract, x="g", y="-g", broadcast=True, keeps_int=True)
broadcasting(gast.Mult, np.multiply, x="g * y", y="x * g", keeps_int=True)
broadcasting(gast.Div, np.divide, x="g / y", y="-(g * z / y)", float_result=True)
# the exponent's derivative z * log(x) is 0 * -inf at x = 0, where it is 0 (JAX's too):
# log(x + (x == 0)) is log(1) there
broadcasting(gast.Pow, np.power, math.pow, pow, x="g * y * x ** (y - 1)",
             y="g * z * np.log(x + (x == 0))", scalar="x ** y", keeps_int=True,
             scalarized=True)
broadcasting(np.float_power, x="g * y * x ** (y - 1)", y="g * z * np.log(x + (x == 0))",
             float_result=True)
broadcasting(gast.Mod, np.mod, x="g", y="-(g * np.floor(x / y))", broadcast=True,
             keeps_int=True)
broadcasting(np.fmod, math.fmod, x="g", y="-(g * np.trunc(x / y))", broadcast=True,
             keeps_int=True)
broadcasting(np.maximum, x="g * (x >= y)", y="g * (x < y)", scalar="max(x, y)",
             keeps_int=True, scalarized=True)
broadcasting(np.fmax, x="g * (x >= y)", y="g * (x < y)", keeps_int=True)
broadcasting(np.minimum, x="g * (x <= y)", y="g * (x > y)", scalar="min(x, y)",
             keeps_int=True, scalarized=True)
broadcasting(np.fmin, x="g * (x <= y)", y="g * (x > y)", keeps_int=True)
broadcasting(np.arctan2, math.atan2, x="g * y / (x * x + y * y)",
             y="-(g * x) / (x * x + y * y)", float_result=True, scalarized=True)
broadcasting(np.hypot, math.hypot, x="g * x / z", y="g * y / z", float_result=True,
             scalarized=True)
broadcasting(np.logaddexp, x="g * np.exp(x - z)", y="g * np.exp(y - z)", float_result=True)
broadcasting(np.logaddexp2, x="g * np.exp2(x - z)", y="g * np.exp2(y - z)",
             float_result=True)

_WHY = "no scalar form in CUDA kernels yet; write it with operators and math.*"
for _key in (np.float_power, np.mod, np.logaddexp, np.logaddexp2,
             np.fmax, np.fmin):
    registry.unsupported(_key, "cuda", _WHY)
for _key in (np.add, np.subtract, np.multiply, np.divide):
    registry.unsupported(_key, "cuda", "write the operator (+ - * /) in a CUDA kernel")
registry.record(math.pow).scalar = "math.pow(x, y)"     # always a float, unlike x ** y
lowered(math.fmod, np.fmod)          # Numba has no math.fmod; its np.fmod takes numbers
