"""Files in the cache directory: read without trusting, written privately, sealed.

Every read goes through `read_regular`, which opens without following links and
without blocking, and returns bytes only for a regular file: a missing, unreadable,
linked, FIFO or device path is a *miss* (None), which callers rebuild. Writes are atomic
(temp file + rename) and 0600. Files whose contents secant cannot check by their name -
Numba's pickles - are *sealed*: prefixed with an HMAC-SHA256 of their name and payload,
keyed by a random per-cache key (`secant.key`, 0600). A file whose seal does not match,
planted or swapped or corrupted, is never unpickled.
"""
from __future__ import annotations

import errno
import hashlib
import hmac
import os
import shutil
import stat
import sys
import tempfile
import threading
import warnings
from pathlib import Path

import numba

KEY_NAME = "secant.key"
TEMP_PREFIX = ".tmp-"
_MAGIC = b"secant-sealed-1\n"
_KEY_BYTES = 32
_DIGEST_BYTES = hashlib.sha256().digest_size
_READ_FLAGS = (os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0)
               | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0))
_warned: set = set()
_warn_lock = threading.Lock()


def read_regular(path) -> bytes | None:
    """The bytes of `path` if it is a regular file we can read, else None (a miss)."""
    try:
        fd = os.open(path, _READ_FLAGS)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


def discard(path) -> None:
    """Remove whatever is at `path` (file, link, FIFO, directory); absent is fine."""
    try:
        if stat.S_ISDIR(os.lstat(path).st_mode):
            shutil.rmtree(path, ignore_errors=True)
        else:
            os.unlink(path)
    except FileNotFoundError:
        pass


def write_private(path, data: bytes) -> None:
    """Atomically replace `path` by a 0600 file holding `data`; nothing left on failure."""
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=TEMP_PREFIX)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.chmod(tmp, 0o600)
        if os.path.isdir(path) and not os.path.islink(path):   # rename cannot replace it
            discard(path)
        os.replace(tmp, path)
    except BaseException:
        if os.path.lexists(tmp):
            os.unlink(tmp)
        raise


# ---------------------------------------------------------------- sealing


def cache_key(root: Path) -> bytes:
    """The cache's secret key, created on first use (the first process to create it wins);
    a damaged key is replaced, which invalidates every seal, so all is rebuilt."""
    path = Path(root) / KEY_NAME
    for _ in range(3):
        key = read_regular(path)
        if key is not None and len(key) == _KEY_BYTES:
            return key
        if key is not None or os.path.lexists(path):
            discard(path)
        _create_key(path)
    raise OSError(errno.EIO, "cannot create a readable cache key", str(path))


def _create_key(path: Path) -> None:
    """Write a new random key to `path` unless another process has just done so."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=TEMP_PREFIX)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(os.urandom(_KEY_BYTES))
        try:
            os.link(tmp, path)           # atomic and never replaces a key just written
        except FileExistsError:
            pass
        except OSError:                  # no hard links on this file system
            os.replace(tmp, path)
    finally:
        if os.path.lexists(tmp):
            os.unlink(tmp)


def seal(key: bytes, name: str, payload: bytes) -> bytes:
    """`payload` prefixed with its seal; the name binds it to the file it is written to."""
    return _MAGIC + _mac(key, name, payload) + payload


def unseal(key: bytes, name: str, blob: bytes | None) -> bytes | None:
    """The payload of a sealed file named `name`, or None unless the seal matches."""
    if blob is None or not blob.startswith(_MAGIC):
        return None
    start = len(_MAGIC) + _DIGEST_BYTES
    mac, payload = blob[len(_MAGIC):start], blob[start:]
    return payload if hmac.compare_digest(mac, _mac(key, name, payload)) else None


def _mac(key: bytes, name: str, payload: bytes) -> bytes:
    return hmac.new(key, name.encode("utf-8") + b"\0" + payload, hashlib.sha256).digest()


# ---------------------------------------------------------------- unwritable caches


def warn_unwritable(root, exc: OSError) -> None:
    """One warning per process and directory: secant goes on compiling in memory."""
    with _warn_lock:
        if str(root) in _warned:
            return
        _warned.add(str(root))
    reason = exc.strerror or str(exc)
    warnings.warn(f"secant cannot write to its cache directory {root} ({reason}); "
                  "compiling in memory without a disk cache. Free space, make it "
                  "writable, or set SECANT_CACHE_DIR to a writable private directory",
                  RuntimeWarning, stacklevel=_caller_level())


def _caller_level() -> int:
    """The `stacklevel` of the first frame outside secant and Numba: the user's call."""
    internal = tuple(str(Path(p).resolve()) + os.sep for p in (
        Path(__file__).parent, Path(__file__).parent.parent / "transformer",
        Path(numba.__file__).parent))
    frame, level = sys._getframe(1), 1
    while frame.f_back is not None and \
            os.path.realpath(frame.f_code.co_filename).startswith(internal):
        frame, level = frame.f_back, level + 1
    return level
