"""Numba's start-up work that secant's compiles do not need, deferred.

Numba's CPU target imports `numba.np.arraymath` when it loads its registries (the first
compile or cache load of a process), and that module asks at import whether SciPy's BLAS
is there by importing `scipy.linalg.cython_blas`, which runs all of `scipy.linalg`'s
`__init__` (about 0.15-0.3 s of every process's first call, needed only by a program that
calls BLAS). `defer_blas_check` imports `numba.np.arraymath` with that check answered
from `importlib.util.find_spec` instead - the same yes/no without running SciPy - and
restores Numba's own `ensure_blas`, which still imports SciPy when a BLAS function
(`np.dot`, `@`, `np.linalg.*`) is typed. Where Numba's layout differs from the one
described (a name missing), or `arraymath` is already imported, it does nothing.
"""
from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import sys
import threading

_ARRAYMATH = "numba.np.arraymath"
_lock = threading.Lock()


def blas_findable() -> bool:
    """Whether `scipy.linalg.cython_blas` can be imported, found without importing
    `scipy` or `scipy.linalg` (`importlib.util.find_spec` of a submodule imports its
    parents: each level is looked up in its parent's search path instead)."""
    try:
        spec = importlib.util.find_spec("scipy")
        for name in ("scipy.linalg", "scipy.linalg.cython_blas"):
            if spec is None or spec.submodule_search_locations is None:
                return False
            spec = importlib.machinery.PathFinder.find_spec(
                name, list(spec.submodule_search_locations))
        return spec is not None
    except (ImportError, ValueError):
        return False


def defer_blas_check() -> bool:
    """Import `numba.np.arraymath` without importing SciPy; True when this call did."""
    with _lock:
        if _ARRAYMATH in sys.modules:
            return False
        try:
            linalg = importlib.import_module("numba.np.linalg")
        except ImportError:
            return False
        ensure_blas = getattr(linalg, "ensure_blas", None)
        if not callable(ensure_blas):
            return False
        have_blas = blas_findable()

        def _deferred():
            if not have_blas:
                raise ImportError("scipy 0.16+ is required for linear algebra")

        linalg.ensure_blas = _deferred
        try:
            arraymath = importlib.import_module(_ARRAYMATH)
        finally:
            linalg.ensure_blas = ensure_blas
        if getattr(arraymath, "ensure_blas", None) is _deferred:
            arraymath.ensure_blas = ensure_blas
        if hasattr(arraymath, "_HAVE_BLAS"):
            arraymath._HAVE_BLAS = have_blas
        return True
