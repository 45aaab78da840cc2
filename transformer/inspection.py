"""`source(f)`: the generated Python of any transformed or jitted function."""
from __future__ import annotations

from typing import Any, Callable

from codegen.backends import Options

from . import materialize
from .display import SourceCode
from .frontend import parse


def source(fun: Callable, **static: Any) -> SourceCode:
    """The generated module text behind `fun` (a jit, grad, vmap, ... object): a `str` that
    Jupyter shows as highlighted code."""
    if hasattr(fun, "source") and callable(fun.source):
        return SourceCode(fun.source(**static))
    fn = parse(fun)
    text, _ = materialize.module_text(fn, Options(backend="python"))
    return SourceCode(text)
