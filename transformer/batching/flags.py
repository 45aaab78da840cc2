"""Batch flags and the vmap specification.

A flag says how a value is batched: `False`, `True`, `IDENTITY` (an identity batch, see
the package docstring), or a structure for containers: a tuple or dict of flags, or
`Each(flag)` for a container whose every leaf has one flag. `Spec` is what vmap was asked
for; `NeedsLoop` is how the analysis and the vectorizer say the batch needs the loop.
"""
from __future__ import annotations

import dataclasses
from typing import Any

from ..function import Function

# ====================================================================== flags


@dataclasses.dataclass(frozen=True)
class Each:
    """A container (dict, tuple) whose every leaf has the same batch flag."""

    flag: Any


class _Identity:
    """The flag of an identity-batched value (see the module docstring)."""

    def __bool__(self) -> bool:
        return True

    def __repr__(self) -> str:
        return "IDENTITY"


IDENTITY = _Identity()


def _any_leaf(flag, test) -> bool:
    """Whether `test` holds for some leaf of `flag`, through `Each`, tuples and dicts."""
    if isinstance(flag, Each):
        return _any_leaf(flag.flag, test)
    if isinstance(flag, tuple):
        return any(_any_leaf(f, test) for f in flag)
    if isinstance(flag, dict):
        return any(_any_leaf(f, test) for f in flag.values())
    return test(flag)


def any_batched(flag) -> bool:
    return _any_leaf(flag, bool)


def join(a, b):
    if a == b:
        return a
    if a is IDENTITY or b is IDENTITY:         # not identity-batched on every path
        return True
    if isinstance(a, tuple) and isinstance(b, tuple) and len(a) == len(b):
        return tuple(join(x, y) for x, y in zip(a, b))
    if isinstance(a, (tuple, Each)) and isinstance(b, (tuple, Each)):
        # lists or tuples of different lengths (`ws = [a, b]` on one path, `[c]` on
        # another): a container whose every item may have any of their flags
        items = []
        for flag in (a, b):
            items.extend((flag.flag,) if isinstance(flag, Each) else flag)
        if not items:
            return Each(False)
        joined = items[0]
        for item in items[1:]:
            joined = join(joined, item)
        return Each(joined)
    if isinstance(a, dict) and isinstance(b, dict) and a.keys() == b.keys():
        return {k: join(a[k], b[k]) for k in a}
    if a is False:
        return b
    if b is False:
        return a
    return any_batched(a) or any_batched(b)


def example_items(flag):
    """How a value flagged `flag` splits into examples: a bool, a tuple of such flags for
    a tuple holding batched values, or None (a dict, or a container of unknown length,
    holding batched values)."""
    if isinstance(flag, tuple):
        items = tuple(example_items(f) for f in flag)
        if None in items:
            return None
        return items if any_batched(items) else False
    if isinstance(flag, (Each, dict)):
        return None if any_batched(flag) else False
    return bool(flag)


def batched_leaves(flag):
    """`flag` with every leaf batched, keeping its tuple or dict structure: a value
    computed under batched control flow differs per example in each of its parts."""
    if isinstance(flag, tuple):
        return tuple(batched_leaves(f) for f in flag)
    if isinstance(flag, dict):
        return {k: batched_leaves(f) for k, f in flag.items()}
    return True


def child(flag, key):
    """The flag of `container[key]` for a constant key."""
    if isinstance(flag, Each):
        return flag.flag
    if isinstance(flag, tuple) and isinstance(key, int) and -len(flag) <= key < len(flag):
        return flag[key]
    if isinstance(flag, dict) and key in flag:
        return flag[key]
    return any_batched(flag)


def any_item(flag):
    """The flag of `container[i]` for an index known only at run time: the items' flag
    where every item has the same one, else None (which item is read decides)."""
    if isinstance(flag, Each):
        return flag.flag
    items = tuple(flag) if isinstance(flag, tuple) else tuple(flag.values())
    if items and all(item == items[0] for item in items):
        return items[0]
    return None


# ====================================================================== specification


@dataclasses.dataclass(frozen=True)
class Spec:
    """What to batch: one in_axes entry per parameter (None, an int, or a pytree)."""

    in_axes: tuple
    out_axes: Any = 0
    axis_size: int | None = None
    axis_name: Any = None
    method: str = "auto"
    identity: int | None = None     # the parameter passed as `d` of an identity batch


class NeedsLoop(Exception):
    """Raised while vectorizing: this statement needs the loop strategy."""

    def __init__(self, reason: str, node):
        super().__init__(reason)
        self.reason, self.node = reason, node


def _line(fn: Function, node) -> str:
    lineno = getattr(node, "lineno", None)
    return f"line {lineno}" if lineno else fn.origin.describe()
