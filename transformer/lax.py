"""JAX's structured control flow (`jax.lax`) with JAX's signatures, for code ported from JAX.

Called in plain Python, each function runs as JAX specifies (this module is that Python
implementation). Inside a function secant transforms, `lax_lowering` rewrites each call
to plain Python control flow (if/else, `for ... in range`, `while`, a loop writing the
stacked outputs of `scan` into a preallocated array) before any transformation, so
`grad`, `vmap`, `jvp`, `hessian` and `jit` see real control flow.

Contracts kept in both forms:
- `cond` evaluates exactly one branch; `switch` clamps `index` to [0, len(branches) - 1];
- `select` is elementwise (`np.where`);
- `fori_loop(lower, upper, ...)` runs `body_fun(i, val)` for i in range(lower, upper);
- `scan` returns `(carry, ys)` with ys stacked along a new leading axis (a pytree of
  stacked arrays when `f` returns a pytree as its second output), visited in reverse
  order (and stored at the same index) when `reverse=True`.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from . import tree_util


def cond(pred, true_fun: Callable, false_fun: Callable, *operands):
    """`true_fun(*operands)` if `pred` else `false_fun(*operands)`."""
    if np.ndim(pred) != 0:
        raise TypeError(f"cond: pred must be a scalar, got shape {np.shape(pred)}")
    return true_fun(*operands) if pred else false_fun(*operands)


def switch(index, branches: Sequence[Callable], *operands):
    """`branches[clamp(index, 0, len(branches) - 1)](*operands)`."""
    if len(branches) == 0:
        raise ValueError("switch: branches must not be empty")
    k = min(max(int(index), 0), len(branches) - 1)
    return branches[k](*operands)


def select(pred, on_true, on_false):
    """Elementwise `on_true` where `pred` else `on_false`."""
    return np.where(pred, on_true, on_false)


def fori_loop(lower, upper, body_fun: Callable, init_val):
    """`val = body_fun(i, val)` for i in range(lower, upper), starting at `init_val`."""
    val = init_val
    for i in range(int(lower), int(upper)):
        val = body_fun(i, val)
    return val


def while_loop(cond_fun: Callable, body_fun: Callable, init_val):
    """`val = body_fun(val)` while `cond_fun(val)`, starting at `init_val`."""
    val = init_val
    while cond_fun(val):
        val = body_fun(val)
    return val


def scan(f: Callable, init, xs=None, length: int | None = None, reverse: bool = False,
         unroll: int = 1) -> tuple[Any, Any]:
    """`carry, y = f(carry, x)` over the leading axis of `xs` (a pytree of arrays or
    None with `length`); returns the last carry and the ys stacked. `unroll` changes no
    value (it is a compile hint in JAX) and is accepted for compatibility."""
    del unroll
    n = _scan_length(xs, length)
    order = range(n - 1, -1, -1) if reverse else range(n)
    if n == 0:
        raise ValueError("scan: length 0 gives no output to take the shape of ys from")
    carry, ys = init, [None] * n
    for i in order:
        x = None if xs is None else tree_util.tree_map(lambda leaf, i=i: leaf[i], xs)
        carry, ys[i] = f(carry, x)
    return carry, tree_util.tree_map(lambda *leaves: np.stack(leaves), *ys)


def _scan_length(xs, length) -> int:
    leaves = [] if xs is None else tree_util.tree_leaves(xs)
    sizes = {np.shape(leaf)[0] for leaf in leaves}
    if len(sizes) > 1:
        raise ValueError(f"scan: xs leaves have different leading sizes {sorted(sizes)}")
    if length is not None and sizes and sizes != {length}:
        raise ValueError(f"scan: length={length} but xs have leading size {sizes.pop()}")
    if length is None and not sizes:
        raise ValueError("scan: pass xs or length")
    return int(length) if length is not None else sizes.pop()
