"""Codegen: module text, the cache directory, atomic content-hashed files, linecache."""
import builtins
import os
import stat
import traceback

import gast
import numpy as np
import pytest

import programs
from codegen import backends, emit, modules
from transformer import TransformError
from transformer import materialize
from transformer.frontend import parse

PYTHON = backends.Options(backend="python")


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """A fresh private cache directory, and an empty in-process module table."""
    path = tmp_path / "cache"
    monkeypatch.setenv("SECANT_CACHE_DIR", str(path))
    monkeypatch.setattr(backends, "_loaded", {})
    return path


def test_header_names_origin_chain_backend_and_versions():
    import numba
    fn = parse(programs.pair_sum)
    fn = fn.replace(chain=("grad(argnums=0)", "jit(backend='cpu')"))
    text, _ = materialize.module_text(fn, backends.Options(backend="cpu"))
    lines = text.splitlines()
    line = programs.pair_sum.__code__.co_firstlineno
    assert lines[0] == f"# secant: generated from {programs.__file__}:{line} (pair_sum)"
    assert lines[1] == "# transforms: grad(argnums=0) | jit(backend='cpu')"
    level = int(numba.config.OPT)     # named only when it is not Numba's default
    assert lines[2] == (f"# backend: cpu; secant {backends.VERSION}, numba {numba.__version__}, "
                        f"numpy {np.__version__}" + (f", NUMBA_OPT={level}" if level != 3 else ""))
    assert lines[3].startswith("# uses sqdist: generated ")
    # secant attaches its own disk cache
    assert "@numba.njit(nogil=True, no_cfunc_wrapper=True)" in lines


def test_modules_calling_the_runtime_are_renamed_when_secant_changes(monkeypatch):
    from transformer import grad
    fn = grad(programs.pair_sum).__secant_function__()
    cpu = backends.Options(backend="cpu")
    text, _ = materialize.module_text(fn, cpu)
    assert f"# secant runtime sources: {backends.secant_sources_hash()}" in text.splitlines()
    monkeypatch.setattr(backends, "secant_sources_hash", lambda: "0123456789abcdef")
    edited, _ = materialize.module_text(fn, cpu)
    assert modules.content_hash(edited) != modules.content_hash(text)
    plain, _ = materialize.module_text(parse(programs.pair_sum), cpu)
    assert "secant runtime sources" not in plain    # user code alone keeps its name


def test_optimization_level_other_than_the_default_renames_the_module(monkeypatch):
    import numba
    fn = parse(programs.pair_sum)
    cpu = backends.Options(backend="cpu")
    monkeypatch.setattr(numba.config, "OPT", 3)
    default, _ = materialize.module_text(fn, cpu)
    monkeypatch.setattr(numba.config, "OPT", 0)
    unoptimized, _ = materialize.module_text(fn, cpu)
    assert "NUMBA_OPT" not in default and ", NUMBA_OPT=0" in unoptimized.splitlines()[2]
    assert modules.content_hash(default) != modules.content_hash(unoptimized)


def test_annotated_statements_are_preceded_by_their_comment():
    stmt = gast.parse("e = e + 4.0 * s6").body[0]
    emit.annotate(stmt, "grad of: e += 4.0 * s6")
    module = gast.Module(body=[gast.parse("x = 1").body[0], stmt], type_ignores=[])
    assert emit.to_source(module).splitlines() == [
        "x = 1", "# grad of: e += 4.0 * s6", "e = e + 4.0 * s6"]


def test_cache_dir_is_created_owner_only(cache):
    path = modules.cache_dir()
    assert path == cache
    assert stat.S_IMODE(path.stat().st_mode) == 0o700


@pytest.mark.parametrize("mode", [0o770, 0o707, 0o777])
def test_cache_dir_writable_by_others_is_refused(cache, mode):
    cache.mkdir()
    cache.chmod(mode)
    with pytest.raises(TransformError, match="writable by other users") as info:
        modules.cache_dir()
    assert f"chmod 700 {cache}" in info.value.hint


def test_module_file_is_content_hashed_and_owner_readable(cache):
    text = "VALUE = 41 + 1\n"
    path = modules.write_module(text)
    assert path.parent == cache
    assert path.stem == "m" + modules.content_hash(text)[:32]
    assert path.read_text() == text
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert not list(cache.glob(".tmp-*"))


def test_failed_write_leaves_no_file_behind(cache, monkeypatch):
    def fail(*_args):
        raise OSError("disk full")
    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(OSError, match="disk full"):
        modules.write_module("VALUE = 1\n")
    assert list(cache.iterdir()) == []


def test_tampered_module_is_rebuilt_not_executed(cache, monkeypatch):
    monkeypatch.delattr(builtins, "secant_tampered_ran", raising=False)
    fn = parse(programs.cubic)
    first = materialize.compile_function(fn, PYTHON)
    with open(first.path, "w") as handle:
        handle.write("import builtins\nbuiltins.secant_tampered_ran = True\n"
                     "def cubic(x):\n    return -1.0\n")
    monkeypatch.setattr(backends, "_loaded", {})      # as a new process would start
    second = materialize.compile_function(fn, PYTHON)
    assert not hasattr(builtins, "secant_tampered_ran")
    assert second.path == first.path
    with open(second.path) as handle:
        assert handle.read() == first.text
    assert second.function(2.0) == 8.0


def test_generated_lines_appear_in_tracebacks(cache):
    compiled = materialize.compile_function(parse(programs.sqdist), PYTHON)
    with pytest.raises(IndexError) as info:
        compiled.function(np.ones(3), np.ones(2))
    frames = traceback.extract_tb(info.tb)
    generated = [f for f in frames if f.filename == compiled.path]
    assert generated, [f.filename for f in frames]
    assert generated[-1].line == "d += (a[k] - b[k]) * (a[k] - b[k])"
    assert generated[-1].line in compiled.text.splitlines()[generated[-1].lineno - 1]


def test_equal_text_is_loaded_once_per_process(cache):
    fn = parse(programs.cubic)
    before = (backends.STATS.hits, backends.STATS.misses)
    a = materialize.compile_function(fn, PYTHON)
    b = materialize.compile_function(parse(programs.cubic), PYTHON)
    assert a is b
    assert (backends.STATS.hits, backends.STATS.misses) == (before[0] + 1, before[1] + 1)
