"""Errors raised by compiled code are the same whether the function was compiled in this
process or loaded from secant's disk cache by another: same class, same located message.

Each test runs the user's program in two fresh processes sharing one cache directory: the
first compiles and saves, the second loads (its `cache_info().disk_hits` says so). The
oracle for a failed index check is NumPy's own message for the same index, after the
user's `file:line:col`.
"""
import json
import os
import pickle
import subprocess
import sys
import textwrap
import types
from pathlib import Path

import numpy as np
import pytest
from numba.core.environment import Environment

from codegen import cache_numba

ROOT = Path(__file__).resolve().parents[2]

PROGRAM = textwrap.dedent('''
    import numba
    import numpy as np
    from transformer import grad, jit, vmap
    from transformer import random as R


    def take(x, i):
        return x[i]


    def take_col(x, j):
        return x[1, j]


    def picked_sum(x, i):
        return np.sum(x[i] * x)


    def shifted_sum(x, n):
        s = 0.0
        for k in range(n):
            s += x[k + 1]
        return s


    def masked(x, m):
        return np.sum(x[m])


    def add(x, y):
        return np.sum(x + y)


    def log_of(x):
        y = np.log(x)
        return np.sum(y * 2.0)


    def draw(key, lam):
        return R.poisson(key, lam, (3,))


    def shifted_copy(x, i):
        out = np.zeros(4)
        for k in numba.prange(4):
            out[k] = x[i + k]
        return out


    CASES = {
        "take": (jit(take), (np.arange(3.0), 5)),
        "take_col": (jit(take_col), (np.ones((2, 3)), -4)),
        "vmap_take": (jit(vmap(take, in_axes=(None, 0))), (np.arange(3.0), np.array([0, 7]))),
        "grad_picked": (jit(grad(picked_sum)), (np.arange(3.0), 4)),
        "shifted_sum": (jit(shifted_sum), (np.arange(3.0), 3)),
        "masked": (jit(masked), (np.arange(3.0), np.array([True, False]))),
        "add": (jit(add), (np.ones(3), np.ones(4))),
        "log_of": (jit(log_of, debug_nans=True), (np.array([1.0, 0.0]),)),
        "draw": (jit(draw), (R.key(0), -2.0)),
        "shifted_copy": (jit(shifted_copy, parallel=True), (np.arange(5.0), 3)),
    }
''')

RUNNER = textwrap.dedent('''
    import json, sys
    from cached_program import CASES
    report = {}
    for name in sys.argv[1:]:
        f, args = CASES[name]
        try:
            f(*args)
            outcome = ["returned", ""]
        except BaseException as exc:
            outcome = [type(exc).__name__, str(exc)]
        report[name] = outcome + [f.cache_info().disk_hits]
    print(json.dumps(report))
''')


def _run_twice(tmp_path, names):
    """The report of each case in a process that compiles, then in one that loads."""
    program = tmp_path / "cached_program.py"
    program.write_text(PROGRAM)
    env = dict(os.environ, SECANT_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONPATH=os.pathsep.join([str(ROOT), str(tmp_path)]))
    reports = []
    for _ in range(2):
        run = subprocess.run([sys.executable, "-c", RUNNER, *names], cwd=tmp_path, env=env,
                             capture_output=True, text=True, timeout=600)
        assert run.returncode == 0, run.stderr
        reports.append(json.loads(run.stdout.strip().splitlines()[-1]))
    return program, reports


def _line_of(program: Path, text: str) -> int:
    lines = program.read_text().splitlines()
    return next(k for k, line in enumerate(lines, 1) if text in line)


def _numpy_message(x, index) -> str:
    with pytest.raises(IndexError) as info:
        x[index]
    return str(info.value)


def _assert_same_in_both(reports, names):
    compiled, loaded = reports
    for name in names:
        assert compiled[name][2] == 0, name                 # compiled here
        assert loaded[name][2] >= 1, name                   # loaded from disk
        assert loaded[name][:2] == compiled[name][:2], name


@pytest.mark.slow
def test_failed_index_check_loaded_from_cache_raises_the_located_index_error(tmp_path):
    program, reports = _run_twice(tmp_path, ["take"])
    _assert_same_in_both(reports, ["take"])
    kind, message, _ = reports[1]["take"]
    where = f"{program}:{_line_of(program, 'return x[i]')}:12"
    assert kind == "IndexError"
    assert message.splitlines() == [f"{where}: {_numpy_message(np.arange(3.0), 5)}",
                                    "        return x[i]", "               ^"]


@pytest.mark.slow
def test_other_runtime_errors_loaded_from_cache_match_the_compiling_process(tmp_path):
    expected = {"take_col": ("IndexError", "return x[1, j]"),
                "vmap_take": ("IndexError", "return x[i]"),
                "grad_picked": ("IndexError", "np.sum(x[i] * x)"),
                "shifted_sum": ("IndexError", "s += x[k + 1]"),
                "masked": ("IndexError", "np.sum(x[m])"),
                "log_of": ("FloatingPointError", "y = np.log(x)"),
                "add": ("ValueError", None),       # Numba's broadcast check: not located
                "draw": ("ValueError", None),
                "shifted_copy": ("IndexError", "out[k] = x[i + k]")}
    program, reports = _run_twice(tmp_path, list(expected))
    _assert_same_in_both(reports, expected)
    for name, (kind, text) in expected.items():
        got_kind, message, _ = reports[1][name]
        assert got_kind == kind, (name, message)
        if text is not None:
            assert message.startswith(f"{program}:{_line_of(program, text)}:"), message
            assert text in message.splitlines()[1], message
    assert "lam must be >= 0" in reports[1]["draw"][1]
    where = f"{program}:{_line_of(program, 'return x[1, j]')}:12"
    assert reports[1]["take_col"][1].splitlines()[0] == (
        f"{where}: {_numpy_message(np.ones((2, 3)), (1, -4))}")


# ------------------------------------------------------- environments saved with a function


def _compile_result(env_names):
    """A stand-in for Numba's CompileResult whose code refers to environments `env_names`."""
    module = types.SimpleNamespace(global_variables=[
        types.SimpleNamespace(name=n) for n in ["some_constant", *env_names]])
    return types.SimpleNamespace(library=types.SimpleNamespace(_final_module=module))


def _live_environment(name, consts, globals_):
    env = Environment(globals_)
    env.consts[:] = consts
    env.env_name = name
    Environment._memo[name] = env
    return env


def test_environment_of_an_exec_built_function_is_saved_with_its_constants():
    name = "_ZN08NumbaEnv_test_cached_errors_exec_built"
    env = _live_environment(name, [1.5, "where"], {"WHERE": "f.py:1:1"})   # no __name__
    assert not env.can_cache()                 # what Numba itself would leave out
    (stand_in,) = cache_numba._stand_ins(_compile_result([name]))
    del Environment._memo[name]                # as in a new process: rebuilt from the pickle
    rebuilt = pickle.loads(pickle.dumps(stand_in))
    assert rebuilt.env_name == name and list(rebuilt.consts) == [1.5, "where"]
    assert rebuilt.can_cache()
    del env


def test_function_whose_environment_cannot_be_restored_is_not_saved():
    unpicklable = "_ZN08NumbaEnv_test_cached_errors_unpicklable"
    env = _live_environment(unpicklable, [lambda: None], {})
    assert cache_numba._stand_ins(_compile_result([unpicklable])) is None
    gone = "_ZN08NumbaEnv_test_cached_errors_gone"
    assert cache_numba._stand_ins(_compile_result([gone])) is None
    del Environment._memo[unpicklable], env
