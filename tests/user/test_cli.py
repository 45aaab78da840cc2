"""`secant show` and `secant demo`, run through the console entry point."""
import os
import subprocess
import sys

import pytest

import programs
import transformer
from codegen import cli

PROGRAMS = programs.__file__
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def show(capsys, *argv):
    code = cli.main(["show", *argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.slow
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
    assert f"{path}:2:5: `with` blocks are not supported" in err and "hint:" in err


@pytest.mark.parametrize("flag, name", [(["--grad"], "grad"), (["--hessian"], "hessian"),
                                        (["--vmap", "0"], "vmap")])
def test_transform_flags_show_the_transformed_source_or_name_whats_missing(capsys, flag, name):
    code, out, err = show(capsys, f"{PROGRAMS}:cubic", *flag)
    if hasattr(transformer, name):
        assert code == 0 and "def " in out
    else:
        assert code == 2 and err.count("\n") == 1
        assert f"no {name} transformation" in err


def cli_subprocess(*argv, env=None):
    return subprocess.run([sys.executable, "-m", "codegen.cli", *argv], capture_output=True,
                          text=True, cwd=ROOT, env=env)


@pytest.mark.slow
@pytest.mark.parametrize("argv, message", [
    (["show", f"{PROGRAMS}:cubic", "--vmap", "0,0,0"], "in_axes has 3 entries"),
    (["show", f"{PROGRAMS}:sqdist", "--jit", "--arg", "a=float64[n,4x]", "--arg",
      "b=float64[n]"], "dimension '4x'"),
    (["show", f"{PROGRAMS}:sqdist", "--jit", "--arg", "a=float64[n]"], "for b too"),
    (["show", f"{PROGRAMS}:sqdist", "--jit", "--arg", "c=1.0"], "no parameter 'c'"),
    (["show", f"{PROGRAMS}:sqdist", "--arg", "a=float64[n]", "--arg", "b=float64[n]"],
     "add --jit"),
    (["show", f"{PROGRAMS}:cubic", "--argnums", "0"], "--argnums applies to the --grad"),
    (["show", f"{PROGRAMS}:cubic", "--vmap", "0", "--argnums", "0"], "just before it"),
    (["show", f"{PROGRAMS}:cubic", "--grad", "--argnums", "x"], "--argnums expects"),
    (["show", f"{PROGRAMS}:sqdist", "--grad", "--argnums", "0,2"], "sqdist has 2 parameters"),
    (["show", f"{PROGRAMS}:running", "--static", "m=1"], "no parameter 'm'"),
    (["show", f"{PROGRAMS}:cubic", "--jvp", "--jit"], "--jvp can only be shown alone"),
    (["show", "/no/such/file.py:f"], "no such file"),
    (["show", f"{PROGRAMS}:no_such_function"], "defines no 'no_such_function'"),
    (["show", f"{PROGRAMS}:cubic", "--no-such-flag"], "unrecognized arguments"),
    (["show", f"{PROGRAMS}:cubic", "--backend", "gpu"], "invalid choice: 'gpu'"),
    (["frobnicate"], "invalid choice: 'frobnicate'"),
    (["compile", f"{PROGRAMS}:cubic"], "compile needs an example of each argument"),
])
def test_command_line_misuse_is_one_line_on_stderr_and_exit_2(argv, message):
    result = cli_subprocess(*argv)
    assert result.returncode == 2, result.stderr
    assert result.stdout == "" and result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith("secant: error: ") and message in result.stderr


@pytest.mark.parametrize("flags, compose", [
    (["--grad", "--vmap", "0,None"],
     lambda f: transformer.vmap(transformer.grad(f), in_axes=(0, None))),
    (["--vmap", "0", "--grad"], lambda f: transformer.grad(transformer.vmap(f, in_axes=0))),
    (["--grad", "--argnums", "1", "--vmap", "None,0"],
     lambda f: transformer.vmap(transformer.grad(f, argnums=1), in_axes=(None, 0))),
])
def test_transformation_flags_compose_in_command_line_order(capsys, flags, compose):
    code, out, err = show(capsys, f"{PROGRAMS}:sqdist", *flags)
    assert (code, err) == (0, "")
    assert out == str(transformer.source(compose(programs.sqdist)))


def test_jit_applies_last_wherever_it_is_written(capsys):
    _, first, _ = show(capsys, f"{PROGRAMS}:sqdist", "--jit", "--grad", "--vmap", "0,None")
    _, last, _ = show(capsys, f"{PROGRAMS}:sqdist", "--grad", "--vmap", "0,None", "--jit")
    expected = transformer.jit(transformer.vmap(transformer.grad(programs.sqdist), (0, None)))
    assert first == last == str(transformer.source(expected))
    assert "grad(argnums=0) | vmap(in_axes=(0, None)" in first and "jit(backend='cpu')" in first


def test_diff_shows_the_normalized_source_against_the_transformed_one(capsys):
    code, out, err = show(capsys, f"{PROGRAMS}:cubic", "--grad", "--diff")
    assert (code, err) == (0, "")
    normalized = str(transformer.source(programs.cubic)).splitlines()
    transformed = transformer.api_reverse.show_grad(programs.cubic).splitlines()
    lines = out.splitlines()
    assert lines[0] == f"--- {PROGRAMS}:cubic (normalized)"
    assert lines[1] == f"+++ {PROGRAMS}:cubic (grad(f))"
    body = [line for line in lines[2:] if not line.startswith("@@")]
    removed = [line[1:] for line in body if line.startswith("-")]
    kept_or_added = [line[1:] for line in body if line[:1] in " +"]
    assert "def cubic(x):" in removed and "def grad_cubic(x):" in kept_or_added
    assert all(line in normalized for line in removed)
    it = iter(transformed)           # the + and context lines appear in order
    assert all(any(line == t for t in it) for line in kept_or_added)


@pytest.mark.slow
def test_compile_fills_the_cache_so_a_new_process_loads_from_disk(tmp_path):
    (tmp_path / "tiny.py").write_text("def scaled_sum(x, a):\n    return a * x.sum()\n")
    env = dict(os.environ, NUMBA_OPT="0", SECANT_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONPATH=ROOT)
    compiled = cli_subprocess("compile", f"{tmp_path / 'tiny.py'}:scaled_sum",
                              "--arg", "x=float64[n,3]", "--arg", "a=2.0", env=env)
    assert compiled.returncode == 0, compiled.stderr
    assert "compiled scaled_sum(array(float64, 2d, C), float64)" in compiled.stdout
    script = ("import numpy as np, tiny, transformer\n"
              "f = transformer.jit(tiny.scaled_sum)\n"
              "x = np.arange(12.0).reshape(4, 3)\n"
              "assert f(x, 2.0) == 2.0 * x.sum()\n"
              "print(f.cache_info().disk_hits)\n")
    warm = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          cwd=tmp_path, env=env)
    assert warm.returncode == 0, warm.stderr
    assert int(warm.stdout.strip()) >= 1


@pytest.mark.slow
def test_compile_says_so_when_numba_cannot_cache_the_function(tmp_path):
    # Numba 0.68 cannot disk-cache a function calling another compiled one under
    # NUMBA_OPT=0 (setup.cfg): compile must not report it as cached
    (tmp_path / "calls.py").write_text("def twice(x):\n    return 2.0 * x\n\n\n"
                                       "def outer(x):\n    return twice(x) + 1.0\n")
    env = dict(os.environ, NUMBA_OPT="0", SECANT_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONPATH=ROOT)
    result = cli_subprocess("compile", f"{tmp_path / 'calls.py'}:outer", "--arg", "x=1.0",
                            env=env)
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.count("\n") == 1
    assert "compiled outer(float64) but Numba did not write it to the cache" in result.stderr


def test_color_always_highlights_and_pipes_stay_plain(capsys):
    pytest.importorskip("pygments")
    _, colored, _ = show(capsys, f"{PROGRAMS}:cubic", "--color", "always")
    _, plain, _ = show(capsys, f"{PROGRAMS}:cubic")
    assert "\x1b[" in colored and "\x1b[" not in plain


@pytest.mark.slow
def test_demo_runs_and_checks_itself(capsys):
    assert cli.main(["demo"]) == 0
    out = capsys.readouterr().out
    assert "match: True" in out
    assert "jit dtype float32" in out
    assert "def pair_energy(pos):" in out


def test_cuda_backend_shows_kernel_source_or_says_it_is_missing(capsys):
    try:
        import transformer.cuda.jitted  # noqa: F401
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
