"""Memory-safe indexing under jit: out-of-bounds indices raise a located IndexError.

The compiled cases run in one subprocess (tests/bounds_programs.py), which prints a line per
case as it finishes, so a case that crashes the process fails here instead of killing
pytest. Values of valid cases are compared with the python backend.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests import bounds_programs as programs
from transformer import grad, jit, vmap
from transformer.errors import TransformError
from transformer.index_checks import checked, checked_range

ROOT = Path(__file__).resolve().parents[2]


def _selected_cases(session) -> list:
    """Ids of this module's cases that will run (the quick set runs a sample of them)."""
    return [item.callspec.params["case"][0] for item in session.items
            if item.module.__name__ == __name__ and "outcomes" in item.fixturenames
            and item.get_closest_marker("skip") is None]


@pytest.fixture(scope="module")
def outcomes(request):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    selected = _selected_cases(request.session)
    run = subprocess.run([sys.executable, str(ROOT / "tests" / "bounds_programs.py"), *selected],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=1200)
    lines = [json.loads(line) for line in run.stdout.splitlines() if line.startswith("{")]
    results = {line["case"]: line for line in lines}
    return results, run.returncode, run.stderr[-2000:]


def _outcome(outcomes, ident):
    results, code, stderr = outcomes
    assert ident in results, f"the process ended (exit code {code}) before {ident}:\n{stderr}"
    return results[ident]


def _line_number(text: str) -> int:
    lines = Path(programs.__file__).read_text().splitlines()
    return next(k for k, line in enumerate(lines, 1) if line.strip() == text)


RAISING = [c for c in programs.CASES if c[4] is not None]
VALID = [c for c in programs.CASES if c[4] is None]


@pytest.mark.slow
@pytest.mark.parametrize("case", RAISING, ids=[c[0] for c in RAISING])
def test_out_of_bounds_index_raises_index_error_at_the_users_line(outcomes, case):
    ident, name, how, args, line = case
    got = _outcome(outcomes, ident)
    assert got.get("error") == "IndexError", got
    location = f"{programs.__file__}:{_line_number(line)}:"
    assert got["message"].startswith(location), got["message"]
    assert "out of bounds" in got["message"] or "boolean index" in got["message"]
    assert line in got["message"]          # the user's line, shown under the message
    with pytest.raises(IndexError):        # the python backend agrees it is an error
        programs.transformed(name, how, backend="python")(*args)


