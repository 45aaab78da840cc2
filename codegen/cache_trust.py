"""Whether a cache directory can be trusted: nobody but its user can put files in it.

secant executes the modules and unpickles the Numba files it finds in its cache, so a
directory someone else can write to would let them run code as the caller. The rule is
the one ssh applies to `~/.ssh`: the directory must be owned by the caller and writable
by nobody else, and every directory above it must be owned by root or the caller and not
writable by others - unless it has the sticky bit (as `/tmp` has), which stops others
from renaming or deleting what they do not own. Checks follow the resolved path, so a
symbolic link is judged by what it points to. On Windows, where POSIX modes mean
nothing, no check is made.
"""
from __future__ import annotations

import os
import stat
from pathlib import Path

from .errors import TransformError

_OTHERS_WRITE = stat.S_IWGRP | stat.S_IWOTH


def private_directory(path: Path) -> Path:
    """`path`, created 0700 with its missing parents if needed, checked as above.

    Raises TransformError for a directory that is not private, and OSError when it
    cannot be created (a read-only file system): callers fall back to memory then.
    """
    path = Path(os.path.abspath(os.path.expanduser(path)))
    if os.path.lexists(path) and not os.path.isdir(path):
        raise _refusal(path, "it is not a directory",
                       f"remove {path} or set SECANT_CACHE_DIR to a directory")
    _make_directories(path)
    if os.name == "nt":
        return path
    resolved = path.resolve()
    _check_own_directory(path, resolved)
    for parent in resolved.parents:
        _check_parent(path, parent)
    return path


def _make_directories(path: Path) -> None:
    """Create `path` and its missing parents 0700 (os.makedirs gives parents the
    umask's mode, which may let the group write)."""
    missing = [p for p in [path, *path.parents] if not os.path.isdir(p)]
    for directory in reversed(missing):
        try:
            os.mkdir(directory, 0o700)
        except FileExistsError:
            pass


def private_subdirectory(path: Path) -> Path:
    """A directory inside a checked cache directory, created (or reset to) mode 0700."""
    os.makedirs(path, mode=0o700, exist_ok=True)
    if os.name != "nt" and stat.S_IMODE(os.stat(path).st_mode) != 0o700:
        os.chmod(path, 0o700)         # made by an older secant with the umask's mode
    return path


def _check_own_directory(path: Path, resolved: Path) -> None:
    info = os.stat(resolved)
    if info.st_uid != os.getuid():
        raise _refusal(path, f"it is owned by uid {info.st_uid}, not by you "
                       f"(uid {os.getuid()}), and its owner could plant code that secant "
                       "would run",
                       f"remove it (secant recreates it), run `chown {os.getuid()} "
                       f"{resolved}` as its owner or root, or set SECANT_CACHE_DIR to a "
                       "directory you own")
    mode = stat.S_IMODE(info.st_mode)
    if mode & _OTHERS_WRITE:
        raise _refusal(path, f"it is writable by other users (mode {mode:o}), who could "
                       "plant code that secant would run",
                       f"run `chmod 700 {resolved}` or set SECANT_CACHE_DIR to a private "
                       "directory")


def _check_parent(path: Path, parent: Path) -> None:
    info = os.stat(parent)
    if info.st_uid not in (0, os.getuid()):
        raise _refusal(path, f"its parent {parent} is owned by uid {info.st_uid}, who "
                       "could replace the cache directory",
                       "set SECANT_CACHE_DIR to a directory under one owned by you or root")
    mode = stat.S_IMODE(info.st_mode)
    if mode & _OTHERS_WRITE and not mode & stat.S_ISVTX:
        raise _refusal(path, f"its parent {parent} is writable by other users "
                       f"(mode {mode:o}) without the sticky bit, so they could replace "
                       "the cache directory",
                       f"run `chmod go-w {parent}` (or `chmod +t {parent}` for a shared "
                       "directory), or set SECANT_CACHE_DIR to a directory under one "
                       "only you can write")


def _refusal(path: Path, reason: str, hint: str) -> TransformError:
    return TransformError(f"refusing to use cache directory {path}: {reason}", hint=hint)
