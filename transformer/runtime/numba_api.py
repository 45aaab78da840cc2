"""Numba's `overload` and `register_jitable` as secant's runtime registers its helpers:
without a C-callable wrapper.

Numba builds two wrappers around every function it compiles: the CPython one (for calls
from Python; an overload has none) and a C-callable one, used only when the compiled
function is passed around as a first-class function value. secant's helpers are only ever
called by name from compiled code, so the second is dead weight, and not small: it is
lowered, optimized and turned into machine code with each helper, about a tenth of the
first compile of `jit(grad(f))` (benchmarks/bench_compile.py). Every module of
`transformer` registers its Numba forms through here.
"""
from __future__ import annotations

from types import MappingProxyType

from numba.extending import intrinsic  # noqa: F401  (re-exported for the runtime's modules)
from numba.extending import overload as _numba_overload

_OPTIONS = MappingProxyType({"no_cfunc_wrapper": True})


def overload(func, jit_options=MappingProxyType({}), **kwargs):
    """`numba.extending.overload`, the implementation compiled without a C wrapper."""
    return _numba_overload(func, jit_options={**_OPTIONS, **jit_options}, **kwargs)


def register_jitable(*args, **kwargs):
    """`numba.extending.register_jitable` (`@register_jitable` or
    `@register_jitable(**options)`), compiled without a C wrapper."""
    def wrap(fn):
        options = dict(kwargs)
        inline = options.pop("inline", "never")

        @overload(fn, jit_options=options, inline=inline, strict=False)
        def implementation(*_args, **_kwargs):
            return fn
        return fn
    return wrap if kwargs else wrap(*args)
