"""Which inputs a derivative is defined for, checked at the API boundary as JAX checks them.

grad, value_and_grad, jacrev, jacfwd and hessian differentiate real floating inputs only.
An integer or boolean argument in `argnums` is a `TypeError` naming it, unless the
transformation was made with `allow_int=True` (grad, value_and_grad, as in JAX): its
gradient is then an array of `FLOAT0` zeros, JAX's dtype for "no tangent space". A complex
argument is a `TypeError` too: JAX differentiates it only with `holomorphic=True`, which
secant does not offer. The generated code checks the same again (`reverse.float_zeros`), so
a gradient compiled by jit refuses such inputs even when called from other compiled code.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from . import tree_util

# JAX's float0: the tangent dtype of integer and boolean values (zero bytes per element)
FLOAT0 = np.dtype([("float0", np.void, 0)])


def input_kind(value) -> str | None:
    """'an integer' / 'a boolean' / 'complex' for a leaf a derivative is not defined for;
    None for a real floating value (or anything else, which later stages judge)."""
    try:
        dtype = np.dtype(value.dtype) if hasattr(value, "dtype") else np.asarray(value).dtype
    except (TypeError, ValueError):
        return None                      # not array-like: the transformation judges it
    if dtype == np.bool_:
        return "a boolean"
    if np.issubdtype(dtype, np.integer):
        return "an integer"
    if np.issubdtype(dtype, np.complexfloating):
        return "complex"
    return None


def refusal(transform: str, name: str, value, allow_int_hint: bool) -> TypeError:
    """The TypeError for differentiating argument `name` holding `value`."""
    kind = input_kind(value)
    dtype = np.dtype(value.dtype) if hasattr(value, "dtype") else np.asarray(value).dtype
    message = (f"{transform} requires real-valued inputs (input dtype that is a sub-dtype of "
               f"np.floating), but argument {name!r} is {kind} ({dtype}).")
    if kind == "complex":
        return TypeError(message + " For holomorphic differentiation JAX takes "
                         "holomorphic=True; secant does not differentiate complex inputs: "
                         "pass the real and imaginary parts as two float arguments.")
    if dtype == np.uint32 and np.shape(value)[-1:] == (2,):
        message += (f" It looks like a PRNG key (uint32, last axis 2): keys carry no "
                    f"derivative, so leave {name!r} out of argnums; samples drawn with it are "
                    f"constants of the differentiated function.")
    if allow_int_hint:
        return TypeError(message + " If you want to use Boolean- or integer-valued inputs, "
                         f"set allow_int=True (their gradient is then float0 zeros, as in "
                         f"JAX), or pass a float such as {name}=float(...).")
    return TypeError(message + f" Pass a float such as {name}=float(...).")


def check_inputs(transform: str, params: Sequence[str], args: Sequence, argnums: Sequence[int],
                 allow_int: bool = False, allow_int_hint: bool = True) -> tuple[int, ...]:
    """Raise the `refusal` for the first differentiated argument that is not real floating;
    with `allow_int`, return the positions (of `argnums`) holding integers or booleans."""
    integers = []
    for i in argnums:
        if not -len(args) <= i < len(args):
            continue                      # a missing argument: the call itself reports it
        leaves = tree_util.tree_leaves(args[i])
        kinds = {input_kind(leaf) for leaf in leaves} - {None}
        if not kinds:
            continue
        name = params[i] if i < len(params) else f"#{i}"
        if allow_int and "complex" not in kinds:
            integers.append(i)
            continue
        bad = next(leaf for leaf in leaves if input_kind(leaf) is not None)
        raise refusal(transform, name, bad, allow_int_hint)
    return tuple(integers)


def float0_zeros(value):
    """The gradient of an integer input under allow_int: FLOAT0 zeros of its structure."""
    return tree_util.tree_map(lambda leaf: np.zeros(np.shape(leaf), FLOAT0), value)
