"""Symbol names that differ between processes, so code loaded from the disk cache never
links against another function's machine code.

Numba names the machine code of every function it compiles `module.qualname` with the
types and a unique id, `v<N>`, and that id is a count that starts at 1 in every process.
Two processes that compile in the same order therefore give the same name to *different*
functions of one `module.qualname`: the implementations secant execs from text (a fused
`impl` of `<dynamic>`), Numba's own closures, the lambdas of `runtime.vector_math`. The
disk cache keeps the machine code, names included. A later process that loads
`impl$2` = `tanh(a0 * a1)` from the cache and compiles its own `impl$2` =
`tanh(a0 - 0.5 * a1)` holds two definitions of one symbol, and the linker resolves every
call to one of them: a branch of the user's program computes the other branch's formula,
a silently wrong number.

`make_ids_distinct` starts the count at a random 62-bit number, in this process and again
in every child forked from it (a forked child inherits its parent's count, and a hunt, a
multiprocessing pool or a Dask worker compiles in forked children sharing one cache). Ids
stay unique within a process; across processes two equal ids are as likely as two equal
random 62-bit numbers.
"""
from __future__ import annotations

import itertools
import os
import threading

from numba.core.bytecode import FunctionIdentity

_lock = threading.Lock()
_made = False


def make_ids_distinct() -> None:
    """Start Numba's function ids at a random number, here and in forked children (once)."""
    global _made
    with _lock:
        if _made:
            return
        _restart_count()
        os.register_at_fork(after_in_child=_restart_count)
        _made = True


def _restart_count() -> None:
    # above 2**32, so no id this process handed out before (a small count) comes back
    start = (1 << 32) + int.from_bytes(os.urandom(8), "little") % (1 << 62)
    FunctionIdentity._unique_ids = itertools.count(start)
