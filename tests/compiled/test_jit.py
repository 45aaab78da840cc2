"""jit: values against plain Python, static folding, the content-keyed cache, errors."""
import importlib.util
import linecache
import os
import re
import subprocess
import sys

import numba
import numpy as np
import pytest

import programs
from codegen import backends
from transformer import TransformError, grad, jit, lax, source


def load_file(path, name):
    """Import `path` as module `name` (a fresh module object every call)."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def points():
    return np.random.default_rng(0).random((12, 3))


@pytest.fixture(scope="module")
def pair_sum_cpu():
    return jit(programs.pair_sum)


def test_nested_loop_function_matches_python(pair_sum_cpu, points):
    assert pair_sum_cpu(points) == pytest.approx(programs.pair_sum(points), rel=1e-12)
    assert pair_sum_cpu.cache_info().misses == 1


def test_user_helpers_are_compiled_automatically(pair_sum_cpu, points):
    pair_sum_cpu(points)
    text = source(pair_sum_cpu)
    assert "# uses sqdist: generated " in text
    compiled = next(iter(pair_sum_cpu._specs.values()))[0]
    helper = compiled.py_func.__globals__["sqdist"]
    assert hasattr(helper, "py_func")               # a Numba dispatcher, not the Python one
    assert helper(points[0], points[1]) == pytest.approx(programs.sqdist(points[0], points[1]))


def test_second_call_is_a_hit(pair_sum_cpu, points):
    before = pair_sum_cpu.cache_info()
    pair_sum_cpu(points)
    after = pair_sum_cpu.cache_info()
    assert (after.hits, after.misses) == (before.hits + 1, before.misses)


@pytest.fixture(scope="module")
def running():
    return jit(programs.running, static_argnums=(1, 2))


def test_static_arguments_fold_into_the_source(running):
    text = running.source(mode="train", n=3)
    assert "for i in range(3):" in text
    assert "mode" not in text.split("\n\n\n", 1)[1]
    assert "-1.0" not in text                       # the dead branch is gone
    assert "def running(x):" in text
    eval_text = running.source(mode="eval", n=3)
    assert "s = -1.0" in eval_text and "range(" not in eval_text


def test_new_static_value_compiles_a_new_specialization(running):
    x = np.arange(1.0, 6.0)
    assert running(x, "train", 3) == programs.running(x, "train", 3)
    assert running(x, "train", 5) == programs.running(x, "train", 5)
    info = running.cache_info()
    assert info.specializations == 2 and info.misses == 2
    assert info.last_reason == "new specialization: static mode='train', n=5"
    assert running(x, "train", 3) == programs.running(x, "train", 3)
    assert running.cache_info().hits == info.hits + 1


def test_unhashable_static_value_is_a_type_error_naming_the_argument(running):
    with pytest.raises(TypeError, match="static argument 'mode' of running must be hashable"):
        running(np.ones(3), ["train"], 3)


def test_python_backend_runs_uncompiled():
    f = jit(programs.running, static_argnames=("mode", "n"), backend="python")
    x = np.arange(4.0)
    assert f(x, mode="train", n=4) == programs.running(x, "train", 4)
    compiled = f._specs[next(iter(f._specs))][0]
    assert not hasattr(compiled, "py_func")
    assert "@numba" not in source(f, mode="train", n=4)


def test_untypeable_argument_names_argument_type_and_python_backend(pair_sum_cpu):
    class Particles:
        pass
    with pytest.raises(TransformError) as info:
        pair_sum_cpu(Particles())
    message = str(info.value)
    assert "argument 'x' of pair_sum has type Particles" in message
    assert "backend='python'" in info.value.hint
    assert info.value.filename.startswith(str(backends.modules.cache_dir()))


SAME_FUNCTION = """\
import numpy as np


def total(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i]
    return s
