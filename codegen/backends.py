"""Compile backends: a `Function` in, a callable out.

`python` loads the generated module as plain Python; `cpu` decorates the generated
function with `numba.njit(...)` and gives it secant's sealed disk cache in the cache
directory (`cache_numba`), not Numba's own `cache=True`. Before a module is written,
every value of its environment is *materialized* for the backend: a Function or
secant-wrapped object is compiled first (recursively, with the same backend), a user's
Python helper is parsed and compiled the same way, modules become `import` lines, and
everything else is bound in the module's namespace. Each dependency leaves a fingerprint
line in the header, so the module text - and with it the file name and Numba's on-disk
cache - changes whenever anything the function reaches changes; a module that calls
secant's runtime helpers also carries a hash of secant's own sources, since Numba's cache
holds what those compiled to. Within a process, a module is reused for any function
whose text differs only in the origin line (an identical function redefined).
Compiles are serialized by one re-entrant lock, so threads making first calls at once
compile each module once; the recursion guard is per thread.
"""
from __future__ import annotations

import builtins
import dataclasses
import functools
import hashlib
import inspect
import threading
import types
from pathlib import Path
from typing import Any, Callable

import gast
import numba
import numpy as np

from transformer import bounds, freshness, lowering
from transformer.bound_calls import bind_calls
from transformer.errors import TransformError
from transformer.function import Function
from transformer.names import free_names

from . import cache_numba, compile_log, emit, modules

VERSION = "0.1.0"
BACKENDS = ("python", "cpu", "cuda")
ORIGIN_PREFIX = "# secant: generated from "
_LIBRARY_ROOTS = {"numpy", "scipy", "numba", "math", "builtins", "transformer", "codegen",
                  "jax", "jaxlib", "autograd", "cmath", "operator", "functools"}
_SECANT_ROOTS = ("codegen", "transformer")


@dataclasses.dataclass(frozen=True)
class Options:
    """Everything besides the source that changes the compiled result."""

    backend: str = "cpu"
    parallel: bool = False
    fastmath: bool = False
    boundscheck: bool = True     # cpu: every index proved or checked (transformer.bounds)

    def decorator(self) -> str | None:
        if self.backend != "cpu":
            return None
        flags = []          # no cache=True: secant attaches its own sealed disk cache
        if self.parallel:
            flags.append("parallel=True")
        if self.fastmath:
            flags.append("fastmath=True")
        return f"@numba.njit({', '.join(flags)})" if flags else "@numba.njit"


@dataclasses.dataclass
class Compiled:
    """A loaded function with the module text and file it came from."""

    function: Callable
    text: str
    path: str
    key: str


class CacheStats:
    """Process-wide counters: how often a generated module was reused or built."""

    def __init__(self):
        self.hits = 0
        self.misses = 0


STATS = CacheStats()
_loaded: dict[str, Compiled] = {}
_compile_lock = threading.RLock()
_guard = threading.local()          # ids of the Functions this thread is compiling


@compile_log.timed
def compile_function(fn: Function, options: Options) -> Compiled:
    """Compile `fn` for `options.backend`; equal content is compiled once per process."""
    if options.backend not in ("python", "cpu"):
        raise TransformError(f"unknown backend {options.backend!r}",
                             hint="use backend='cpu' or backend='python'")
    with _compile_lock:
        in_progress = _guard.__dict__.setdefault("ids", set())
        if id(fn) in in_progress:
            raise fn.origin.error(fn.node, f"{fn.name} calls itself (recursion) - not "
                                  "supported", hint="rewrite the recursion as a loop")
        in_progress.add(id(fn))
        try:
            text, namespace = module_text(fn, options)
        finally:
            in_progress.discard(id(fn))
        key = reuse_key(text)
        if key in _loaded:
            STATS.hits += 1
            return _loaded[key]
        STATS.misses += 1
        module = modules.load_module(text, namespace)
        function = getattr(module, fn.name)
        root = getattr(module, modules.CACHE_ROOT_ATTRIBUTE)
        if options.backend == "cpu" and root is not None:
            cache_numba.enable(function, root, stamp=module.__name__)
            cache_numba.enable_runtime_helpers(root)
        compiled = Compiled(function, text, module.__file__, key)
        _loaded[key] = compiled
        return compiled


