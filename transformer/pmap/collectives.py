"""The collectives of `pmap`: which calls they are, and the reductions the executor runs.

Inside a pmapped function `psum`, `pmean`, `pmax`, `pmin`, `all_gather` (the functions
vmap knows, `transformer.api_batching`) and `ppermute` (pmap only) are boundaries between
compiled stages (`transformer.pmap.stages`); `axis_index` is the shard's number, passed to
every stage. Here the reduction of one boundary runs on the host, over the values every
shard produced, with JAX's semantics: every shard receives the same reduced value (a
pytree reduced leaf by leaf), except `ppermute`, which sends shard `src`'s value to shard
`dst` for each `(src, dst)` pair and gives zeros to a shard no pair sends to.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from .. import tree_util
from ..errors import TransformError
from ..rules.batching import COLLECTIVES


def ppermute(x, axis_name, perm):
    """Shard `src`'s `x` goes to shard `dst` for each `(src, dst)` in `perm`; others get
    zeros. Only inside `pmap(f, axis_name=...)` (and `shard_map`)."""
    raise TransformError(f"ppermute(..., axis_name={axis_name!r}) was called outside a pmap "
                         "with that axis_name",
                         hint=f"call it inside pmap(f, axis_name={axis_name!r})")


def kind_of(target) -> str | None:
    """"psum", ..., "ppermute" or "axis_index" for a collective function, else None (the
    vmap ones are registered in `rules.batching.COLLECTIVES`, the functions vmap rewrites)."""
    if target is ppermute:
        return "ppermute"
    try:
        return COLLECTIVES.get(target)
    except TypeError:               # an unhashable object
        return None


def check_perm(perm, size: int) -> tuple:
    """`perm` as a tuple of (src, dst) int pairs, each source and destination once and in
    range(size); ValueError otherwise (JAX's rule)."""
    try:
        pairs = tuple((int(s), int(d)) for s, d in perm)
    except (TypeError, ValueError):
        raise ValueError(f"ppermute's perm must be a sequence of (source, destination) "
                         f"pairs of ints, got {perm!r}") from None
    for side, what in ((0, "source"), (1, "destination")):
        seen = [p[side] for p in pairs]
        if len(set(seen)) != len(seen):
            raise ValueError(f"ppermute's perm names a {what} twice: {perm!r}")
        if any(not 0 <= i < size for i in seen):
            raise ValueError(f"ppermute's perm has a {what} outside range({size}) "
                             f"(the number of shards): {perm!r}")
    return pairs


def reduce(kind: str, values: Sequence[Any], perm: tuple = ()) -> list:
    """The value each shard receives from the boundary `kind`, given each shard's operand."""
    n = len(values)
    if kind == "ppermute":
        zeros = tree_util.tree_map(np.zeros_like, values[0])
        out = [zeros] * n
        for src, dst in perm:
            out[dst] = values[src]
        return out
    one = tree_util.tree_map(lambda *leaves: _reduce_leaves(kind, leaves), *values)
    return [one] * n


def _reduce_leaves(kind: str, leaves) -> Any:
    stacked = np.stack([np.asarray(leaf) for leaf in leaves])
    if kind == "all_gather":
        return stacked
    if kind == "psum":
        result = stacked.sum(axis=0)
    elif kind == "pmean":
        result = stacked.mean(axis=0)
    elif kind == "pmax":
        result = stacked.max(axis=0)
    else:
        result = stacked.min(axis=0)
    return result if result.ndim else result[()]
