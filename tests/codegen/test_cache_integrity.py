"""The cache never runs what it did not write: sealed Numba files, untrusted module files,
secant's own helpers kept inside the cache, and a cache that cannot be written."""
import errno
import glob
import os
import pickle
import stat
import threading

import numba
import pytest

import programs
from codegen import backends, cache_files, cache_numba, modules
from transformer import materialize
from transformer.frontend import parse

CPU = backends.Options(backend="cpu")
PYTHON = backends.Options(backend="python")


def quartic(x):
    return x * x * x * x


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """A fresh private cache directory, and an empty in-process module table."""
    path = tmp_path / "cache"
    monkeypatch.setenv("SECANT_CACHE_DIR", str(path))
    monkeypatch.setattr(backends, "_loaded", {})
    monkeypatch.setattr(cache_files, "_warned", set())
    # NUMBA_OPT is set by conftest after Numba may have read its config; Numba rereads it
    # when it compiles, so read it now or the first module would be named for another level
    numba.core.config.reload_config()
    return path


def compile_fresh(fn, options=CPU):
    """Compile `fn` as a new process would: nothing loaded in memory yet."""
    backends._loaded.clear()
    return materialize.compile_function(parse(fn), options)


def make_fifo(path):
    if not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs on this platform")
    os.mkfifo(path)


def numba_files(compiled):
    """The Numba index file of a compiled function and its data files."""
    cache_file = compiled.function._cache._cache_file
    base = cache_file._index_name[: -len(".nbi")]
    return cache_file._index_path, sorted(glob.glob(os.path.join(
        cache_file._cache_path, glob.escape(base) + ".*.nbc")))


def disk_hits(function) -> int:
    return sum(function.stats.cache_hits.values())


