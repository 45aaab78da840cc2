"""Helpers reverse mode's forward sweep calls to write into arrays and element buffers.

`accumulated(target, index, values)` is an in-place accumulation as a value; the element
buffers of arrays written in place are filled and read by `push_items` / `pop_items`
(`transformer.tape`), which return (buffer or elements, new length): `SPLIT` maps each to
its two single-result parts, since a derivative rule takes a single result. Their
derivative and batching rules live in `transformer.helper_rules`.
"""
from __future__ import annotations

import numpy as np
from numba import types
from transformer.runtime.numba_api import overload, register_jitable

from . import tape
from .runtime import scatter_add


def item_count(x):
    """How many elements `x` holds (1 for a scalar)."""
    return np.size(x)


@overload(item_count)
def _item_count_nb(x):
    if isinstance(x, types.Array):
        return lambda x: x.size
    return lambda x: 1


def items_pushed(buf, n, value):
    """`push_items(buf, n, value)[0]`: the buffer holding `value`'s elements from `n`."""
    return tape.push_items(buf, n, value)[0]


@overload(items_pushed)
def _items_pushed_nb(buf, n, value):
    return lambda buf, n, value: tape.push_items(buf, n, value)[0]


@register_jitable
def items_end(n, value):
    """`push_items(buf, n, value)[1]`: the length after the elements of `value`."""
    return n + item_count(value)


def items_popped(buf, n, like):
    """`pop_items(buf, n, like)[0]`: the elements below `n`, shaped like `like`."""
    return tape.pop_items(buf, n, like)[0]


@overload(items_popped)
def _items_popped_nb(buf, n, like):
    return lambda buf, n, like: tape.pop_items(buf, n, like)[0]


@register_jitable
def items_start(n, like):
    """`pop_items(buf, n, like)[1]`: the length before the elements popped."""
    return n - item_count(like)


def items_slice(g, n, value):
    """The elements of flat `g` from `n` that `value` was pushed into, shaped like it."""
    if np.ndim(value) == 0:
        return g[n]
    return np.array(g[n:n + np.size(value)], copy=True).reshape(np.shape(value))


@overload(items_slice)
def _items_slice_nb(g, n, value):
    if not isinstance(value, types.Array):
        return lambda g, n, value: g[n]
    return lambda g, n, value: g[n:n + value.size].copy().reshape(value.shape)


def items_rest(g, buf, n, value):
    """`g` cut to `buf`'s length without the elements `value` was pushed into."""
    rest = np.array(g[:np.shape(buf)[0]], copy=True)
    rest[n:n + item_count(value)] = 0
    return rest


@overload(items_rest)
def _items_rest_nb(g, buf, n, value):
    def impl(g, buf, n, value):
        rest = g[:buf.shape[0]].copy()
        rest[n:n + item_count(value)] = 0
        return rest
    return impl


def items_placed(g, buf, n, like):
    """Zeros shaped like `buf`, with `g` (shaped like `like`) where it was popped from."""
    out = np.zeros(np.shape(buf)[0], np.result_type(buf, g))
    out[n - item_count(like):n] = np.ravel(g)
    return out


@overload(items_placed)
def _items_placed_nb(g, buf, n, like):
    def impl(g, buf, n, like):
        out = np.zeros(buf.shape[0], buf.dtype)
        flat = np.ravel(np.asarray(g))
        start = n - item_count(like)
        for k in range(flat.size):
            out[start + k] = flat[k]
        return out
    return impl


tape.INTEGER_RESULTS += [items_end, items_start]       # positions in an element buffer
SPLIT = {tape.push_items: (items_pushed, items_end),
         tape.pop_items: (items_popped, items_start)}


def accumulated(target, index, values):
    """`scatter_add(target, index, values)`, then `target`: the in-place accumulation as a
    value, which tangent code assigns (`dbx = accumulated(dbx, i, dv)`) so that every
    transformation sees the data flow into `dbx`."""
    scatter_add(target, index, values)
    return target


@overload(accumulated)
def _accumulated_nb(target, index, values):
    def impl(target, index, values):
        scatter_add(target, index, values)
        return target
    return impl


tape.SHAPE_FROM[accumulated] = 0


def accumulated_of_batch(target, index, values):
    """`accumulated(target[k], index, values[k])` for every k."""
    for k in range(np.shape(target)[0]):
        scatter_add(target[k], index, values[k])
    return target


@overload(accumulated_of_batch)
def _accumulated_of_batch_nb(target, index, values):
    def impl(target, index, values):
        for k in range(target.shape[0]):
            scatter_add(target[k], index, values[k])
        return target
    return impl
