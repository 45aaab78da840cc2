"""Cutting a running Python call short from another thread, once a condition holds.

Tiered execution (`transformer.tiered`) runs a new specialization's first calls as the
generated NumPy source while a child process compiles the machine code. A call still
running when the machine code is ready is cut over: `Watch.run` runs it, and a daemon
thread - one per Watch, alive until its condition is settled - raises `Cutover` in the
calling thread with `PyThreadState_SetAsyncExc`; `run` catches it and returns `CUT_OVER`,
and the caller runs the call again another way. The exception is raised between two
bytecodes of the interrupted thread: a C-level operation (one NumPy call) finishes first.

Race-freedom rests on one lock and each call's `sent` flag:
- the watcher sends to a call only while it is registered (under the lock, once: it
  unregisters the call and sets `sent` as it sends);
- the caller unregisters its call under the lock when it leaves, and when `sent` is set
  clears a `Cutover` still pending for its thread, so none is raised after `run` returns;
- whether a call was cut over is read from `sent`, never from where the exception landed:
  one raised after the function returned, inside `run`'s bookkeeping, or swallowed by a
  finalizer that ran meanwhile still means "cut over";
- a `Cutover` caught by a call it was not sent to (a watched call nested in another in the
  same thread) is raised on to the enclosing call it belongs to;
- a call is in flight exactly while it is registered; the watcher never inspects other
  threads' stacks (`sys._current_frames()` can run the garbage collector while holding
  the interpreter's thread list, and a thread starting meanwhile deadlocked the process
  under CPython 3.11). A KeyboardInterrupt landing in `run`'s own bookkeeping, before the
  call is unregistered, can let a `Cutover` reach its thread later.

Invariant: `run` returns `CUT_OVER` exactly when its call was sent a `Cutover` (or came
after the condition held and did not run); no `Cutover` leaves `run` but one sent to an
enclosing call, and none is left pending for the thread when `run` returns.
"""
from __future__ import annotations

import ctypes
import threading
from typing import Any, Callable

CUT_OVER = object()     # what `Watch.run` returns for a call it cut short


class Cutover(BaseException):
    """Raised in a thread whose call is cut over; a BaseException, so that an
    `except Exception` in the code it interrupts does not swallow it."""


class _Call:
    __slots__ = ("thread", "sent")

    def __init__(self):
        self.thread, self.sent = threading.get_ident(), False


class Watch:
    """Runs calls that are cut short once `settled(INTERVAL)` returns True and then
    `wanted()` does too: the watcher calls `settled` until it does (it may block, for
    `INTERVAL` seconds or until it is settled), then cuts over the calls in flight, and
    `run` cuts over every later call at once. Settled with `wanted()` False, calls run to
    the end."""

    INTERVAL = 0.05     # seconds: what the watcher passes to `settled`

    def __init__(self, settled: Callable[[float], bool], wanted: Callable[[], bool]):
        self._settled, self._wanted = settled, wanted
        self._lock = threading.Lock()
        self._calls: set[_Call] = set()
        self._state = "idle"            # -> "watching" -> "cut" or "finished"

    @property
    def cut(self) -> bool:
        """Whether the condition held: calls are cut over (or not run) from now on."""
        return self._state == "cut"

    def run(self, function: Callable, *args) -> Any:
        """`function(*args)`, or `CUT_OVER` when it was cut short (after running partly,
        or not at all). Its exceptions propagate, unless it was cut over meanwhile."""
        call = _Call()
        try:
            try:
                if not self._enter(call):
                    return CUT_OVER
                result = function(*args)
            finally:
                self._leave(call)
        except Cutover:
            if call.sent:
                return CUT_OVER
            raise                       # an enclosing call's, in this thread
        except Exception:
            if call.sent:
                return CUT_OVER
            raise
        return CUT_OVER if call.sent else result

    def _enter(self, call: _Call) -> bool:
        with self._lock:
            if self._state == "cut":
                return False
            if self._state == "finished":
                return True
            self._calls.add(call)
            if self._state == "idle":
                self._state = "watching"
                threading.Thread(target=self._watch, name="secant-cutover",
                                 daemon=True).start()
        return True

    def _leave(self, call: _Call) -> None:
        with self._lock:
            self._calls.discard(call)
            if call.sent:
                _raise_in(call.thread, None)    # one still pending is dropped

    def _watch(self) -> None:
        while not self._settled(self.INTERVAL):
            pass
        wanted = self._wanted()
        with self._lock:
            self._state = "cut" if wanted else "finished"
            calls, self._calls = self._calls, set()
            if not wanted:
                return
            for call in calls:
                call.sent = True
                _raise_in(call.thread, Cutover)


def _raise_in(thread: int, exception: type | None) -> None:
    """Raise `exception` in `thread` at its next bytecode (None: drop a pending one)."""
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread),
                                               ctypes.py_object(exception) if exception
                                               else ctypes.c_void_p(None))
