"""Compile backends: module text + namespace + options in, a callable out.

`python` loads the generated module as plain Python; `cpu` decorates the generated
function with `numba.njit(...)` and gives it secant's sealed disk cache in the cache
directory (`cache_numba`), not Numba's own `cache=True`. The text comes from above
(`transformer.materialize` turns a Function and its environment into the function's
source, import lines, fingerprint lines and a namespace); `module_source` puts it together
with the header every module carries - origin, transforms, backend and versions - and
`load` writes it to disk, imports it and attaches the cache. Each dependency leaves a
fingerprint line in the header, so the module text - and with it the file name and
Numba's on-disk cache - changes whenever anything the function reaches changes; a module
that calls secant's runtime helpers also carries a hash of secant's own sources, since
Numba's cache holds what those compiled to. Within a process, a module is reused for any
text that differs only in the origin line (an identical function redefined). Compiles
are serialized by one re-entrant lock (`COMPILE_LOCK`, held by the caller across text and
load), so threads making first calls at once compile each module once.
"""
from __future__ import annotations

import dataclasses
import hashlib
import inspect
import threading
import types
from typing import Callable

import numba
import numpy as np

from .cache_keys import SECANT_PACKAGES, secant_sources_hash
from . import (cache_numba, modules, numba_copy_propagation, numba_lazy_code, numba_opt_level,
               numba_startup)
from .errors import TransformError

VERSION = "0.1.0"
BACKENDS = ("python", "cpu", "cuda")
ORIGIN_PREFIX = "# secant: generated from "
# top-level packages whose functions and classes are a library's (or secant's), not the user's
_LIBRARY_ROOTS = {"numpy", "scipy", "numba", "math", "builtins", "transformer", "codegen",
                  "jax", "jaxlib", "autograd", "cmath", "operator", "functools", "collections"}


@dataclasses.dataclass(frozen=True)
class Options:
    """Everything besides the source that changes the compiled result."""

    backend: str = "cpu"
    parallel: bool = False
    fastmath: bool = False
    boundscheck: bool = True     # cpu: every index proved or checked (transformer.bounds)
    inline: bool = False         # cpu: Numba inlines the function into its one caller
    debug_nans: bool | None = None  # a NaN/inf check after each value; None: the switch

    def decorator(self, holds_gil: bool = False) -> str | None:
        if self.backend != "cpu":
            return None
        # no cache=True: secant attaches its own sealed disk cache; nogil: pmap's worker
        # threads run shards of one compiled function side by side (not for a function
        # that calls back into Python: its object-mode blocks take the GIL anyway);
        # no_cfunc_wrapper: generated functions are called by name, never passed as
        # first-class function values, so Numba's C-callable wrapper would be dead code
        # lowered, optimized and emitted with each (transformer/runtime/numba_api.py)
        flags = ([] if holds_gil else ["nogil=True"]) + ["no_cfunc_wrapper=True"]
        if self.parallel:
            flags.append("parallel=True")
        if self.fastmath:
            flags.append("fastmath=True")
        return f"@numba.njit({', '.join(flags)})"


@dataclasses.dataclass
class Compiled:
    """A loaded function with the module text and file it came from."""

    function: Callable
    text: str
    path: str
    key: str
    hidden: tuple = ()      # arrays passed after the function's own arguments, in order
    # what `load` was given besides the text: all another process needs to load it again
    namespace: dict = dataclasses.field(default_factory=dict, repr=False, compare=False)
    name: str = ""
    options: Options | None = None


class CacheStats:
    """Process-wide counters: how often a generated module was reused or built."""

    def __init__(self):
        self.hits = 0
        self.misses = 0


STATS = CacheStats()
_loaded: dict[str, Compiled] = {}
_by_function: dict[int, Compiled] = {}     # id(Compiled.function) -> its entry in _loaded
COMPILE_LOCK = threading.RLock()    # held across a module's text and its load


def check_backend(options: Options) -> None:
    """Refuse a backend this module cannot compile for (cuda has its own path)."""
    if options.backend not in ("python", "cpu"):
        raise TransformError(f"unknown backend {options.backend!r}",
                             hint="use backend='cpu' or backend='python'")


def load(text: str, namespace: dict, name: str, options: Options) -> Compiled:
    """The function `name` of module `text` with `namespace` bound, compiled for
    `options`; equal text (origin line aside) is loaded once per process."""
    with COMPILE_LOCK:
        key = reuse_key(text)
        if key in _loaded:
            STATS.hits += 1
            return _loaded[key]
        STATS.misses += 1
        if options.backend == "cpu":
            numba_startup.defer_blas_check()
            numba_opt_level.install()          # first: deferred libraries use its wrapper
            numba_lazy_code.install()
            numba_copy_propagation.install()   # parallel=True's copy propagation, mended
        module = modules.load_module(text, namespace)
        function = getattr(module, name)
        root = getattr(module, modules.CACHE_ROOT_ATTRIBUTE)
        if options.backend == "cpu" and root is not None:
            cache_numba.enable(function, root, stamp=module.__name__)
            cache_numba.enable_runtime_helpers(root)
        compiled = Compiled(function, text, module.__file__, key, namespace=dict(namespace),
                            name=name, options=options)
        _loaded[key] = compiled
        _by_function[id(function)] = compiled
        return compiled


def loaded_for(function) -> Compiled | None:
    """The Compiled whose function is `function` (a generated function loaded in this
    process), or None: how a generated dependency bound in a namespace is found again."""
    compiled = _by_function.get(id(function))
    return compiled if compiled is not None and compiled.function is function else None


