"""`jit`: compile a function (or any transformed function) with a backend.

The compiled code for one call is chosen by its *specialization*: the values of static
arguments (folded into the source as constants), the layout of container arguments
(dicts passed as tuples) and, on the cpu backend, the dtype, ndim and last-axis length
(up to 4) of array arguments, so that short vectors become scalars (`scalarize`).
Each specialization is compiled once; the module behind it is content-addressed on
disk, so an identical function defined again - or the same program in a new process -
reuses it. `cache_info()` reports hits, misses and why the last
compile happened.

On the cpu backend a NumPy array the function (or anything it calls) reads from a module
global, a closure or through a user's module (`cfg.A`) is not frozen into the compiled
code: it is passed as a hidden argument (`captured_arrays`), read at each call where the
function found it, as Python reads it. So `A = new_array` between calls is seen by the next
call without compiling again when the new array has the same dtype and number of
dimensions (and the same short last axis, see above), and the compiled code goes to the
disk cache; an array of another kind, or another value, makes a new specialization. Writes
into such an array reach the caller's array.

Threads may share a jitted function: concurrent first calls of one specialization
compile it once (a lock per specialization) and all get the result. Each specialization
keeps its compiled code in memory for the life of the function, so a function compiled
for more than `max_specializations` (default 20, or `SECANT_MAX_SPECIALIZATIONS`)
warns once: a static argument that changes every call is the usual cause.
"""
from __future__ import annotations

import dataclasses
import functools
import inspect
import os
import threading
import time
import warnings
from typing import TYPE_CHECKING, Any, Callable, Literal, Sequence, Union, overload

import numba
import numpy as np

from codegen import backends, compile_log
from codegen.backends import Options

from . import (bounds, broadcast_errors, captured_arrays, collector, freshness, materialize,
               numba_errors, tiered)
from .const_lists import lists_as_tuples
from .desugar import methods_to_functions
from .display import ShowsSource, SourceCode
from .errors import TransformError
from .frontend import parse
from .function import Function, binder, positional_parameters, signature
from .function_arguments import is_function
from .index_checks import with_source_line
from .runtime.tapes import located_message
from .numba_dtypes import refuse_argument_dtypes, refuse_numba_dtypes
from .pytree_returns import returned_containers
from .partials import partial_name
from .pytrees import LEAF, all_leaves, flat_function, layout_of, leaves
from .scalarize import scalarize
from .recursion import refuse_recursion
from .specialize import specialize
from .typing import Argnums
from .vector_shapes import argument_key, describe_key


@dataclasses.dataclass(frozen=True)
class CacheInfo:
    hits: int              # calls served by an already compiled specialization
    misses: int            # specializations compiled (or loaded from disk) in this process
    specializations: int
    last_reason: str | None
    disk_hits: int         # Numba signatures loaded from the on-disk cache
    modules_reused: int    # misses whose generated module was already loaded in-process
    compile_seconds: float = 0.0  # transforming and compiling (not disk loads), in total


if TYPE_CHECKING:
    from .cuda.jitted import CudaJitted

_Names = Union[str, Sequence[str]]


# jit(f) returns a Jitted, or a CudaJitted for backend="cuda"; jit(**options) a decorator
# (a literal "cuda" matches the first of each pair, which mypy calls an overlap)
@overload
def jit(fun: Callable, *,  # type: ignore[overload-overlap]
        static_argnums: Argnums = ..., static_argnames: _Names = ...,
        backend: Literal["cuda"], parallel: bool = ..., fastmath: bool = ...,
        boundscheck: bool = ..., debug_nans: bool | None = ...,
        max_specializations: int | None = ...) -> CudaJitted: ...
@overload
def jit(fun: Callable, *, static_argnums: Argnums = ..., static_argnames: _Names = ...,
        backend: str = ..., parallel: bool = ..., fastmath: bool = ...,
        boundscheck: bool = ..., debug_nans: bool | None = ...,
        max_specializations: int | None = ..., tiered: bool | None = ...) -> Jitted: ...
