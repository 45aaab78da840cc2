"""Stable names of compiled helpers for Numba's disk cache: `fingerprint`.

Numba keys a cached function by its bytecode and a pickle of its closure, and leaves the
rest to the source file's time stamp. That is not enough for secant's runtime helpers:
the implementations an `@overload` picks are closures made per call, often exec'd from
text, and some capture Numba dispatchers (whose pickle differs in every process) or read
generated functions and user values through their globals. Nopython code freezes every
value it reads, so a helper is named by everything it reads:

- its code: bytecode, constants (Numba's key does not see `x * 2.0` against `x * 3.0`),
  names, variable names, file and first line, and those of the functions it defines;
- the value of each closure cell, default, and global name its code reads, recursively:
  functions and dispatchers by the same rules, arrays by a hash of their bytes, numbers
  and strings by their repr, Numba types and NumPy dtypes by their repr, and objects of
  NumPy, Numba, SciPy and the standard math modules by their importable name.

A function of a file of secant's own packages is named by its code alone, without
following its globals: the cache's stamp (`cache_numba.runtime_stamp`) is a hash of all of
secant's source. Anything else (a user's module, an object with no stable repr) raises
`Unkeyable`, and the helper is compiled in memory, never cached.
"""
from __future__ import annotations

import hashlib
import inspect
import sys
from functools import lru_cache
from pathlib import Path

import numpy as np

_SECANT_ROOT = Path(__file__).resolve().parent.parent
SECANT_PACKAGES = ("codegen", "transformer")
_LIBRARIES = SECANT_PACKAGES + ("numpy", "numba", "scipy", "math", "cmath", "operator",
                                 "builtins", "llvmlite")


class Unkeyable(Exception):
    """A value with no stable fingerprint: the function reading it is not cached."""


def fingerprint(value, seen: frozenset = frozenset()) -> str:
    """A text naming `value` the same way in every process (see the module doc)."""
    py_func = getattr(value, "py_func", None)        # a Numba dispatcher
    if inspect.isfunction(py_func):
        return "dispatcher " + fingerprint(py_func, seen)
    if inspect.isfunction(value):
        return _function(value, seen)
    if inspect.ismodule(value):
        if value.__name__.partition(".")[0] in _LIBRARIES:
            return f"module {value.__name__}"
        raise Unkeyable(value.__name__)
    if isinstance(value, (tuple, list)):
        return f"{type(value).__name__}({', '.join(fingerprint(v, seen) for v in value)})"
    if value is None or isinstance(value, (bool, int, float, complex, str, bytes)):
        return repr(value)
    if isinstance(value, np.ndarray):
        data = hashlib.sha256(np.ascontiguousarray(value).tobytes()).hexdigest()
        return f"ndarray {value.dtype.str} {value.shape} {data}"
    named = _library_name(value)
    if named is not None:
        return named
    module = type(value).__module__ or ""
    text = repr(value)
    if module.partition(".")[0] in ("numba", "numpy") and " at 0x" not in text:
        return f"{module}.{type(value).__qualname__} {text}"   # Numba types, dtypes, scalars
    raise Unkeyable(type(value))


def _function(function, seen: frozenset) -> str:
    if id(function) in seen:
        return f"recursion {function.__qualname__}"
    seen = seen | {id(function)}
    code = function.__code__
    parts = [f"function {function.__module__}.{function.__qualname__} {_code(code)}",
             "defaults " + fingerprint(function.__defaults__, seen),
             "cells " + fingerprint(tuple(_contents(cell)
                                          for cell in function.__closure__ or ()), seen)]
    if not _in_secant_source(code.co_filename):
        namespace = function.__globals__
        for name in sorted(_global_names(code)):
            if name in namespace:
                parts.append(f"global {name}=" + fingerprint(namespace[name], seen))
    return "; ".join(parts)


def _contents(cell):
    """A closure cell's value; an empty cell (a name the enclosing function binds later)
    could hold anything when the helper is compiled, so it has no fingerprint."""
    try:
        return cell.cell_contents
    except ValueError:
        raise Unkeyable("an empty closure cell") from None


def _library_name(value) -> str | None:
    """`module.qualname` for an object a library module holds under that name (np.max,
    math.exp, a NumPy ufunc), else None."""
    module_name = getattr(value, "__module__", None)
    qualname = getattr(value, "__qualname__", None) or getattr(value, "__name__", None)
    if not (isinstance(module_name, str) and isinstance(qualname, str)
            and module_name.partition(".")[0] in _LIBRARIES
            and module_name.partition(".")[0] not in SECANT_PACKAGES):
        return None
    found = sys.modules.get(module_name)
    for part in qualname.split("."):
        found = getattr(found, part, None)
    return f"library {module_name}.{qualname}" if found is value else None


def _global_names(code) -> set:
    names = set(code.co_names)
    for const in code.co_consts:
        if inspect.iscode(const):
            names |= _global_names(const)
    return names


def _code(code) -> str:
    consts = [_code(c) if inspect.iscode(c) else repr(c) for c in code.co_consts]
    digest = hashlib.sha256(code.co_code)
    digest.update(repr((consts, code.co_names, code.co_varnames, code.co_freevars,
                        code.co_filename, code.co_firstlineno)).encode())
    return digest.hexdigest()


@lru_cache(maxsize=None)
def _in_secant_source(filename: str) -> bool:
    """Whether `filename` is a source file of secant's packages (covered by the stamp)."""
    if filename.startswith("<"):
        return False
    try:
        path = Path(filename).resolve()
    except OSError:
        return False
    return any(path.is_relative_to(_SECANT_ROOT / package) for package in SECANT_PACKAGES)


@lru_cache(maxsize=None)
def secant_sources_hash() -> str:
    """One hash of every Python source file of secant's own packages."""
    digest = hashlib.sha256()
    for root in SECANT_PACKAGES:
        package = _SECANT_ROOT / root
        for path in sorted(package.rglob("*.py")):
            digest.update(path.relative_to(package.parent).as_posix().encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:16]
