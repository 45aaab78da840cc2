"""Oracles and checks for functions of pytrees (dicts, tuples, namedtuples of arrays):
finite differences over the raveled first argument, JAX's nested Hessian as one matrix,
and tree comparison. Plain NumPy, shared by the pytree tests of every layer."""
from __future__ import annotations

import numpy as np

from transformer import tree_util
from transformer.test_util import numerical_grad


def tree_fd_grad(f, args):
    """d f / d args[0] by central differences over the raveled tree."""
    flat, unravel = tree_util.ravel_pytree(args[0])
    rest = tuple(args[1:])
    return unravel(numerical_grad(lambda v: f(unravel(v), *rest), [flat], 0))


def tree_fd_hessian(f, args, eps) -> np.ndarray:
    """The Hessian in the raveled first argument: differences of the difference gradient."""
    flat, unravel = tree_util.ravel_pytree(args[0])
    rest = tuple(args[1:])

    def gradient(v):
        return tree_util.ravel_pytree(tree_fd_grad(f, (unravel(v),) + rest))[0]
    return np.stack([(gradient(flat + eps * e) - gradient(flat - eps * e)) / (2 * eps)
                     for e in np.eye(flat.size)], axis=1)


def hessian_matrix(tree, params) -> np.ndarray:
    """JAX's nested Hessian (the parameter tree, each leaf a parameter tree of blocks) as
    one matrix in the raveled parameters."""
    if isinstance(params, (np.ndarray, float)):
        n = np.size(params)
        return np.reshape(tree, (n, n))
    sizes = [np.size(leaf) for leaf in tree_util.tree_leaves(params)]
    blocks = tree_util.tree_leaves(tree)
    n = len(sizes)
    assert len(blocks) == n * n
    return np.block([[np.reshape(blocks[i * n + j], (sizes[i], sizes[j])) for j in range(n)]
                     for i in range(n)])


def assert_tree_close(got, want, rtol=1e-5, atol=1e-6):
    """Same structure (container types included) and leaves within tolerance."""
    assert tree_util.tree_structure(got) == tree_util.tree_structure(want), \
        f"structure {tree_util.tree_structure(got)} != {tree_util.tree_structure(want)}"
    for g, w in zip(tree_util.tree_leaves(got), tree_util.tree_leaves(want)):
        np.testing.assert_allclose(np.asarray(g, float), np.asarray(w, float), rtol=rtol,
                                   atol=atol)


def stacked(trees):
    """The trees' leaves stacked on a new leading axis (a batch of examples)."""
    return tree_util.tree_map(lambda *leaves: np.stack(leaves), *trees)
