"""NumPy, SciPy and math functions handed to a transformation: `grad(np.tanh)`,
`vmap(np.dot, in_axes=(None, 0))`, `jacfwd(np.sin)`, as JAX users write them.

Such a function has no Python source to rewrite (a ufunc, a C builtin) or has NumPy's own
(`np.sum`), which is not what secant differentiates: secant knows it as a primitive, with
its rules. So it is transformed through a one-line wrapper written as a module of its own
on disk, `def tanh(x): return np.tanh(x)`, which reads like the function the user would
have written. The wrapper takes the function's required arguments (a ufunc's inputs;
NumPy's positional-only ones with a None default, as `np.where`'s `x` and `y`, count as
required); options such as `axis` are for a lambda: `vmap(lambda x: np.sum(x, axis=0))`.
"""
from __future__ import annotations

import inspect
import math
import threading

import numpy as np

from codegen import modules
from codegen.backends import is_user_function

from .primitives import registry

_made: dict = {}
_lock = threading.Lock()
_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


def is_library_primitive(value) -> bool:
    """A function users call from NumPy, SciPy or math that secant has rules for."""
    if is_user_function(value) or inspect.isclass(value):
        return False
    try:
        return registry.lookup(value) is not None and registry.is_user_facing(value)
    except TypeError:
        return False


def wrapper_for(value):
    """The wrapper function of library primitive `value` (made once per process)."""
    with _lock:
        made = _made.get(value)
        if made is None:
            made = _made[value] = _make(value)
        return made


def _make(value):
    name = getattr(value, "__name__", None) or "function"
    params = _parameters(value)
    path, namespace = _path(value)
    arguments = ", ".join(params)
    text = (f'"""{registry.user_name(value)}, as secant transforms it when it is handed to a '
            'transformation."""\n\n\n'
            f"def {name}({arguments}):\n    return {path}({arguments})\n")
    return getattr(modules.load_module(text, namespace), name)


def _parameters(value) -> list[str]:
    if isinstance(value, np.ufunc):
        return ["x"] if value.nin == 1 else [f"x{k + 1}" for k in range(value.nin)]
    try:
        sig = inspect.signature(value)
    except (TypeError, ValueError):          # a C function: NumPy's docstring line
        return _documented_parameters(value)
    params = []
    for p in sig.parameters.values():
        if p.kind not in _POSITIONAL or p.name == "out":
            break
        required = p.default is inspect.Parameter.empty or \
            p.kind is inspect.Parameter.POSITIONAL_ONLY and p.default is None
        if not required:
            break
        params.append(p.name)
    return params or ["x"]


def _path(value) -> tuple[str, dict]:
    """The expression that names `value` in the wrapper (`np.linalg.norm`,
    `scipy.special.erf`, `math.erf`) and the namespace that binds its first name; an
    object its user name does not reach is bound as `function`."""
    dotted = registry.user_name(value)
    head, _, rest = dotted.partition(".")
    roots = {"numpy": ("np", np), "math": ("math", math)}
    if head in roots:
        alias, module = roots[head]
    else:
        alias, module = head, _imported(head)
    target = module
    for part in rest.split(".") if rest else []:
        target = getattr(target, part, None)
    if module is None or target is not value and target != value:
        return "function", {"function": value}
    return f"{alias}.{rest}" if rest else alias, {alias: module}


def _imported(head: str):
    import importlib
    try:
        return importlib.import_module(head)
    except ImportError:
        return None


def _documented_parameters(value) -> list[str]:
    """The required parameters on the first line of a C function's docstring, where older
    NumPy keeps its signature: `dot(a, b, out=None)` -> a, b; `where(condition, [x, y],
    /)` -> condition, x, y (bracketed ones count as required, as above); one input when the
    line says nothing."""
    name = getattr(value, "__name__", "")
    first = ((getattr(value, "__doc__", None) or "").strip().splitlines() or [""])[0]
    if not first.startswith(name + "(") or not first.endswith(")"):
        return ["x"]
    params = []
    for part in first[len(name) + 1:-1].replace("[", "").replace("]", "").split(","):
        part = part.strip()
        if not part.isidentifier() or part == "out":
            break
        params.append(part)
    return params or ["x"]
