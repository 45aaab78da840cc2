"""The cache's size: entries, their last use, least-recently-used eviction.

An *entry* is one generated module `m<hash>.py` together with the Numba files compiled
from it (`__pycache__/m<hash>.*`); the Numba files of secant's own runtime helpers form
one entry per source module. An entry's last use is the modification time of its module,
which secant sets on every load (`touch`): access times are not reliable, since many
file systems are mounted `noatime`. `enforce_limit` evicts whole entries, oldest first,
until the cache fits `SECANT_CACHE_MAX_BYTES`; the entry being written is kept, so the
cache never exceeds the limit by more than one entry.
"""
from __future__ import annotations

import dataclasses
import os
import re
import stat
import time
from pathlib import Path

from .errors import TransformError

from .cache_files import KEY_NAME, TEMP_PREFIX, discard

DEFAULT_MAX_BYTES = 1 << 30
NUMBA_DIR = "__pycache__"
_SIZE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([kmgt]?)i?b?\s*", re.IGNORECASE)
_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
_STALE_TEMP_SECONDS = 3600
_MODULE = re.compile(r"m[0-9a-f]{32}\.py")
_NUMBA_FILE = re.compile(r"[^.].*\.(nbi|nbc)")


@dataclasses.dataclass
class Entry:
    name: str
    files: list
    size: int = 0
    used: float = 0.0


def max_bytes() -> int:
    """`SECANT_CACHE_MAX_BYTES` (bytes, or with a K/M/G/T suffix), default 1 GiB."""
    text = os.environ.get("SECANT_CACHE_MAX_BYTES", "").strip()
    if not text:
        return DEFAULT_MAX_BYTES
    match = _SIZE.fullmatch(text)
    if not match:
        raise TransformError(f"SECANT_CACHE_MAX_BYTES={text!r} is not a size",
                             hint="write a number of bytes, e.g. 500000000, or 512M, 2G")
    return int(float(match.group(1)) * _UNITS[match.group(2).lower()])


def entry_name(file_name: str) -> str:
    """The entry a cache file belongs to: `m<hash>` for a module and its Numba files."""
    return file_name.split(".", 1)[0]


def is_module_entry(name: str) -> bool:
    """Whether entry `name` is a generated module (not secant's runtime helpers)."""
    return _MODULE.fullmatch(name + ".py") is not None


def touch(path) -> None:
    """Record a use of the entry whose module is `path` (best effort: read-only is fine)."""
    try:
        os.utime(path)
    except OSError:
        pass


def entries(root: Path) -> dict[str, Entry]:
    """Every entry in the cache directory `root`, by name. Only files named as secant
    names them count: anything else found there is never evicted or cleared."""
    found: dict[str, Entry] = {}
    for folder, pattern in ((Path(root), _MODULE), (Path(root) / NUMBA_DIR, _NUMBA_FILE)):
        for path, info in _files(folder, pattern):
            entry = found.setdefault(entry_name(path.name), Entry(entry_name(path.name), []))
            entry.files.append(path)
            entry.size += info.st_size
            entry.used = max(entry.used, info.st_mtime)
    return found


def _files(folder: Path, pattern):
    try:
        listing = list(os.scandir(folder))
    except OSError:
        return
    for item in listing:
        temporary = item.name.startswith(TEMP_PREFIX)
        if not (temporary or pattern.fullmatch(item.name)):
            continue
        try:
            info = item.stat(follow_symlinks=False)
        except OSError:
            continue
        if stat.S_ISDIR(info.st_mode):
            continue
        if temporary:
            if time.time() - info.st_mtime > _STALE_TEMP_SECONDS:   # left by a crash
                discard(item.path)
            continue                     # another writer's file in flight
        yield Path(item.path), info


def total_size(root: Path) -> int:
    return sum(entry.size for entry in entries(root).values())


def enforce_limit(root: Path, keep: str | None = None, limit: int | None = None) -> int:
    """Evict least-recently-used entries (never `keep`) until the cache fits `limit`;
    return how many entries were evicted."""
    limit = max_bytes() if limit is None else limit
    found = entries(root)
    total = sum(entry.size for entry in found.values())
    evicted = 0
    for entry in sorted(found.values(), key=lambda e: e.used):
        if total <= limit:
            break
        if entry.name == keep:
            continue
        remove(entry)
        total -= entry.size
        evicted += 1
    return evicted


def remove(entry: Entry) -> None:
    for path in entry.files:
        try:
            discard(path)
        except OSError:
            pass


def clear(root: Path) -> int:
    """Remove every entry (and the key, so old seals die with it); return the count."""
    found = entries(root)
    for entry in found.values():
        remove(entry)
    discard(Path(root) / KEY_NAME)
    return len(found)
