"""How batched code lines up a batched operand with another: `align` and `align_batched`.

`align_batched(x, ref) - align_batched(ref, x)` subtracts two batched values example by
example: the one of lower example rank gets axes of length one after its batch axis, so
that NumPy's broadcasting pairs example `k` with example `k`. Generated code never knows
ranks, so the padding is chosen from the types where the code runs.

In compiled code each call is typed and lowered here directly (`type_callable`,
`lower_builtin`): the result is `x` itself when the ranks already agree, else a view of
`x` with the unit axes inserted. Batched code makes dozens of these calls, and as an
inlined `overload` each call site ran Numba's untyped pipeline and typed the inlined body,
about a sixth of the compile of `jit(vmap(grad(mlp)))`'s own function.

A function compiled with `parallel=True` binds the `*_for_parfors` forms instead: the same
padding as an inlined reshape with literal ones, from which Numba's parfor pass can see
that the padded axes have length one and accept the broadcast (a call it cannot see into
reads as unknown sizes, and the (B, 1) - (B, k) broadcast then fails its size assertion).
`parfor_form` gives that form. Imports only NumPy, Numba and `numba_api`.
"""
from __future__ import annotations

import numpy as np
from numba import types
from numba.core import cgutils
from numba.core.imputils import impl_ret_borrowed, lower_builtin
from numba.extending import type_callable
from numba.np.arrayobj import make_array, populate_array

from .numba_api import overload


def _ndim(ty) -> int:
    return ty.ndim if isinstance(ty, types.Array) else 0


def _pad(x, rank: int):
    """Batched `x` with ones inserted after the batch axis so it has `rank` example axes."""
    extra = rank - (np.ndim(x) - 1)
    if extra <= 0:
        return x
    return np.reshape(x, np.shape(x)[:1] + (1,) * extra + np.shape(x)[1:])


def align(x, ref):
    """Batched `x` shaped to broadcast against the unbatched `ref` example by example."""
    return _pad(x, np.ndim(ref))


def align_batched(x, ref):
    """Batched `x` shaped to broadcast against the batched `ref` example by example."""
    return _pad(x, np.ndim(ref) - 1)


# ====================================================================== compiled: a view

def _padded_type(x, rank: int):
    """The Numba type of `x` padded to `rank` example axes; None where `x` has no batch
    axis to pad after (a number, a 0-d array), which Numba then reports as untypable."""
    extra = rank - (_ndim(x) - 1)
    if extra <= 0:
        return x
    if not isinstance(x, types.Array) or x.ndim == 0:
        return None
    # inserted axes of length one keep a C-ordered array C-ordered (their strides are
    # written as C order has them); any other layout is a strided view
    return x.copy(ndim=x.ndim + extra, layout="C" if x.layout == "C" else "A")


@type_callable(align)
def _type_align(context):
    return lambda x, ref: _padded_type(x, _ndim(ref))


@type_callable(align_batched)
def _type_align_batched(context):
    return lambda x, ref: _padded_type(x, _ndim(ref) - 1)


@lower_builtin(align, types.Any, types.Any)
@lower_builtin(align_batched, types.Any, types.Any)
def _lower_padded(context, builder, sig, args):
    x_type, out_type = sig.args[0], sig.return_type
    if out_type == x_type:
        return impl_ret_borrowed(context, builder, out_type, args[0])
    extra = out_type.ndim - x_type.ndim
    x = make_array(x_type)(context, builder, args[0])
    shape = cgutils.unpack_tuple(builder, x.shape, x_type.ndim)
    strides = cgutils.unpack_tuple(builder, x.strides, x_type.ndim)
    # the stride C order gives an axis of length one in front of axis 1: what one step
    # over all of axis 1 would take (for a vector, one item)
    unit = builder.mul(strides[1], shape[1]) if x_type.ndim > 1 else x.itemsize
    one = context.get_constant(types.intp, 1)
    out = make_array(out_type)(context, builder)
    populate_array(out, data=x.data, shape=[shape[0]] + [one] * extra + shape[1:],
                   strides=[strides[0]] + [unit] * extra + strides[1:],
                   itemsize=x.itemsize, meminfo=x.meminfo, parent=x.parent)
    return impl_ret_borrowed(context, builder, out_type, out._getvalue())


# ====================================================================== parallel=True

def align_for_parfors(x, ref):
    """`align`, in a form Numba's parfor pass can read (see the module's docstring)."""
    return _pad(x, np.ndim(ref))


def align_batched_for_parfors(x, ref):
    """`align_batched`, in a form Numba's parfor pass can read."""
    return _pad(x, np.ndim(ref) - 1)


def _pad_nb(x, rank: int):
    extra = rank - (_ndim(x) - 1)
    if extra <= 0:
        return lambda x, ref: x
    # The new shape is written out with literal ones: inlined, Numba's parfor pass then
    # sees the padded axes have length 1; a shape built by tuple concatenation reads as
    # unknown sizes.
    dims = ["x.shape[0]"] + ["1"] * extra + [f"x.shape[{i}]" for i in range(1, _ndim(x))]
    namespace = {"np": np}
    exec(f"def impl(x, ref):\n"
         f"    return np.ascontiguousarray(x).reshape(({', '.join(dims)},))\n", namespace)
    return namespace["impl"]


@overload(align_for_parfors, inline="always")
def _align_for_parfors_nb(x, ref):
    return _pad_nb(x, _ndim(ref))


@overload(align_batched_for_parfors, inline="always")
def _align_batched_for_parfors_nb(x, ref):
    return _pad_nb(x, _ndim(ref) - 1)


PARFOR_FORMS = ((align, align_for_parfors), (align_batched, align_batched_for_parfors))


def parfor_form(value):
    """What a `parallel=True` function binds for `value`: its parfor form, else `value`."""
    return next((form for plain, form in PARFOR_FORMS if plain is value), value)
