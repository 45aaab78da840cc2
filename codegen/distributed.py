"""Generated modules run by other processes: Dask workers load a module from its text.

A worker never receives machine code. It receives a `ModuleSpec` - the module's text, the
namespace bound in it, the name of its function and the compile options - and loads it
with `codegen.backends.load`, so it writes the text into its own content-addressed cache
directory (`SECANT_CACHE_DIR` on that machine) and Numba compiles it there, or finds it
already compiled in that cache. A generated dependency bound in the namespace travels as a
nested ModuleSpec and is loaded the same way first. A helper made at run time (no module
attribute to pickle it by, and Numba overloads that pickling would drop) carries
`__secant_rebuild__ = (maker, args)` and travels as that recipe, made again on the worker.
Loading is memoized per process by content (the spec's key is the hash of its text), so a
worker compiles each module once.

Tasks are submitted with retries; a worker that dies mid-task has its tasks rescheduled by
the scheduler. An exception the shard itself raises (the user's error, a failed bounds
check) is not retried - it would raise again - and comes back as a `ShardError` carrying
the original exception, which the caller (`transformer.distributed`) locates at the user's
line. Dask is imported lazily: `import codegen.distributed` works without it.

Invariant: nothing here imports `transformer`; a ModuleSpec is picklable by cloudpickle as
long as its namespace values are (numbers, arrays, Numba kernels, nested specs).
"""
from __future__ import annotations

import dataclasses
import pickle
import threading
import uuid
from typing import Any, Callable, Sequence

from . import backends
from .backends import Compiled, Options

_loaded: dict[str, Callable] = {}       # ModuleSpec.key -> loaded function, per process
_lock = threading.Lock()


@dataclasses.dataclass(frozen=True)
class ModuleSpec:
    """What `backends.load` needs to load a generated module in another process."""

    text: str
    namespace: dict      # generated dependencies appear as nested ModuleSpecs
    name: str
    options: Options

    @property
    def key(self) -> str:
        return backends.reuse_key(self.text)


@dataclasses.dataclass(frozen=True)
class Rebuilt:
    """A value made in another process by `maker(*args)` (see the module doc)."""

    maker: Callable
    args: tuple


def _shippable(value):
    recipe = getattr(value, "__secant_rebuild__", None)
    if recipe is None:
        return value
    maker, args = recipe
    return Rebuilt(maker, tuple(_shippable(a) for a in args))


def _made(value):
    if isinstance(value, Rebuilt):
        return value.maker(*(_made(a) for a in value.args))
    return value


def spec_of(compiled: Compiled) -> ModuleSpec:
    """The ModuleSpec of a module loaded in this process, dependencies included."""
    if compiled.options is None:
        raise ValueError(f"module of {compiled.name or compiled.function!r} was not loaded "
                         "by codegen.backends.load and cannot be shipped")
    namespace = {}
    for name, value in compiled.namespace.items():
        dependency = backends.loaded_for(value)
        namespace[name] = spec_of(dependency) if dependency is not None else _shippable(value)
    return ModuleSpec(compiled.text, namespace, compiled.name, compiled.options)


def load_spec(spec: ModuleSpec) -> Callable:
    """The function of `spec`, loaded (and compiled on first call) in this process."""
    function = _loaded.get(spec.key)
    if function is not None:
        return function
    namespace = {name: load_spec(value) if isinstance(value, ModuleSpec) else _made(value)
                 for name, value in spec.namespace.items()}
    function = backends.load(spec.text, namespace, spec.name, spec.options).function
    with _lock:
        _loaded[spec.key] = function
    return function


class ShardError(Exception):
    """A shard's own exception, brought back from the process that ran it.

    `error` is the original exception (or a RuntimeError with its text when it could not
    be pickled), `shard` the index of the shard, `worker` the address that ran it."""

    def __init__(self, shard: int, error: BaseException, worker: str = ""):
        super().__init__(shard, error, worker)
        self.shard, self.error, self.worker = shard, error, worker

    def __reduce__(self):       # unpickled where it is raised: located there (see locate)
        return _shard_error, (self.shard, self.error, self.worker)

    def __str__(self):
        where = f" on worker {self.worker}" if self.worker else ""
        return f"shard {self.shard}{where}: {type(self.error).__name__}: {self.error}"


_locator: list = []     # [function(exception) -> exception], set by the compiling side


def set_locator(locate: Callable[[BaseException], BaseException]) -> None:
    """Install how a shard's exception is located where a ShardError arrives: the
    compiling side knows the user's lines (`transformer.distributed` installs it)."""
    _locator[:] = [locate]


def _shard_error(shard: int, error: BaseException, worker: str) -> ShardError:
    if _locator:
        try:
            error = _locator[0](error)
        except Exception:       # locating is best effort: the error itself must arrive
            pass
    return ShardError(shard, error, worker)


def _portable(exc: BaseException) -> BaseException:
    """`exc` if it survives pickling, else a RuntimeError with its type and text."""
    try:
        pickle.loads(pickle.dumps(exc))
        return exc.with_traceback(None)
    except Exception:       # an unpicklable exception: keep what the user must read
        return RuntimeError(f"{type(exc).__name__}: {exc}")


def _worker_address() -> str:
    try:
        from distributed import get_worker

        return get_worker().address
    except (ImportError, ValueError):
        return ""


def call_shard(payload: tuple, shard: int, args: tuple) -> Any:
    """Run one shard on a worker: the spec's function on `args` and the hidden arrays.

    Returns the result, or a ShardError when the function raised (so Dask does not retry
    a deterministic failure). `payload` is (ModuleSpec, hidden arrays)."""
    spec, hidden = payload
    try:
        return load_spec(spec)(*args, *hidden)
    except Exception as exc:
        return ShardError(shard, _portable(exc), _worker_address())


def call_block(block, payload: dict, hidden: tuple, block_id=None):
    """`dask.array.map_blocks`'s function: the spec made for this block's shape, on it.

    `payload` maps (shape, dtype) to a ModuleSpec; a failure raises ShardError (a Dask
    array task cannot return it), numbered by the block's index along the mapped axis."""
    spec = payload[(block.shape, str(block.dtype))]
    try:
        return load_spec(spec)(block, *hidden)
    except Exception as exc:
        index = block_id[0] if block_id else -1
        raise ShardError(index, _portable(exc), _worker_address()) from None


def _identity(value):
    return value


def submit_shards(client, spec: ModuleSpec, hidden: tuple, shard_args: Sequence[tuple],
                  retries: int, label: str) -> list:
    """One Dask future per shard, in order; each resolves to a result or a ShardError.

    The spec and hidden arrays are one task every shard depends on (computed from data
    held in the graph, so a worker lost with it is recomputed, unlike scattered data)."""
    run = uuid.uuid4().hex[:12]
    payload = client.submit(_identity, (spec, tuple(hidden)), key=f"secant-{label}-{run}-module",
                            pure=False, retries=retries)
    return [client.submit(call_shard, payload, i, tuple(args), pure=False, retries=retries,
                          key=f"secant-{label}-{run}-shard-{i}")
            for i, args in enumerate(shard_args)]


def gather(client, futures: list) -> list:
    """The results of `submit_shards`' futures; the first ShardError is raised."""
    results = client.gather(futures)
    for result in results:
        if isinstance(result, ShardError):
            raise result
    return results
