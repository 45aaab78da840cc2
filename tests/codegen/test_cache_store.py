"""The cache's size stays bounded: LRU eviction by recorded use, and `secant cache`."""
import os

import numpy as np
import pytest

import programs
from codegen import backends, cache_files, cache_store, cli, modules
from transformer import TransformError, jit

ENTRY = 10_000          # bytes in each test module


@pytest.fixture
def cache(tmp_path, monkeypatch):
    path = tmp_path / "cache"
    monkeypatch.setenv("SECANT_CACHE_DIR", str(path))
    monkeypatch.delenv("SECANT_CACHE_MAX_BYTES", raising=False)
    monkeypatch.setattr(backends, "_loaded", {})
    return path


def module_text(i: int) -> str:
    """A distinct module of ENTRY bytes."""
    head = f"VALUE = {i}\n"
    return head + "#" * (ENTRY - len(head) - 1) + "\n"


def write(i: int, when: float):
    """Write module `i` and record its last use at time `when`."""
    path = modules.write_module(module_text(i))
    os.utime(path, (when, when))
    return path


def numba_file(module_path, size: int):
    """A stand-in for a Numba file of the entry of `module_path`."""
    folder = module_path.parent / cache_store.NUMBA_DIR
    folder.mkdir(mode=0o700, exist_ok=True)
    path = folder / f"{module_path.stem}.f-1.py311.1.nbc"
    path.write_bytes(b"x" * size)
    return path


def test_eviction_keeps_the_cache_within_limit_plus_one_entry(cache, monkeypatch):
    monkeypatch.setenv("SECANT_CACHE_MAX_BYTES", str(3 * ENTRY))
    paths = [write(i, when=1000 + i) for i in range(8)]
    kept = [p for p in paths if p.exists()]
    assert kept == paths[-3:]                      # the most recently used survive
    assert cache_store.total_size(cache) <= 3 * ENTRY + ENTRY


def test_an_entry_larger_than_the_limit_is_kept_alone(cache, monkeypatch):
    monkeypatch.setenv("SECANT_CACHE_MAX_BYTES", str(ENTRY // 2))
    first, second = write(0, 1000), write(1, 1001)
    assert not first.exists() and second.exists()
    assert cache_store.total_size(cache) == ENTRY


def test_a_module_in_use_is_recent_however_old_its_file(cache, monkeypatch):
    old = write(0, when=1000)
    write(1, when=2000)
    modules.write_module(module_text(0))           # a load of module 0 records its use
    monkeypatch.setenv("SECANT_CACHE_MAX_BYTES", str(2 * ENTRY))
    write(2, when=3000)
    assert old.exists()
    assert sorted(cache_store.entries(cache)) == sorted(
        [old.stem, modules.module_path(module_text(2)).stem])


def test_numba_files_are_evicted_with_their_module(cache, monkeypatch):
    first = write(0, 1000)
    compiled = numba_file(first, 5_000)
    os.utime(compiled, (1000, 1000))
    entry = cache_store.entries(cache)[first.stem]
    assert entry.size == ENTRY + 5_000 and len(entry.files) == 2
    monkeypatch.setenv("SECANT_CACHE_MAX_BYTES", str(ENTRY))
    write(1, 2000)
    assert not first.exists() and not compiled.exists()


def test_files_secant_did_not_name_are_never_removed(cache, capsys, monkeypatch):
    write(0, 1000)
    cache.joinpath("notes.txt").write_text("mine")
    (cache / cache_store.NUMBA_DIR).mkdir(mode=0o700)
    cache.joinpath(cache_store.NUMBA_DIR, "other.pyc").write_bytes(b"x" * 50)
    monkeypatch.setenv("SECANT_CACHE_MAX_BYTES", "1")
    run_cli(capsys, "prune")
    run_cli(capsys, "clear")
    assert cache.joinpath("notes.txt").read_text() == "mine"
    assert cache.joinpath(cache_store.NUMBA_DIR, "other.pyc").exists()


def test_key_and_files_in_flight_are_not_entries(cache):
    write(0, 1000)
    cache_files.cache_key(cache)
    (cache / (cache_files.TEMP_PREFIX + "in-flight")).write_bytes(b"x" * 50)
    assert list(cache_store.entries(cache)) == [modules.module_path(module_text(0)).stem]


@pytest.mark.parametrize("text, expected", [
    ("", 1 << 30), ("12345", 12345), ("512M", 512 << 20), ("2G", 2 << 30),
    ("1.5k", 1536), ("64MiB", 64 << 20)])
def test_size_limit_is_read_from_the_environment(monkeypatch, text, expected):
    monkeypatch.setenv("SECANT_CACHE_MAX_BYTES", text)
    assert cache_store.max_bytes() == expected


@pytest.mark.parametrize("text", ["lots", "-5", "12X"])
def test_invalid_size_limit_is_a_clear_error(cache, monkeypatch, text):
    monkeypatch.setenv("SECANT_CACHE_MAX_BYTES", text)
    with pytest.raises(TransformError, match="SECANT_CACHE_MAX_BYTES") as info:
        modules.write_module(module_text(0))
    assert "512M" in info.value.hint


def test_compiled_functions_respect_the_limit(cache, monkeypatch):
    monkeypatch.setenv("SECANT_CACHE_MAX_BYTES", "1")
    assert jit(programs.cubic, backend="python")(2.0) == 8.0
    norm = jit(programs.scaled_norm, backend="python")(np.array([3.0, 4.0]))
    assert norm == pytest.approx(programs.scaled_norm(np.array([3.0, 4.0])))
    newest = [c.path for c in backends._loaded.values() if c.function.__name__ == "scaled_norm"]
    assert [str(cache / (name + ".py")) for name in cache_store.entries(cache)] == newest


# ---------------------------------------------------------------- secant cache


def run_cli(capsys, *argv):
    code = cli.main(["cache", *argv])
    out, err = capsys.readouterr()
    assert (code, err) == (0, ""), err
    return out


def test_cache_info_prints_directory_size_entries_and_limit(cache, capsys, monkeypatch):
    monkeypatch.setenv("SECANT_CACHE_MAX_BYTES", "5M")
    write(0, 1000)
    write(1, 1001)
    out = run_cli(capsys, "info")
    assert f"directory: {cache}" in out
    assert f"({2 * ENTRY} bytes) in 2 entries" in out
    assert f"({5 << 20} bytes; SECANT_CACHE_MAX_BYTES)" in out


def test_cache_clear_removes_every_entry(cache, capsys):
    numba_file(write(0, 1000), 100)
    write(1, 1001)
    assert "removed 2 entries" in run_cli(capsys, "clear")
    assert cache_store.entries(cache) == {}
    assert "in 0 entries" in run_cli(capsys, "info")


def test_cache_prune_evicts_down_to_the_limit(cache, capsys, monkeypatch):
    paths = [write(i, 1000 + i) for i in range(4)]
    monkeypatch.setenv("SECANT_CACHE_MAX_BYTES", str(2 * ENTRY))
    assert "evicted 2 entries" in run_cli(capsys, "prune")
    assert [p.exists() for p in paths] == [False, False, True, True]