"""


@pytest.mark.parametrize("second_file", ["redefined.py", "identical_elsewhere.py"],
                         ids=["same file reloaded", "identical function in another file"])
def test_redefining_an_identical_function_compiles_nothing(tmp_path, second_file):
    for file in {"redefined.py", second_file}:
        (tmp_path / file).write_text(SAME_FUNCTION)
    first = jit(load_file(tmp_path / "redefined.py", "redefined_a").total, backend="python")
    first(np.ones(3))
    again = load_file(tmp_path / second_file, "redefined_b").total    # a new function object
    assert again is not first.fun
    misses = backends.STATS.misses
    second = jit(again, backend="python")
    assert second(np.arange(4.0)) == 6.0
    assert backends.STATS.misses == misses
    assert second.cache_info().modules_reused == 1


HELPER_CALLER = """\
def helper(x):
    return x * {factor}


def caller(x):
    return helper(x) + 1.0
"""


def test_changing_a_called_helper_recompiles(tmp_path):
    path = tmp_path / "with_helper.py"
    path.write_text(HELPER_CALLER.format(factor=2.0))
    before = jit(load_file(path, "with_helper_a").caller)
    assert before(3.0) == 7.0
    old = source(before)
    path.write_text(HELPER_CALLER.format(factor=3.0))
    after = jit(load_file(path, "with_helper_b").caller)
    assert after(3.0) == 10.0
    new = source(after)
    body = lambda text: text.split("\n\n\n", 1)[1]          # noqa: E731
    assert body(old) == body(new)                            # caller itself is unchanged
    assert old != new                                        # its helper's fingerprint is not
    assert after.cache_info().modules_reused == 0


NEW_PROCESS = """\
import sys
import numpy as np
sys.path.insert(0, {folder!r})
from transformer import jit
import cached_program
f = jit(cached_program.total)
print(f(np.arange(5.0)), f.cache_info().disk_hits)
"""


@pytest.mark.slow
def test_a_new_process_loads_from_numbas_disk_cache(tmp_path):
    (tmp_path / "cached_program.py").write_text(SAME_FUNCTION)
    script = tmp_path / "program.py"
    script.write_text(NEW_PROCESS.format(folder=str(tmp_path)))
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""),
               SECANT_CACHE_DIR=str(tmp_path / "cache"))
    runs = [subprocess.run([sys.executable, str(script)], env=env, capture_output=True,
                           text=True, check=True).stdout.split() for _ in range(2)]
    assert runs[0] == ["10.0", "0"]            # compiled, nothing on disk yet
    assert runs[1] == ["10.0", "1"]            # loaded from Numba's cache


def test_statements_after_a_folded_in_return_are_dropped():
    f = jit(programs.early_exit, static_argnums=1, backend="python")
    x = np.arange(4.0)
    assert (f(x, "train"), f(x, "eval")) == (6.0, -6.0)
    train = f.source(mode="train").split("def early_exit(x):")[1]
    assert train.split() == ["return", "np.sum(x)"]


def test_decorator_forms():
    x = np.array([1.0, 2.0])
    assert programs.power_sum(x, 3) == 9.0
    assert programs.power_sum.cache_info().specializations == 1
    assert programs.decorated_cubic(2.0) == 8.0
    assert "def decorated_cubic(x):" in source(programs.decorated_cubic)
    assert "@jit" not in source(programs.decorated_cubic)


def test_numba_typing_failure_points_at_the_users_line_and_names_the_generated_one():
    f = jit(programs.uses_tensordot)
    with pytest.raises(TransformError) as info:
        f(np.ones(3), np.ones(3))
    err = info.value
    assert "Numba could not compile uses_tensordot" in err.message
    assert "a: array(float64, 1d, C)" in err.message
    assert "numpy.tensordot" in err.message and "\x1b[" not in err.message
    assert err.filename == programs.__file__
    assert err.line.strip() == "return np.tensordot(c, c, 1)"
    assert err.line[err.col:].startswith("return")
    generated = re.search(r"line (\d+) of the generated module (\S+):", err.hint)
    assert generated and generated[2].startswith(str(backends.modules.cache_dir()))
    assert linecache.getline(generated[2], int(generated[1])).strip() == \
        "return np.tensordot(c, c, 1)"
    assert "backend='python'" in err.hint


def _first_row_of_strided(w):          # a helper: compiled in the form jit gives f
    return w[:, ::2].reshape(2, 2)[0]


@numba.njit
def _first_row_of_strided_kernel(w):   # the user's own kernel: Numba compiles it as written
    return w[:, ::2].reshape(2, 2)[0]


def reshapes_a_strided_slice(w):
    return np.sum(_first_row_of_strided(w) ** 2)


def reshapes_in_a_kernel(w):
    return np.sum(_first_row_of_strided_kernel(w) ** 2)


def _first_row_of_copy(w):
    return np.ascontiguousarray(w[:, ::2]).reshape(2, 2)[0]


def reshapes_a_copy(w):
    return np.sum(_first_row_of_copy(w) ** 2)


def test_a_reshape_numba_refuses_names_its_reason_and_a_form_that_compiles():
    w = np.arange(8.0).reshape(2, 4)
    with pytest.raises(TransformError) as info:
        jit(reshapes_in_a_kernel)(w)
    err = info.value
    # Numba's reason, not the header above it ("- Resolution failure for ...")
    assert err.message.endswith("reshape() supports contiguous array only")
    assert err.filename == __file__ and "w[:, ::2].reshape(2, 2)" in err.line
    assert "np.ascontiguousarray(x).reshape(...)" in err.hint
    # the form the hint names compiles; a helper of the user's (not a kernel) is compiled
    # in jit's own form, which reshapes a strided slice
    want = grad(reshapes_a_strided_slice)(w)
    np.testing.assert_allclose(jit(grad(reshapes_a_copy))(w), want)
    np.testing.assert_allclose(jit(grad(reshapes_a_strided_slice))(w), want)
    assert jit(reshapes_a_strided_slice)(w) == reshapes_a_strided_slice(w)


def _scan_compares_complex(x):
    c, ys = lax.scan(lambda c, xi: (c + xi, xi > c), x[0], x)
    return ys


def test_a_refused_line_of_an_inlined_lambda_points_at_the_lambdas_body():
    """The lambda's body is inlined under fresh names (`carry + x_1` for `c + xi`); the
    error is still at the user's expression."""
    with pytest.raises(TransformError) as info:
        jit(_scan_compares_complex)(np.array([1 + 2j, 3j]))
    err = info.value
    assert err.filename == __file__
    assert err.line[err.col:].startswith("(c + xi, xi > c)")
    assert "line" in err.hint and "of the generated module" in err.hint


