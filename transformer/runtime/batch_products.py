"""Sums over a batch of per-example matrix-product adjoints, computed as one product.

Inside `grad` of a `vmap` with a matrix shared by every example - JAX's MLP tutorial:
`vmap(predict, in_axes=(None, 0))`, whose `np.dot(w, activations)` is `dot_right(w, xs)` -
the adjoint of the shared matrix is the sum over examples of each example's outer product,
`sum_batch(left_of_right(g, w, xs))`. Summed one by one, that builds an (n, m, k) stack (for
128 examples of a 512 x 784 layer, 400 MB) to add it up; it is `g.T @ xs`, one product.
Likewise `sum_batch(right_of_left(g, xs, w))` for `np.dot(x, w)` is `xs.T @ g`.

Lowering for Numba (`transformer.lowering`) calls these for those two patterns, after every
transformation, so they need no derivative rules. Matrices and vectors take the product;
other ranks sum the stack as before.
"""
from __future__ import annotations

import numpy as np
from numba import types
from transformer.runtime.numba_api import overload

from .examples import over_examples, sum_batch
from .linalg import matmul_grad_left, matmul_grad_right


def left_of_right():
    """The per-example adjoint the rule of dot_right sums (rules/batching.py). Made on
    first use, as the rules make it, so that the hooks of `over_examples` see it once."""
    return over_examples(matmul_grad_left, (True, False, True))


def right_of_left():
    """The per-example adjoint the rule of dot_left sums."""
    return over_examples(matmul_grad_right, (True, True, False))


def sum_left_of_right(g, a, b):
    """`sum_batch(left_of_right(g, a, b))`: the adjoint of `a` shared by `np.dot(a, b[k])`."""
    if np.ndim(g) == 2 and np.ndim(a) == 2 and np.ndim(b) == 2:
        return np.dot(np.transpose(g), b)
    return sum_batch(left_of_right()(g, a, b))


def sum_right_of_left(g, a, b):
    """`sum_batch(right_of_left(g, a, b))`: the adjoint of `b` shared by `np.dot(a[k], b)`."""
    if np.ndim(g) == 2 and np.ndim(a) == 2 and np.ndim(b) == 2:
        return np.dot(np.transpose(a), g)
    return sum_batch(right_of_left()(g, a, b))


def _matrices(*args) -> bool:
    """Float matrices of one dtype: the case one BLAS product computes."""
    return all(isinstance(x, types.Array) and x.ndim == 2 and isinstance(x.dtype, types.Float)
               for x in args) and len({x.dtype for x in args}) == 1


def _summed(make, product):
    """The Numba form of a summed product: `product` for matrices, else the stack summed."""
    def typer(g, a, b):
        if _matrices(g, a, b):
            return product
        each = make()
        return lambda g, a, b: sum_batch(each(g, a, b))
    return typer


overload(sum_left_of_right)(_summed(left_of_right, lambda g, a, b: np.dot(
    np.ascontiguousarray(g.T), np.ascontiguousarray(b))))
overload(sum_right_of_left)(_summed(right_of_left, lambda g, a, b: np.dot(
    np.ascontiguousarray(a.T), np.ascontiguousarray(g))))
