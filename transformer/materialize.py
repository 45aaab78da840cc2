"""A Function made into the text of its module: the compile path above the backends.

Before a module is written, every value of the Function's environment is *materialized*
for the backend: a Function or secant-wrapped object is compiled first (recursively, with
the same backend), a user's Python helper is parsed and compiled the same way, a Numba
kernel is bound as it is (its Python function on the python backend), modules become
`import` lines, and everything else is bound in the module's namespace. Each dependency,
and each value read through a user's module, leaves a fingerprint line in the header
(`codegen.backends.module_source`), so the text changes whenever anything the function
reaches changes. On the cpu backend the Function is lowered for Numba, its calls bound
and its indices checked first. The recursion guard is per thread; `codegen.backends`
serializes compiles and loads the text.
"""
from __future__ import annotations

import builtins
import dataclasses
import hashlib
import threading
import types
from typing import Any

import gast
import numba

from codegen import backends, compile_log, emit
from codegen.backends import Compiled, Options, fingerprint, is_library_module, is_user_function

from . import bounds, captured_arrays, freshness, lowering, nan_checks, parallel_loops
from .bound_calls import bind_calls
from .desugar import methods_to_functions
from .frontend import parse_callee
from .host_calls import lower_host_calls
from .function import Function, source_lines
from .names import Namer, free_names, stored_and_loaded
from .runtime.alignment import parfor_form
from .nodes import copy_tree, walk
from .syntax import dotted_text

_guard = threading.local()          # ids of the Functions this thread is compiling


@compile_log.timed
def compile_function(fn: Function, options: Options, *, freeze_arrays: bool = False
                     ) -> Compiled:
    """Compile `fn` for `options.backend`; equal content is compiled once per process.

    On the cpu backend the result's `hidden` lists the arrays it takes after its own
    parameters (`captured_arrays`), unless `freeze_arrays`: then they are bound in the
    module as constants, as every value is on the other backends."""
    backends.check_backend(options)
    with backends.COMPILE_LOCK:
        in_progress = _guard.__dict__.setdefault("ids", set())
        if id(fn) in in_progress:
            raise fn.origin.error(fn.node, f"{fn.name} calls itself (recursion) - not "
                                  "supported", hint="rewrite the recursion as a loop")
        in_progress.add(id(fn))
        try:
            text, namespace, hidden = module_parts(fn, options, freeze_arrays)
        finally:
            in_progress.discard(id(fn))
        compiled = backends.load(text, namespace, fn.name, options)
        # the loaded module is shared by every equal text: the arrays are this call's
        return dataclasses.replace(compiled, hidden=hidden) if hidden else compiled


def module_text(fn: Function, options: Options) -> tuple[str, dict]:
    """The full text of `fn`'s module for `options`, and the namespace to bind."""
    text, namespace, _ = module_parts(fn, options)
    return text, namespace