def reuse_key(text: str) -> str:
    """The hash of what a module does: its text without the origin line.

    An identical function defined in another file (or at another line) reuses the module
    already loaded in this process; the file on disk is still named by its full text.
    """
    if text.startswith(ORIGIN_PREFIX):
        text = text.split("\n", 1)[1]
    return modules.content_hash(text)


def module_text(fn: Function, options: Options) -> tuple[str, dict]:
    """The full text of `fn`'s module for `options`, and the namespace to bind."""
    if options.backend == "cpu":
        fn = bind_calls(lowering.lower_for_numba(fn))   # Numba misbinds keyword-only ones
        if options.boundscheck:
            fn = bounds.check_indices(fn)
    node = fn.node
    imports, namespace, fingerprints = [], {}, []
    # Only the top function is parallel: a parallel helper nested inside a parallel
    # caller gains nothing and trips Numba's parfor passes.
    dependency_options = dataclasses.replace(options, parallel=False)
    for name in sorted(free_names(node)):
        value = fn.env[name]
        if isinstance(value, types.ModuleType):
            imports.append(_import_line(name, value))
            continue
        if getattr(builtins, name, None) is value:   # available in every module
            continue
        materialized, fingerprint = _materialize(value, dependency_options)
        namespace[name] = materialized
        fingerprints.append(f"# uses {name}: {fingerprint}")
    fingerprints += [f"# reads {path}: {print_}" for path, print_ in _module_reads(node, fn.env)]
    decorator = options.decorator()
    if decorator:
        imports.append("import numba")
    body = emit.to_source(node)
    header = [
        f"{ORIGIN_PREFIX}{fn.origin.describe()}",
        f"# transforms: {' | '.join(fn.chain) or '(none)'}",
        f"# backend: {options.backend}; secant {VERSION}, numba {numba.__version__}, "
        f"numpy {np.__version__}{_optimization_note(options)}{_bounds_note(options)}",
        *fingerprints,
        *_runtime_line(namespace.values()),
    ]
    text = "\n".join(header) + "\n" + "\n".join(sorted(set(imports))) + "\n\n\n"
    text += (decorator + "\n" if decorator else "") + body
    return text, namespace


def _optimization_note(options: Options) -> str:
    """Numba's optimization level when it is not the default: Numba's disk cache does not
    tell levels apart, so code compiled under NUMBA_OPT=0 must live in another module."""
    level = int(numba.config.OPT)
    return f", NUMBA_OPT={level}" if options.backend != "python" and level != 3 else ""


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
                       in _SECANT_ROOTS for v in values)
    return [f"# secant runtime sources: {secant_sources_hash()}"] if uses_runtime else []


