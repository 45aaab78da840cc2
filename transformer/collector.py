"""Python's cyclic garbage collector, paused around secant's bursts of allocation.

Importing secant (with NumPy and Numba) and a first compile each build a few hundred
thousand objects: the import's live as long as the process, a compile's are mostly freed by
reference counting when it ends. The collector's passes over them while they are being made
find little (a compile of `jit(vmap(grad(mlp)))` leaves some 70 thousand cyclic objects
behind, out of half a million made) and were a fifth of the import's time and up to a tenth
of a first call's; paused, it runs once afterwards. After the import nothing is left to
collect, so its objects are frozen instead (`gc.freeze`): neither that first pass nor any
later full collection walks them again.
"""
from __future__ import annotations

import contextlib
import gc


@contextlib.contextmanager
def paused(keep: bool = False):
    """Run the body with the collector off, then turn it back on if it was on before (a
    caller that turned it off keeps it off; a nested or concurrent pause does nothing).
    With `keep` (the import), what is alive at the end is moved out of the collector's
    sight for good (`gc.freeze`), so the first collection afterwards need not walk it."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        if keep:
            gc.freeze()
        gc.enable()
