"""Tiered execution: a new specialization runs as NumPy while Numba compiles it elsewhere.

`jit(f, tiered=True)` (or `SECANT_TIERED=1` for every cpu `jit` that does not say) makes
the first call of a new specialization cost only secant's transformation: the call runs
the same transformed function emitted for the `python` backend - the generated NumPy
source - while a child process compiles the machine code into the disk cache
(`codegen.precompile`). Each later call checks, without waiting, whether the child is
done; the first call that finds it done loads the machine code from the cache and puts it
in the specialization's place, so every later call runs it directly. When the cache
already holds the machine code (a warm second process), or the module cannot be sent to
another process, the specialization is compiled here as without tiering.

A call still in the NumPy tier when the child has compiled the machine code is cut over
to it (`cutover`): the NumPy tier is interrupted at its next bytecode (a NumPy operation
under way finishes first), its array arguments are put back as they were, and the
machine code runs the call. A first call therefore takes at most about the child's
compile (a process start and Numba's compile), the load and one compiled call, however
loop-heavy the function. A function that prints or
calls back into Python (`debug.print`, `debug.callback`, `pure_callback`, `io_callback`,
`print`, here or in a function it calls) is never cut over, since that would happen
twice: its NumPy-tier calls run to the end.

It is opt-in because the two tiers are not interchangeable in every respect:
- the NumPy source runs Python loops at interpreter speed, so a loop-heavy function's
  first call takes about a compile anyway (a function with callbacks, which is not cut
  over, can take longer than compiling it would have);
- results agree to rounding, not bit for bit (NumPy's `exp` and secant's SIMD forms round
  differently in the last place);
- an error only Numba finds (a value of a type it cannot compile) is raised by the call
  that switches, in this process, rather than by the first call.
A call whose NumPy tier raises is run again by the machine code (waiting for it), with
its array arguments first put back as they were, so it raises exactly what the compiled
function raises (an `IndexError` at the user's line, say); only what the NumPy tier did
outside its arguments before the error (a debug print) happens twice.

Invariant: tiering never changes which Function is compiled, only when and where; the
NumPy tier is the same Function, emitted for the `python` backend.
"""
from __future__ import annotations

import builtins
import dataclasses
import os
import threading
import time
import types
import weakref
from typing import Callable

import numba
import numpy as np

from codegen import compile_log, precompile
from codegen.backends import Compiled

from . import cutover, materialize
from .function import Function
from .runtime.host import HostSite

ENVIRONMENT_SWITCH = "SECANT_TIERED"


def enabled(option: bool | None) -> bool:
    """`jit`'s `tiered` option, or the environment switch when it is None."""
    if option is not None:
        return bool(option)
    return os.environ.get(ENVIRONMENT_SWITCH, "").strip().lower() not in ("", "0", "false")


class TieredFunction:
    """Calls the NumPy tier until the child compiling the machine code is done, then the
    machine code (loaded from the disk cache), telling `on_switch` once."""

    def __init__(self, python: Callable, hidden: tuple,
                 background: precompile.Background, name: str,
                 on_switch: Callable[[Callable], None]):
        self._python = python
        # a call still in the NumPy tier when the child has compiled the machine code is
        # cut over to it, unless it calls back into Python: that would happen twice
        self._watch = None if _calls_host(python) else cutover.Watch(
            background.wait_exited, background.succeeded)
        # the NumPy tier binds the captured arrays of its making (`captured_arrays`); a
        # call passing others (a global rebound since) runs the machine code
        self._hidden = hidden
        self._background = background
        self._name = name
        self._on_switch = on_switch
        self._compiled: Callable | None = None
        self._numpy_dtypes = None       # of the NumPy tier's first result
        self._lock = threading.Lock()

    def __call__(self, *args):
        compiled = self._compiled if self._compiled is not None else self._ready()
        if compiled is not None:
            return compiled(*args)
        own = len(args) - len(self._hidden)
        if any(now is not then for now, then in zip(args[own:], self._hidden)):
            return self._ready(wait=True)(*args)
        # the NumPy tier raises NumPy's errors, not the compiled code's located ones: on
        # any error, or when the machine code becomes ready first (`cutover`), the
        # arguments are put back as they were and the machine code runs the call
        saved = [(a, a.copy()) for a in args if isinstance(a, np.ndarray) and a.flags.writeable]
        try:
            result = self._numpy_tier(args[:own])
        except Exception:
            result = cutover.CUT_OVER
        if result is cutover.CUT_OVER:
            for array, before in saved:
                array[...] = before
            return self._ready(wait=True)(*args)
        if self._numpy_dtypes is None:
            self._numpy_dtypes = _dtypes_of(result)
        return result

    def _numpy_tier(self, args: tuple):
        """The NumPy tier's result, or `cutover.CUT_OVER` when the child compiled the
        machine code before it was done."""
        if self._watch is None:
            return self._python(*args)
        started = time.perf_counter()
        result = self._watch.run(self._python, *args)
        if result is cutover.CUT_OVER:
            compile_log.logger.info("%s: a call was cut over to the compiled code after "
                                    "%.1f s in the NumPy tier", self._name,
                                    time.perf_counter() - started)
        return result

    @property
    def py_func(self) -> Callable:
        """The generated Python function, as a Numba dispatcher names it."""
        return self._background.dispatcher.py_func

    @property
    def switched(self) -> bool:
        """Whether calls run the machine code now."""
        return self._compiled is not None

    def wait(self) -> None:
        """Block until calls run the machine code (before timing the steady state)."""
        self._ready(wait=True)

    def _ready(self, wait: bool = False) -> Callable | None:
        if not wait and not self._background.finished():
            return None
        with self._lock:
            if self._compiled is None:
                self._switch()
        return self._compiled

    def _switch(self) -> None:
        dispatcher, signature = self._background.dispatcher, self._background.signature
        if self._background.wait() == 0:
            cached = precompile.cached(dispatcher, signature)
            started = time.perf_counter()
            dispatcher.compile(signature)       # a disk-cache load when cached
            how = "loaded from the cache the other process filled" if cached else \
                "compiled here: the other process's code was not in the cache"
            compile_log.logger.info("%s now runs compiled code (%s, in %.1f s)", self._name,
                                    how, time.perf_counter() - started)
            self._warn_if_types_differ(dispatcher, signature)
        # a failed child: the dispatcher compiles at its first call here, and raises
        # what Numba refuses at the user's line, as without tiering
        self._compiled = dispatcher
        self._on_switch(dispatcher)


    def _warn_if_types_differ(self, dispatcher, signature) -> None:
        """Say so when the machine code returns other dtypes than the NumPy tier did:
        `1.5 * x` is float32 in NumPy 2 for float32 `x` but float64 in compiled code
        (README, "Types"), so the results of the first calls had another dtype."""
        overload = dispatcher.overloads.get(tuple(signature))
        compiled = _dtypes_of_type(overload.signature.return_type) if overload else None
        if None in (compiled, self._numpy_dtypes) or compiled == self._numpy_dtypes:
            return
        compile_log.logger.warning(
            "%s: the compiled code returns %s where its NumPy tier returned %s, so the "
            "first calls' results had another dtype (Python numbers combine with arrays as "
            "in Numba, README 'Types'): cast the constants (np.float32(1.5) * x) or use "
            "jit(..., tiered=False)", self._name, compiled, self._numpy_dtypes)


