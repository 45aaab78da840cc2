"""`shard_map(f, mesh, in_specs, out_specs)` over a one-dimensional `Mesh`.

JAX's `jax.experimental.shard_map` semantics on pmap's machinery: each device of the mesh
gets a *block* of every argument split by its spec (`P("i")`: the first dimension cut into
equal blocks, one per device, the dimension kept; `P(None, "i")`: the second; `P()`: the
whole value on every device), runs `f` on it with the collectives over the mesh's axis
name, and the output blocks are concatenated along their spec's dimension (`P()`: the
value every device holds, device 0's). A dimension that does not divide evenly by the
number of devices is a ValueError naming the argument, as in JAX.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from .. import tree_util
from .api import Pmapped
from .executors import Device


class P(tuple):
    """A partition spec: per dimension, the mesh axis name it is split over, or None."""

    def __new__(cls, *names):
        return super().__new__(cls, names)

    def __repr__(self):
        return f"P{tuple(self)!r}"


PartitionSpec = P


class Mesh:
    """A one-dimensional mesh: `devices` (from `transformer.devices()`) named `axis_names`."""

    def __init__(self, devices: Sequence[Device], axis_names: str | Sequence[str]):
        names = (axis_names,) if isinstance(axis_names, str) else tuple(axis_names)
        devices = list(np.asarray(devices, dtype=object).ravel()) if len(devices) else []
        if len(names) != 1:
            raise ValueError(f"Mesh here is one-dimensional: one axis name, got {names!r}")
        if not devices:
            raise ValueError("Mesh needs at least one device")
        if len({(d.platform, d.id) for d in devices}) != len(devices):
            raise ValueError(f"Mesh names a device twice: {devices!r}")
        self.devices, self.axis_names = devices, names

    @property
    def shape(self) -> dict:
        return {self.axis_names[0]: len(self.devices)}

    def __repr__(self):
        return f"Mesh({self.devices!r}, axis_names={self.axis_names!r})"


def shard_map(f: Callable, mesh: Mesh, in_specs: Any, out_specs: Any) -> "ShardMapped":
    """`f` run on a block of each argument per device of `mesh` (see module doc)."""
    if not isinstance(mesh, Mesh):
        raise TypeError(f"shard_map needs a transformer.Mesh, got {mesh!r}")
    return ShardMapped(f, mesh, in_specs, out_specs)


class ShardMapped(Pmapped):
    """What `shard_map` returns: pmap's stages and runner, with blocks instead of slices."""

    def __init__(self, f, mesh: Mesh, in_specs, out_specs):
        super().__init__(f, mesh.axis_names[0], 0, 0, (), mesh.devices,
                         mesh.devices[0].platform)
        self.mesh, self.in_specs, self.out_specs = mesh, in_specs, out_specs

    def axes(self, positional: int, passed: list) -> dict:
        """The dimension each argument is split along (None: every device gets it whole);
        in_specs name the positional arguments, a parameter at its default is whole."""
        params = self.function.params
        if len(passed) > positional:
            raise ValueError(f"shard_map passes arguments by position: {passed[positional:]} "
                             "given by keyword")
        specs = self.in_specs
        if isinstance(specs, P) or specs is None:
            specs = (specs,) * positional
        if len(specs) != positional:
            raise ValueError(f"shard_map in_specs has {len(specs)} entries but {positional} "
                             f"arguments were passed to {self.function.name}")
        axes = dict.fromkeys(params)
        axes.update({name: self._dimension(spec, f"in_specs for {name!r}")
                     for name, spec in zip(params, specs)})
        return axes

    def _dimension(self, spec, what: str):
        """The dimension `spec` splits over the mesh axis, or None (replicated)."""
        if spec is None:
            return None
        if not isinstance(spec, tuple):
            raise ValueError(f"shard_map {what} must be a P(...) spec, got {spec!r}")
        axis = self.axis_name
        unknown = [n for n in spec if n is not None and n != axis]
        if unknown or list(spec).count(axis) > 1:
            raise ValueError(f"shard_map {what} {spec!r} names {unknown or [axis, axis]}; "
                             f"the mesh's only axis is {axis!r}, once")
        return spec.index(axis) if axis in spec else None

    def _size(self, values: dict, axes: dict) -> int:
        n = len(self.mesh.devices)
        for name, dim in axes.items():
            for leaf in tree_util.tree_leaves(values[name]) if dim is not None else ():
                shape = np.shape(leaf)
                if dim >= len(shape) or shape[dim] % n:
                    raise ValueError(
                        f"shard_map cannot split argument {name!r} of shape {shape} along "
                        f"dimension {dim} into {n} equal blocks (one per device of the "
                        f"mesh axis {self.axis_name!r})")
        return n

    def _slice_leaf(self, leaf, i: int, dim: int, size: int):
        leaf = np.asarray(leaf)
        block = leaf.shape[dim] // size
        return np.take(leaf, np.arange(i * block, (i + 1) * block), axis=dim)

    def _stack(self, results: list):
        specs = self.out_specs
        if isinstance(specs, P) or specs is None:
            return _concat_tree(results, self._dimension(specs, "out_specs"))
        if not isinstance(results[0], tuple) or len(specs) != len(results[0]):
            raise ValueError(f"shard_map out_specs {specs!r} does not match the "
                             f"{type(results[0]).__name__} the function returns")
        return tuple(_concat_tree([r[k] for r in results],
                                  self._dimension(spec, f"out_specs[{k}]"))
                     for k, spec in enumerate(specs))

    def __repr__(self):
        return f"<shard_map of {self.__name__} over {self.mesh!r}>"


def _concat_tree(values: list, dim):
    if dim is None:
        return values[0]
    return tree_util.tree_map(lambda *leaves: np.concatenate(
        [np.atleast_1d(np.asarray(v)) for v in leaves], axis=dim), *values)