@functools.lru_cache(maxsize=None)
def secant_sources_hash() -> str:
    """One hash of every Python source file of secant's own packages."""
    digest = hashlib.sha256()
    for root in _SECANT_ROOTS:
        package = Path(__file__).resolve().parent.parent / root
        for path in sorted(package.rglob("*.py")):
            digest.update(path.relative_to(package.parent).as_posix().encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def _import_line(name: str, module: types.ModuleType) -> str:
    real = module.__name__
    if real == name:
        return f"import {real}"
    if "." in real:
        parent, _, leaf = real.rpartition(".")
        if leaf == name:
            return f"from {parent} import {leaf}"
    return f"import {real} as {name}"


def _module_reads(node, env) -> list[tuple[str, str]]:
    """(`cfg.SCALE`, fingerprint) for each value read through a user's module.

    The module is imported by the generated code, not bound, so without these lines an
    edit to cfg.py or helpers.py would leave the module text - and Numba's cache, which
    froze the value it read - unchanged.
    """
    reads = {}
    for sub in gast.walk(node):
        if not isinstance(sub, gast.Attribute):
            continue
        module, path = _module_path(sub.value, env)
        if module is None or is_library_module(module) or not hasattr(module, sub.attr):
            continue
        value = getattr(module, sub.attr)
        if not isinstance(value, types.ModuleType):
            reads[f"{path}.{sub.attr}"] = _read_fingerprint(value)
    return sorted(reads.items())


def _module_path(expr, env) -> tuple[types.ModuleType | None, str]:
    """The module a Name or dotted path of modules stands for, and its text."""
    if isinstance(expr, gast.Name):
        value, path = env.get(expr.id), expr.id
    elif isinstance(expr, gast.Attribute):
        base, path = _module_path(expr.value, env)
        value = getattr(base, expr.attr, None) if base is not None else None
        path = f"{path}.{expr.attr}"
    else:
        return None, ""
    return (value, path) if isinstance(value, types.ModuleType) else (None, "")


def _read_fingerprint(value) -> str:
    if isinstance(value, numba.core.dispatcher.Dispatcher):
        return "numba " + function_fingerprint(value.py_func)
    if is_user_function(value):
        return "python " + function_fingerprint(value)
    return fingerprint(value)


def is_library_module(module: types.ModuleType) -> bool:
    """A module of NumPy, Numba, secant itself, ...: its values change with its version
    (in every header), not with the user's edits."""
    return (module.__name__ or "").partition(".")[0] in _LIBRARY_ROOTS


def _materialize(value, options: Options) -> tuple[Any, str]:
    """The object to bind for `value` under `options`, and its fingerprint."""
    if isinstance(value, Function):
        compiled = compile_function(value, options)
        return compiled.function, "generated " + compiled.key[:32]
    if hasattr(value, "__secant_function__"):
        compiled = compile_function(value.__secant_function__(), options)
        return compiled.function, "generated " + compiled.key[:32]
    if isinstance(value, numba.core.dispatcher.Dispatcher):
        if options.backend == "cpu":
            return value, "numba " + function_fingerprint(value.py_func)
        return value.py_func, "python " + function_fingerprint(value.py_func)
    if is_user_function(value):
        from transformer.frontend import parse
        compiled = compile_function(parse(value), options)
        return compiled.function, "generated " + compiled.key[:32]
    return value, fingerprint(value)


def is_user_function(value) -> bool:
    """A Python function with source that belongs to the user, not to a library."""
    if not inspect.isfunction(value):
        return False
    root = (value.__module__ or "").partition(".")[0]
    return root not in _LIBRARY_ROOTS


def function_fingerprint(fn) -> str:
    """A hash of a plain Python function (an njit kernel's `py_func`) and of everything it
    reads: its source, defaults and closure, the globals its code names - the functions
    among them followed the same way - and values read through the user's modules.

    Numba's cache keeps what a kernel compiled to, callees inlined, under the generated
    module's name; an edit anywhere below the kernel must change that name.
    """
    digest = hashlib.sha256()
    _feed_function(fn, digest, set())
    return digest.hexdigest()[:32]


def _feed_function(fn, digest, seen: set) -> None:
    if id(fn) in seen:
        return
    seen.add(id(fn))
    try:
        digest.update(inspect.getsource(fn.__code__).encode())
    except (OSError, TypeError):
        digest.update(fn.__code__.co_code)
    for value in (fn.__defaults__ or ()) + tuple((fn.__kwdefaults__ or {}).values()):
        digest.update(_value_fingerprint(value, digest, seen).encode())
    names = _code_names(fn.__code__)
    cells = zip(fn.__code__.co_freevars, fn.__closure__ or ())
    reads = [(n, freshness.cell_contents(c)) for n, c in cells
             if freshness.cell_contents(c) is not freshness.missing()]
    reads += [(n, fn.__globals__[n]) for n in sorted(names) if n in fn.__globals__]
    for name, value in reads:
        digest.update(name.encode())
        if isinstance(value, types.ModuleType):
            if not is_library_module(value):
                for attr in sorted(names & set(vars(value))):
                    digest.update(f"{name}.{attr}".encode())
                    digest.update(_value_fingerprint(getattr(value, attr), digest,
                                                     seen).encode())
            continue
        digest.update(_value_fingerprint(value, digest, seen).encode())


def _value_fingerprint(value, digest, seen: set) -> str:
    """`fingerprint(value)`; a function (or kernel) is fed to `digest` instead."""
    if isinstance(value, numba.core.dispatcher.Dispatcher):
        value = value.py_func
    if is_user_function(value):
        _feed_function(value, digest, seen)
        return "function"
    if isinstance(value, types.ModuleType):
        return f"module {value.__name__}"
    return fingerprint(value)


def _code_names(code) -> set:
    """Global and attribute names used by `code` and the code nested in it."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _code_names(const)
    return names


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