@overload
def jit(fun: None = None, *,  # type: ignore[overload-overlap]
        static_argnums: Argnums = ..., static_argnames: _Names = ...,
        backend: Literal["cuda"], parallel: bool = ...,
        fastmath: bool = ..., boundscheck: bool = ..., debug_nans: bool | None = ...,
        max_specializations: int | None = ...) -> Callable[[Callable], CudaJitted]: ...
@overload
def jit(fun: None = None, *, static_argnums: Argnums = ..., static_argnames: _Names = ...,
        backend: str = ..., parallel: bool = ...,
        fastmath: bool = ..., boundscheck: bool = ..., debug_nans: bool | None = ...,
        max_specializations: int | None = ..., tiered: bool | None = ...
        ) -> Callable[[Callable], Jitted]: ...
def jit(fun: Callable | None = None, *, static_argnums: Argnums = (),
        static_argnames: _Names = (), backend: str = "cpu", parallel: bool = False,
        fastmath: bool = False, boundscheck: bool = True, debug_nans: bool | None = None,
        max_specializations: int | None = None, tiered: bool | None = None,
        ) -> Jitted | CudaJitted | Callable[[Callable], Any]:
    """Compile `fun`; usable as `@jit`, `@jit(static_argnums=1)` or `jit(grad(f))`.

    On the cpu backend every index is proved in bounds or checked, raising `IndexError`
    at the user's line (`transformer.bounds`); on backend="cuda" a failed check sets an
    error flag and the call raises the same error after the launch
    (`transformer.cuda.checks`). `boundscheck=False` leaves indices unchecked, as Numba
    does (an out-of-bounds index then reads or writes other memory).
    `debug_nans=True` checks every computed value and raises FloatingPointError at the
    user's line for the first NaN or infinity, forward or reverse sweep
    (`transformer.nan_checks`); None: `config.update("jax_debug_nans", ...)`, else the
    environment variable SECANT_DEBUG_NANS, read when a specialization is compiled.
    `max_specializations`: warn once when more are compiled (None: the environment
    variable SECANT_MAX_SPECIALIZATIONS, else 20). `tiered=True` (None: the environment
    variable SECANT_TIERED) runs a new specialization's first calls as NumPy while
    another process compiles it (`transformer.tiered`)."""
    if fun is None:
        return functools.partial(jit, static_argnums=static_argnums,
                                 static_argnames=static_argnames, backend=backend,
                                 parallel=parallel, fastmath=fastmath,
                                 boundscheck=boundscheck, debug_nans=debug_nans,
                                 max_specializations=max_specializations, tiered=tiered)
    if backend not in backends.BACKENDS:
        raise ValueError(f"unknown backend {backend!r}; choose from {backends.BACKENDS}")
    if getattr(fun, "__secant_compiled__", False):     # pmap(f) runs compiled stages
        return fun
    if backend == "cuda":
        if tiered:
            raise ValueError("tiered=True is for the cpu backend: a CUDA kernel has no "
                             "NumPy tier to run while it compiles")
        if debug_nans:
            raise ValueError("debug_nans is not supported on backend='cuda': check on the "
                             "cpu backend (or backend='python') with the same inputs")
        from .cuda.jitted import cuda_jit
        return cuda_jit(fun, static_argnums=static_argnums,
                        static_argnames=static_argnames, fastmath=fastmath,
                        boundscheck=boundscheck)
    jitted = Jitted(fun, static_argnums, static_argnames,
                    Options(backend=backend, parallel=parallel, fastmath=fastmath,
                            boundscheck=boundscheck, debug_nans=debug_nans))
    jitted.max_specializations = _specialization_limit(max_specializations)
    jitted.tiered = tiered
    return jitted


DEFAULT_MAX_SPECIALIZATIONS = 20


def _specialization_limit(value) -> int:
    """`value`, else SECANT_MAX_SPECIALIZATIONS, else the default; a positive int."""
    source = "max_specializations"
    if value is None:
        value = os.environ.get("SECANT_MAX_SPECIALIZATIONS") or DEFAULT_MAX_SPECIALIZATIONS
        source = "SECANT_MAX_SPECIALIZATIONS"
    try:
        limit = int(value)
    except (TypeError, ValueError):
        limit = 0
    if isinstance(value, bool) or limit < 1 or str(limit) != str(value).strip():
        raise ValueError(f"{source} must be a positive integer, got {value!r}")
    return limit


