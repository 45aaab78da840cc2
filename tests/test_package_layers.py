"""The two packages depend one way: `transformer` sits on `codegen`, and `codegen` imports
nothing from `transformer` (its CLI and demo, as entry points, aside), at module level or
inside a function. The error codegen raises is the one users catch from transformer."""
import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

import transformer
from codegen import cache_store, errors

ROOT = Path(__file__).resolve().parent.parent
ENTRY_POINTS = {"cli.py", "demo.py", "__main__.py"}


def codegen_modules() -> list[Path]:
    return sorted(p for p in (ROOT / "codegen").rglob("*.py") if p.name not in ENTRY_POINTS)


def imported_roots(path: Path) -> set[str]:
    """The top-level packages `path` imports anywhere in its code (relative: 'codegen')."""
    roots = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            roots |= {alias.name.partition(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            roots.add("codegen" if node.level else (node.module or "").partition(".")[0])
    return roots


def test_codegen_source_never_imports_transformer():
    upward = [p.relative_to(ROOT).as_posix() for p in codegen_modules()
              if "transformer" in imported_roots(p)]
    assert len(codegen_modules()) > 10 and upward == []


def test_importing_every_codegen_module_first_leaves_transformer_unloaded():
    names = [f"codegen.{p.stem}" if p.stem != "__init__" else "codegen"
             for p in codegen_modules() if p.parent == ROOT / "codegen"]
    probe = (f"import importlib, sys\nfor name in {names!r}:\n"
             "    importlib.import_module(name)\n"
             "print(sorted(m for m in sys.modules if m.partition('.')[0] == 'transformer'))")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    run = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "[]"


def test_a_cache_setting_refused_by_codegen_is_caught_as_transformers_error(monkeypatch):
    assert transformer.TransformError is errors.TransformError
    monkeypatch.setenv("SECANT_CACHE_MAX_BYTES", "lots")
    with pytest.raises(transformer.TransformError, match="SECANT_CACHE_MAX_BYTES='lots'"):
        cache_store.max_bytes()
