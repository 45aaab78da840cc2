"""Generated modules on disk: the cache directory, content-hashed files, loading.

A module's file name is the SHA-256 of its text, so the name *is* the cache key: equal
source (which embeds the transform chain, the options, the versions and the fingerprints
of every dependency) means the same file, in this process or the next. Files are written
atomically (temp file + rename) with owner-only permissions; a file whose text no longer
matches its name is discarded and rebuilt, never executed. Loaded files are registered in
`linecache`, so tracebacks and pdb show generated lines.
"""
from __future__ import annotations

import hashlib
import linecache
import os
import stat
import sys
import tempfile
import threading
import types
from pathlib import Path

import platformdirs

from transformer.errors import TransformError

_lock = threading.Lock()


def cache_dir() -> Path:
    """`SECANT_CACHE_DIR`, or the platform's user cache dir; created 0700, checked."""
    root = os.environ.get("SECANT_CACHE_DIR") or platformdirs.user_cache_dir("secant")
    path = Path(root).expanduser()
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    mode = path.stat().st_mode
    if mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise TransformError(
            f"refusing to use cache directory {path}: it is writable by other users "
            f"(mode {stat.S_IMODE(mode):o}), who could plant code that secant would run",
            hint=f"run `chmod 700 {path}` or set SECANT_CACHE_DIR to a private directory")
    return path


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def module_path(text: str) -> Path:
    return cache_dir() / f"m{content_hash(text)[:32]}.py"


def write_module(text: str) -> Path:
    """The path of a file holding exactly `text`, writing (or rewriting) it if needed."""
    path = module_path(text)
    with _lock:
        if path.exists():
            if path.read_text(encoding="utf-8") == text:
                return path
            path.unlink()            # tampered or truncated: never execute it
            _drop_numba_cache(path)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".py")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(text)
            os.chmod(tmp, 0o600)
            os.replace(tmp, path)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise
    return path


def _drop_numba_cache(path: Path) -> None:
    cache = path.parent / "__pycache__"
    if cache.is_dir():
        for entry in cache.glob(path.stem + ".*"):
            entry.unlink(missing_ok=True)


def load_module(text: str, namespace: dict):
    """Write `text` to the cache, import it with `namespace` pre-bound, return the module."""
    path = write_module(text)
    name = "secant_generated." + path.stem
    module = types.ModuleType(name)
    module.__file__ = str(path)
    module.__dict__.update(namespace)
    lines = text.splitlines(keepends=True)
    linecache.cache[str(path)] = (len(text), None, lines, str(path))
    sys.modules[name] = module
    # run the text we hold, not what is on disk now: a file changed after the check
    # above can never be executed
    exec(compile(text, str(path), "exec"), module.__dict__)
    return module