def _as_tuple(value) -> tuple:
    if value is None:
        return ()
    return (value,) if isinstance(value, (int, str)) else tuple(value)


class Jitted(ShowsSource):
    """A compiled function; call it like the original."""

    max_specializations = DEFAULT_MAX_SPECIALIZATIONS
    tiered: bool | None = None      # transformer.tiered: None reads SECANT_TIERED

    def __init__(self, fun, static_argnums, static_argnames, options: Options):
        self.fun = fun
        self.options = options
        self._lock = threading.Lock()          # guards _spec_locks
        self._parse_lock = threading.RLock()   # the base Function is built once
        self._spec_locks: dict = {}
        self._variants: dict = {}              # how a call passes arguments -> Jitted
        self._warned_specializations = False
        self._static_argnums = _as_tuple(static_argnums)
        self._static_argnames = _as_tuple(static_argnames)
        self._specs: dict = {}
        self._hits = self._misses = self._reused = 0
        self._compile_seconds = self._parse_seconds = 0.0
        self._last_reason = None
        self._base_fn: Function | None = None
        self._read = freshness.Bindings()      # what parsing and compiling read; renewed
        self._cpu = options.backend == "cpu"
        functools.update_wrapper(self, fun, updated=())
        if not hasattr(self, "__name__"):          # a functools.partial has none
            self.__name__ = partial_name(fun)

    # ------------------------------------------------------------------ protocol
    def __secant_function__(self) -> Function:
        # called from a transformed function, a static argument is an ordinary one: the
        # caller's own transformation (or jit) specializes the whole program
        return self.base_function

    @property
    def base_function(self) -> Function:
        if self._base_fn is None:
            with self._parse_lock:
                if self._base_fn is None:
                    started = time.perf_counter()
                    with freshness.recording(self._read):
                        self._base_fn = parse(self.fun)
                    if not compile_log.inside_compile():    # else that compile counts it
                        self._parse_seconds = time.perf_counter() - started
        return self._base_fn

    def _reread_if_rebound(self) -> bool:
        """Before compiling a new specialization: parse again if a global, closure value,
        module attribute or default read so far was rebound (as jax.jit retraces with the
        values of the moment). Compiled specializations keep the values they were built
        with. Whether anything was forgotten."""
        with self._parse_lock:
            if self._base_fn is None or self._read.current():
                return False
            self._base_fn = None
            self._read = freshness.Bindings()
            for cached in ("signature", "_binder", "_arity", "static_names"):
                self.__dict__.pop(cached, None)
            return True

    @property
    def _binding_function(self) -> Function:
        """The Function whose parameters calls bind to: a transformation that keeps its
        input's parameters names it (its own Function may exist only for leaves)."""
        hook = getattr(self.fun, "__secant_signature_function__", None)
        return hook() if hook is not None else self.base_function

    @functools.cached_property
    def signature(self):
        return signature(self._binding_function)

    @functools.cached_property
    def _binder(self):
        return binder(self._binding_function)

    @functools.cached_property
    def _arity(self) -> int:
        """The number of parameters when a call passing each one positionally needs no
        binding (no keyword-only parameter, no static one); -1 otherwise."""
        kinds = {p.kind for p in self.signature.parameters.values()}
        plain = kinds <= {inspect.Parameter.POSITIONAL_ONLY,
                          inspect.Parameter.POSITIONAL_OR_KEYWORD}
        return len(self.signature.parameters) if plain and not self.static_names else -1

    @functools.cached_property
    def static_names(self) -> frozenset:
        names = list(self.signature.parameters)
        for i in self._static_argnums:
            if not -len(names) <= i < len(names):
                raise ValueError(f"static_argnums {i} is out of range for {self.__name__}"
                                 f"{self.signature}")
        return frozenset([names[i] for i in self._static_argnums] +
                         list(self._static_argnames))

    # ------------------------------------------------------------------ calling
    def __call__(self, *args, **kwargs):
        variant = call_variant(self, args, kwargs)
        if variant is not self:        # e.g. vmap maps keyword arguments: other source
            return variant(*args, **kwargs)
        spec_key, dynamic, layouts, static, compiled, hidden = self._specialized(args, kwargs)
        if compiled is None:
            return self._first_call(spec_key, dynamic, layouts, static)
        self._hits += 1
        return self._run(compiled, dynamic, hidden)

    def _specialized(self, args, kwargs) -> tuple:
        """(key, dynamic, layouts, static, compiled or None, hidden); refuses dtypes."""
        spec_key, dynamic, layouts, static = self._bind(args, kwargs)
        compiled, hidden = self._lookup(spec_key)
        if compiled is None and self._reread_if_rebound():
            spec_key, dynamic, layouts, static = self._bind(args, kwargs)
            compiled, hidden = self._lookup(spec_key)
        if compiled is None and self.options.backend != "python":
            names = [n for n in self.signature.parameters
                     if n not in self.static_names and n not in static]
            refuse_argument_dtypes(self._binding_function, self.__name__, names, dynamic)
        return spec_key, dynamic, layouts, static, compiled, hidden

    def _lookup(self, spec_key) -> tuple:
        """(compiled specialization or None, the values of its hidden arrays now).

        A specialization whose hidden array (`captured_arrays`) is now bound to a value
        of another kind (dtype, dimensions, short last axis, or not an array) is dropped:
        its function is transformed again with the new value, as a new specialization."""
        compiled = self._specs.get(spec_key)
        if compiled is None or not compiled[2]:
            return compiled, ()
        hidden = _hidden_values(compiled[2])
        if hidden is None:
            self._specs.pop(spec_key, None)
            return None, ()
        return compiled, hidden

    def _for_call_variant(self, key, target) -> Jitted:
        """The jitted function for `target`, the transformation as this call uses it."""
        with self._lock:
            jitted = self._variants.get(key)
            if jitted is None:
                jitted = self._variants[key] = Jitted(
                    target, self._static_argnums, self._static_argnames, self.options)
                jitted.max_specializations = self.max_specializations
                jitted.tiered = self.tiered
        return jitted

    def _first_call(self, spec_key, dynamic, layouts, static):
        """Compile a new specialization and run it: one timed compile, whose Numba part
        happens in the first run (see codegen.compile_log), with the garbage collector
        paused (`collector`)."""
        with collector.paused(), \
                compile_log.compiling(self.__name__, self.options.backend) as timing:
            with timing.transforming():
                compiled = self._compile_once(spec_key, static, layouts)
            # parsing and transforming `fun` happened once, before the first compile
            timing.secant_seconds += self._parse_seconds
            self._parse_seconds = 0.0
            hidden = _hidden_now(self, compiled)
            compiled = _tiered_form(self, spec_key, compiled, dynamic, hidden)
            with timing.running():
                result = self._run(compiled, dynamic, hidden)
        self._compile_seconds += timing.seconds
        return result

    def _run(self, compiled, dynamic, hidden=()):
        function, keys, _ = compiled
        try:
            result = function(*dynamic, *hidden)
        except numba.core.errors.TypingError as exc:
            raise self._typing_error(exc, dynamic, function) from None
        except (IndexError, ValueError) as exc:
            located = with_source_line(exc) if isinstance(exc, IndexError) else \
                located_message(exc)
            if located is exc and isinstance(exc, ValueError):
                located = broadcast_errors.located(exc, function, (*dynamic, *hidden))
            if located is exc:
                raise
            raise located from None
        except Exception as exc:
            if isinstance(exc, AssertionError):     # a parallel array expression's sizes
                located = broadcast_errors.located(exc, function, (*dynamic, *hidden))
                if located is not exc:
                    raise located from None
            failure = numba_errors.unboxable_result(self.__name__, exc, self.base_function) \
                or self._internal_failure(exc, dynamic, function)
            if failure is None:
                raise
            raise failure from None
        if keys is not None:                # rebuilds returned containers (returned_containers)
            return keys(result)
        return result

    def _bind(self, args, kwargs):
        """(specialization key, dynamic leaves, layouts, static values).

        `layouts` (one per parameter) is None when no argument is a container; otherwise
        the dynamic arguments are their leaves (`pytrees`: the compiled code is the flat
        form). The key's last item keeps, for the cpu backend, the dtype, ndim and short
        last axis of each dynamic leaf (`vector_shapes.argument_key`): `scalarize` turns
        vectors of a length known this way into scalars.
        """
        if not kwargs and len(args) == self._arity and _all_leaves(args):
            return (len(args), self._describe(args)), args, None, {}
        values = self._binder(*args, **kwargs)      # Python's binding, defaults filled in
        static, dynamic, layouts = {}, [], []
        for name, value in zip(self._binding_function.params, values):
            # a function argument is static without being declared so: compiled code
            # cannot take one, and each function is its own specialization (jax.jit
            # needs static_argnums for it)
            if name in self.static_names or is_function(value):
                try:
                    hash(value)
                except TypeError:
                    raise TypeError(f"static argument {name!r} of {self.__name__} must be "
                                    f"hashable, got {type(value).__name__}") from None
                static[name] = value
                layouts.append(LEAF)
                continue
            layouts.append(layout_of(value))
            dynamic.append(value)
        layouts = None if all_leaves(layouts) else tuple(layouts)
        if layouts is not None:
            dynamic = leaves(dynamic)
        key = (tuple(sorted((k, type(v).__name__, v) for k, v in static.items())),
               layouts, self._describe(dynamic))
        return key, dynamic, layouts, static

    def _describe(self, dynamic) -> tuple:
        return argument_key(dynamic) if self._cpu else ()

    def _shapes(self, fn: Function, static, spec_key) -> dict:
        """Parameter name -> shape class, for the dynamic parameters of `fn`."""
        names = [n for n in fn.params if n not in static]
        return {n: describe_key(item) for n, item in zip(names, spec_key[-1])}

    def _compile_once(self, spec_key, static, layouts):
        """The compiled specialization, built by exactly one of the threads asking."""
        with self._lock:
            lock = self._spec_locks.setdefault(spec_key, threading.Lock())
        with lock:
            compiled = self._specs.get(spec_key)
            if compiled is not None:            # another thread compiled it meanwhile
                self._hits += 1
                return compiled
            compiled = self._compile(spec_key, static, layouts)
        self._check_specialization_count()
        return compiled

    def _check_specialization_count(self):
        count = len(self._specs)
        if count <= self.max_specializations or self._warned_specializations:
            return
        self._warned_specializations = True
        warnings.warn(
            f"{self.__name__} has been compiled for {count} specializations (more than "
            f"{self.max_specializations}; the last: {self._last_reason}), and each keeps its "
            "compiled code in memory. A static argument or array shape that changes on "
            "every call is the usual cause: make it dynamic, or raise the limit with "
            "jit(..., max_specializations=N) or SECANT_MAX_SPECIALIZATIONS",
            RuntimeWarning, stacklevel=5)   # the user's call: __call__, _first_call, _compile_once

    def _compile(self, spec_key, static, layouts):
        before = backends.STATS.hits
        with freshness.recording(self._read):   # what building reads: where hidden arrays live
            fn, keys = self._transformed(spec_key, static, layouts)
            compiled = materialize.compile_function(fn, self.options)
        self._reused += backends.STATS.hits - before
        self._misses += 1
        self._last_reason = self._reason(static, layouts)
        readers = tuple((captured_arrays.reader(value, self._read), captured_arrays.kind(value))
                        for value in compiled.hidden)
        self._specs[spec_key] = (compiled.function, keys, readers)
        self._last_compiled, self._last_function = compiled, fn
        return self._specs[spec_key]

    def _transformed(self, spec_key, static, layouts) -> tuple:
        """(the Function compiled for this specialization, the rebuild of its result)."""
        fn, rebuild = self._function_for(layouts)
        refuse_recursion(fn)
        if static:
            fn = specialize(fn, static)
        if self.options.backend == "cpu":
            refuse_numba_dtypes(fn)
        fn = methods_to_functions(positional_parameters(fn))
        keys = None
        if self.options.backend == "cpu":
            fn, keys = returned_containers(lists_as_tuples(fn, returns=True))
            if rebuild is not None:
                keys = _then(keys, rebuild)
        elif rebuild is not None:
            keys = rebuild
        fn = fn.replace(chain=fn.chain + (self._label(static),))
        if self.options.backend == "cpu":
            shapes = self._shapes(fn, static, spec_key)
            fn = bounds.with_known_lengths(scalarize(fn, shapes), shapes, [])
        return fn, keys

    def _function_for(self, layouts):
        """(Function, rebuild of its result or None): the flat form for container
        arguments (`pytrees.flat_function`), or for a target whose outputs need it (an
        aux dict), else the function itself."""
        if layouts is None and getattr(self.fun, "__secant_rebuilds_outputs__", False):
            layouts = (LEAF,) * len(self.signature.parameters)
        if layouts is None:
            return self.base_function, None
        flat = flat_function(self.fun, layouts, lambda _: self.base_function, tuples=True)
        return flat.function, flat.rebuild

    def _label(self, static) -> str:
        parts = [f"backend={self.options.backend!r}"]
        if self.options.parallel:
            parts.append("parallel=True")
        if self.options.fastmath:
            parts.append("fastmath=True")
        if not self.options.boundscheck:
            parts.append("boundscheck=False")
        if self.options.debug_nans is not None:
            parts.append(f"debug_nans={self.options.debug_nans}")
        parts += [f"{k}={v!r}" for k, v in sorted(static.items())]
        return f"jit({', '.join(parts)})"

    def _reason(self, static, layouts) -> str:
        if not self._specs:
            return "first call"
        if static:
            values = ", ".join(f"{k}={v!r}" for k, v in sorted(static.items()))
            return f"new specialization: static {values}"
        return "new argument structure"

    def _typing_error(self, exc, dynamic, function) -> TransformError:
        return numba_errors.typing_error(self.__name__, self._leaf_names(dynamic, function),
                                         exc, dynamic, function)

    def _internal_failure(self, exc, dynamic, function) -> TransformError | None:
        return numba_errors.internal_failure(
            self.__name__, self._leaf_names(dynamic, function), exc, dynamic, function)

    def _leaf_names(self, dynamic, function) -> list:
        names = [n for n in self.signature.parameters if n not in self.static_names]
        if len(names) != len(dynamic):      # container arguments: name their leaves
            flat = getattr(function, "py_func", None)
            names = list(inspect.signature(flat).parameters) if flat else names
        return names

    # ------------------------------------------------------------------ inspecting
    def cache_info(self) -> CacheInfo:
        disk = 0
        for function, _, _ in self._specs.values():
            stats = getattr(function, "stats", None)
            if stats is not None:
                disk += sum(stats.cache_hits.values())
        return CacheInfo(self._hits, self._misses, len(self._specs), self._last_reason, disk,
                         self._reused, self._compile_seconds)

    def source(self, *args, **static) -> str:
        """The generated module text for the given static values; with example dynamic
        arguments `args` (in order), the text compiled for arguments shaped like them
        (for containers, the flat form compiled for their layouts)."""
        fn = self.base_function
        if args and not _all_leaves(args):
            dynamic = iter(args)
            layouts = tuple(LEAF if n in static else layout_of(next(dynamic, None))
                            for n in self.signature.parameters)
            fn, _ = self._function_for(layouts)
            args = tuple(leaves(args))
        if static:
            fn = specialize(fn, static)
        fn = methods_to_functions(fn)
        fn = fn.replace(chain=fn.chain + (self._label(static),))
        if args and self.options.backend == "cpu":
            shapes = self._shapes(fn, static, (self._describe(args),))
            fn = bounds.with_known_lengths(scalarize(fn, shapes), shapes)
        text, _ = materialize.module_text(fn, self.options)
        return SourceCode(text)

    def compile_for(self, *args, **kwargs) -> list[str]:
        """Compile the specialization for arguments like `args`/`kwargs` without calling
        it (`secant compile`): on the cpu backend Numba writes the machine code to its
        disk cache, so a later process calling with such arguments loads it. Returns the
        Numba types compiled for."""
        spec_key, dynamic, layouts, static = self._bind(args, kwargs)
        compiled = self._specs.get(spec_key) or self._compile(spec_key, static, layouts)
        function, hidden = compiled[0], _hidden_values(compiled[2]) or ()
        types = tuple(numba.typeof(value) for value in (*dynamic, *hidden))
        if hasattr(function, "compile"):       # a Numba dispatcher (cpu backend)
            try:
                function.compile(types)
            except numba.core.errors.TypingError as exc:
                raise self._typing_error(exc, dynamic, function) from None
        return [str(t) for t in types]

    def __repr__(self):
        return f"<secant.jit {self.__name__} backend={self.options.backend}>"