def module_parts(fn: Function, options: Options, freeze_arrays: bool = False
                 ) -> tuple[str, dict, tuple]:
    """`module_text`, and the arrays the function takes hidden (see `compile_function`)."""
    fn = lower_host_calls(fn, options.backend)     # callbacks are never compiled
    if options.backend == "cpu":
        if options.parallel:            # the user's own independent loops as prange
            fn = parallel_loops.parallelize(fn)
        fn = bind_calls(lowering.lower_for_numba(fn))   # Numba misbinds keyword-only ones
        if options.boundscheck:
            fn = bounds.check_indices(fn)
        if options.parallel:
            fn = parallel_loops.serial_where_checked(fn)
    if nan_checks.wanted(options.debug_nans):
        fn = nan_checks.with_nan_checks(fn)
    node, env = fn.node, fn.env
    hide = options.backend == "cpu" and not freeze_arrays
    changed = _changed_containers(node) if hide else set()
    if hide:
        node, env = _module_arrays_as_names(node, env, changed)
    imports, namespace, fingerprints = [], {}, []
    own, callee_arrays = [], {}
    calls_generated = False
    # Only the top function is parallel: a parallel helper nested inside a parallel
    # caller gains nothing and trips Numba's parfors passes. Whether a callee is inlined
    # is its own call count's choice, never inherited from this function's.
    dependency_options = dataclasses.replace(options, parallel=False, inline=False)
    not_called_only = captured_arrays.not_called_only(node)
    call_sites = _call_sites(node)
    for name in sorted(free_names(node)):
        value = env[name]
        if options.parallel:        # forms Numba's parfor pass can read through
            value = parfor_form(value)
        if isinstance(value, types.ModuleType):
            imports.append(backends.import_line(name, value))
            continue
        if getattr(builtins, name, None) is value:   # available in every module
            continue
        if hide and captured_arrays.is_hidden_array(value) and \
                not (isinstance(value, list) and name in changed):
            own.append(name)
            fingerprints.append(f"# takes {name}: {captured_arrays.describe(value)}")
            continue
        freeze = hide and name in not_called_only
        called_once = call_sites.get(name) == 1 and name not in not_called_only
        materialized, fingerprint_, hidden = _materialize(
            value, _dependency_options(dependency_options, options, called_once), freeze)
        if hidden:
            callee_arrays[name] = hidden
        namespace[name] = materialized
        fingerprints.append(f"# uses {name}: {fingerprint_}")
        calls_generated = calls_generated or fingerprint_.startswith(_GENERATED)
    # leaves only (see _dependency_options), and bodies Numba's inliner can read
    if options.inline and (calls_generated or not _inlinable_body(node)):
        options = dataclasses.replace(options, inline=False)
    hidden: tuple = ()
    if own or callee_arrays:
        node, names, hidden = captured_arrays.take_hidden_arrays(node, env, own,
                                                                 callee_arrays)
        fingerprints.append(f"# hidden parameters: {', '.join(names)}")
    fingerprints += [f"# reads {path}: {print_}" for path, print_ in _module_reads(node, env)]
    text = backends.module_source(fn.origin.describe(), fn.chain, options, fingerprints,
                                  imports, namespace, emit.to_source(node))
    return text, namespace, hidden


def _dependency_options(dependency: Options, options: Options, called_once: bool) -> Options:
    """`dependency`, inlined into its caller where that saves Numba a whole compile: on the
    cpu backend, into a caller that is not parallel (an inlined `prange` would become
    parallel there), for a callee `called_once` - called at exactly one place and never used
    as a value (inlining at several places would make Numba compile its body once per
    place).

    `module_parts` then keeps the inlining to leaves, callees that call no generated function
    themselves: Numba inlines a callee by compiling its untyped IR, with the callees inlined
    into it, and deep-copying that IR twice, so a chain of inlined functions (a vmap of a jvp
    of einsum's loops under `hessian`) is compiled and copied once per level. A Hessian in
    two arguments of a one-line `np.einsum` function took minutes to compile so; leaves
    only, seconds."""
    inline = options.backend == "cpu" and not options.parallel and called_once
    return dataclasses.replace(dependency, inline=inline) if inline else dependency


def _inlinable_body(node) -> bool:
    """Whether Numba can inline `node`: its inliner reads the callee without lifting
    `with numba.objmode()` blocks (host calls) and without closures or `try`."""
    refused = (gast.With, gast.Try, gast.Lambda, gast.Yield, gast.YieldFrom)
    return not any(isinstance(sub, refused) or
                   (isinstance(sub, gast.FunctionDef) and sub is not node)
                   for sub in walk(node))


def _call_sites(node) -> dict[str, int]:
    """Name -> how many calls in `node` call it by that name."""
    counts: dict[str, int] = {}
    for sub in walk(node):
        if isinstance(sub, gast.Call) and isinstance(sub.func, gast.Name):
            counts[sub.func.id] = counts.get(sub.func.id, 0) + 1
    return counts


def _module_reads(node, env) -> list[tuple[str, str]]:
    """(`cfg.SCALE`, fingerprint) for each value read through a user's module.

    The module is imported by the generated code, not bound, so without these lines an
    edit to cfg.py or helpers.py would leave the module text - and Numba's cache, which
    froze the value it read - unchanged.
    """
    reads = {}
    for sub in walk(node):
        if not isinstance(sub, gast.Attribute):
            continue
        module, path = _module_path(sub.value, env)
        if module is None or is_library_module(module) or not hasattr(module, sub.attr):
            continue
        value = getattr(module, sub.attr)
        if not isinstance(value, types.ModuleType):
            reads[f"{path}.{sub.attr}"] = _read_fingerprint(value)
    return sorted(reads.items())


