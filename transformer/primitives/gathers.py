"""np.roll, np.take, np.fliplr, np.flipud and np.pad (mode 'constant'): linear maps each of
whose output entries is one entry of the input or a constant. The tangent is the map applied
to the tangent; the adjoint puts each entry of the gradient back where it came from (rolled
back, added at the indices taken, flipped back, cut out of the padding). Their runtime forms
(`transformer.runtime.gathers`) are also what Numba runs, whose np.roll and np.take take no
axis and which has no np.pad; vmap runs them example by example in one compiled loop.
"""
from __future__ import annotations

import gast
import numpy as np

from transformer.runtime import gathers
from transformer.templates import CALL_CHECKS, MissingRule

from . import registry
from .families import linear, lowered
from .structural_more import per_example, refuse_keywords

linear(np.roll, adjoint="unroll(g, shift, axis)", tangent="roll(g, shift, axis)",
       params="x, shift, axis=None", kind="shape")
linear(np.take, adjoint="take_adjoint(g, x, indices, axis)", tangent="take(g, indices, axis)",
       params="x, indices, axis=None", kind="structural")
linear(np.fliplr, adjoint="flip(g, 1)", tangent="flip(g, 1)", kind="shape")
linear(np.flipud, adjoint="flip(g, 0)", tangent="flip(g, 0)", kind="shape")
linear(np.pad, adjoint="unpad(g, x, pad_width)", tangent="pad(g, pad_width)",
       params="x, pad_width, mode='constant', constant_values=0", kind="structural")

for _key, _equivalent in [(np.roll, gathers.roll), (np.take, gathers.take),
                          (np.pad, gathers.pad)]:
    lowered(_key, _equivalent)
    per_example(_key, _equivalent)
for _key in (gathers.roll, gathers.unroll, gathers.take, gathers.take_adjoint, gathers.pad,
             gathers.unpad, np.fliplr, np.flipud):
    per_example(_key, _key)     # vmap of a derivative: its helpers example by example

for _key in (np.roll, np.take, np.fliplr, np.flipud, np.pad):
    registry.unsupported(_key, "cuda", f"CUDA kernels are scalar code; "
                         f"{registry.user_name(_key)} of an array has no scalar form there")

_INDICES = "np.take(x, i % n) wraps the indices, np.take(x, np.clip(i, 0, n - 1)) clips them"
refuse_keywords(np.take, mode=_INDICES, out="assign the result instead: y = np.take(x, i)")

# ---------------------------------------------------------------- np.pad: mode 'constant' only

_PAD_HINT = "np.pad is differentiated with mode='constant' (the default) and a number " \
            "as constant_values; pad other ways with np.concatenate of slices of x"


def _number(node) -> bool:
    if isinstance(node, gast.UnaryOp) and isinstance(node.op, (gast.USub, gast.UAdd)):
        node = node.operand
    return isinstance(node, gast.Constant) and isinstance(node.value, (int, float)) \
        and not isinstance(node.value, bool)


def _check_pad(args, keywords) -> None:
    """np.pad's rules take mode 'constant' and a constant fill: a located error otherwise."""
    mode = args[2] if len(args) > 2 else keywords.get("mode")
    if mode is not None and not (isinstance(mode, gast.Constant) and mode.value == "constant"):
        shown = repr(mode.value) if isinstance(mode, gast.Constant) else "a computed mode"
        raise MissingRule(f"numpy.pad with mode {shown} has no derivative rule", _PAD_HINT)
    fill = args[3] if len(args) > 3 else keywords.get("constant_values")
    if fill is not None and not _number(fill):
        raise MissingRule("numpy.pad with constant_values other than a number has no "
                          "derivative rule", _PAD_HINT)


CALL_CHECKS[np.pad] = _check_pad

# ---------------------------------------------------------------- samples for the tests

_add = registry.add_sample
_add(np.roll, "np.roll(x, 2)", x=(5,))
_add(np.roll, "np.roll(x, -4)", x=(2, 3))
_add(np.roll, "np.roll(x, -1, axis=1)", x=(3, 4))
_add(np.roll, "np.roll(x, (1, -2), axis=(0, 1))", x=(3, 4))
_add(np.take, "np.take(x, np.array([0, 2, 2, -1]))", x=(2, 3))
_add(np.take, "np.take(x, np.array([[1, 0], [1, 1]]), axis=1)", x=(2, 3))
_add(np.take, "np.take(x, 2, axis=0)", x=(3, 4))
_add(np.take, "np.take(x, 4)", x=(2, 3))
_add(np.fliplr, "np.fliplr(x)", x=(2, 3))
_add(np.flipud, "np.flipud(x)", x=(3, 2))
_add(np.pad, "np.pad(x, 1)", x=(3,))
_add(np.pad, "np.pad(x, ((1, 0), (0, 2)))", x=(2, 3))
_add(np.pad, "np.pad(x, (2, 1), mode='constant', constant_values=0.5)", x=(2, 2))
