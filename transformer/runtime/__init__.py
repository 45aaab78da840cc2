"""Helpers that generated code calls; each runs as plain NumPy and inside Numba nopython mode.

Every helper is a plain Python function (NumPy, used by the ``python`` backend) with a
``numba.extending.overload`` that dispatches on Numba types. Numba's versions share two
index-mapping kernels (``_reduce_into``, ``_gather``) so that reductions, broadcasting and
their adjoints work for any rank, with an axis that is an int (negative too), a tuple or None.

Conventions: gradients keep the float type of the value they belong to (float32 stays
float32); a scalar's gradient is a scalar, never a 0-d array.

Plain NumPy only for now: ``tensordot``, ``squeeze`` without an axis (the lowering passes
the axes it can prove to ``squeeze_known``), and ``matmul`` with its adjoints for operands of
rank above 3. ``einsum``, ``einsum_grad``, ``einsum_grad_tangent`` and ``einsum_tangent`` are
plain NumPy here; the lowering replaces their calls with loops generated from the subscripts
(``transformer.einsum``).

Modules by concern (each imports only NumPy, Numba, `math` and its siblings; this package
re-exports every public helper, so generated code and rules name them `runtime.<name>`):
`casts` (scalars, zeros, casts), `kernels` (index-mapping kernels, axes), `broadcasting`,
`reductions` (with an axis, and scans), `shapes`, `gathers` (np.roll, np.take, np.pad and
their adjoints), `linalg`, `contractions` (einsum), `lowered` (call forms Numba lacks),
`tapes` (the reverse sweep's tapes and shape guards, named `tape.<name>` by the passes, not
re-exported here), `errors` (`TransformError`, `copy_hint`),
`random`, `random_choice` and `xla_math` (`transformer.random` element by element, with
XLA's rounding; reached through the primitive registry, not re-exported here).
"""

from __future__ import annotations

from . import example_forms  # noqa: F401  (registers the loop-free per-example forms)
from .broadcasting import (at_lower, at_upper, broadcast_like, broadcast_reduced, inside,
                           kept_writes, placed_writes, scatter_add, unbroadcast)
from .casts import astype, cast_cotangent, cast_like, cast_tangent, real_only, zeros_like
# called by generated code as runtime.<name> but not listed in __all__ (kept as it was)
from .casts import array_copy, keep_float_type, own_copy, update_in_place, update_tangent  # noqa: F401
from .contractions import (einsum, einsum_grad, einsum_grad_tangent, einsum_tangent,
                           einsum_zeros)
from .gathers import pad, roll, take, take_adjoint, unpad, unroll
from .kernels import axis_count
from .kernels import axis_mask  # noqa: F401
from .linalg import (
    inner,
    inner_grad_left,
    inner_grad_right,
    matmul,
    matmul_grad_left,
    matmul_grad_left_add,
    matmul_grad_right,
    matmul_grad_right_add,
    norm,
    outer_or_matmul,
    tensordot,
    tensordot_grad_left,
    tensordot_grad_right,
)
from .lowered import (as_repr, as_text, clip, getitem_mask, power, setitem_mask, squeeze_known,
                      stack)
from .reductions import (
    average,
    cumprod,
    cumsum,
    cumsum_adjoint,
    mean_all,
    reduce_all,
    reduce_any,
    reduce_max,
    reduce_mean,
    reduce_min,
    reduce_prod,
    reduce_std,
    reduce_sum,
    reduce_var,
    std_all,
    sum_all,
    var_all,
)
from .shapes import (
    column_stack,
    concatenate,
    concatenate_part,
    concatenate_unpart,
    flip,
    hstack,
    hstack_part,
    hstack_unpart,
    moveaxis,
    ravel,
    repeat,
    reshape,
    reshape_like,
    squeeze,
    stack_part,
    stack_unpart,
    tile,
    transpose,
    unrepeat,
    untile,
    untranspose,
    vstack,
    vstack_part,
    vstack_unpart,
)

from .special import digamma, sinc_curvature, sinc_slope, trigamma
__all__ = [
    "as_repr",
    "as_text",
    "astype",
    "at_lower",
    "at_upper",
    "average",
    "axis_count",
    "broadcast_like",
    "broadcast_reduced",
    "cast_cotangent",
    "cast_like",
    "cast_tangent",
    "clip",
    "column_stack",
    "concatenate",
    "concatenate_part",
    "concatenate_unpart",
    "cumprod",
    "cumsum",
    "cumsum_adjoint",
    "digamma",
    "einsum",
    "einsum_grad",
    "einsum_grad_tangent",
    "einsum_tangent",
    "einsum_zeros",
    "flip",
    "getitem_mask",
    "hstack",
    "hstack_part",
    "hstack_unpart",
    "inner",
    "inner_grad_left",
    "inner_grad_right",
    "inside",
    "kept_writes",
    "matmul",
    "matmul_grad_left",
    "matmul_grad_left_add",
    "matmul_grad_right",
    "matmul_grad_right_add",
    "mean_all",
    "moveaxis",
    "norm",
    "outer_or_matmul",
    "pad",
    "placed_writes",
    "power",
    "real_only",
    "reduce_all",
    "reduce_any",
    "reduce_max",
    "reduce_mean",
    "reduce_min",
    "reduce_prod",
    "reduce_std",
    "reduce_sum",
    "std_all",
    "sum_all",
    "reduce_var",
    "ravel",
    "repeat",
    "reshape",
    "reshape_like",
    "roll",
    "scatter_add",
    "setitem_mask",
    "sinc_curvature",
    "sinc_slope",
    "squeeze",
    "squeeze_known",
    "stack",
    "stack_part",
    "stack_unpart",
    "tensordot",
    "take",
    "take_adjoint",
    "tensordot_grad_left",
    "tensordot_grad_right",
    "tile",
    "transpose",
    "trigamma",
    "unbroadcast",
    "unrepeat",
    "unroll",
    "unpad",
    "untile",
    "untranspose",
    "var_all",
    "vstack",
    "vstack_part",
    "vstack_unpart",
    "zeros_like",
]
