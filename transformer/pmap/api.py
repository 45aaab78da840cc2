"""`pmap`: run a function once per device on slices of its arguments, with collectives.

JAX's semantics: the mapped axis (`in_axes` per positional argument, an int or None) is
split into one slice per device, so its size may not exceed the number of devices; every
shard runs the function on its slice; `psum`/`pmean`/`pmax`/`pmin`/`all_gather`/
`ppermute`/`axis_index` over `axis_name` see all shards; results are stacked along
`out_axes` (None: shard 0's value, for a value every shard holds). The function is
compiled (there is no uncompiled pmap), split into stages at its collectives
(`transformer.pmap.stages`) and run by the backend's runner (`transformer.pmap.executors`).
The result equals `vmap(fun, in_axes, out_axes, axis_name=axis_name)` of the same inputs,
except for writes into arguments: every device works on its own copy of its slice and of
each unmapped argument (as JAX places a copy on each device), so writes never race between
devices and the caller's arrays are left as they were.
"""
from __future__ import annotations

import functools
import inspect
import threading
from typing import Any, Callable, Sequence

import numpy as np

from codegen.backends import Options

from .. import materialize, tree_util
from ..display import SourceCode
from ..errors import TransformError
from ..frontend import parse
from ..function import Function, signature
from . import collectives, executors, stages as stages_pass
from .executors import Device


def pmap(fun: Callable, axis_name: Any = None, *, in_axes: Any = 0, out_axes: Any = 0,
         static_broadcasted_argnums: int | Sequence[int] = (),
         devices: Sequence[Device] | None = None, backend: str | None = None,
         client=None) -> "Pmapped":
    """`fun` mapped over devices (see module doc); call it like `fun`. `client` (a
    `distributed.Client`) runs the shards on its Dask cluster (backend "dask")."""
    statics = (static_broadcasted_argnums,) if isinstance(static_broadcasted_argnums, int) \
        else tuple(static_broadcasted_argnums)
    if devices is not None and backend is None:
        backend = devices[0].platform if devices else None
    if client is not None and backend is None:
        backend = "dask"
    return Pmapped(fun, axis_name, in_axes, out_axes, statics,
                   None if devices is None else list(devices), backend or "cpu", client)


def show_pmap(fun: Callable, *args, axis_name: Any = None, **options) -> str:
    """The generated source of each stage of `pmap(fun, axis_name, **options)` and the
    collectives between them, for a call with `args` (or one shard per device)."""
    return pmap(fun, axis_name, **options).source(*args)


