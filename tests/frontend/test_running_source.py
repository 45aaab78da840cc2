"""A module edited after it was imported: secant reads the file, Python runs the old code.

Without a check, `grad(mymod.f)` differentiated the edited text while `mymod.f(x)` ran the
imported one: a derivative of another function, silently; lines added above a function
made `inspect` read another function's text at its old line. Now a located refusal whose
hint (reload the module) gives the right derivative; edits that change no function's
code (a comment, lines inside another function or above this one) are read where the
function now is; code Python rewrote on import (pytest's asserts) is read as before.

Oracle: the analytic derivative of the code that runs.
"""
from __future__ import annotations

import __future__
import importlib
import os
import sys

import numpy as np
import pytest

from transformer import TransformError, grad, jit

from test_frontend import check_located

SQUARES = """import numpy as np


def f(x):
    return np.sum(x ** 2)  # squares


def calls_helper(x):
    return helper(x) * 2.0


def helper(x):
    return np.sum(x ** 2)
"""

X = np.array([1.0, 2.0])


def _edit(path, text):
    """Write `text` with a later modification time, as an editor saving the file does."""
    stat = os.stat(path)
    path.write_text(text)
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))


@pytest.fixture
def module(tmp_path, monkeypatch, request):
    """A module of SQUARES imported from its own file (importable again: reload works)."""
    name = "edited_" + "".join(c if c.isalnum() else "_" for c in request.node.name)
    path = tmp_path / f"{name}.py"
    path.write_text(SQUARES)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield path, importlib.import_module(name)
    sys.modules.pop(name, None)


def test_an_edit_that_changes_the_code_is_refused_and_reload_fixes_it(module):
    path, mod = module
    _edit(path, SQUARES.replace("x ** 2)  # squares", "x ** 3)  # squares"))
    assert mod.f(X) == 5.0                          # Python still runs the old code
    with pytest.raises(TransformError, match="not the code Python is running") as info:
        grad(mod.f)(X)
    error = info.value
    assert (error.filename, error.lineno) == (str(path), 4)
    assert "importlib.reload(" in error.hint
    check_located(error)
    with pytest.raises(TransformError, match="not the code Python is running"):
        jit(mod.f)(X)
    # the hint, followed: the derivative of the edited function
    mod = importlib.reload(mod)
    np.testing.assert_allclose(grad(mod.f)(X), 3 * X ** 2)
    np.testing.assert_allclose(jit(grad(mod.f))(X), 3 * X ** 2)


def test_an_edited_helper_is_refused_where_its_caller_is_unchanged(module):
    path, mod = module
    _edit(path, SQUARES.replace("return np.sum(x ** 2)\n", "return np.sum(x ** 3)\n")
          .replace("x ** 2)  # squares", "x ** 2)  # squares"))
    with pytest.raises(TransformError, match="source of helper") as info:
        grad(mod.calls_helper)(X)
    assert info.value.lineno == 12


@pytest.mark.parametrize("edit", [
    lambda text: text.replace("# squares", "# the sum of squares, still"),
    lambda text: text.replace("def f(x):\n", "def f(x):\n    # a new comment line\n\n"),
    lambda text: text + "\n\ndef g(x):\n    return x\n",
    lambda text: "import math\n\n\n" + text,
], ids=["comment", "lines_inside_the_body", "function_added_below", "lines_added_above"])
def test_edits_that_change_no_code_are_not_refused(module, edit):
    """Lines added above a function move it: its text is read where the file now has it
    (before, `inspect` read the lines at the old place: `grad(calls_helper)` gave `f`'s
    derivative)."""
    path, mod = module
    _edit(path, edit(SQUARES))
    np.testing.assert_allclose(grad(mod.f)(X), 2 * X)
    np.testing.assert_allclose(grad(mod.calls_helper)(X), 4 * X)


def test_code_compiled_with_an_inherited_future_flag_is_read(tmp_path):
    """A notebook compiles each cell with the `from __future__` flags of earlier cells."""
    path = tmp_path / "cell.py"
    text = "def f(x):\n    def inner(y: float) -> float:\n        return y * y\n" \
           "    return inner(x) + x\n"
    path.write_text(text)
    flag = __future__.annotations.compiler_flag
    namespace = {"__name__": "cell"}
    exec(compile(text, str(path), "exec", flags=flag, dont_inherit=True), namespace)
    assert namespace["f"].__code__.co_flags & flag
    assert grad(namespace["f"])(3.0) == pytest.approx(7.0)


def with_an_assert(x):
    assert x > 0, "pytest rewrites this assert when it imports the test module"
    return x * x


def test_code_rewritten_on_import_is_read():
    assert grad(with_an_assert)(3.0) == pytest.approx(6.0)
