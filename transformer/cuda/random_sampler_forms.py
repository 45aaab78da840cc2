"""The CUDA forms of `exponential`, `laplace`, `logistic`, `gumbel`, `truncated_normal` and
of the key makers `PRNGKey`/`fold_in`, for the element loops of `.random_forms`.

A sampler here is an element of `transformer.runtime.random_samplers` (one uniform draw at
the element's flat index, two for gumbel's "high"/"highest" modes), so a thread gives the
bits the CPU gives. `gumbel` passes the element count `n` as its first parameter;
`truncated_normal` its bounds, which in a thread are scalars. `k2 = random.fold_in(k, d)`
and `k2 = random.PRNGKey(seed)` become a local uint32[2] filled word by word, a key of the
thread as split keys are. `categorical`, `permutation` and `choice` are drawn whole by
`.random_choice_forms`.
"""
from __future__ import annotations

import inspect

import gast
import numpy as np

from transformer import random
from transformer.runtime import random_samplers as samplers
from transformer.syntax import assign, call, const, located, name, store, subscript

from ..nodes import copy_tree

_F64, _F32 = np.dtype(np.float64), np.dtype(np.float32)
_ONE_DRAW = {random.exponential: "exponential", random.laplace: "laplace",
             random.logistic: "logistic", random.truncated_normal: "truncated_normal"}
# (sampler, dtype) -> the element for the default arguments
ELEMENTS = {(sampler, dt): samplers.ELEMENTS[label, dt]
            for sampler, label in {**_ONE_DRAW, random.gumbel: "gumbel"}.items()
            for dt in (_F64, _F32)}
DEFAULT_DTYPES = {sampler: _F64 for sampler, _ in ELEMENTS}
KEY_MAKERS = (random.PRNGKey, random.key, random.fold_in)


def element(rewriter, site, target, dtype, args, default):
    """The element function of a draw: `default` but for gumbel's `mode` (a literal)."""
    if target is not random.gumbel or "mode" not in args:
        return default
    mode = args["mode"]
    value = mode.value if isinstance(mode, gast.Constant) else "?"
    if value not in samplers.GUMBEL_MODES:
        raise rewriter.refuse(site, "random.gumbel takes mode as a literal 'low', 'high' or "
                                    "'highest'")
    return samplers.ELEMENTS[samplers.GUMBEL_MODES[value], dtype]


def parameters(rewriter, site, target, args, shape, dtype):
    """The element's `(a, b)` arguments, or None for a sampler of `.random_forms`."""
    if target is random.gumbel:
        return const(int(np.prod(shape, dtype=np.int64))), const(0)
    if target is random.truncated_normal:
        cast = rewriter.binder.bind(dtype.type, dtype.name)
        bounds = []
        for bound in ("lower", "upper"):
            spec = rewriter.key_spec(args[bound])
            if spec is not None and spec.shape:
                raise rewriter.refuse(site, f"random.truncated_normal takes a scalar {bound} "
                                            "in a thread (one draw per element of x: loop)")
            bounds.append(call(name(cast), copy_tree(args[bound])))
        return tuple(bounds)
    if target in _ONE_DRAW:
        return const(0), const(0)
    return None


def bound_arguments(rewriter, stmt, site, target) -> dict:
    """The arguments of a draw `site` of `target` assigned to a name, by parameter name;
    refused at the call when it is not assigned to a name or does not bind."""
    label = f"random.{target.__name__}"
    if not (isinstance(stmt, gast.Assign) and stmt.value is site and
            isinstance(stmt.targets[0], gast.Name)):
        raise rewriter.refuse(site, f"{label} must be assigned to a name")
    try:
        return inspect.signature(target).bind(*site.args, **{
            k.arg: k.value for k in site.keywords}).arguments
    except TypeError as exc:
        raise rewriter.refuse(site, f"{label}: {exc}") from None


def make_key(rewriter, stmt, site, target) -> list:
    """`k2 = random.fold_in(k, data)` or `random.PRNGKey(seed)`: a local uint32[2] key."""
    label = f"random.{target.__name__}"
    args = bound_arguments(rewriter, stmt, site, target)
    binder = rewriter.binder
    if target is random.fold_in:
        words = rewriter.key_words(site, label, args["k"])
        fn = binder.bind(rewriter.device(samplers._fold_in_word), "fold_in_word")
        word_of = [call(name(fn), *copy_tree(words), copy_tree(args["data"]),
                        const(w), const(0)) for w in (0, 1)]
    else:
        seed = args["seed"]
        if isinstance(seed, gast.Constant) and not isinstance(seed.value, int):
            raise rewriter.refuse(site, f"{label} takes an integer seed")
        fn = binder.bind(rewriter.device(samplers._seed_word), "seed_word")
        word_of = [call(name(fn), copy_tree(seed), const(w)) for w in (0, 1)]
    out = stmt.targets[0].id
    rewriter.derived_keys.add(out)
    rewriter.changed = True
    np_name = binder.bind(np, "np")
    alloc = call(gast.Attribute(value=name(np_name), attr="empty", ctx=gast.Load()),
                 gast.Tuple(elts=[const(2)], ctx=gast.Load()),
                 gast.Attribute(value=name(np_name), attr="uint32", ctx=gast.Load()))
    writes = [assign(subscript(name(out), const(w), gast.Store()), word_of[w]) for w in (0, 1)]
    return [located(s, stmt) for s in [assign(store(out), alloc), *writes]]
