"""`source(f)`: the generated Python of any transformed or jitted function."""
from __future__ import annotations

from codegen import backends
from codegen.backends import Options

from .frontend import parse


def source(fun, **static) -> str:
    """The generated module text behind `fun` (a jit, grad, vmap, ... object)."""
    if hasattr(fun, "source") and callable(fun.source):
        return fun.source(**static)
    fn = parse(fun)
    text, _ = backends.module_text(fn, Options(backend="python"))
    return text
