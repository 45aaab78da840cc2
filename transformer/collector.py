"""Python's cyclic garbage collector, paused around secant's bursts of allocation.

Importing secant (with NumPy and Numba) and a first compile each build a few hundred
thousand objects: the import's live as long as the process, a compile's are mostly freed by
reference counting when it ends. The collector's passes over them while they are being made
find little (a compile of `jit(vmap(grad(mlp)))` leaves some 70 thousand cyclic objects
behind, out of half a million made) and were a fifth of the import's time and up to a tenth
of a first call's; paused, it runs once afterwards. After the import nothing is left to
collect, so its objects go straight to the oldest generation (`gc.freeze` then
`gc.unfreeze`, which moves them without walking them): the first young pass afterwards need
not walk them, and a later full collection still does, as it would have without the pause,
so a cycle among them (or among the caller's objects) that becomes garbage is still found.
"""
from __future__ import annotations

import contextlib
import gc


@contextlib.contextmanager
def paused(keep: bool = False):
    """Run the body with the collector off, then turn it back on if it was on before (a
    caller that turned it off keeps it off; a nested or concurrent pause does nothing).
    With `keep` (the import), what is alive at the end is moved to the oldest generation,
    so the first young collection afterwards need not walk it."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        if keep:
            gc.freeze()          # every tracked object to the permanent generation ...
            gc.unfreeze()        # ... and back into the oldest one: a move, not a walk
        gc.enable()
