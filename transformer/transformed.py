"""`Transformed`: the callable every transformation (grad, vjp, vmap, ...) returns.

It holds a recipe that builds the generated `Function` on first use. Calling it runs
the generated code with the plain-Python backend (NumPy, no compile), like JAX's eager
mode; `jit(...)` of it compiles the same Function with Numba. Objects with a
`__secant_function__` method are understood everywhere a function is expected: by
other transformations (which is how they compose) and by generated code calling them.
"""
from __future__ import annotations

import functools
from typing import Callable

from codegen import backends, compile_log
from codegen.backends import Options

from .display import ShowsSource, SourceCode
from .function import Function

PYTHON = Options(backend="python")


class Transformed(ShowsSource):
    """A transformed function: `build()` makes its Function, calling runs it."""

    def __init__(self, fun, build: Callable[[], Function], label: str):
        self.fun = fun
        self._build = build
        self.label = label
        functools.update_wrapper(self, fun, updated=())

    @functools.cached_property
    def function(self) -> Function:
        return self._build()

    def __secant_function__(self) -> Function:
        return self.function

    @functools.cached_property
    def _python(self):
        name = getattr(self.fun, "__name__", self.label)
        with compile_log.compiling(name, PYTHON.backend) as timing, timing.transforming():
            return backends.compile_function(self.function, PYTHON).function

    def __call__(self, *args, **kwargs):
        return self._python(*args, **kwargs)

    def source(self, **static) -> str:
        fn = self.function
        if static:
            from .specialize import specialize
            fn = specialize(fn, static)
        return SourceCode(backends.module_text(fn, PYTHON)[0])

    def __repr__(self):
        return f"<secant.{self.label} of {getattr(self.fun, '__name__', self.fun)!r}>"
