"""Numba's disk cache for secant's functions: inside the cache directory, sealed, private.

`numba.njit(cache=True)` would pick a directory itself (next to the source, or
`NUMBA_CACHE_DIR`, or `~/.cache`), write files with the umask's permissions and unpickle
whatever it finds there. secant therefore compiles its functions *without* `cache=True`
and gives each dispatcher a `SealedCache`: files go to `<cache dir>/__pycache__`
(0700, files 0600), every index and data file is sealed (`cache_files.seal`) and checked
before it is unpickled, and a file that fails the check is a miss that Numba rebuilds.
The user's own Numba functions and caches are left alone. When a file cannot be written
(read-only or full disk) the function is compiled in memory, with one warning.

This relies on Numba's `Cache`/`IndexDataCacheFile` internals (stable since 0.49): the
index file is `pickle(version) + pickle((stamp, overloads))`, a data file one pickle.

Environments. Compiled code that raises an exception with runtime arguments
(`raise IndexError(where, i, axis, n)`) turns those arguments into Python objects through
the raising function's Numba *environment*, a global the loader must point at a live
`Environment`. Numba saves only the environments of functions whose globals name a module;
an `@overload` whose implementation secant builds with `exec` (the index checks) has none,
so a function loaded from disk in a new process would find that global empty and raise
"Error creating Python tuple from runtime exception arguments" instead of the user's
error. `_Impl` therefore saves a stand-in for each such environment (its constants, the
globals of this module - nopython code reads no globals through it), and refuses to save
a function one of whose environments is gone or holds constants that cannot be pickled.

secant's runtime helpers. The module-level Numba functions of `transformer` and `codegen`,
the implementations their `@overload`s pick (`transformer/runtime/numba_api.py` marks
those) and Numba's own implementations of NumPy (`np.max`, `np.empty`) are cached in the
same directory, so a new function compiled in a later process
links the helpers it shares with earlier ones instead of compiling them again. Their stamp
is `runtime_stamp()`, a hash of all of secant's source and of the versions and Numba
settings compiled code depends on: a helper's machine code includes the helpers it calls,
so a change anywhere in secant invalidates them all. Numba keys a function by its
bytecode and a pickle of its closure, which is neither stable across processes nor enough
for helpers exec'd from text; `SealedCache` keys a helper by `cache_keys.fingerprint`.
"""
from __future__ import annotations

import hashlib
import inspect
import io
import os
import pickle
import sys
import threading
from pathlib import Path

from numba.core.caching import (CompileResultCacheImpl, FunctionCache, IndexDataCacheFile,
                                _CacheLocator)
from numba.core.environment import Environment, lookup_environment

from . import cache_files, cache_keys, cache_store, cache_trust, numba_symbols

# before anything is compiled for the cache: machine code loaded from it must not share a
# symbol with a different function compiled here
numba_symbols.make_ids_distinct()

_SECANT_PACKAGES = cache_keys.SECANT_PACKAGES
_ENV_PREFIX = "_ZN08NumbaEnv"        # Numba's mangled names of environment globals
_enable_lock = threading.Lock()
_helper_root: Path | None = None     # where overload implementations are cached, once known
_stamp: str | None = None
_NUMBA_SETTINGS = ("OPT", "BOUNDSCHECK", "DEBUGINFO_DEFAULT", "ENABLE_AVX", "CPU_NAME",
                   "CPU_FEATURES")


def enable(dispatcher, root: Path, stamp: str) -> None:
    """Give `dispatcher` a sealed disk cache in `root`; `stamp` names its source version."""
    cache = getattr(dispatcher, "_cache", None)
    if isinstance(cache, SealedCache) and cache.root == root:
        return
    dispatcher._cache = SealedCache(dispatcher.py_func, root, stamp)


def enable_runtime_helpers(root: Path) -> None:
    """A sealed cache in `root` for secant's own module-level Numba helpers (runtime code
    called from generated functions), which are therefore defined without `cache=True`,
    and for the overload implementations compiled from now on (`helper_cache`)."""
    global _helper_root
    with _enable_lock:
        _helper_root = Path(root)
        for module in [m for name, m in list(sys.modules.items())
                       if name.partition(".")[0] in _SECANT_PACKAGES and m is not None]:
            for value in list(vars(module).values()):
                if _is_own_dispatcher(value, module.__name__):
                    enable(value, root, runtime_stamp())


