"""NumPy call forms Numba lacks in nopython mode, mapped to runtime equivalents.

``numba_equivalent(f)`` is a function of ``transformer.runtime`` with the call signature of
``f`` that runs under Numba; the Numba backend calls it instead of ``f`` when
``needs_lowering(f, keywords, nargs)`` says the call uses a form Numba does not support
(``axis``/``keepdims`` on reductions, ``squeeze``, ``np.add.at``, batched ``@``, ``np.inner``,
``np.stack`` of a list, ...). Both read the primitive registry (`Primitive.numba`,
``plain_form_ok``, ``python_only``; registered in ``transformer.primitives.structural``).
Under plain Python the equivalents are NumPy itself, so lowering never changes a result.
"""

from __future__ import annotations

import gast
import numpy as np

from transformer.primitives import registry

# Equivalents that are plain NumPy and do not compile under Numba yet.
PYTHON_ONLY = registry.Members(lambda r: r.python_only)


def numba_equivalent(obj) -> object | None:
    """The runtime function to call instead of ``obj`` under Numba, or None."""
    found = registry.lookup(obj)
    return found.numba if found is not None else None


def needs_lowering(obj, keywords: dict[str, gast.expr] | None = None, nargs: int = 1) -> bool:
    """Whether a call ``obj(<nargs positional>, **keywords)`` must go through the runtime."""
    found = registry.lookup(obj)
    if found is None or found.numba is None:
        return False
    if not found.plain_form_ok:
        return True
    keywords = keywords or {}
    # Numba accepts np.sum also with an int axis; axis=None is the whole array's sum,
    # added in float64 for a float32 array (`runtime.reduce_sum`)
    if obj is np.sum and set(keywords) <= {"axis"} and nargs <= 2:
        axis = keywords.get("axis")
        return isinstance(axis, gast.Tuple) or \
            isinstance(axis, gast.Constant) and axis.value is None
    return bool(keywords) or nargs > 1
