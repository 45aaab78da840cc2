"""NumPy call forms Numba lacks in nopython mode, mapped to runtime equivalents.

``numba_equivalent(f)`` is a function of ``transformer.runtime`` with the call signature of
``f`` that runs under Numba; the Numba backend calls it instead of ``f`` when
``needs_lowering(f, keywords, nargs)`` says the call uses a form Numba does not support
(``axis``/``keepdims`` on reductions, ``squeeze``, ``np.add.at``, batched ``@``, ``np.inner``,
``np.stack`` of a list, ...).
Keys are the same as the rule registries' (``gast.MatMult`` for ``@``). Under plain Python
the equivalents are NumPy itself, so lowering never changes a result.
"""

from __future__ import annotations

import gast
import numpy as np

from transformer import runtime

_EQUIVALENTS: dict[object, object] = {
    np.sum: runtime.reduce_sum,
    np.mean: runtime.reduce_mean,
    np.max: runtime.reduce_max,
    np.amax: runtime.reduce_max,
    np.min: runtime.reduce_min,
    np.amin: runtime.reduce_min,
    np.prod: runtime.reduce_prod,
    np.var: runtime.reduce_var,
    np.std: runtime.reduce_std,
    np.cumsum: runtime.cumsum,
    np.cumprod: runtime.cumprod,
    np.linalg.norm: runtime.norm,
    np.squeeze: runtime.squeeze,
    np.moveaxis: runtime.moveaxis,
    np.reshape: runtime.reshape,
    np.flip: runtime.flip,
    np.tile: runtime.tile,
    np.repeat: runtime.repeat,
    np.matmul: runtime.matmul,
    gast.MatMult: runtime.matmul,  # Numba's ``@`` stops at rank 2
    np.inner: runtime.inner,
    np.stack: runtime.stack,       # Numba's takes a tuple only
    np.add.at: runtime.scatter_add,
    np.einsum: runtime.einsum,
    np.tensordot: runtime.tensordot,
}

# Numba accepts these with only the array argument (np.sum also with an int axis).
_PLAIN_FORM_OK = {np.sum, np.mean, np.max, np.amax, np.min, np.amin, np.prod, np.var, np.std,
                  np.cumsum, np.cumprod, np.linalg.norm}

# Equivalents that are plain NumPy and do not compile under Numba yet (``np.einsum`` with
# constant subscripts is lowered to generated loops by ``transformer.lowering`` instead).
PYTHON_ONLY = {np.einsum, np.tensordot}


def numba_equivalent(obj) -> object | None:
    """The runtime function to call instead of ``obj`` under Numba, or None."""
    try:
        return _EQUIVALENTS.get(obj)
    except TypeError:  # unhashable
        return None


def needs_lowering(obj, keywords: dict[str, gast.expr] | None = None, nargs: int = 1) -> bool:
    """Whether a call ``obj(<nargs positional>, **keywords)`` must go through the runtime."""
    if numba_equivalent(obj) is None:
        return False
    if obj not in _PLAIN_FORM_OK:
        return True
    keywords = keywords or {}
    if obj is np.sum and set(keywords) <= {"axis"} and nargs <= 2:
        axis = keywords.get("axis")
        return isinstance(axis, gast.Tuple)
    return bool(keywords) or nargs > 1
