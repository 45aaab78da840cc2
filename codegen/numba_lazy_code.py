"""Machine code for Numba libraries that only other compiled code reaches, made on demand.

Numba compiles each function it types (a jitted function, an `@overload` implementation,
one of its own subroutines) into a code library, optimizes it, and makes machine code
for it when the library is finalized. A callee's LLVM IR is linked into each compiled
caller and compiled again there, so the machine code of a library that nothing calls
from Python (an `@overload` implementation has no Python entry point) is never run. For
secant's cold first calls that is about 0.3 s of `jit(hessian(f))` and 0.7-0.9 s of
`jit(vmap(grad(mlp)))` (CPU seconds, `benchmarks/bench_compile.py`).

`install` makes Numba's CPU JIT libraries *defer* that step: a finalized library is
optimized and kept, and is added to the execution engine (which makes its machine code)
only when something needs it. The invariant, kept by the patches below: a deferred
library is materialized before anything could run or resolve its code -

- an address asked for (`get_pointer_to_function`: the Python entry point Numba asks
  for right after compiling a jitted function, a `cfunc`, a ufunc loop, Numba's runtime
  functions); a name the library does not define answers 0 without materializing, as
  Numba answers for it (Numba asks an `@overload`'s library for its absent Python entry);
- a module added to the engine that *declares* one of its symbols instead of linking it,
  or refers to it through Numba's unresolved-recursion globals (the engine would
  otherwise fail to resolve the symbol and end the process), also a library loaded from
  object code in the disk cache, whose declarations its saved IR lists;
- its object code asked for (`serialize_using_object_code`): Numba's disk cache saves a
  deferred library as its optimized bitcode instead, and a later process loads that
  deferred again.

A deferred library is not *optimized* either: Numba runs the whole-module pipeline on
each library's final module and again on every caller's, which links the callee in and
inlines it, so a helper's own optimization is only used when its machine code is made.
A deferred library therefore keeps its function-level-optimized IR, callers link that
and optimize it with their own code, and `materialize` optimizes a library before making
its machine code (also one loaded from the disk cache, where it is saved unoptimized).
A library found not deferrable at finalization is optimized there, as Numba does.

A function's *environment* (the object its compiled code reaches to build exception
arguments) is a global the engine fills with `set_env`; for a deferred library the
global is not in the engine yet, so the environment is kept and written as soon as a
module defining that global is added - the library itself, or a caller that linked it.

Not deferred: libraries with unresolved recursive references or dynamic globals, and
Numba's runtime library. CUDA's libraries are another class and are untouched.
`SECANT_LAZY_MACHINE_CODE=0` turns this off. Where Numba's layout differs from the one
described (a name missing), `install` does nothing.
"""
from __future__ import annotations

import os
import threading
import weakref

from . import numba_opt_level

_UNRESOLVED_PREFIX = ".numba.unresolved$"
_DYNAMIC_PREFIX = "numba.dynamic.globals"
_NEVER_DEFERRED = frozenset({"nrt"})            # Numba's runtime: its symbols are declared
_lock = threading.RLock()
_installed = False

# symbol name -> the deferred library defining it; environments waiting for their global
_deferred_symbols: weakref.WeakValueDictionary = weakref.WeakValueDictionary()
_pending_envs: dict[str, object] = {}


def enabled() -> bool:
    return os.environ.get("SECANT_LAZY_MACHINE_CODE", "1") not in ("0", "false", "no")


def install() -> bool:
    """Patch Numba's CPU JIT code library and codegen once; True when this call did."""
    global _installed
    with _lock:
        if _installed or not enabled():
            return False
        classes = numba_opt_level.cpu_classes(
            ("_optimize_final_module", "_finalize_final_module", "get_pointer_to_function",
             "serialize_using_object_code", "serialize_using_bitcode",
             "_finalize_dynamic_globals", "_verify_declare_only_symbols"),
            ("_add_module", "set_env"))
        if classes is None:
            return False
        library_cls, codegen_cls = classes
        # first, so that a deferred library is optimized at the level it chooses
        numba_opt_level.install()
        _patch_library(library_cls)
        _patch_codegen(codegen_cls)
        _installed = True
        return True


def materialize(library) -> None:
    """Add a deferred `library` to the engine now (its machine code is made)."""
    from numba.core.compiler_lock import global_compiler_lock
    # Numba's lock first, as in a compile (which finalizes, then takes ours): optimizing
    # and adding a module are Numba's work, done under its lock
    with global_compiler_lock, _lock:
        if not is_deferred(library):
            return
        library._secant_deferred = False
        for name in library._secant_symbols:
            if _deferred_symbols.get(name) is library:
                del _deferred_symbols[name]
        library._dynamic_globals = []        # listed again by Numba's own finalization
        _optimize_if_needed(library)
        type(library)._secant_original_finalize(library)


