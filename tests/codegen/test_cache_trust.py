"""secant refuses a cache directory that anyone but its user could write into."""
import os
import stat

import pytest

import programs
from codegen import backends, cli, modules
from transformer import TransformError, jit

pytestmark = pytest.mark.skipif(os.name == "nt", reason="POSIX ownership and modes")
OTHER_UID = 54321
needs_root = pytest.mark.skipif(os.name == "nt" or os.getuid() != 0,
                                reason="giving a directory to another user needs root")


@pytest.fixture
def parent(tmp_path, monkeypatch):
    """A private parent directory; the cache directory is `parent / "cache"`."""
    path = tmp_path / "parent"
    path.mkdir(mode=0o700)
    monkeypatch.setenv("SECANT_CACHE_DIR", str(path / "cache"))
    monkeypatch.setattr(backends, "_loaded", {})
    return path


def refusal() -> TransformError:
    with pytest.raises(TransformError, match="refusing to use cache directory") as info:
        modules.cache_dir()
    return info.value


def test_missing_directories_are_created_owner_only(tmp_path, monkeypatch):
    deep = tmp_path / "a" / "b" / "cache"
    monkeypatch.setenv("SECANT_CACHE_DIR", str(deep))
    assert modules.cache_dir() == deep
    for path in (deep, deep.parent, deep.parent.parent):
        assert stat.S_IMODE(path.stat().st_mode) == 0o700


@needs_root
@pytest.mark.parametrize("mode", [0o700, 0o755])
def test_directory_owned_by_another_user_is_refused(parent, mode):
    cache = parent / "cache"
    cache.mkdir(mode=mode)
    os.chown(cache, OTHER_UID, -1)
    error = refusal()
    assert f"owned by uid {OTHER_UID}" in error.message
    assert "chown" in error.hint and "SECANT_CACHE_DIR" in error.hint


@pytest.mark.parametrize("mode", [0o720, 0o702, 0o770, 0o777])
def test_directory_writable_by_group_or_others_is_refused(parent, mode):
    cache = parent / "cache"
    cache.mkdir()
    cache.chmod(mode)
    error = refusal()
    assert "writable by other users" in error.message
    assert f"chmod 700 {cache}" in error.hint


def test_refused_directory_stops_jit_before_anything_runs(parent):
    cache = parent / "cache"
    cache.mkdir()
    cache.chmod(0o777)
    with pytest.raises(TransformError, match="writable by other users"):
        jit(programs.cubic, backend="python")(2.0)
    assert list(cache.iterdir()) == []


@needs_root
def test_parent_owned_by_another_user_is_refused(parent):
    os.chown(parent, OTHER_UID, -1)
    error = refusal()
    assert f"parent {parent} is owned by uid {OTHER_UID}" in error.message


@pytest.mark.parametrize("mode", [0o777, 0o775, 0o757])
def test_parent_writable_by_others_without_sticky_bit_is_refused(parent, mode):
    parent.chmod(mode)
    error = refusal()
    assert f"parent {parent} is writable by other users" in error.message
    assert f"chmod go-w {parent}" in error.hint


def test_world_writable_parent_with_sticky_bit_is_accepted(parent):
    parent.chmod(0o1777)                  # as /tmp
    assert modules.cache_dir() == parent / "cache"


def test_symlink_is_judged_by_its_target(parent, tmp_path):
    target = tmp_path / "shared"
    target.mkdir()
    target.chmod(0o777)
    (parent / "cache").symlink_to(target)
    assert "writable by other users" in refusal().message


def test_file_in_place_of_the_directory_is_refused(parent):
    (parent / "cache").write_text("not a directory")
    error = refusal()
    assert "not a directory" in error.message and "SECANT_CACHE_DIR" in error.hint


def test_cache_cli_reports_a_refused_directory(parent, capsys):
    cache = parent / "cache"
    cache.mkdir()
    cache.chmod(0o770)
    assert cli.main(["cache", "info"]) == 1
    assert "writable by other users" in capsys.readouterr().err