class Planted:
    """Unpickling this creates a marker file: proof that a planted pickle ran."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (open, (self.marker, "w"))


# ---------------------------------------------------------------- Numba's files


def test_numba_files_are_private_and_reloaded_from_disk(cache):
    first = compile_fresh(programs.cubic)
    assert first.function(2.0) == 8.0
    index, data = numba_files(first)
    assert os.path.dirname(index) == str(cache / "__pycache__")
    for path in [cache, cache / "__pycache__"]:
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o700
    for path in [index, *data, first.path, cache / cache_files.KEY_NAME]:
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600, path
    second = compile_fresh(programs.cubic)
    assert second.function is not first.function
    assert second.function(3.0) == 27.0
    assert disk_hits(second.function) == 1


def test_planted_index_pickle_never_runs(cache, tmp_path):
    compiled = compile_fresh(programs.cubic)
    compiled.function(2.0)
    index, _ = numba_files(compiled)
    marker = tmp_path / "planted-ran"
    with open(index, "wb") as handle:     # Numba's index format: pickle(version) + ...
        pickle.dump(Planted(str(marker)), handle)
        pickle.dump(Planted(str(marker)), handle)
    again = compile_fresh(programs.cubic)
    assert again.function(2.0) == 8.0
    assert not marker.exists()
    assert disk_hits(again.function) == 0
    key = cache_files.cache_key(cache)     # rebuilt: sealed again
    with open(index, "rb") as handle:
        assert cache_files.unseal(key, os.path.basename(index), handle.read()) is not None


def test_planted_data_pickle_never_runs(cache, tmp_path):
    compiled = compile_fresh(programs.cubic)
    compiled.function(2.0)
    _, data = numba_files(compiled)
    marker = tmp_path / "planted-ran"
    for path in data:
        with open(path, "wb") as handle:
            pickle.dump(Planted(str(marker)), handle)
    again = compile_fresh(programs.cubic)
    assert again.function(1.5) == 1.5 ** 3
    assert not marker.exists()


def test_swapped_data_file_is_rebuilt_not_run(cache):
    cubic = compile_fresh(programs.cubic)
    fourth = compile_fresh(quartic)
    assert (cubic.function(2.0), fourth.function(2.0)) == (8.0, 16.0)
    (_, [cubic_data]), (_, [quartic_data]) = numba_files(cubic), numba_files(fourth)
    with open(quartic_data, "rb") as handle:
        other = handle.read()
    with open(cubic_data, "wb") as handle:    # quartic's compiled code under cubic's name
        handle.write(other)
    again = compile_fresh(programs.cubic)
    assert again.function(2.0) == 8.0
    assert disk_hits(again.function) == 0


@pytest.mark.parametrize("damage", ["garbage", "truncated", "empty", "fifo", "directory"])
def test_damaged_numba_index_is_a_miss_and_rebuilt(cache, damage):
    compiled = compile_fresh(programs.cubic)
    compiled.function(2.0)
    index, _ = numba_files(compiled)
    with open(index, "rb") as handle:
        blob = handle.read()
    os.unlink(index)
    if damage == "fifo":
        make_fifo(index)
    elif damage == "directory":
        os.mkdir(index)
    else:
        with open(index, "wb") as handle:
            handle.write({"garbage": b"\x80\x04not a pickle", "truncated": blob[: len(blob) // 2],
                          "empty": b""}[damage])
    again = compile_fresh(programs.cubic)
    assert call_with_timeout(again.function, 2.0) == 8.0
    assert disk_hits(again.function) == 0


# ---------------------------------------------------------------- module files


def call_with_timeout(function, *args, seconds=60):
    """`function(*args)` in a thread, failing instead of hanging (e.g. on a FIFO)."""
    result = {}

    def run():
        try:
            result["value"] = function(*args)
        except BaseException as exc:      # reported below
            result["error"] = exc
    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), "hung (blocked on a FIFO?)"
    if "error" in result:
        raise result["error"]
    return result["value"]


def module_file(text_of):
    text, _ = materialize.module_text(parse(text_of), PYTHON)
    return modules.module_path(text), text


@pytest.mark.parametrize("damage", ["fifo", "non-utf8", "symlink", "directory"])
def test_damaged_module_file_is_rebuilt_never_executed(cache, damage, tmp_path):
    path, text = module_file(programs.cubic)
    outside = tmp_path / "outside.py"
    outside.write_text("import builtins\nbuiltins.secant_planted = True\n"
                       "def cubic(x):\n    return -1.0\n")
    if damage == "fifo":
        make_fifo(path)
    elif damage == "non-utf8":
        path.write_bytes(b"\xff\xfe\x00garbage")
    elif damage == "symlink":
        path.symlink_to(outside)
    else:
        path.mkdir()
    compiled = call_with_timeout(compile_fresh, programs.cubic, PYTHON)
    assert compiled.function(2.0) == 8.0
    assert stat.S_ISREG(os.lstat(path).st_mode)
    assert path.read_text() == text
    assert outside.read_text().startswith("import builtins")    # the link's target untouched


def test_existing_module_keeps_its_place_and_becomes_private(cache):
    path, text = module_file(programs.cubic)
    path.write_text(text)
    path.chmod(0o644)                    # as an older secant left it
    compiled = compile_fresh(programs.cubic, PYTHON)
    assert compiled.path == str(path) and compiled.function(2.0) == 8.0


# ---------------------------------------------------------------- unwritable caches


@pytest.mark.parametrize("code", [errno.EROFS, errno.ENOSPC])
@pytest.mark.parametrize("options", [PYTHON, CPU], ids=["python", "cpu"])
def test_unwritable_cache_compiles_in_memory_with_one_warning(cache, monkeypatch, code,
                                                              options):
    def refuse(path, data):
        raise OSError(code, os.strerror(code), str(path))
    monkeypatch.setattr(cache_files, "write_private", refuse)
    with pytest.warns(RuntimeWarning, match="cannot write to its cache directory") as caught:
        first = compile_fresh(programs.cubic, options)
        assert first.function(2.0) == 8.0
        second = compile_fresh(quartic, options)
        assert second.function(2.0) == 16.0
    warned = [w for w in caught if "cache directory" in str(w.message)]
    assert len(warned) == 1 and warned[0].filename == __file__      # the caller's line
    assert not [p for p in cache.rglob("*") if p.suffix in (".py", ".nbi", ".nbc")]


@pytest.mark.skipif(os.name == "nt" or os.getuid() == 0,
                    reason="root writes through a read-only mode")
def test_read_only_cache_directory_still_runs_python_backend(cache):
    cache.mkdir(mode=0o500)
    try:
        with pytest.warns(RuntimeWarning, match="cannot write"):
            compiled = compile_fresh(programs.cubic, PYTHON)
        assert compiled.function(2.0) == 8.0
    finally:
        cache.chmod(0o700)


def test_unwritable_numba_files_warn_and_compile(cache, monkeypatch):
    cpu_text, _ = materialize.module_text(parse(programs.cubic), CPU)
    modules.write_module(cpu_text)          # the module is there; its Numba files are not

    def refuse(path, data):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
    monkeypatch.setattr(cache_files, "write_private", refuse)
    with pytest.warns(RuntimeWarning, match="cannot write to its cache directory"):
        compiled = compile_fresh(programs.cubic)
        assert compiled.function(2.0) == 8.0
    assert not glob.glob(str(cache / "__pycache__" / "*.nb?"))


# ---------------------------------------------------------------- secant's own helpers


def test_runtime_helpers_cache_inside_the_cache_directory(cache):
    from transformer.runtime import numpy_blas
    helpers = [numpy_blas.product]
    root = modules.cache_dir()
    cache_numba.enable_runtime_helpers(root)
    for helper in helpers:
        assert isinstance(helper._cache, cache_numba.SealedCache)
        assert helper._cache.cache_path == str(root / "__pycache__")
    for name, module in list(__import__("sys").modules.items()):
        if name.partition(".")[0] in ("transformer", "codegen"):
            for value in vars(module).values():
                if isinstance(value, numba.core.registry.CPUDispatcher) and \
                        value.py_func.__module__ == name:
                    assert value._cache.cache_path.startswith(str(root)), (name, value)


# ---------------------------------------------------------------- the key


@pytest.mark.parametrize("damage", ["short", "fifo", "directory"])
def test_damaged_key_is_replaced_and_old_seals_fail(cache, damage):
    root = modules.cache_dir()
    key = cache_files.cache_key(root)
    assert cache_files.cache_key(root) == key             # stable once made
    sealed = cache_files.seal(key, "f.nbi", b"payload")
    assert cache_files.unseal(key, "f.nbi", sealed) == b"payload"
    assert cache_files.unseal(key, "g.nbi", sealed) is None      # bound to its name
    path = root / cache_files.KEY_NAME
    path.unlink()
    if damage == "short":
        path.write_bytes(b"0123")
    elif damage == "fifo":
        make_fifo(path)
    else:
        path.mkdir()
    fresh = call_with_timeout(cache_files.cache_key, root)
    assert len(fresh) == len(key) and fresh != key
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert cache_files.unseal(fresh, "f.nbi", sealed) is None