class Pmapped:
    """What `pmap` returns: call it like the function."""

    def __init__(self, fun, axis_name, in_axes, out_axes, statics, devices, backend,
                 client=None):
        self.fun, self.axis_name = fun, axis_name
        self.in_axes, self.out_axes, self.statics = in_axes, out_axes, statics
        self.backend = backend
        self.runner = executors.runner_for(backend, client)
        self._devices = devices
        self._lock = threading.Lock()
        self._plans: dict = {}             # number of shards -> (Stages, compiled stages)
        functools.update_wrapper(self, fun, updated=())

    # ------------------------------------------------------------------ protocol
    def __secant_function__(self) -> Function:
        raise TransformError(
            f"pmap({self.__name__}) cannot be transformed or called from compiled code: it "
            "runs compiled stages on several devices itself",
            hint="put the transformation inside: pmap(vmap(f)), pmap(grad(f)); jit(pmap(f)) "
                 "is pmap(f) itself")

    __secant_compiled__ = True      # jit(pmap(f)) is pmap(f)

    @functools.cached_property
    def function(self) -> Function:
        fn = parse(self.fun)
        args = fn.node.args
        if args.vararg is not None or args.kwarg is not None:
            raise fn.origin.error(fn.node, f"pmap of {fn.name}: *args and **kwargs are not "
                                  "mapped", hint="name each mapped argument")
        return fn

    # ------------------------------------------------------------------ calling
    def __call__(self, *args, **kwargs):
        values, axes = self._bind(args, kwargs)
        size = self._size(values, axes)
        devices = self._devices_for(size)
        plan, compiled = self._plan(size)
        shard_env = [self._shard_env(values, axes, i, size, plan) for i in range(size)]
        for stage, run in zip(plan.stages, compiled):
            shard_args = [tuple(env[n] for n in stage.inputs) for env in shard_env]
            results = self.runner.run(run, shard_args, devices)
            if not stage.outputs:
                return self._stack(results)
            for env, result in zip(shard_env, results):
                env.update(zip(stage.outputs, result))
            for b in stage.boundaries:
                reduced = collectives.reduce(b.kind, [env[b.source] for env in shard_env],
                                             b.perm)
                for env, value in zip(shard_env, reduced):
                    env[b.target] = value
        raise AssertionError("the last stage returns")     # pragma: no cover

    def _bind(self, args, kwargs) -> tuple:
        """Each parameter's value (defaults applied) and its mapped axis."""
        fn = self.function
        try:
            bound = signature(fn).bind(*args, **kwargs)
        except TypeError as exc:
            raise TypeError(f"pmap of {fn.name}: {exc}") from None
        passed = list(bound.arguments)
        bound.apply_defaults()
        return dict(bound.arguments), self.axes(len(args), passed)

    def _static_names(self) -> list:
        params = self.function.params
        for i in self.statics:
            if not -len(params) <= i < len(params):
                raise ValueError(f"static_broadcasted_argnums {i} is out of range for "
                                 f"{self.function.name}{signature(self.function)}")
        return [params[i] for i in self.statics]

    def axes(self, positional: int, passed: list) -> dict:
        """The mapped axis of each parameter (None: broadcast to every shard), as in JAX:
        `in_axes` per positional argument, axis 0 for one passed by keyword, None for a
        parameter left at its default."""
        params = self.function.params
        axes = dict.fromkeys(params)
        if self.in_axes is None or isinstance(self.in_axes, int):
            axes.update(dict.fromkeys(passed, self.in_axes))
        elif isinstance(self.in_axes, (tuple, list)):
            if len(self.in_axes) != positional:
                raise ValueError(f"pmap in_axes {self.in_axes!r} has {len(self.in_axes)} "
                                 f"entries but {positional} positional arguments were "
                                 f"passed to {self.function.name}")
            axes.update(zip(params, self.in_axes))
            axes.update(dict.fromkeys(passed[positional:], 0))
        else:
            raise ValueError(f"pmap in_axes must be an int, None or a tuple of them per "
                             f"argument, got {self.in_axes!r}")
        for name in self._static_names():
            axes[name] = None
        for name, axis in axes.items():
            if axis is not None and not isinstance(axis, int):
                raise ValueError(f"pmap in_axes for {name!r} must be an int or None, got "
                                 f"{axis!r}")
        return axes

    def _size(self, values: dict, axes: dict) -> int:
        sizes = {}
        for name, axis in axes.items():
            if axis is None:
                continue
            for leaf in tree_util.tree_leaves(values[name]):
                shape = np.shape(leaf)
                if not -len(shape) <= axis < len(shape):
                    raise ValueError(f"pmap in_axes {axis} for argument {name!r} of "
                                     f"{len(shape)} dimensions")
                sizes.setdefault(name, shape[axis])
                if shape[axis] != sizes[name]:
                    sizes[name + " (a leaf)"] = shape[axis]
        if not sizes:
            raise ValueError("pmap needs at least one argument with a mapped axis "
                             "(in_axes all None)")
        if len(set(sizes.values())) > 1:
            named = ", ".join(f"{n!r} has size {s}" for n, s in sizes.items())
            raise ValueError(f"pmap got inconsistent sizes for the mapped axis: {named}")
        return next(iter(sizes.values()))

    def devices(self) -> list:
        if self._devices is not None:
            return self._devices
        if hasattr(self.runner, "devices"):         # a cluster's: known from its client
            return self.runner.devices()
        return executors.devices(self.backend)

    def _devices_for(self, size: int) -> list:
        available = self.devices()
        if size > len(available):
            raise ValueError(f"pmap of {self.__name__} maps an axis of size {size} but only "
                             f"{len(available)} {self.backend} devices are available: one "
                             "slice runs per device (vmap inside pmap maps a larger batch, "
                             "e.g. reshape to (devices, batch // devices, ...))")
        return available[:size]

    def _shard_env(self, values: dict, axes: dict, i: int, size: int, plan) -> dict:
        """Shard i's arguments by name (and its axis index when a stage reads it)."""
        env = {}
        for name, axis in axes.items():
            value = values[name]       # each device its own copy: writes never race
            env[name] = tree_util.tree_map(
                _copy if axis is None else
                lambda leaf, axis=axis: self._slice_leaf(leaf, i, axis, size), value)
        if plan.reads_axis_index:
            env[stages_pass.AXIS_INDEX] = i
        return env

    def _slice_leaf(self, leaf, i: int, axis: int, size: int):
        return np.take(np.asarray(leaf), i, axis=axis)

    def _stack(self, results: list):
        out_axes = self.out_axes
        if isinstance(out_axes, (tuple, list)):
            if not isinstance(results[0], tuple) or len(out_axes) != len(results[0]):
                raise ValueError(f"pmap out_axes {out_axes!r} does not match the "
                                 f"{type(results[0]).__name__} the function returns")
            return tuple(_stack_tree([r[k] for r in results], ax)
                         for k, ax in enumerate(out_axes))
        return _stack_tree(results, out_axes)

    # ------------------------------------------------------------------ compiling
    def _plan(self, size: int) -> tuple:
        with self._lock:
            if size not in self._plans:
                plan = stages_pass.split(self.function, self.axis_name, size)
                static = self._static_names()
                compiled = tuple(self.runner.compile(
                    _Stage(stage.function), [n for n in static if n in stage.inputs])
                    for stage in plan.stages)
                self._plans[size] = (plan, compiled)
            return self._plans[size]

    def source(self, *args, **kwargs) -> SourceCode:
        """The generated module of each stage, with the collectives between the stages, for
        a call with these arguments (which give the number of shards; none: one shard per
        device)."""
        size = self._size(*self._bind(args, kwargs)) if args or kwargs \
            else max(len(self.devices()), 1)
        plan = stages_pass.split(self.function, self.axis_name, size)
        options = Options(backend="cpu" if self.backend in ("cpu", "dask") else "python")
        texts = []
        for stage in plan.stages:
            text, _ = materialize.module_text(stage.function, options)
            texts.append(f"# ==== {stage.function.chain[-1]}\n{text.rstrip()}")
            if stage.boundaries:
                texts.append("# ==== between the stages, over all shards:\n" + "\n".join(
                    f"#   {b.target} = {b.kind}({b.source})" + (f", perm={list(b.perm)}"
                                                                if b.perm else "")
                    for b in stage.boundaries))
        return SourceCode("\n\n".join(texts) + "\n")

    def __repr__(self):
        return f"<pmap of {self.__name__} over {self.axis_name!r}, backend {self.backend!r}>"


class _Stage:
    """One stage's Function as a callable `jit` and `vmap` accept."""

    def __init__(self, function: Function):
        self.function = function
        self.__name__ = self.__qualname__ = function.name
        self.__signature__ = inspect.Signature(
            [inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD)
             for n in function.params])

    def __secant_function__(self) -> Function:
        return self.function

    def __call__(self, *args):
        raise TypeError("a pmap stage runs compiled")


def _copy(leaf):
    return leaf.copy() if isinstance(leaf, np.ndarray) else leaf


def _stack_tree(values: list, axis):
    if axis is None:
        return values[0]
    return tree_util.tree_map(lambda *leaves: np.stack([np.asarray(v) for v in leaves],
                                                       axis=axis), *values)
