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

ROOT = Path(__file__).resolve().parents[2]
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


# ---------------------------------------------------------------- modules a person can hold

MAX_MODULE_LINES = 700
MAX_CLASS_LINES = 400


def package_modules() -> dict[str, Path]:
    """Dotted name -> path of every module of both packages."""
    found = {}
    for root in ("transformer", "codegen"):
        for path in (ROOT / root).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            found[name] = path
    return found


def imports_of(name: str, path: Path, known: dict) -> set[str]:
    """The package modules `name` imports, at module level or inside a function (a deferred
    import that breaks an initialization cycle is a cycle all the same), but a package's
    imports of its own submodules."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    targets = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[:len(anchor) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            targets.add(base)
            targets |= {f"{base}.{alias.name}" for alias in node.names}
    own = name + "." if path.name == "__init__.py" else None
    return {t for t in targets if t in known and t != name and not (own and t.startswith(own))}


def import_cycles(graph: dict) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on_stack, cycles, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return cycles


@pytest.mark.slow
def test_no_import_cycle_between_modules():
    known = package_modules()
    graph = {name: imports_of(name, path, known) for name, path in known.items()}
    assert len(graph) > 50 and import_cycles(graph) == []


def test_the_cycle_finder_finds_a_cycle():
    assert import_cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_module_or_class_too_large_to_hold():
    too_long = []
    for name, path in package_modules().items():
        text = path.read_text()
        if text.count("\n") > MAX_MODULE_LINES:
            too_long.append(f"{name}: {text.count(chr(10))} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ClassDef):
                size = node.end_lineno - node.lineno + 1
                if size > MAX_CLASS_LINES:
                    too_long.append(f"{name}.{node.name}: {size} lines")
    assert too_long == []