def call_variant(jitted: Jitted, args, kwargs) -> Jitted:
    """The jitted function a call runs: `jitted`, or the one for the call variant its
    transformation picks for these arguments (after refusing what it refuses)."""
    checker = getattr(jitted.fun, "__secant_check_inputs__", None)
    if checker is None:
        return jitted
    checked = checker(args, kwargs, compiled=True)    # dtypes, axes
    variant = getattr(jitted.fun, "__secant_call_variant__", None)
    found = variant(checked) if variant is not None else None
    return jitted._for_call_variant(*found) if found is not None else jitted


def prepared(jitted: Jitted, args, kwargs) -> tuple:
    """(jitted, function, rebuild or None, dynamic leaves, hidden arrays): what a call
    with these arguments runs, with its module loaded (Numba compiles it on the first
    run) but not run. `transformer.distributed` ships the function's module to other
    processes, runs it there on (dynamic + hidden) and applies `rebuild` here."""
    variant = call_variant(jitted, args, kwargs)
    if variant is not jitted:
        return prepared(variant, args, kwargs)
    spec_key, dynamic, layouts, static, compiled, hidden = jitted._specialized(args, kwargs)
    if compiled is None:
        compiled = jitted._compile_once(spec_key, static, layouts)
        hidden = _hidden_now(jitted, compiled)
    return jitted, compiled[0], compiled[1], tuple(dynamic), tuple(hidden)