def _module_arrays_as_names(node, env, changed: set[str]) -> tuple[gast.FunctionDef, dict]:
    """`node` with each array (or tuple of arrays) read through a user's module (`cfg.W`,
    `pkg.cfg.W`) read under a name of its own instead, and `env` with those names: as a
    global array, it is then passed as a hidden argument (`captured_arrays`) and read from
    the module at each call. Numba would freeze it into the machine code as a constant,
    so `cfg.W[0] = 5` or `cfg.W = new` would go unseen by the compiled code."""
    found: dict[str, str] = {}                   # "cfg.W" -> its name
    values: dict[str, object] = {}
    namer = Namer(set().union(*stored_and_loaded(node), env))

    class Reads(gast.NodeTransformer):
        def visit_Attribute(self, sub):
            module, path = _module_path(sub.value, env)
            if module is None or is_library_module(module) or \
                    not isinstance(sub.ctx, gast.Load) or f"{path}.{sub.attr}" in rebound or \
                    not captured_arrays.is_hidden_array(getattr(module, sub.attr, None)) or \
                    isinstance(getattr(module, sub.attr), list) and \
                    f"{path}.{sub.attr}" in changed:
                return self.generic_visit(sub)
            dotted = f"{path}.{sub.attr}"
            if dotted not in found:
                found[dotted] = namer.fresh(dotted.replace(".", "_"))
                values[found[dotted]] = getattr(module, sub.attr)
            return gast.copy_location(
                gast.Name(id=found[dotted], ctx=gast.Load(), annotation=None,
                          type_comment=None), sub)

    attributes = [sub for sub in walk(node) if isinstance(sub, gast.Attribute)]
    if not attributes:
        return node, env
    # a path the function rebinds (`cfg.W = ...`, which Numba refuses) stays as written
    rebound = {f"{_module_path(sub.value, env)[1]}.{sub.attr}" for sub in attributes
               if not isinstance(sub.ctx, gast.Load)}
    rewritten = Reads().visit(copy_tree(node))
    return (rewritten, {**env, **values}) if values else (node, env)


def _changed_containers(node) -> set[str]:
    """The names and dotted paths (`cfg.LAYERS`) of what `node` writes an item of or calls
    a method of: a global list the function changes (`LAYERS.append(x)`) is left to Numba,
    which refuses it with its own words, not passed as a tuple that has no `append`."""
    found = set()
    for sub in walk(node):
        if isinstance(sub, gast.Subscript) and not isinstance(sub.ctx, gast.Load):
            found.add(dotted_text(sub.value))
        elif isinstance(sub, gast.Call) and isinstance(sub.func, gast.Attribute):
            found.add(dotted_text(sub.func.value))
    return found - {None}


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


_GENERATED = "generated "          # the fingerprint of a function secant compiled


def _materialize(value, options: Options, freeze_arrays: bool) -> tuple[Any, str, tuple]:
    """The object to bind for `value` under `options`, its fingerprint, and the arrays it
    takes hidden (a generated function's, see `compile_function`)."""
    fn = _function_of(value)
    if fn is not None:
        compiled = compile_function(fn, options, freeze_arrays=freeze_arrays)
        return compiled.function, _GENERATED + compiled.key[:32], compiled.hidden
    if isinstance(value, numba.core.dispatcher.Dispatcher):
        if options.backend == "cpu":
            return value, "numba " + function_fingerprint(value.py_func), ()
        return value.py_func, "python " + function_fingerprint(value.py_func), ()
    return value, fingerprint(value), ()


def _function_of(value) -> Function | None:
    """The Function secant compiles for `value`: a Function, a secant-wrapped object, or a
    user's Python helper (parsed); None for anything else."""
    if isinstance(value, Function):
        return value
    if hasattr(value, "__secant_function__"):
        return value.__secant_function__()
    if is_user_function(value):         # in the form jit gives the function it is given
        return methods_to_functions(parse_callee(value))
    return None


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
        digest.update("".join(source_lines(fn)[0]).encode())
    except (OSError, TypeError):
        digest.update(fn.__code__.co_code)
    for value in (fn.__defaults__ or ()) + tuple((fn.__kwdefaults__ or {}).values()):
        digest.update(_value_fingerprint(value, digest, seen).encode())
    names = code_names(fn.__code__)
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


def code_names(code) -> set:
    """Global and attribute names used by `code` and the code nested in it."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= code_names(const)
    return names