def is_deferred(library) -> bool:
    return bool(getattr(library, "_secant_deferred", False))


# --------------------------------------------------------------------------- the library
def _deferrable(library) -> tuple[str, ...] | None:
    """The symbols `library` defines when it may be deferred, else None."""
    if library.name in _NEVER_DEFERRED:
        return None
    module = library._final_module
    defined = []
    for fn in module.functions:
        if fn.is_declaration:
            continue
        defined.append(fn.name)
    for gv in module.global_variables:
        if gv.name.startswith((_UNRESOLVED_PREFIX, _DYNAMIC_PREFIX)):
            return None
        if not gv.is_declaration:
            defined.append(gv.name)
    return tuple(defined) if defined else None


def _optimize_if_needed(library) -> None:
    """Run Numba's whole-module optimization on a library whose final module skipped it."""
    if getattr(library, "_secant_unoptimized", False):
        library._secant_unoptimized = False
        type(library)._secant_original_optimize(library)
        library._final_module.verify()


def _patch_library(cls) -> None:
    original_optimize = cls._optimize_final_module
    original_finalize = cls._finalize_final_module
    original_pointer = cls.get_pointer_to_function
    original_object = cls.serialize_using_object_code
    cls._secant_original_optimize = original_optimize
    cls._secant_original_finalize = original_finalize
    cls._secant_deferred = False
    cls._secant_unoptimized = False

    def _optimize_final_module(self):
        # A library that may be deferred keeps its IR as it is: its callers optimize it
        # with their own code, and `materialize` optimizes it if its own code is needed.
        self._secant_compiled_here = True
        if _deferrable(self) is None:
            return original_optimize(self)
        self._secant_unoptimized = True

    def _finalize_final_module(self):
        if self._shared_module is None and not getattr(self, "_secant_compiled_here", False):
            # loaded from bitcode (the disk cache saves a deferred library before any
            # optimization): optimized before its own machine code is made
            self._secant_unoptimized = True
        symbols = _deferrable(self)
        if symbols is None:
            _optimize_if_needed(self)
            if self._shared_module is not None:
                # loaded from object code, whose declarations the engine resolves when it
                # adds the (empty) final module: the IR it came with lists them
                with _lock:
                    for library in _declared_deferred(self._shared_module):
                        materialize(library)
            return original_finalize(self)
        with _lock:
            self._finalize_dynamic_globals()
            self._verify_declare_only_symbols()
            # what Numba's finalization records on the module for its object-cache hooks
            self._final_module._CPUCodeLibrary__library = weakref.proxy(self)
            self._secant_deferred = True
            self._finalized = True
            self._secant_symbols = frozenset(symbols)
            for name in symbols:
                _deferred_symbols.setdefault(name, self)

    def get_pointer_to_function(self, name):
        self._ensure_finalized()
        if is_deferred(self):
            if name not in self._secant_symbols:
                return 0            # as Numba answers for a name the library does not define
            materialize(self)
        return original_pointer(self, name)

    def serialize_using_object_code(self):
        self._ensure_finalized()
        if is_deferred(self):
            return self.serialize_using_bitcode()
        return original_object(self)

    cls._optimize_final_module = _optimize_final_module
    cls._finalize_final_module = _finalize_final_module
    cls.get_pointer_to_function = get_pointer_to_function
    cls.serialize_using_object_code = serialize_using_object_code


# --------------------------------------------------------------------------- the engine
def _declared_deferred(module) -> list:
    """The deferred libraries defining a symbol that `module` declares or refers to
    through an unresolved-recursion global."""
    if not _deferred_symbols:
        return []
    found = []
    for group in (module.functions, module.global_variables):
        for value in group:
            name = value.name
            if name.startswith(_UNRESOLVED_PREFIX):
                name = name[len(_UNRESOLVED_PREFIX):]
            elif not value.is_declaration:
                continue
            library = _deferred_symbols.get(name)
            if library is not None and library not in found:
                found.append(library)
    return found


def _patch_codegen(cls) -> None:
    original_add = cls._add_module
    original_set_env = cls.set_env

    def _add_module(self, module):
        with _lock:
            for library in _declared_deferred(module):
                materialize(library)
            cleanup = original_add(self, module)
            _write_pending_envs(self)
            return cleanup

    def set_env(self, env_name, env):
        with _lock:
            if env_name in _deferred_symbols and not self._engine.is_symbol_defined(env_name):
                _pending_envs[env_name] = env      # written when a module defining it is added
                return
            _pending_envs.pop(env_name, None)
            original_set_env(self, env_name, env)

    def _write_pending_envs(self):
        for env_name in [n for n in _pending_envs if self._engine.is_symbol_defined(n)]:
            original_set_env(self, env_name, _pending_envs.pop(env_name))

    cls._add_module = _add_module
    cls.set_env = set_env