def helper_cache(py_func) -> SealedCache | None:
    """The cache for an overload implementation of secant's runtime: in the directory of
    the latest compile, or None before any (the helper is then compiled in memory)."""
    root = _helper_root
    if root is None:
        return None
    try:
        name = cache_keys.fingerprint(py_func)
    except Exception:       # noqa: BLE001  Unkeyable, or a value the fingerprint cannot
        return None         # read: compiling in memory is always right, failing never is
    return SealedCache(py_func, root, runtime_stamp(), stable_name=name)


def runtime_stamp() -> str:
    """A hash of secant's source and of what its compiled helpers depend on: the Python,
    NumPy and Numba versions and Numba's code-generation settings."""
    global _stamp
    if _stamp is None:
        import numba
        import numpy
        settings = [getattr(numba.config, name, None) for name in _NUMBA_SETTINGS]
        digest = hashlib.sha256(repr((sys.version, numpy.__version__, numba.__version__,
                                      settings, cache_keys.secant_sources_hash())).encode())
        _stamp = digest.hexdigest()
    return _stamp


def _is_own_dispatcher(value, module_name: str) -> bool:
    py_func = getattr(value, "py_func", None)
    return (hasattr(value, "_cache") and hasattr(value, "enable_caching")
            and getattr(py_func, "__module__", None) == module_name)


# ---------------------------------------------------------------- Numba's cache classes


class _Locator(_CacheLocator):
    """Where a function's Numba files live; the stamp is fixed by the caller."""

    def __init__(self, path: Path, py_func, stamp: str):
        self._path = path
        self._py_file = inspect.getfile(py_func)     # Numba names it in its warnings
        self._lineno = py_func.__code__.co_firstlineno
        self._stamp = stamp

    def ensure_cache_path(self):
        cache_trust.private_subdirectory(self._path)

    def get_cache_path(self):
        return str(self._path)

    def get_source_stamp(self):
        return self._stamp

    def get_disambiguator(self):
        return str(self._lineno)


class _Impl(CompileResultCacheImpl):
    """Numba's implementation with a given locator instead of its search for one."""

    def __init__(self, py_func, locator: _Locator):
        self._lineno = py_func.__code__.co_firstlineno
        self._locator = locator
        self._checked = None      # (the result `check_cachable` passed, its stand-ins)
        modname = os.path.splitext(os.path.basename(inspect.getfile(py_func)))[0]
        qualname = getattr(py_func, "__qualname__", py_func.__name__)
        self._filename_base = self.get_filename_base(f"{modname}.{qualname}",
                                                     getattr(sys, "abiflags", ""))

    def check_cachable(self, cres):
        """Numba's checks, and every environment the code refers to can be restored."""
        if not super().check_cachable(cres):
            return False
        stand_ins = _stand_ins(cres)
        # Numba reduces the same result right after this check: kept for `reduce`, which
        # then does not list the module's globals and pickle the constants a second time
        self._checked = (cres, stand_ins) if stand_ins is not None else None
        return stand_ins is not None

    def reduce(self, cres):
        """Numba's payload, its referenced environments extended by `_stand_ins`."""
        checked, self._checked = self._checked, None
        stand_ins = checked[1] if checked is not None and checked[0] is cres else _stand_ins(cres)
        payload = super().reduce(cres)
        return payload[:-1] + (tuple(payload[-1]) + tuple(stand_ins or ()),)


def _stand_ins(cres) -> list | None:
    """Picklable stand-ins for the environments `cres` refers to that Numba would not save
    (see the module doc); None when one is not live or its constants do not pickle."""
    stand_ins = []
    for gv in cres.library._final_module.global_variables:
        if not gv.name.startswith(_ENV_PREFIX):
            continue
        env = lookup_environment(gv.name)
        if env is None:
            return None
        if env.can_cache():
            continue              # Numba saves it itself
        stand_in = Environment({"__name__": __name__})
        stand_in.consts[:] = env.consts
        stand_in.env_name = env.env_name
        stand_ins.append(stand_in)
    try:
        pickle.dumps(stand_ins, protocol=-1)
    except Exception:             # an unpicklable constant: compile in each process
        return None
    return stand_ins