def _hidden_now(jitted: Jitted, compiled) -> tuple:
    """The hidden arrays of a specialization just compiled."""
    hidden = _hidden_values(compiled[2]) if compiled[2] else ()
    if hidden is None:      # rebound while compiling: the arrays it was built with
        hidden = tuple(captured_arrays.passed(value) for value in jitted._last_compiled.hidden)
    return hidden


def _tiered_form(jitted: Jitted, spec_key, compiled: tuple, dynamic, hidden) -> tuple:
    """The specialization just compiled, made tiered (`transformer.tiered`) when asked
    and it pays: its entry then calls the NumPy tier until the machine code is ready."""
    if not (jitted._cpu and tiered.enabled(jitted.tiered)):
        return compiled
    if compiled[0] is not jitted._last_compiled.function:   # another thread's compile
        return compiled

    def switched(dispatcher):
        if jitted._specs.get(spec_key, (None,))[0] is tier:
            jitted._specs[spec_key] = (dispatcher,) + compiled[1:]

    tier = tiered.start(jitted._last_function, jitted._last_compiled, tuple(dynamic),
                        tuple(hidden), switched)
    if tier is None:
        return compiled
    jitted._specs[spec_key] = (tier,) + compiled[1:]
    return jitted._specs[spec_key]


# exact types that are never containers: checked first, as the per-call fast path
_PLAIN_TYPES = frozenset({np.ndarray, float, int, bool, complex, np.float64, np.float32,
                          np.int64, np.int32, np.bool_, np.complex128, np.complex64})


def _hidden_values(readers) -> tuple | None:
    """The hidden arrays' values now, read where the function found them; None when one
    is no longer of the kind the code was compiled for."""
    values = tuple([captured_arrays.passed(read()) for read, _ in readers])
    if tuple([captured_arrays.kind(value) for value in values]) != \
            tuple([kind for _, kind in readers]):
        return None
    return values


def _then(first, second):
    """`second` after `first` (either may be None)."""
    if first is None:
        return second
    return lambda result: second(first(result))


def _all_leaves(args) -> bool:
    if all(type(a) in _PLAIN_TYPES for a in args):
        return True
    return not any(isinstance(a, (dict, list, tuple)) or _is_dataclass(a) or is_function(a)
                   for a in args)


def _is_dataclass(value) -> bool:
    return dataclasses.is_dataclass(value) and not isinstance(value, type)
