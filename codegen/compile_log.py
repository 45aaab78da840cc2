"""Visible compiles: a compile slower than `THRESHOLD_SECONDS` says so, once, on stderr.

The line goes through `logging`, logger `secant`, at level INFO. So that it is seen with no
logging configuration at all, the logger's level is INFO unless the user set one, and a
fallback handler writes to stderr only when no other handler would receive the record
(what `logging.lastResort` does for warnings). A user who configures logging gets the line
through their own handlers; `logging.getLogger("secant").setLevel(logging.WARNING)`
silences it.

One compile is one `compiling(...)` block, whose `Timing` adds up two parts:
- secant's: transformation, emission and module loading (`Timing.transforming`);
- Numba's: Numba compiles lazily, at a dispatcher's first call with new types, so the
  first call of a new specialization runs under `Timing.running`, and every Numba compile
  this thread makes meanwhile (a disk-cache load is not a compile) is credited to it,
  measured from Numba's `numba:compile` events. numba-cuda sends no such event: the first
  launch of a CUDA kernel is timed by the wall clock instead (`compiling_in_numba`).
A compile started while another one is transforming (a helper compiled for its caller) is
part of that one: it logs nothing of its own, and names the chain of the outer one when
the outer did not know it yet.
"""
from __future__ import annotations

import functools
import logging
import sys
import threading
import time
from contextlib import contextmanager
from typing import Iterator

import numba.core.event

logger = logging.getLogger("secant")
THRESHOLD_SECONDS = 1.0     # a compile this long or longer is reported

# per thread: .transforming and .running, the Timings receiving time; .depth and .started,
# of the Numba compile in progress
_state = threading.local()


class Timing:
    """Seconds one compile took, split into secant's part and Numba's."""

    def __init__(self, name: str, backend: str, chain: tuple | None = None):
        self.name, self.backend, self.chain = name, backend, chain
        self.secant_seconds = 0.0
        self.numba_seconds = 0.0

    @property
    def seconds(self) -> float:
        return self.secant_seconds + self.numba_seconds

    def describe(self, chain: tuple) -> None:
        """Record the transformation chain, if it was not known when the timing began."""
        if self.chain is None:
            self.chain = tuple(chain)

    @contextmanager
    def transforming(self) -> Iterator[None]:
        """The block's wall time is secant's part; compiles begun in it belong to this one."""
        outer = getattr(_state, "transforming", None)
        _state.transforming = self
        start = time.perf_counter()
        try:
            yield
        finally:
            self.secant_seconds += time.perf_counter() - start
            _state.transforming = outer

    @contextmanager
    def running(self) -> Iterator[None]:
        """Numba compiles made by this thread during the block are Numba's part."""
        outer = getattr(_state, "running", None)
        _state.running = self
        try:
            yield
        finally:
            _state.running = outer

    @contextmanager
    def compiling_in_numba(self) -> Iterator[None]:
        """The block's wall time is Numba's part: for a compiler that sends no events."""
        start = time.perf_counter()
        try:
            yield
        finally:
            self.numba_seconds += time.perf_counter() - start

    def message(self) -> str:
        chain = " | ".join(self.chain or ()) or "no transformation"
        parts = f"{self.secant_seconds:.1f} s transforming"
        if self.numba_seconds:
            parts += f", {self.numba_seconds:.1f} s in Numba"
        return (f"compiled {self.name} [{chain}] for backend {self.backend!r} in "
                f"{self.seconds:.1f} s ({parts})")


@contextmanager
def compiling(name: str, backend: str, chain: tuple | None = None) -> Iterator[Timing]:
    """Time one compile of `name`; log it when it is not part of another and is slow.

    Nothing is logged when the block raises: the error says enough.
    """
    outer = getattr(_state, "transforming", None)
    timing = Timing(name, backend, chain)
    if outer is not None:
        if chain is not None:
            outer.describe(chain)
        yield timing
        return
    yield timing
    if timing.seconds >= THRESHOLD_SECONDS and logger.isEnabledFor(logging.INFO):
        logger.info("%s", timing.message())


def inside_compile() -> bool:
    """Whether this thread is in the transforming part of a timed compile."""
    return getattr(_state, "transforming", None) is not None


def timed(compile_function):
    """Decorate `compile_function(fn, options, **flags)` so that each call is one timed
    compile."""
    @functools.wraps(compile_function)
    def timed_compile(fn, options, **flags):
        with compiling(fn.name, options.backend, fn.chain) as timing:
            with timing.transforming():
                return compile_function(fn, options, **flags)
    return timed_compile


# ---------------------------------------------------------------- Numba's compile events

class _CompileListener(numba.core.event.Listener):
    """Credits each outermost Numba compile to the Timing running in the compiling thread."""

    def on_start(self, event):
        depth = getattr(_state, "depth", 0)
        if depth == 0:
            _state.started = time.perf_counter()
        _state.depth = depth + 1

    def on_end(self, event):
        depth = getattr(_state, "depth", 0)
        if depth == 0:      # a compile that began before this listener was registered
            return
        _state.depth = depth - 1
        timing = getattr(_state, "running", None)
        if depth == 1 and timing is not None:
            timing.numba_seconds += time.perf_counter() - _state.started


# ---------------------------------------------------------------- visible by default

class _FallbackHandler(logging.Handler):
    """Writes to the current `sys.stderr`, only if no other handler would get the record."""

    def __init__(self):
        super().__init__()
        self.setFormatter(logging.Formatter("%(name)s: %(message)s"))

    def handle(self, record):
        if _other_handler(logging.getLogger(record.name), self):
            return False
        return super().handle(record)

    def emit(self, record):
        try:
            sys.stderr.write(self.format(record) + "\n")
        except Exception:       # logging's contract: a handler never raises
            self.handleError(record)


def _other_handler(start: logging.Logger, own: logging.Handler) -> bool:
    logger_: logging.Logger | None = start
    while logger_ is not None:
        if any(handler is not own for handler in logger_.handlers):
            return True
        logger_ = logger_.parent if logger_.propagate else None
    return False


def _install_default() -> None:
    if logger.level == logging.NOTSET:
        logger.setLevel(logging.INFO)
    if not any(isinstance(h, _FallbackHandler) for h in logger.handlers):
        logger.addHandler(_FallbackHandler())


_install_default()
numba.core.event.register("numba:compile", _CompileListener())