def _too_many_indices(x):
    return x[0, None, 1] * 2.0


def test_an_index_numba_cannot_type_is_refused_at_the_subscript_with_its_reason():
    with pytest.raises(TransformError) as info:
        jit(_too_many_indices)(np.ones(3))
    err = info.value
    assert err.filename == __file__ and err.line.strip() == "return x[0, None, 1] * 2.0"
    assert err.line[err.col:].startswith("x[0, None, 1]")
    assert "cannot index array(float64, 1d, C) with 2 indices" in err.message
    assert jit(programs.uses_tensordot, backend="python")(np.ones(3), np.ones(3)) == 12.0


def _mixed_list_in_a_long_line(x, v):
    lst = [x, v]
    h = v.copy()
    i = 1   # a computed index: a list read only at constant ones compiles (const_lists)
    h[0] *= (0.5 + 0.25 * np.tanh((x + (np.sum(np.tanh(v)) / (1.5 + np.sum(np.tanh(lst[i])) * np.sum(np.tanh(v)))))))  # noqa: E501
    return np.sum(h)


def test_a_refused_expression_on_a_wrapped_generated_line_is_told_at_the_users_line():
    """Numba names the line of the refused expression, a continuation line of a long
    generated statement; the error is still at the user's statement, not the generated
    module."""
    with pytest.raises(TransformError) as info:
        jit(_mixed_list_in_a_long_line)(0.3, np.ones(3))
    err = info.value
    assert err.filename == __file__
    assert err.line.strip().startswith("h[0] *= (0.5 + 0.25")
    assert err.line[err.col:].startswith("lst[i]")
    assert "Cannot __getitem__ on a literal list" in err.message
    generated = re.search(r"line (\d+) of the generated module (\S+):", err.hint)
    assert generated and "lst[" in linecache.getline(generated[2], int(generated[1]))
