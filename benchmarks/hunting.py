"""What the hunt scripts share: run as scripts from anywhere, they import the generators
and checkers in tests/, and compile with NUMBA_OPT=0 into a throwaway cache unless the
environment says otherwise. Call `prepare` before importing from tests/."""
from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def prepare(cache_prefix: str) -> None:
    for entry in (ROOT, ROOT / "tests"):
        if str(entry) not in sys.path:
            sys.path.insert(0, str(entry))
    os.environ.setdefault("NUMBA_OPT", "0")
    os.environ.setdefault("SECANT_CACHE_DIR", tempfile.mkdtemp(prefix=cache_prefix))


def checks_argument(parser, args, known) -> list[str]:
    """`args.checks` (comma-separated) as a list, every name one of `known`."""
    checks = [c for c in args.checks.split(",") if c]
    unknown = set(checks) - set(known)
    if unknown:
        parser.error(f"unknown checks {sorted(unknown)}; choose from {known}")
    return checks
