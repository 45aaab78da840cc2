"""Numba's `overload` and `register_jitable` as secant's runtime registers its helpers:
without a C-callable wrapper.

Numba builds two wrappers around every function it compiles: the CPython one (for calls
from Python; an overload has none) and a C-callable one, used only when the compiled
function is passed around as a first-class function value. secant's helpers are only ever
called by name from compiled code, so the second is dead weight, and not small: it is
lowered, optimized and turned into machine code with each helper, about a tenth of the
first compile of `jit(grad(f))` (benchmarks/bench_compile.py). Every module of
`transformer` registers its Numba forms through here.

Each implementation an overload picks is marked as secant's (`HELPER_MARK`), and Numba's
cpu dispatcher built for a marked function gets secant's disk cache
(`codegen.cache_numba.helper_cache`): a helper compiled for one function in one process is
loaded, not compiled, by the next function that calls it with the same types, in this or a
later process. Numba builds that dispatcher itself, inside its overload machinery, so the
cache is attached where every cpu dispatcher is made; other functions are left as Numba
makes them.
"""
from __future__ import annotations

import functools
from types import FunctionType, MappingProxyType

from numba.core.registry import CPUDispatcher
from numba.extending import intrinsic  # noqa: F401  (re-exported for the runtime's modules)
from numba.extending import overload as _numba_overload

from codegen import cache_numba

from . import dead_writes  # noqa: F401  (Numba keeps writes into arrays a call may share)

_OPTIONS = MappingProxyType({"no_cfunc_wrapper": True})
HELPER_MARK = "__secant_helper__"


def overload(func, jit_options=MappingProxyType({}), **kwargs):
    """`numba.extending.overload`, the implementation compiled without a C wrapper and
    cached on disk with secant's other compiled code."""
    register = _numba_overload(func, jit_options={**_OPTIONS, **jit_options}, **kwargs)

    def decorate(typer):
        @functools.wraps(typer)
        def marking_typer(*args, **kws):
            chosen = typer(*args, **kws)
            implementation = chosen[1] if isinstance(chosen, tuple) else chosen
            if isinstance(implementation, FunctionType):
                setattr(implementation, HELPER_MARK, True)
                # text exec'd in a bare scope: Numba reloads a cached function's globals by
                # module name, so give the scope the name of the module that made it
                implementation.__globals__.setdefault("__name__", typer.__module__)
            return chosen
        register(marking_typer)
        return typer
    return decorate


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


def _cached_dispatcher_init(self, py_func, *args, _numba_init=CPUDispatcher.__init__,
                            **kwargs):
    _numba_init(self, py_func, *args, **kwargs)
    if getattr(py_func, HELPER_MARK, False) or _numba_library(py_func):
        cache = cache_numba.helper_cache(py_func)
        if cache is not None:
            self._cache = cache


def _numba_library(py_func) -> bool:
    """Whether `py_func` is one of Numba's own implementations of NumPy and Python (the
    `np.max` or `np.empty` secant's code calls), cached beside secant's helpers."""
    return (getattr(py_func, "__module__", None) or "").startswith("numba.")


if not hasattr(CPUDispatcher, "_secant_numba_init"):      # once, even if reloaded
    CPUDispatcher._secant_numba_init = CPUDispatcher.__init__
    CPUDispatcher.__init__ = _cached_dispatcher_init
