"""`Transformed`: the callable every transformation (grad, vjp, vmap, ...) returns.

It holds a recipe that builds the generated `Function` on first use. Calling it runs
the generated code with the plain-Python backend (NumPy, no compile), like JAX's eager
mode; `jit(...)` of it compiles the same Function with Numba. Objects with a
`__secant_function__` method are understood everywhere a function is expected: by
other transformations (which is how they compose) and by generated code calling them.

Like JAX's `grad`, a transformed function reads the globals, closure values, module
attributes and defaults of the code it transforms as they are at each call: everything
built is remembered with the bindings it read (`freshness`), and is built again once one
of them was rebound. `jit` instead keeps the values it compiled with, as `jax.jit` does.
"""
from __future__ import annotations

import functools
from typing import Callable

from codegen import compile_log
from codegen.backends import Options

from . import freshness, materialize, pytrees
from .display import ShowsSource, SourceCode
from .function import Function

PYTHON = Options(backend="python")


class Transformed(ShowsSource):
    """A transformed function: `build()` makes its Function, calling runs it."""

    def __init__(self, fun, build: Callable[[], Function], label: str):
        self.fun = fun
        self._build = build
        self.label = label
        self._memo: dict = {}                  # what was built from `_bindings`
        self._bindings = freshness.Bindings()
        functools.update_wrapper(self, fun, updated=())

    def _built(self, key, build: Callable):
        """`build()`, made once per `key` while the bindings it read are unchanged."""
        try:
            return self._memo[key]
        except KeyError:
            pass
        with freshness.recording(self._bindings):
            value = self._memo[key] = build()
        return value

    def _refresh(self) -> None:
        """Forget what was built if a binding it read has been rebound since."""
        if self._memo and not self._bindings.current():
            self._memo = {}
            self._bindings = freshness.Bindings()

    @property
    def function(self) -> Function:
        fn = self._built("function", self._build)
        freshness.note(self._bindings)    # a transformation of this one read them too
        return fn

    def __secant_function__(self) -> Function:
        self._refresh()
        return self.function

    @property
    def _python(self):
        def build():
            name = getattr(self.fun, "__name__", self.label)
            with compile_log.compiling(name, PYTHON.backend) as timing, timing.transforming():
                return materialize.compile_function(self.function, PYTHON).function
        return self._built("python", build)

    def __call__(self, *args, **kwargs):
        self._refresh()
        return self._python(*args, **kwargs)

    def _call_flat(self, args, layouts):
        """Run with container arguments (bound positionally): the Flat form for these
        layouts (`pytrees.flat_function`, built once) on their leaves, result rebuilt."""
        def build():
            flat = pytrees.flat_function(self, layouts)
            return flat, materialize.compile_function(flat.function, PYTHON).function
        flat, function = self._built(("flat", layouts), build)
        return flat(function(*pytrees.leaves(args)))

    def source(self, **static) -> str:
        fn = self.function
        if static:
            from .specialize import specialize
            fn = specialize(fn, static)
        return SourceCode(materialize.module_text(fn, PYTHON)[0])

    def __repr__(self):
        return f"<secant.{self.label} of {getattr(self.fun, '__name__', self.fun)!r}>"