def _calls_host(function, seen: set | None = None) -> bool:
    """Whether `function` (a generated NumPy tier), or a function it calls, prints or
    calls back into the host (`debug.print`/`debug.callback`, `pure_callback`,
    `io_callback`: a `HostSite`; a Numba kernel's `print` or `objmode` block) - what
    would happen twice if the call ran again."""
    seen = set() if seen is None else seen
    seen.add(function)
    names = materialize.code_names(function.__code__)
    if "objmode" in names:
        return True
    for name in names:
        value = function.__globals__.get(name, getattr(builtins, name, None))
        if isinstance(value, HostSite) or value is builtins.print:
            return True
        callee = getattr(value, "py_func", value)       # a Numba kernel's Python function
        if isinstance(callee, types.FunctionType) and callee not in seen and \
                _calls_host(callee, seen):
            return True
    return False


def _dtypes_of(value):
    """The dtypes of a result (nested tuples for tuples), None when not all known."""
    if isinstance(value, (tuple, list)):
        inner = tuple(_dtypes_of(v) for v in value)
        return None if None in inner else inner
    if isinstance(value, (np.ndarray, np.generic)):
        return str(value.dtype)
    if isinstance(value, (bool, int, float, complex)):
        return str(np.asarray(value).dtype)
    return None


def _dtypes_of_type(numba_type):
    """`_dtypes_of` for a Numba type."""
    if isinstance(numba_type, numba.types.BaseTuple):
        inner = tuple(_dtypes_of_type(t) for t in numba_type.types)
        return None if None in inner else inner
    if isinstance(numba_type, numba.types.Array):
        numba_type = numba_type.dtype
    try:
        return str(numba.np.numpy_support.as_dtype(numba_type))
    except (NotImplementedError, TypeError, ValueError):
        return None


def start(fn: Function, compiled: Compiled, arguments: tuple, hidden: tuple,
          on_switch: Callable[[Callable], None]) -> TieredFunction | None:
    """The tiered form of the specialization `compiled` (of `fn`, to be called with
    `arguments` and then the captured arrays `hidden`), or None when it should be compiled
    here: machine code already cached, nothing to send to another process, or arguments
    whose arithmetic Numba and NumPy type differently."""
    dispatcher = compiled.function
    if not hasattr(dispatcher, "compile") or not all(map(_same_in_both, arguments)):
        return None
    arguments = (*arguments, *hidden)
    try:
        signature = tuple(numba.typeof(a) for a in arguments)
    except ValueError:          # a value Numba has no type for: it says so when called
        return None
    if precompile.cached(dispatcher, signature):
        return None
    background = precompile.start(compiled, signature)
    if background is None:
        return None
    try:
        numpy_options = dataclasses.replace(compiled.options, backend="python")
        python = materialize.compile_function(fn, numpy_options).function
    except BaseException:
        background.release()
        raise
    tier = TieredFunction(python, hidden, background, fn.name, on_switch)
    weakref.finalize(tier, background.release)  # dropped before switching: maybe no compile
    return tier


# Compiled integer arithmetic is int64 (README, "Types"): NumPy keeps uint8 + uint8 uint8,
# wrapping where the machine code does not. Only values both tiers compute alike are tiered.
_SAME_DTYPES = frozenset(map(np.dtype, ("float64", "float32", "complex128", "complex64",
                                        "int64", "bool")))


def _same_in_both(value) -> bool:
    if isinstance(value, np.ndarray):
        return value.dtype in _SAME_DTYPES
    return type(value) in (float, int, bool, complex, np.float64, np.int64, np.bool_)
