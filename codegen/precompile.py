"""Compiling a generated module in another process, into the shared disk cache.

Tiered execution (`transformer.tiered`) runs a function's generated NumPy source while
Numba compiles its machine code, and a second core does the compiling: a thread would
hold the interpreter lock through most of Numba's typing and lowering. `start` hands a
child process the module's `ModuleSpec` (`codegen.distributed`: its text, namespace and
options) and the Numba signature; the child loads the module from the same cache
directory - same text, same file, same Numba cache stamp - and compiles that signature,
which writes the machine code into the sealed disk cache. The parent then loads it from
there (`Background.wait_loaded`), as a second process would.

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
import weakref
from pathlib import Path

from . import distributed
from .backends import Compiled

_running: weakref.WeakSet = weakref.WeakSet()   # Backgrounds whose child may be alive
_running_lock = threading.Lock()


class Background:
    """One child process compiling one signature of one generated function."""

    def __init__(self, process: subprocess.Popen, dispatcher, signature: tuple):
        self._process = process
        self.dispatcher = dispatcher
        self.signature = signature

    def finished(self) -> bool:
        """Whether the child has exited (it is never waited for)."""
        return self._process.poll() is not None

    def wait(self) -> int:
        """The child's exit status, once it has exited."""
        return self._process.wait()

    def stop(self) -> None:
        if self._process.poll() is None:
            self._process.kill()
            self._process.wait()


def cached(dispatcher, signature: tuple) -> bool:
    """Whether the disk cache already holds `dispatcher`'s machine code for `signature`
    (then loading it beats running the NumPy source)."""
    holds = getattr(getattr(dispatcher, "_cache", None), "holds", None)
    return holds is not None and holds(signature, dispatcher.targetctx)


def start(compiled: Compiled, signature: tuple) -> Background | None:
    """A child process compiling `compiled.function` for `signature`, or None when the
    module cannot be compiled elsewhere (not loaded from the disk cache, or a namespace
    value that does not pickle)."""
    if compiled.options is None or compiled.options.backend != "cpu" or not compiled.path:
        return None
    try:
        payload = (pickle.dumps(list(sys.path)) +
                   pickle.dumps((distributed.spec_of(compiled), signature),
                                protocol=pickle.HIGHEST_PROTOCOL))
    except Exception:       # a closure, a lambda, a lock...: compile here instead
        return None
    env = {**os.environ, "SECANT_CACHE_DIR": str(Path(compiled.path).parent)}
    process = subprocess.Popen([sys.executable, "-c", _CHILD], stdin=subprocess.PIPE,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    background = Background(process, compiled.function, signature)
    with _running_lock:
        _running.add(background)
    threading.Thread(target=_feed, args=(process, payload), daemon=True).start()
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
    with _running_lock:
        backgrounds = list(_running)
    for background in backgrounds:
        background.stop()
