"""Secant-compiled functions run on a Dask cluster: one task per shard.

`run_sharded(fun, shard_args)` runs a `jit(...)` function (`jit(vmap(f))`, `jit(grad(f))`,
...) once per shard as Dask tasks and returns the per-shard results in order, as calling
`fun(*args)` for each shard here would. The function is transformed and its module text
built here, once; the workers load that text and compile it with their own cache
(`codegen.distributed`), so no machine code is pickled. Arrays the function captures (its
hidden arguments) travel with the module. `map_blocks(fun, darray)` maps a jitted vmap
over the chunks of a `dask.array` along its first axis, for data already in Dask.
`reduce(kind, parts)` combines per-shard values as psum/pmean/pmax/pmin/all_gather do,
on the cluster when the parts are Dask futures.

Contracts: every shard passes the same arguments with the same shapes and dtypes (a
ValueError names the argument otherwise); an exception a shard raises comes back as the
user's error, located at the user's line as a local call would locate it; a worker lost
mid-run has its tasks run again (the results are those of a complete run). A shard runs on
copies of its arguments: a function that writes into its arguments is refused, since the
writes would stay on the worker - return the updated arrays instead.
"""
from __future__ import annotations

import operator
from typing import Any, Callable, Sequence

import numba
import numpy as np

from codegen import distributed as engine

from . import tree_util
from .aliases import written_params_of_source
from .index_checks import with_source_line
from .runtime.tapes import located_message
from .jit import Jitted, jit, prepared

DEFAULT_RETRIES = 2
KINDS = ("psum", "pmean", "pmax", "pmin", "all_gather")


def default_client():
    """The current Dask client, or a new one on a LocalCluster of worker processes."""
    from distributed import Client, LocalCluster
    from distributed import default_client as current

    try:
        return current()
    except ValueError:      # no client yet
        return Client(LocalCluster(processes=True, threads_per_worker=1))


def _locate(error: BaseException) -> BaseException:
    if isinstance(error, IndexError):
        return with_source_line(error)
    return located_message(error) if isinstance(error, ValueError) else error


engine.set_locator(_locate)


def run_sharded(fun: Jitted, shard_args: Sequence[tuple], client=None,
                retries: int = DEFAULT_RETRIES) -> list:
    """`[fun(*args) for args in shard_args]`, each call a Dask task on `client`."""
    jitted = _jitted(fun, "run_sharded")
    shards = [tuple(args) for args in shard_args]
    if not shards:
        raise ValueError("run_sharded needs at least one shard")
    _check_shards(jitted, shards)
    target, function, rebuild, first, hidden = prepared(jitted, shards[0], {})
    _refuse_argument_writes(target)
    spec = engine.spec_of(_loaded(function))
    bound = [target._bind(args, {}) for args in shards]
    for i, (key, *_) in enumerate(bound):
        if key != bound[0][0]:      # else shard i would run shard 0's specialization
            raise ValueError(f"shard {i} specializes {target.__name__} differently from "
                             "shard 0 (a static argument's value or an argument's kind "
                             "differs); every shard must run the same compiled function")
    dynamic = [first] + [b[1] for b in bound[1:]]
    client = client if client is not None else default_client()
    futures = engine.submit_shards(client, spec, hidden, dynamic, retries, target.__name__)
    try:
        results = engine.gather(client, futures)
    except engine.ShardError as exc:
        located = _located(target, exc.error, dynamic[exc.shard], function)
        raise located.with_traceback(None) from None
    return [rebuild(r) if rebuild is not None else r for r in results]


def warm(fun: Jitted, args: tuple, client=None) -> None:
    """Compile `fun` for `args` on every worker of `client` now (each worker loads the
    module and Numba compiles it, or finds it in its cache), so that the first
    `run_sharded` with shards like `args` spends no time compiling."""
    jitted = _jitted(fun, "warm")
    target, function, _, dynamic, hidden = prepared(jitted, tuple(args), {})
    _refuse_argument_writes(target)
    spec = engine.spec_of(_loaded(function))
    client = client if client is not None else default_client()
    for result in client.run(engine.call_shard, (spec, hidden), 0, dynamic).values():
        if isinstance(result, engine.ShardError):
            raise _located(target, result.error, dynamic, function).with_traceback(None)


def map_blocks(fun: Jitted, darray, *, retries: int = DEFAULT_RETRIES):
    """A dask.array of `fun` mapped over `darray`'s chunks along its first axis.

    `fun` is a jitted function of one array that maps its first axis (`jit(vmap(f))`)
    and returns one array. The result's row shape and dtype are found by running `fun`'s
    generated Python (no compile) on one row here. Compute the result with
    `compute(result)` to get a failing block's error located at the user's line (Dask's
    own `.compute()` raises a ShardError naming the block)."""
    import dask.array as da

    jitted = _jitted(fun, "map_blocks")
    if not isinstance(darray, da.Array):
        raise TypeError(f"map_blocks takes a dask.array, got {type(darray).__name__}; use "
                        "run_sharded for arrays in memory")
    if darray.ndim == 0:
        raise ValueError("map_blocks needs an array with an axis to map over")
    darray = darray.rechunk({axis: -1 for axis in range(1, darray.ndim)})
    rest = darray.shape[1:]
    payload, hidden = {}, ()
    for rows in sorted(set(darray.chunks[0])):
        shape = (rows,) + rest
        empty = np.empty(shape, darray.dtype)
        target, function, rebuild, _, hidden = prepared(jitted, (empty,), {})
        if rebuild is not None:
            raise TypeError(f"map_blocks maps a function returning one array; "
                            f"{target.__name__} returns a container - use run_sharded")
        _refuse_argument_writes(target)
        payload[(shape, str(darray.dtype))] = engine.spec_of(_loaded(function))
    row = np.asarray(jit(jitted.fun, backend="python")(darray[:1].compute()))
    chunks = (darray.chunks[0],) + tuple((n,) for n in row.shape[1:])
    extra = {}
    if row.ndim < darray.ndim:
        extra["drop_axis"] = list(range(row.ndim, darray.ndim))
    elif row.ndim > darray.ndim:
        extra["new_axis"] = list(range(darray.ndim, row.ndim))
    return darray.map_blocks(engine.call_block, payload=payload, hidden=hidden,
                             dtype=row.dtype, chunks=chunks,
                             meta=np.empty((0,) * row.ndim, row.dtype), **extra)


