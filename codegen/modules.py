"""Generated modules on disk: the cache directory, content-hashed files, loading.

A module's file name is the SHA-256 of its text, so the name *is* the cache key: equal
source (which embeds the transform chain, the options, the versions and the fingerprints
of every dependency) means the same file, in this process or the next. The directory must
be private (`cache_trust`); files are written atomically with owner-only permissions and
read without trusting them (`cache_files`): a file whose bytes are not exactly the text
- tampered, truncated, not UTF-8, a link or a FIFO - is discarded and rebuilt, never
executed. When the directory cannot be written (read-only, full) the module is compiled
in memory, with one warning. Loaded files are registered in `linecache`, so tracebacks
and pdb show generated lines.
"""
from __future__ import annotations

import hashlib
import linecache
import os
import sys
import threading
import types
from pathlib import Path

from . import cache_files, cache_store, cache_trust

_lock = threading.Lock()
# set in a loaded module: the cache directory holding it, or None when it lives in memory
CACHE_ROOT_ATTRIBUTE = "__secant_cache_root__"
GENERATED_PACKAGE = "secant_generated"          # generated modules are named under it


def configured_dir() -> Path:
    """`SECANT_CACHE_DIR`, or the platform's user cache dir (not created, not checked)."""
    root = os.environ.get("SECANT_CACHE_DIR")
    if not root:
        import platformdirs     # on first use: `import transformer` does not need it

        root = platformdirs.user_cache_dir("secant")
    return Path(os.path.abspath(os.path.expanduser(root)))


def cache_dir() -> Path:
    """The cache directory, created 0700 and checked private (TransformError if not);
    OSError when it cannot be created."""
    return cache_trust.private_directory(configured_dir())


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def module_name(text: str) -> str:
    return f"m{content_hash(text)[:32]}.py"


def module_path(text: str) -> Path:
    return cache_dir() / module_name(text)


def write_module(text: str) -> Path:
    """The path of a file holding exactly `text`, writing (or rewriting) it if needed.

    Raises OSError when the cache directory cannot be written."""
    path = module_path(text)
    data = text.encode("utf-8")
    with _lock:
        if cache_files.read_regular(path) == data:
            cache_store.touch(path)
            return path
        if os.path.lexists(path):        # tampered, truncated or not a file: never run it
            cache_files.discard(path)
            _drop_numba_cache(path)
        cache_files.write_private(path, data)
    cache_store.enforce_limit(path.parent, keep=path.stem)
    return path


def _drop_numba_cache(path: Path) -> None:
    for entry in (path.parent / cache_store.NUMBA_DIR).glob(path.stem + ".*"):
        cache_files.discard(entry)


def load_module(text: str, namespace: dict):
    """Write `text` to the cache, import it with `namespace` pre-bound, return the module.

    The module's `__secant_cache_root__` is its cache directory, or None when the
    directory could not be written and the module lives in memory only."""
    try:
        path = write_module(text)
        root = path.parent
    except OSError as exc:
        cache_files.warn_unwritable(configured_dir(), exc)
        path, root = configured_dir() / module_name(text), None
    name = f"{GENERATED_PACKAGE}.{path.stem}"
    module = types.ModuleType(name)
    module.__file__ = str(path)
    module.__dict__.update(namespace)
    module.__dict__[CACHE_ROOT_ATTRIBUTE] = root
    lines = text.splitlines(keepends=True)
    linecache.cache[str(path)] = (len(text), None, lines, str(path))
    sys.modules[name] = module
    # run the text we hold, not what is on disk now: a file changed after the check
    # above can never be executed
    exec(compile(text, str(path), "exec"), module.__dict__)
    return module
