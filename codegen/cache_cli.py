"""`secant cache info|clear|prune`: look at, empty or trim the cache directory.

    secant cache info     the directory, its size, entry count and the size limit
    secant cache clear    remove every entry (compiled again on next use)
    secant cache prune    evict least-recently-used entries until the cache fits its limit
"""
from __future__ import annotations

import argparse
import sys

ACTIONS = ("info", "clear", "prune")


def add_parser(commands) -> None:
    """Register the `cache` subcommand on `commands` (an argparse subparsers object)."""
    cache = commands.add_parser(
        "cache", help="show, clear or prune secant's cache directory",
        description=__doc__.split("\n", 1)[1], formatter_class=argparse.RawTextHelpFormatter)
    cache.add_argument("action", choices=ACTIONS)
    cache.set_defaults(handler=run)


def run(args) -> int:
    """Run `secant cache ACTION`; a refused directory is one line on stderr, status 1."""
    from . import cache_store, modules
    from .errors import TransformError
    try:
        root = modules.cache_dir()
        limit = cache_store.max_bytes()
    except (TransformError, OSError) as exc:
        print(f"secant: {exc}", file=sys.stderr)
        return 1
    if args.action == "clear":
        print(f"removed {cache_store.clear(root)} entries from {root}")
    elif args.action == "prune":
        evicted = cache_store.enforce_limit(root, limit=limit)
        print(f"evicted {evicted} entries; {_size(cache_store.total_size(root))} in {root}")
    else:
        found = cache_store.entries(root)
        size = sum(entry.size for entry in found.values())
        print(f"directory: {root}")
        print(f"size:      {_size(size)} ({size} bytes) in {len(found)} entries")
        print(f"limit:     {_size(limit)} ({limit} bytes; SECANT_CACHE_MAX_BYTES)")
    return 0


def _size(count: int) -> str:
    value, unit = float(count), "B"
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            break
        value /= 1024
    return f"{count} B" if unit == "B" else f"{value:.1f} {unit}"