def compute(*arrays, client=None):
    """`dask.compute(*arrays)` on `client`, a failing block's error raised located."""
    import dask

    client = client if client is not None else default_client()
    try:
        results = dask.compute(*arrays, scheduler=client)
    except engine.ShardError as exc:
        raise exc.error.with_traceback(None) from None
    return results[0] if len(arrays) == 1 else results


def reduce(kind: str, parts: Sequence[Any], client=None):
    """The parts (one per shard; arrays, numbers or containers of them) combined as
    `kind` does across devices: psum, pmean, pmax, pmin, or all_gather (stacked along a
    new first axis). Parts that are Dask futures are combined on the cluster, pairwise as
    a tree, and a future is returned; others here, in the same pairwise order."""
    if kind not in KINDS:
        raise ValueError(f"unknown reduction {kind!r}: use one of {', '.join(KINDS)}")
    parts = list(parts)
    if not parts:
        raise ValueError(f"{kind} of no parts")
    if not any(_is_future(p) for p in parts):
        return _finish(kind, _tree(kind, parts, lambda f, a, b: f(kind, a, b)), len(parts))
    client = client if client is not None else default_client()
    combined = _tree(kind, parts, lambda f, a, b: client.submit(f, kind, a, b, pure=False))
    return client.submit(_finish, kind, combined, len(parts), pure=False)


def _tree(kind, parts, apply):
    """Combine neighbours pairwise until one value is left (all_gather: lists joined)."""
    level = [[p] for p in parts] if kind == "all_gather" else parts
    while len(level) > 1:
        paired = [apply(_combine, level[i], level[i + 1]) for i in range(0, len(level) - 1, 2)]
        level = paired + ([level[-1]] if len(level) % 2 else [])
    return level[0]


_BINARY = {"psum": operator.add, "pmean": operator.add, "pmax": np.maximum,
           "pmin": np.minimum}


def _combine(kind, a, b):
    if kind == "all_gather":
        return list(a) + list(b)
    return tree_util.tree_map(_BINARY[kind], a, b)


def _finish(kind, value, count):
    if kind == "pmean":
        return tree_util.tree_map(lambda v: v / count, value)
    if kind == "all_gather":
        return tree_util.tree_map(lambda *leaves: np.stack(leaves), *value)
    return value


def _is_future(value) -> bool:
    return type(value).__name__ == "Future" and hasattr(value, "key")


def _jitted(fun, where: str) -> Jitted:
    if not isinstance(fun, Jitted):
        raise TypeError(f"{where} runs a secant-compiled function, got "
                        f"{type(fun).__name__}: wrap it with jit(...) first")
    if fun.options.backend not in ("cpu", "python"):
        raise ValueError(f"{where} runs cpu or python backend functions on workers, not "
                         f"backend={fun.options.backend!r}")
    return fun


def _located(jitted: Jitted, exc: BaseException, dynamic, function) -> BaseException:
    """The error a local call of `jitted` raises for `exc` from its compiled function: a
    located TransformError for Numba's typing errors, the user's line for a failed index
    check; `exc` itself otherwise."""
    if isinstance(exc, numba.core.errors.TypingError):
        return jitted._typing_error(exc, dynamic, function)
    return _locate(exc)


def _loaded(function: Callable):
    compiled = engine.backends.loaded_for(function)
    if compiled is None:
        raise RuntimeError("the compiled function's module is not registered for shipping")
    return compiled


def _refuse_argument_writes(jitted: Jitted) -> None:
    fn = jitted._binding_function
    written = written_params_of_source(fn)
    if written:
        raise fn.origin.error(fn.node, f"{jitted.__name__} writes into its argument "
                              f"{written[0]!r}: on a worker it writes a copy, and the "
                              "caller's array would not change",
                              f"return the updated array ({written[0]}) instead")


def _check_shards(jitted: Jitted, shards: list[tuple]) -> None:
    """Every shard passes as many arguments, each with the same structure and leaf
    shapes and dtypes as shard 0's (ValueError naming the argument otherwise)."""
    names = list(jitted.signature.parameters)
    first = shards[0]
    for i, args in enumerate(shards[1:], start=1):
        if len(args) != len(first):
            raise ValueError(f"shard {i} passes {len(args)} arguments to {jitted.__name__}, "
                             f"shard 0 passes {len(first)}")
        for k, (a, b) in enumerate(zip(first, args)):
            name = names[k] if k < len(names) else f"#{k}"
            left, right = _described(a), _described(b)
            if left != right:
                raise ValueError(f"argument {name!r} of {jitted.__name__}: shard {i} gives "
                                 f"{right}, shard 0 gives {left}; every shard must have the "
                                 "same shapes (split the batch evenly)")


def _described(value) -> Any:
    leaves, tree = tree_util.tree_flatten(value)
    described = [(np.shape(leaf), np.asarray(leaf).dtype.str) for leaf in leaves]
    if len(described) == 1 and tree_util.tree_structure(0) == tree:
        shape, dtype = described[0]
        return f"shape {shape} {np.dtype(dtype).name}"
    return f"{tree} with leaves {described}"

