"""Names for annotating code that secant transforms, used the way JAX uses its own:
`ArrayLike` for array inputs, `Array` for array outputs.

    from transformer.typing import Array, ArrayLike

    def energy(pos: ArrayLike, eps: float) -> Array: ...

They are NumPy's (`numpy.typing`): secant runs on NumPy arrays, eagerly and under Numba.
Annotations are kept in the generated source and change nothing in what it computes.
"""
from __future__ import annotations

from typing import Any, Sequence, Union

import numpy.typing as npt

ArrayLike = npt.ArrayLike
"""What `np.asarray` accepts: arrays, NumPy scalars, Python numbers, nested sequences."""

Array = npt.NDArray[Any]
"""A NumPy array of any dtype, as secant's functions return for array results."""

Argnums = Union[int, Sequence[int]]
"""Which positional arguments a transformation acts on: one index or several."""

__all__ = ["Argnums", "Array", "ArrayLike"]
