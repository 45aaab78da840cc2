"""`random.categorical`, `permutation` and `choice` in CUDA threads, for the element loops
of `.random_forms`: a draw assigned to a name becomes `np.empty(shape, dtype)` filled by
element calls `element(key[0], key[1], flat, a, b)` (a shape () draw: the element call
itself), each element one of `.random_thread_choice`, so a thread gives the numbers the
CPU gives for its key.

Call forms with a thread form (sizes must be known when the kernel is compiled, since a
thread's scratch is a `cuda.local.array` of constant size):

* `categorical(key, logits, axis, shape, replace, mode)`: logits a 1-D or 2-D float array
  of the thread (argument or local), `axis`, `replace`, `mode` literals, `shape` a literal
  or left out;
* `permutation(key, x)`: `x` an int literal, or a 1-D array of the thread (axis 0);
* `choice(key, a, shape, replace, p, axis)`: `a` an int literal or a 1-D array of the
  thread, `shape` and `replace` literals, `p` left out or a 1-D float array of the thread
  with `a`'s length, `axis` 0.

Everything else is a TransformError at the user's line saying which part to change.
"""
from __future__ import annotations


import gast
import numpy as np

from transformer import random
from transformer.runtime import random_samplers as samplers
from transformer.syntax import assign, call, const, located, name, store

from ..nodes import copy_tree
from .random_heavy_forms import _filled
from .random_sampler_forms import bound_arguments

_I64, _I32 = np.dtype(np.int64), np.dtype(np.int32)
_FLOATS = (np.dtype(np.float64), np.dtype(np.float32))


def _literal(draws, site, label, args, what: str, default, allowed: tuple):
    """The literal value of argument `what` (`default` when left out), one of `allowed`;
    `label` names the draw in the refusal."""
    node = args.get(what)
    if node is None:
        return default
    value = node.value if isinstance(node, gast.Constant) else ...
    if isinstance(node, gast.UnaryOp) and isinstance(node.op, gast.USub) and \
            isinstance(node.operand, gast.Constant):
        value = -node.operand.value
    if not any(value == a and type(value) is type(a) for a in allowed):
        raise draws.refuse(site, f"{label} takes {what} as a literal, one of "
                                 f"{', '.join(repr(a) for a in allowed)}")
    return value


def _array(draws, site, label, node, what: str, kinds: str, ndims=(1,)):
    """The Spec of `node`, an array of the thread with a dtype kind in `kinds`."""
    spec = draws.key_spec(node)
    if spec is None or len(spec.shape) not in ndims or spec.dtype.kind not in kinds or \
            (kinds == "f" and spec.dtype not in _FLOATS):
        dims = " or ".join(f"{d}-D" for d in ndims)
        raise draws.refuse(site, f"{label} takes {what} as a {dims} "
                                 f"{'float32/float64' if kinds == 'f' else 'numeric'} array "
                                 "that is an argument or local of the kernel")
    return spec


def _emit(draws, stmt, target, shape, dt, element, device_function, words, a, b) -> list:
    """`out = np.empty(shape, dt)` and its element loops, or for shape () the element's
    value cast to `dt`."""
    fn = name(draws.binder.bind(device_function(element), f"{target.__name__}_at"))
    if shape:
        return _filled(draws, stmt, shape, dt, fn, words, a, b)
    draws.changed = True
    cast = name(draws.binder.bind(dt.type, dt.name))
    value = call(cast, call(fn, *words, const(0), a, b))
    return [located(assign(store(stmt.targets[0].id), value), stmt)]

# ---------------------------------------------------------------- categorical