def reuse_key(text: str) -> str:
    """The hash of what a module does: its text without the origin line.

    An identical function defined in another file (or at another line) reuses the module
    already loaded in this process; the file on disk is still named by its full text.
    """
    if text.startswith(ORIGIN_PREFIX):
        text = text.split("\n", 1)[1]
    return modules.content_hash(text)


def module_source(origin: str, chain, options: Options, fingerprints: list, imports: list,
                  namespace: dict, body: str) -> str:
    """The full text of a module: its header (origin, transforms, backend and versions,
    the `fingerprints` lines, the runtime-sources line when `namespace` holds secant's
    helpers), its sorted `imports`, the backend's decorator and `body`."""
    imports = list(imports)
    decorator = options.decorator(holds_gil="numba.objmode(" in body)
    decorator = _inlined(decorator) if options.inline else decorator
    if decorator:
        imports.append("import numba")
    header = [
        f"{ORIGIN_PREFIX}{origin}",
        f"# transforms: {' | '.join(chain) or '(none)'}",
        f"# backend: {options.backend}; secant {VERSION}, numba {numba.__version__}, "
        f"numpy {np.__version__}{_optimization_note(options)}{_bounds_note(options)}",
        *fingerprints,
        *_runtime_line(namespace.values()),
    ]
    text = "\n".join(header) + "\n" + "\n".join(sorted(set(imports))) + "\n\n\n"
    return text + (decorator + "\n" if decorator else "") + body


def _inlined(decorator: str | None) -> str | None:
    """`decorator` with `inline='always'`: Numba then types and lowers the function inside
    its caller instead of compiling, optimizing and emitting machine code for it on its own
    and then again as part of the caller (what a separate dispatcher costs)."""
    if decorator is None or not decorator.startswith("@numba.njit"):
        return decorator
    if decorator.endswith(")"):
        return decorator[:-1] + ", inline='always')"
    return decorator + "(inline='always')"


def _optimization_note(options: Options) -> str:
    """Optimization levels that are not the defaults (Numba's, and secant's for generated
    code, `numba_opt_level`): Numba's disk cache does not tell levels apart, so code
    compiled under NUMBA_OPT=0 or another SECANT_OPT_LEVEL must live in another module."""
    if options.backend == "python":
        return ""
    level = int(numba.config.OPT)
    note = f", NUMBA_OPT={level}" if level != 3 else ""
    if options.backend == "cpu" and numba_opt_level.requested() != numba_opt_level.DEFAULT_LEVEL:
        note += f", {numba_opt_level.ENV}={numba_opt_level.requested()}"
    return note


def _bounds_note(options: Options) -> str:
    """Modules compiled without index checks say so: the text, and so the cache key, differ
    even where the function has no index to check."""
    return ", boundscheck=False" if options.backend == "cpu" and not options.boundscheck else ""


def _runtime_line(values) -> list[str]:
    """A header line hashing secant's sources when the module calls secant's runtime.

    Numba caches what a runtime helper compiled to under the generated module's name, so
    an edit to secant's own sources must give the module a new name.
    """
    uses_runtime = any((getattr(v, "__module__", None) or "").partition(".")[0]
                       in SECANT_PACKAGES for v in values)
    return [f"# secant runtime sources: {secant_sources_hash()}"] if uses_runtime else []


def import_line(name: str, module: types.ModuleType) -> str:
    """The line that binds `module` to `name` in a generated module."""
    real = module.__name__
    if real == name:
        return f"import {real}"
    if "." in real:
        parent, _, leaf = real.rpartition(".")
        if leaf == name:
            return f"from {parent} import {leaf}"
    return f"import {real} as {name}"


def is_library_name(module_name: str | None) -> bool:
    """Whether a module's name (a module's `__name__`, a function's or class's
    `__module__`) belongs to NumPy, Numba, secant itself, ...: not to the user."""
    return (module_name or "").partition(".")[0] in _LIBRARY_ROOTS


def is_library_module(module: types.ModuleType) -> bool:
    """A module of NumPy, Numba, secant itself, ...: its values change with its version
    (in every header), not with the user's edits."""
    return is_library_name(module.__name__)


def is_user_function(value) -> bool:
    """A Python function with source that belongs to the user, not to a library; or such a
    function bound to an object of the user's (`self.hidden` in a method)."""
    if inspect.ismethod(value) and not isinstance(value.__self__, type) and \
            not is_library_name(type(value.__self__).__module__):
        value = value.__func__
    return inspect.isfunction(value) and not is_library_name(value.__module__)


def fingerprint(value) -> str:
    """A stable description of a plain value, equal across processes where possible."""
    if value is None or isinstance(value, (bool, int, float, complex, str, bytes)):
        return f"{type(value).__name__} {value!r}"
    if isinstance(value, tuple) and all(isinstance(v, (bool, int, float, str)) for v in value):
        return f"tuple {value!r}"
    if isinstance(value, np.ndarray):
        digest = hashlib.sha256(np.ascontiguousarray(value).tobytes()).hexdigest()[:32]
        return f"array {value.dtype} {value.shape} {digest}"
    if isinstance(value, (np.generic, np.dtype)):
        return f"{type(value).__name__} {value!r}"
    if isinstance(value, type) or callable(value):
        module = getattr(value, "__module__", None) or type(value).__module__
        qualname = getattr(value, "__qualname__", None) or getattr(value, "__name__", None)
        if qualname:
            return f"object {module}.{qualname}"
    return f"object {type(value).__module__}.{type(value).__qualname__} at {id(value):#x}"