class _SealedFile(IndexDataCacheFile):
    """Index and data files written sealed and 0600, read only when the seal matches."""

    def __init__(self, cache_path, filename_base, source_stamp, root: Path):
        super().__init__(cache_path, filename_base, source_stamp)
        self._root = root

    def save(self, key, data):
        """Numba's save, but the data file is named by a hash of `key`, not by a count:
        two processes adding different keys to one index at once (test workers, a
        user's pool) then never write each other's data file under a name the other's
        index lists. The data is written before the index that names it."""
        digest = hashlib.sha256(repr(key).encode()).hexdigest()[:24]
        data_name = f"{self._index_name[:-len('.nbi')]}.{digest}.nbc"
        self._save_data(data_name, data)
        overloads = self._load_index()
        if overloads.get(key) != data_name:
            overloads[key] = data_name
            self._save_index(overloads)

    def _load_index(self):
        payload = self._read(self._index_name)
        if payload is None:
            return {}
        stream = io.BytesIO(payload)
        try:
            if pickle.load(stream) != self._version:
                return {}
            stamp, overloads = pickle.loads(stream.read())
        except Exception:        # sealed by us, yet unreadable: rebuild it
            return {}
        return overloads if stamp == self._source_stamp else {}

    def _save_index(self, overloads):
        payload = pickle.dumps(self._version, protocol=-1)
        payload += self._dump((self._source_stamp, overloads))
        self._write(self._index_name, payload)

    def _load_data(self, name):
        payload = self._read(name)
        if payload is None:                # `load` treats OSError as a miss
            raise OSError(f"no valid sealed Numba file {name}")
        try:
            return pickle.loads(payload)
        except Exception as exc:
            raise OSError(f"unreadable Numba file {name}: {exc}") from None

    def _save_data(self, name, data):
        self._write(name, self._dump(data))

    def _read(self, name: str) -> bytes | None:
        blob = cache_files.read_regular(os.path.join(self._cache_path, name))
        if blob is None:
            return None
        return cache_files.unseal(cache_files.cache_key(self._root), name, blob)

    def _write(self, name: str, payload: bytes) -> None:
        key = cache_files.cache_key(self._root)
        cache_files.write_private(os.path.join(self._cache_path, name),
                                  cache_files.seal(key, name, payload))


class SealedCache(FunctionCache):
    """A Numba function cache in `root/__pycache__` made of sealed files."""

    def __init__(self, py_func, root: Path, stamp: str, stable_name: str | None = None):
        self._stable_key = None if stable_name is None else \
            hashlib.sha256(stable_name.encode()).hexdigest()
        self._name = repr(py_func)
        self._py_func = py_func
        self.root = root
        locator = _Locator(Path(root) / cache_store.NUMBA_DIR, py_func, stamp)
        self._impl = _Impl(py_func, locator)
        self._cache_path = locator.get_cache_path()
        self._cache_file = _SealedFile(self._cache_path, self._impl.filename_base, stamp,
                                       Path(root))
        self.enable()

    def _index_key(self, sig, codegen):
        """Numba's key; for a runtime helper (`stable_name`) the function is named by
        `cache_keys.fingerprint` (stable across processes) instead of its bytecode and a
        pickle of its closure."""
        if self._stable_key is None:
            return super()._index_key(sig, codegen)
        return (sig, codegen.magic_tuple(), self._stable_key)

    def holds(self, sig, target_context) -> bool:
        """Whether the index on disk lists machine code for `sig` (nothing is loaded)."""
        try:
            key = self._index_key(sig, target_context.codegen())
            return key in self._cache_file._load_index()
        except OSError:
            return False

    def _load_overload(self, sig, target_context):
        try:
            return super()._load_overload(sig, target_context)
        except OSError:          # the key or directory cannot be read: compile instead
            return None

    def _save_overload(self, sig, data):
        try:
            super()._save_overload(sig, data)
        except OSError as exc:
            cache_files.warn_unwritable(self.root, exc)
            self.disable()
            return
        except (TypeError, AttributeError, pickle.PicklingError):
            # code holding an object Numba cannot pickle (a first-class closure of a
            # helper): compiled in each process, as Numba's own cache leaves it
            self.disable()
            return
        entry = cache_store.entry_name(self._impl.filename_base)
        cache_store.enforce_limit(Path(self.root), keep=entry)
