"""Compiling a generated module in another process, into the shared disk cache.

Tiered execution (`transformer.tiered`) runs a function's generated NumPy source while
Numba compiles its machine code, and a second core does the compiling: a thread would
hold the interpreter lock through most of Numba's typing and lowering. `start` hands a
child process the module's `ModuleSpec` (`codegen.distributed`: its text, namespace and
options) and the Numba signature; the child loads the module from the same cache
directory - same text, same file, same Numba cache stamp - and compiles that signature,
which writes the machine code into the sealed disk cache. The parent then loads it from
there, as a second process would. At most `MAX_CHILDREN` children compile at once (each
is a whole Numba compile, hundreds of MB); the others wait their turn in a queue.

The child gets the parent's `sys.path` (the spec names runtime helpers and the user's
modules by reference) and the cache directory of the module. Whatever goes wrong in it
- a spec that does not unpickle, a Numba typing error - is only a failed `Background`:
the caller compiles in its own process then, where the error is raised and located as
without tiering. Children still compiling when the interpreter exits are stopped.

Invariant: nothing here imports `transformer`.
"""
from __future__ import annotations

import atexit
import os
import pickle
import subprocess
import sys
import threading
import time
import weakref
from pathlib import Path

from . import distributed
from .backends import Compiled

# At most this many children compile at once (one core is left to the program); further
# Backgrounds wait in `_queue`, started as running ones finish (checked on every poll),
# and a caller that must wait for one starts it at once.
MAX_CHILDREN = max(1, (os.cpu_count() or 2) - 1)
_queue: list = []                               # Backgrounds not started yet, in order
_started: weakref.WeakSet = weakref.WeakSet()   # Backgrounds whose child may be alive
_shared: dict = {}      # (id of dispatcher, signature) -> its Background, while in use
_lock = threading.RLock()


class Background:
    """One child process compiling one signature of one generated function, started when
    a place among `MAX_CHILDREN` is free."""

    def __init__(self, payload: bytes, env: dict, dispatcher, signature: tuple):
        self._payload, self._env = payload, env
        self._process: subprocess.Popen | None = None
        self.dispatcher = dispatcher
        self.signature = signature
        self._users = 0         # callers of `start` that have not released it
        self._stopped = False

    def release(self) -> None:
        """One user no longer needs it; the last one stops it."""
        with _lock:
            self._users -= 1
            last = self._users <= 0
            if last:
                _shared.pop((id(self.dispatcher), self.signature), None)
        if last:
            self.stop()

    def finished(self) -> bool:
        """Whether the child has exited (never waits; starts queued children)."""
        _start_queued()
        return self._process is not None and self._process.poll() is not None

    def wait_exited(self, queued_for: float) -> bool:
        """Whether the child has exited or will never run: once it runs, waits until it
        has exited (True); while it waits its turn in the queue, waits `queued_for`
        seconds (False when not started by then). Never starts a queued child out of turn,
        unlike `wait`."""
        if self._stopped or self.finished():
            return True
        process = self._process
        if process is None:
            time.sleep(queued_for)
            return self.finished()
        process.wait()
        return True

    def succeeded(self) -> bool:
        """Whether the child has exited having compiled the signature (never waits)."""
        return self._process is not None and self._process.poll() == 0

    def wait(self) -> int:
        """The child's exit status, once it has exited (started now if queued)."""
        with _lock:
            if self._process is None:
                if self in _queue:
                    _queue.remove(self)
                self._launch()
        return self._process.wait()

    def stop(self) -> None:
        """Drop it from the queue, or kill its child."""
        with _lock:
            self._stopped = True
            if self in _queue:
                _queue.remove(self)
            process = self._process
        if process is not None and process.poll() is None:
            process.kill()
            process.wait()

    def _launch(self) -> None:
        self._process = subprocess.Popen(
            [sys.executable, "-c", _CHILD], stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=self._env)
        _started.add(self)
        threading.Thread(target=_feed, args=(self._process, self._payload), daemon=True).start()
        self._payload = b""


def _start_queued() -> None:
    with _lock:
        running = sum(1 for b in list(_started) if b._process.poll() is None)
        while _queue and running < MAX_CHILDREN:
            _queue.pop(0)._launch()
            running += 1


def cached(dispatcher, signature: tuple) -> bool:
    """Whether the disk cache already holds `dispatcher`'s machine code for `signature`
    (then loading it beats running the NumPy source)."""
    holds = getattr(getattr(dispatcher, "_cache", None), "holds", None)
    return holds is not None and holds(signature, dispatcher.targetctx)


def start(compiled: Compiled, signature: tuple) -> Background | None:
    """A child process compiling `compiled.function` for `signature` - the one already
    under way for it, if any - or None when the module cannot be compiled elsewhere (not
    loaded from the disk cache, or a namespace value that does not pickle). Each caller
    calls `release` when it no longer needs it."""
    if compiled.options is None or compiled.options.backend != "cpu" or not compiled.path:
        return None
    with _lock:
        background = _shared.get((id(compiled.function), signature))
        if background is not None:
            background._users += 1
            return background
    try:
        payload = (pickle.dumps(list(sys.path)) +
                   pickle.dumps((distributed.spec_of(compiled), signature),
                                protocol=pickle.HIGHEST_PROTOCOL))
    except Exception:       # a closure, a lambda, a lock...: compile here instead
        return None
    env = {**os.environ, "SECANT_CACHE_DIR": str(Path(compiled.path).parent)}
    background = Background(payload, env, compiled.function, signature)
    with _lock:
        background._users = 1
        _shared[(id(compiled.function), signature)] = background
        _queue.append(background)
    _start_queued()
    return background


def _feed(process: subprocess.Popen, payload: bytes) -> None:
    try:
        process.stdin.write(payload)
        process.stdin.close()
    except OSError:         # the child died first: it fails, and the caller compiles
        pass


# the child: its sys.path is the parent's before the spec is unpickled
_CHILD = (
    "import pickle, sys\n"
    "sys.path[:] = pickle.load(sys.stdin.buffer)\n"
    "from codegen.precompile import compile_spec\n"
    "compile_spec(*pickle.load(sys.stdin.buffer))\n"
)


def compile_spec(spec: distributed.ModuleSpec, signature: tuple) -> None:
    """In the child: load `spec` and compile `signature` (written to the disk cache)."""
    distributed.load_spec(spec).compile(signature)


@atexit.register
def _stop_children() -> None:
    with _lock:
        backgrounds = list(_started) + _queue
    for background in backgrounds:
        background.stop()