@pytest.mark.parametrize("case", VALID, ids=[c[0] for c in VALID])
def test_valid_indices_give_the_python_backends_values(outcomes, case):
    ident, name, how, args, _ = case
    got = _outcome(outcomes, ident)
    assert "value" in got, got
    expected = programs.transformed(name, how if how != "nocheck" else "jit",
                                    backend="python")(*args)
    np.testing.assert_allclose(got["value"], expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("example", [(), (programs.POS,)], ids=["generic", "scalarized"])
def test_lennard_jones_gradient_indices_are_proved_so_its_loops_carry_no_check(example):
    # with an example, pos[i, 0..2] come from scalarize: the specialization fixes axis 1
    text = jit(grad(programs.energy)).source(*example)
    assert "for j in range" in text
    assert "checked(" not in text and "checked_range(" not in text


def test_a_shifted_loop_index_is_checked_once_before_the_loop():
    text = jit(programs.loop_shift).source()
    before, loop = text.split("for k in range", 1)
    assert "checked_range(x, 0, 0, x.shape[0], 1, 1," in before
    assert "checked(" not in loop


def test_an_index_under_a_condition_is_checked_where_it_runs():
    text = jit(programs.guarded).source().split("@numba.njit", 1)[1]
    before, loop = text.split("for k in range", 1)
    assert "checked" not in before and "checked(x, k, 0," in loop


def test_checks_in_a_prange_loop_record_their_failure_and_raise_after_the_loop():
    text = jit(programs.gather, parallel=True).source().split("@numba.njit", 1)[1]
    before, loop = text.split("for b in prange", 1)
    loop, after = loop.split("return out", 1)[0].rsplit("\n    raise_recorded(", 1)
    assert "index_errors()" in before
    assert "checked_rec(x, idx[b], 0," in loop and "checked(" not in loop


def test_an_index_of_a_loop_over_range_len_is_checked_once_before_the_loop():
    text = jit(programs.paired_by_length).source().split("@numba.njit", 1)[1]
    before, loop = text.split("for i in range(len(x)):", 1)
    assert "checked_range(y, 0, 0, len(x), 1, 0," in before and "checked" not in loop


def test_a_vmap_loop_in_parallel_reruns_its_unfinished_examples_serially():
    fn = vmap(programs.read_var, in_axes=(None, 0), method="loop")
    text = jit(fn, parallel=True).source().split("@numba.njit", 1)[1]
    loop, after = text.split("for b in prange", 1)[1].split("for b in range", 1)
    assert "] = True" in loop and "if not " in after and "_example(x, i[b])" in after


def test_a_helper_called_from_a_prange_body_records_into_the_loops_flag():
    # `+=` makes the body unsafe to run twice: the helper's failure must reach the flag
    text = jit(programs.accumulate_helper, parallel=True).source()
    body = text.split("@numba.njit", 1)[1]
    before, loop = body.split("for b in prange", 1)
    loop, after = loop.split("\n    raise_recorded(", 1)
    assert "index_errors()" in before
    assert "twice_at_flagged(x, idx[b], index_error)" in loop
    assert "for b in range" not in after               # no serial rerun: the flag raises


def test_a_failure_recorded_by_a_called_function_is_located_by_its_site_number():
    from transformer import error_flags
    from transformer.index_checks import raise_recorded, with_source_line
    where = f"{programs.__file__}:{_line_number('return x[i] * 2.0')}:12"
    err = np.array([error_flags.site_number(where), 9, 0, 8])
    with pytest.raises(IndexError) as info:
        raise_recorded(err, "elsewhere.py:1:1")
    located = with_source_line(info.value)
    assert str(located).startswith(f"{where}: index 9 is out of bounds for axis 0 with size 8")
    assert "return x[i] * 2.0" in str(located)
    raise_recorded(np.full(4, -1), "elsewhere.py:1:1")     # nothing recorded: no error


def test_boundscheck_false_leaves_indices_unchecked_and_changes_the_cache_key():
    checked_text = jit(programs.read_var).source()
    unchecked_text = jit(programs.read_var, boundscheck=False).source()
    assert "checked(" in checked_text and "checked(" not in unchecked_text
    assert "boundscheck=False" in unchecked_text.splitlines()[1]   # the transform chain
    a = jit(programs.energy, boundscheck=False).source()
    b = jit(programs.energy).source()
    assert a != b                           # same body (all proved), different header


@pytest.mark.parametrize("index, ok", [
    (2, True), (-3, True), (3, False), (-4, False),
    (np.array([0, -1, 2]), True), (np.array([0, 3]), False),
    (np.array([True, False, True]), True), (np.array([True, False]), False),
    (slice(1, 10), True), ((1, slice(None)), True),
])
def test_checked_in_plain_python_follows_numpys_rules(index, ok):
    x = np.zeros((3, 2))
    if ok:
        assert checked(x, index, 0, "f.py:1:1") is index
        x[index]                            # NumPy accepts it too
    else:
        with pytest.raises(IndexError, match="^f.py:1:1: "):
            checked(x, index, 0, "f.py:1:1")
        with pytest.raises(IndexError):
            x[index]


def test_checked_range_checks_the_first_and_last_index_of_a_nonempty_range():
    x = np.zeros(4)
    checked_range(x, 0, 0, 4, 1, 0, "f.py:1:1")
    checked_range(x, 0, 3, -1, -1, -4, "f.py:1:1")      # -1 .. -4 wrap
    checked_range(x, 0, 5, 5, 1, 0, "f.py:1:1")          # empty: nothing is indexed
    for start, stop, step, offset in [(0, 5, 1, 0), (0, 4, 1, 1), (3, -1, -1, -5)]:
        with pytest.raises(IndexError, match="out of bounds for axis 0 with size 4"):
            checked_range(x, 0, start, stop, step, offset, "f.py:1:1")


@pytest.mark.parametrize("start, stop, step, offset, first_bad",
                         [(0, 9, 1, 0, 4), (0, 9, 2, 1, 5), (1, 9, 3, 0, 4),
                          (3, -9, -1, -1, -5), (2, -9, -3, 0, -7), (0, 3, 1, -6, -6)])
def test_checked_range_names_the_first_index_out_of_bounds_in_the_loops_order(
        start, stop, step, offset, first_bad):
    with pytest.raises(IndexError, match=f"^f.py:1:1: index {first_bad} is out of bounds"):
        checked_range(np.zeros(4), 0, start, stop, step, offset, "f.py:1:1")


def _runs_past_the_end(w):
    s = 0.0
    for i in range(6):
        s = s + w[i] * 2.0
    return s


def test_a_loop_running_past_the_end_under_jit_names_the_index_python_names():
    w = np.arange(4.0)
    with pytest.raises(IndexError) as in_python:
        _runs_past_the_end(w)
    with pytest.raises(IndexError) as compiled:
        jit(_runs_past_the_end)(w)
    assert "checked_range(" in jit(_runs_past_the_end).source()
    assert f": {in_python.value}" in str(compiled.value)     # index 4, not the last one


def test_a_write_into_a_computed_array_is_refused_at_the_users_line():
    with pytest.raises(TransformError) as caught:
        jit(programs.computed_write).source()
    line = _line_number("np.asarray(x)[i] = 1.0")
    assert caught.value.lineno == line and caught.value.filename == programs.__file__
    assert "assign the array to a name first" in str(caught.value)
    assert "checked(" not in jit(programs.computed_write, boundscheck=False).source()
