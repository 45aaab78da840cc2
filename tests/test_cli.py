"""`secant show` and `secant demo`, run through the console entry point."""
import os
import subprocess
import sys

import pytest

import programs
import transformer
from codegen import cli

PROGRAMS = programs.__file__
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def show(capsys, *argv):
    code = cli.main(["show", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_help_documents_show_and_its_flags():
    result = subprocess.run([sys.executable, "-m", "codegen.cli", "show", "--help"],
                            capture_output=True, text=True, cwd=ROOT, check=True)
    for flag in ("FILE:FUNC", "--jit", "--static", "--backend", "--grad", "--argnums",
                 "--jvp", "--hessian", "--vmap"):
        assert flag in result.stdout


def test_show_prints_normalized_python_source(capsys):
    code, out, err = show(capsys, f"{PROGRAMS}:running")
    assert (code, err) == (0, "")
    assert out.startswith(f"# secant: generated from {PROGRAMS}:")
    assert "def running(x, mode, n):" in out and "@numba" not in out


def test_show_static_folds_the_constant_and_removes_the_dead_branch(capsys):
    code, out, _ = show(capsys, f"{PROGRAMS}:running", "--jit", "--static", "mode='train'",
                        "--static", "n=8")
    assert code == 0
    assert "@numba.njit" in out
    assert "def running(x):" in out and "for i in range(8):" in out
    assert "-1.0" not in out


def test_static_value_that_is_not_a_literal_is_a_string(capsys):
    code, out, _ = show(capsys, f"{PROGRAMS}:running", "--static", "mode=eval",
                        "--static", "n=2")
    assert code == 0 and "s = -1.0" in out and "range(" not in out


@pytest.mark.parametrize("target, message", [
    ("/no/such/file.py:f", "no such file: /no/such/file.py"),
    (f"{PROGRAMS}:no_such_function", "defines no 'no_such_function'"),
    (f"{PROGRAMS}:SCALE", "is a float, not a function"),
    (PROGRAMS, "expected FILE:FUNC"),
])
def test_bad_target_is_one_line_and_exit_2(capsys, target, message):
    code, out, err = show(capsys, target)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and message in err


def test_transform_error_is_located(capsys, tmp_path):
    path = tmp_path / "bad.py"
    path.write_text("def f(x):\n    with open(x):\n        pass\n")
    code, _, err = show(capsys, f"{path}:f")
    assert code == 1
    assert f"{path}:2:5: `with` blocks is not supported" in err and "hint:" in err


@pytest.mark.parametrize("flag, name", [(["--grad"], "grad"), (["--hessian"], "hessian"),
                                        (["--vmap", "0"], "vmap")])
def test_transform_flags_show_the_transformed_source_or_name_whats_missing(capsys, flag, name):
    code, out, err = show(capsys, f"{PROGRAMS}:cubic", *flag)
    if hasattr(transformer, name):
        assert code == 0 and "def " in out
    else:
        assert code == 2 and err.count("\n") == 1
        assert f"no {name} transformation" in err


def test_color_always_highlights_and_pipes_stay_plain(capsys):
    pytest.importorskip("pygments")
    _, colored, _ = show(capsys, f"{PROGRAMS}:cubic", "--color", "always")
    _, plain, _ = show(capsys, f"{PROGRAMS}:cubic")
    assert "\x1b[" in colored and "\x1b[" not in plain


def test_demo_runs_and_checks_itself(capsys):
    assert cli.main(["demo"]) == 0
    out = capsys.readouterr().out
    assert "match: True" in out
    assert "jit dtype float32" in out
    assert "def pair_energy(pos):" in out


def test_cuda_backend_shows_kernel_source_or_says_it_is_missing(capsys):
    try:
        import codegen.cuda  # noqa: F401
        available = True
    except ImportError:
        available = False
    code, out, err = show(capsys, f"{PROGRAMS}:cubic", "--backend", "cuda")
    if available:
        assert code == 0 and "def " in out
    else:
        assert code == 2 and err.count("\n") == 1 and "cuda backend is not available" in err



def test_console_script_is_declared_and_importable():
    import configparser
    config = configparser.ConfigParser()
    config.read(os.path.join(ROOT, "setup.cfg"))
    scripts = config["options.entry_points"]["console_scripts"].split("\n")
    assert "secant = codegen.cli:main" in [s.strip() for s in scripts]
    assert callable(cli.main)


def test_readme_quick_start_is_install_and_demo_then_pytest():
    with open(os.path.join(ROOT, "README.md")) as handle:
        readme = handle.read()
    quick = readme.split("## Quick start", 1)[1].split("```console\n", 1)[1].split("```")[0]
    assert quick.splitlines() == ['pip install -e ".[test]" && secant demo', "pytest"]