def draw_categorical(draws, stmt, site, device_function) -> list:
    from . import random_thread_choice as thread
    label, target = "random.categorical", random.categorical
    args = bound_arguments(draws, stmt, site, target)
    logits = _array(draws, site, label, args["logits"], "logits", "f", (1, 2))
    nd, dt = len(logits.shape), np.dtype(logits.dtype)
    axis = _literal(draws, site, label, args, "axis", -1, tuple(range(-nd, nd)))
    axis %= nd
    replace = _literal(draws, site, label, args, "replace", True, (True, False))
    mode = _literal(draws, site, label, args, "mode", None, (None, "low", "high", "highest"))
    gumbel = samplers.ELEMENTS[samplers.GUMBEL_MODES[mode], dt]
    batch = tuple(d for j, d in enumerate(logits.shape) if j != axis)
    dims = batch if "shape" not in args or _is_none(args["shape"]) else \
        draws.shape(site, random.categorical, args)
    n_cat = logits.shape[axis]
    pre = len(dims) - len(batch)
    words = draws.key_words(site, "random.categorical", args.get("key", args.get("k")))
    if replace:
        if pre < 0 or (batch and batch[0] not in (1, dims[-1])) or n_cat == 0:
            raise draws.refuse(site, f"random.categorical: shape {dims} does not end with "
                                     f"the logits' batch shape {batch} (or the logits have "
                                     "no categories)")
        element = thread.categorical_element(tuple(logits.shape), axis, tuple(dims), gumbel)
        n_noise = int(np.prod(dims, dtype=np.int64)) * n_cat
        return _emit(draws, stmt, target, dims, _I64, element, device_function, words,
                     copy_tree(args["logits"]), const(n_noise))
    if pre < 0 or tuple(dims[pre:]) != batch or int(np.prod(dims[:pre])) > n_cat:
        raise draws.refuse(site, f"random.categorical without replacement: shape {dims} "
                                 f"must be (k,) + the logits' batch shape {batch} with k at "
                                 f"most the {n_cat} categories")
    element = thread.categorical_top_element(tuple(logits.shape), axis, gumbel, dt)
    return _emit(draws, stmt, target, dims, _I32, element, device_function, words,
                 copy_tree(args["logits"]), const(0))


def _is_none(node) -> bool:
    return isinstance(node, gast.Constant) and node.value is None

# ---------------------------------------------------------------- permutation and choice


def _population(draws, site, label, node, what: str):
    """`(n, spec)` of an int literal (spec None) or a 1-D array of the thread."""
    if isinstance(node, gast.Constant) and type(node.value) is int and node.value >= 0:
        return node.value, None
    spec = draws.key_spec(node)
    if spec is None or len(spec.shape) != 1:
        raise draws.refuse(site, f"{label} takes {what} as an int literal or a 1-D "
                                 "array of the thread (n must be known when the kernel is "
                                 "compiled: its scratch is a local array of n items)")
    return int(spec.shape[0]), spec


def draw_permutation(draws, stmt, site, device_function) -> list:
    from . import random_thread_choice as thread
    label, target = "random.permutation", random.permutation
    args = bound_arguments(draws, stmt, site, target)
    n, spec = _population(draws, site, label, args["x"], "x")
    _literal(draws, site, label, args, "axis", 0, (0, -1))
    _literal(draws, site, label, args, "independent", False, (False, True))
    dt = _I64 if spec is None else np.dtype(spec.dtype)
    element = thread.shuffle_element(n, spec is not None)
    words = draws.key_words(site, "random.permutation", args.get("key", args.get("k")))
    a = const(0) if spec is None else copy_tree(args["x"])
    return _emit(draws, stmt, target, (n,), dt, element, device_function, words, a, const(0))


def draw_choice(draws, stmt, site, device_function) -> list:
    from . import random_thread_choice as thread
    label, target = "random.choice", random.choice
    args = bound_arguments(draws, stmt, site, target)
    n, spec = _population(draws, site, label, args["a"], "a")
    _literal(draws, site, label, args, "axis", 0, (0, -1))
    replace = _literal(draws, site, label, args, "replace", True, (True, False))
    shape = draws.shape(site, target, args) if "shape" in args else ()
    size = int(np.prod(shape, dtype=np.int64))
    if size and n == 0 or not replace and size > n:
        raise draws.refuse(site, f"random.choice cannot take {size} draws from {n} items"
                                 f"{'' if replace else ' without replacement'}")
    values = spec is not None
    dt = np.dtype(spec.dtype) if values else _I64
    a = copy_tree(args["a"]) if values else const(0)
    p = None if "p" not in args or _is_none(args["p"]) else args["p"]
    if p is None:
        element = (thread.uniform_choice_element if replace else thread.shuffle_element)(
            n, values)
        b = const(0)
    else:
        weights = _array(draws, site, label, p, "p", "f")
        if tuple(weights.shape) != (n,):
            raise draws.refuse(site, f"random.choice takes p of shape ({n},), the length "
                                     f"of a; got {weights.shape}")
        builder = thread.weighted_choice_element if replace else thread.weighted_top_element
        element = builder(n, np.dtype(weights.dtype), values)
        b = copy_tree(p)
    words = draws.key_words(site, "random.choice", args.get("key", args.get("k")))
    return _emit(draws, stmt, target, shape, dt, element, device_function, words, a, b)


DRAWS = {random.categorical: draw_categorical, random.permutation: draw_permutation,
         random.choice: draw_choice}
