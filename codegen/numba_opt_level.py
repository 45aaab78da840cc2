"""The LLVM optimization level of the functions secant generates: -O2 by default.

Numba optimizes every library at -O3 (`NUMBA_OPT`'s default). A function secant
generates links the runtime helpers it calls and is optimized with them as one module,
and for the large ones (a batched gradient, a Hessian) -O3's extra work - loops
unswitched and unrolled again, more inlining - is most of the cold first call's LLVM
time: `jit(vmap(grad(mlp_loss)))`'s module holds about 15,000 instructions after -O3 and
8,500 after -O2, and its first call takes about 1 s less (CPU seconds,
`benchmarks/bench_compile.py`). -O2 keeps LLVM's loop and SLP vectorizers, inlining and
loop optimizations; the steady-state benchmarks (W1, W2, W5, W7) ran the same at either
level. Numba's own functions and a user's `numba.njit` code keep Numba's level.

`install` wraps Numba's CPU library optimization so that a library defining a function of
a generated module (`modules.GENERATED_PACKAGE`, with its own linkage: a helper linked in
from elsewhere is `linkonce_odr`) runs its function passes (on the generated function's
own IR module) and its whole-module passes at `level()`:
`SECANT_OPT_LEVEL` (0-3, default 2), never above `NUMBA_OPT`. The machine code generator
keeps Numba's level (one per process). Where Numba's layout differs from the one
described, `install` does nothing and Numba's level applies.
"""
from __future__ import annotations

import contextlib
import os
import threading

from .modules import GENERATED_PACKAGE

DEFAULT_LEVEL = 2
ENV = "SECANT_OPT_LEVEL"
_MANGLED = f"{len(GENERATED_PACKAGE)}{GENERATED_PACKAGE}"     # Numba's mangled namespace
_lock = threading.Lock()
_installed = False


def requested() -> int:
    """`SECANT_OPT_LEVEL` as an int in 0-3, or the default."""
    try:
        value = int(os.environ.get(ENV, DEFAULT_LEVEL))
    except ValueError:
        return DEFAULT_LEVEL
    return min(max(value, 0), 3)


def numba_level() -> int:
    """Numba's own level (`NUMBA_OPT`; 'max' counts as 3)."""
    import numba
    return min(int(numba.config.OPT), 3)


def level() -> int:
    """The level generated functions are optimized at: the requested one, at most Numba's."""
    return min(requested(), numba_level())


def install() -> bool:
    """Wrap Numba's CPU library optimization once; True when this call did."""
    global _installed
    with _lock:
        if _installed:
            return False
        classes = cpu_classes(("_optimize_final_module", "_optimize_functions"),
                              ("_module_pass_manager", "_function_pass_manager"))
        if classes is None:
            return False
        from numba.core.compiler_lock import global_compiler_lock
        _wrap(classes[0], global_compiler_lock)
        _installed = True
        return True


def cpu_classes(library_methods, codegen_methods):
    """Numba's CPU JIT code library and codegen classes, or None where either is missing
    or lacks one of the named methods (a Numba whose layout differs)."""
    try:
        from numba.core import codegen as nb_codegen
    except ImportError:
        return None
    library_cls = getattr(nb_codegen, "JITCodeLibrary", None)
    codegen_cls = getattr(nb_codegen, "JITCPUCodegen", None)
    for cls, names in ((library_cls, library_methods), (codegen_cls, codegen_methods)):
        if cls is None or not all(hasattr(cls, name) for name in names):
            return None
    return library_cls, codegen_cls


def is_generated(library) -> bool:
    """Whether `library` defines (not links) a function of a generated module."""
    return defines_generated(library._final_module)


def defines_generated(module) -> bool:
    """Whether the LLVM `module` defines a function of a generated module with its own
    (external) linkage."""
    external = None
    for fn in module.functions:
        if fn.is_declaration or _MANGLED not in fn.name:
            continue
        if external is None:
            from llvmlite import binding
            external = binding.Linkage.external
        if fn.linkage == external:
            return True
    return False


def _wrap(cls, compiler_lock) -> None:
    original_module = cls._optimize_final_module
    original_functions = cls._optimize_functions

    def _optimize_final_module(self):
        target = level()
        if target >= numba_level() or not is_generated(self):
            return original_module(self)
        with compiler_lock, _pipelines_at(self._codegen, "_module_pass_manager", target):
            return original_module(self)

    def _optimize_functions(self, ll_module):
        # each IR module added to a library gets function passes first: a generated
        # function's own module gets them at the same level
        target = level()
        if target >= numba_level() or not defines_generated(ll_module):
            return original_functions(self, ll_module)
        with compiler_lock, _pipelines_at(self._codegen, "_function_pass_manager", target):
            return original_functions(self, ll_module)

    cls._optimize_final_module = _optimize_final_module
    cls._optimize_functions = _optimize_functions


@contextlib.contextmanager
def _pipelines_at(codegen, maker: str, target: int):
    """Numba's `codegen.<maker>()` builds its pipelines at `target` while inside.

    Numba asks for its full pipelines without an `opt` (its cheap module pipeline names
    one, which is kept)."""
    make = getattr(type(codegen), maker)

    def at_level(**kwargs):
        kwargs.setdefault("opt", target)
        return make(codegen, **kwargs)
    setattr(codegen, maker, at_level)
    try:
        yield
    finally:
        delattr(codegen, maker)
