"""What the reverse sweep stores: tapes only for overwritten values it reads."""
import re

import gast
import numba
import numpy as np
import pytest

import reverse_corpus as rc
from transformer import activity, grad, jit, tape
from transformer.anf import anf
from transformer.api_reverse import show_grad
from transformer.controlflow import lower_exits
from transformer.desugar import desugar
from transformer.frontend import parse
from transformer.test_util import check_grads


def long_while(x):
    s = x
    k = 0.0
    while k < 40.0:
        s = np.sin(s) * 1.01 + 0.2
        k += 1.0
    return s


def exits(x, n):
    acc = 0.0
    for i in range(n):
        if i == 2:
            continue
        while acc < 1.0:
            acc += x
            if acc > 0.5:
                break
        if acc > 3.0:
            return acc
    return acc * 2.0


def test_pair_loop_records_nothing_and_has_no_index_adjoint():
    text = show_grad(rc.lj_energy)
    assert "push(" not in text and "_tape" not in text     # d, r2, s6 are recomputed
    # the accumulator is read only for its shape: checked where the reverse sweep
    # recomputes its increment, not recorded
    assert "check_shape(e_checked, e_shape," in text
    assert not re.search(r"\bb(i|j|i_plus_1|pos_shape\w*)\b", text)
    assert "# grad of: e += 4.0 * eps * (s6 * s6 - s6)" in text
    assert "# grad of: d = pos[i] - pos[j]" in text


def test_recurrence_tapes_state_once_per_step_in_a_preallocated_array():
    text = show_grad(rc.rnn_loss)
    assert text.count("h_tape = push(") == 2          # the initial state and each step
    assert re.search(r"h_tape = reserve\(h_tape, h_top \+ 1 \* trip_count\(", text)
    assert "W_matmul_h_tape" not in text             # values never overwritten: no tape


def test_while_loop_tape_grows_past_its_first_capacity():
    check_grads(long_while, (0.3,))
    assert "while_trips" in show_grad(long_while)


def test_lowered_exits_keep_a_single_final_return():
    fn = lower_exits(anf(desugar(parse(exits))))
    returns = [n for n in gast.walk(fn.node) if isinstance(n, gast.Return)]
    assert returns == [fn.node.body[-1]]
    assert not any(isinstance(n, gast.Continue) for n in gast.walk(fn.node))
    for loop in (n for n in gast.walk(fn.node) if isinstance(n, (gast.For, gast.While))):
        breaks = [n for n in gast.walk(loop) if isinstance(n, gast.Break)]
        nested = [b for inner in gast.walk(loop) if inner is not loop and
                  isinstance(inner, (gast.For, gast.While)) for b in gast.walk(inner)
                  if isinstance(b, gast.Break)]
        own = [b for b in breaks if b not in nested]
        if own:
            tail = loop.body[-1]
            assert isinstance(tail, gast.If) and tail.body[-1] is own[0]


@pytest.mark.parametrize("x, n", [(0.23, 5), (0.7, 5), (2.5, 5), (0.23, 0)])
def test_gradient_through_every_exit(x, n):
    check_grads(exits, (x, n))


def test_activity_is_the_intersection_of_varied_and_useful():
    flows = [("a", ("x",)), ("b", ("a", "k")), ("out", ("b",)), ("c", ("x",)),
             ("k2", ("k",))]
    assert activity.active(flows, ["x"], ["out"]) == {"x", "a", "b", "out"}


@pytest.mark.parametrize("bounds", [(0, 5, 1), (2, 9, 3), (9, 2, -2), (5, 5, 1), (3, 0, 1),
                                    (-4, 4, 5)])
def test_loop_bounds_helpers_agree_with_range(bounds):
    values = list(range(*bounds))
    assert tape.trip_count(*bounds) == len(values)
    if values:
        assert tape.range_last(*bounds) == values[-1]
    nb = numba.njit(lambda a, b, s: (tape.trip_count(a, b, s), tape.range_last(a, b, s)))
    assert nb(*bounds) == (tape.trip_count(*bounds), tape.range_last(*bounds))


def test_tapes_grow_and_promote_integers():
    t = tape.float_tape(3, 1)
    assert t.dtype == np.float64
    for k in range(5):
        t = tape.push(t, k, k + 0.5)
    np.testing.assert_allclose(t[:5], np.arange(5) + 0.5)
    assert tape.exact_tape(True, 4).dtype == np.bool_
    rows = tape.float_tape(np.zeros(3, np.float32), 2)
    assert rows.shape == (2, 3) and rows.dtype == np.float32


def record_rows(rows, capacity, reserved):
    """Push each row of `rows` on a tape that starts too small (it grows), after a reserve."""
    t = tape.reserve(tape.exact_tape(rows[0], capacity), reserved)
    for k in range(rows.shape[0]):
        t = tape.push(t, k, rows[k])
    return t


@pytest.mark.parametrize("compiled", [False, True])
def test_row_tapes_grow_and_refuse_another_shape(compiled):
    rows = np.arange(15.0).reshape(5, 3)
    run = numba.njit(record_rows) if compiled else record_rows
    for capacity, reserved in ((1, 1), (1, 3), (2, 8)):
        t = run(rows, capacity, reserved)
        assert t.shape[0] >= 5 and t.shape[1:] == (3,)
        np.testing.assert_array_equal(t[:5], rows)
    push = numba.njit(lambda t, v: tape.push(t, 0, v)) if compiled else \
        (lambda t, v: tape.push(t, 0, v))
    with pytest.raises(ValueError, match="changed shape"):
        push(np.zeros((2, 3)), np.ones(4))


def test_saved_items_round_trip_in_python_and_numba():
    def roundtrip(m):
        buf = tape.items_buffer(m, 1)
        buf, n = tape.push_items(buf, 0, m[0, 1])
        buf, n = tape.push_items(buf, n, m[1, 1:3])
        m[1, 1:3] = 7.0
        m[0, 1] = 5.0
        old, n = tape.pop_items(buf, n, m[1, 1:3])
        m[1, 1:3] = old
        old, n = tape.pop_items(buf, n, m[0, 1])
        m[0, 1] = old
        return m, n

    m = np.arange(12.0).reshape(3, 4)
    for run in (roundtrip, numba.njit(roundtrip)):
        restored, n = run(m.copy())
        np.testing.assert_array_equal(restored, m)
        assert n == 0


def test_integer_index_arithmetic_gets_no_adjoint():
    text = show_grad(rc.integer_index_arithmetic)
    assert not re.search(r"\bb(n|mid|i|j)\b", text)
    # total = x0 x5 + x0 + x1 x4 + x2 + x2 x3 + x4 for n = 6
    x = np.arange(6.0)
    np.testing.assert_allclose(grad(rc.integer_index_arithmetic)(x),
                               [x[5] + 1, x[4], x[3] + 1, x[2], x[1] + 1, x[0]])


def test_adjoint_of_far_pairs_is_skipped_by_the_cutoff_branch():
    text = show_grad(rc.lj_energy)
    reverse = text[text.index("bpos = "):]
    branch = reverse[reverse.index("if cond:"):]
    indent = len(branch.split("\n")[1]) - len(branch.split("\n")[1].lstrip())
    for line in branch.split("\n")[1:]:
        if "scatter_add(bpos" in line:
            assert len(line) - len(line.lstrip()) == indent      # inside the branch


def test_tidy_keeps_statements_that_read_dense_adjoints_outside_the_branch():
    from transformer.reverse.tidy import tidy_reverse
    code = gast.parse(
        "bz = zeros_like(z)\n"
        "by = zeros_like(y)\n"
        "by = by + g\n"
        "if c:\n"
        "    bz = bz + g\n"
        "bx = bx + bz * 2.0\n"
        "bw = bw + by + bz\n")
    tidy_reverse(code.body, "zeros_like", {"bz", "by", "bx", "bw", "g"})
    from codegen.emit import to_source
    text = to_source(code)
    assert "    bx = bx + bz * 2.0" in text         # reads only bz: moved into the branch
    assert "\nbw = bw + by + bz" in text           # reads by as well: stays outside
    assert "bz = zeros_like(z)" in text and "by = g" in text


def test_constant_output_has_zero_gradient():
    assert grad(rc.constant_output)(2.0) == 0.0


def grows(s, v):
    acc = s
    for _ in range(v.shape[0]):   # range(3) would be unrolled
        acc = acc + v * s
    return np.sum(acc)


def test_a_variable_that_changes_shape_is_an_error_not_a_wrong_gradient():
    with pytest.raises(ValueError, match="changed shape"):
        grad(grows)(2.0, np.ones(3))


def concatenating(x):
    y = x
    for _ in range(x.shape[0]):   # range(3) would be unrolled
        y = np.concatenate((y, x))
    return np.sum(y * y)


@pytest.mark.parametrize("compiled", [False, True])
def test_a_recorded_variable_that_changes_shape_is_reported_at_its_assignment(compiled):
    """The tape's shape error names the user's line, in plain Python and under jit."""
    fn = jit(grad(concatenating)) if compiled else grad(concatenating)
    line = concatenating.__code__.co_firstlineno + 3
    with pytest.raises(ValueError, match="changed shape") as info:
        fn(np.ones(3))
    assert f"{__file__}:{line}:" in str(info.value)
    assert "name of its own" in str(info.value)


# ---------------------------------------------------------------- compiled checks' messages

def _grown_in_a_branch(x, n):
    y = x[:2]
    for t in range(n):
        y = np.sin(y) * x[t]
        if t == 1:
            y = x[:3] * y[0]
    return np.sum(y)


def _scalar_accumulator(x, n):
    e = 0.0
    for t in range(n):
        e = e + x * t
    return np.sum(e)


def _shared_update(x, n):
    y = x * 1.0
    z = y
    for _ in range(n):
        y += x
    return np.sum(z * y)


@pytest.mark.slow
@pytest.mark.parametrize("f, line, words", [
    (_grown_in_a_branch, "y = x[:3] * y[0]", "a recorded variable changed shape"),
    (_scalar_accumulator, "e = e + x * t", "a variable changed shape"),
    (_shared_update, "y += x", "is shared with another name")])
def test_compiled_checks_are_located_with_line_caret_and_hint_as_in_python(f, line, words):
    """Compiled checks raise their location, message and hint apart (joining strings in
    compiled code costs a second of compile time); the jit boundary renders them."""
    x = np.linspace(0.1, 1.0, 4)
    with pytest.raises(ValueError) as compiled:
        jit(grad(f))(x, 3)
    with pytest.raises(ValueError) as python:
        grad(f)(x, 3)
    text = str(compiled.value)
    assert words in text and line in text and "^" in text and "hint: " in text
    assert text.splitlines()[0].split(": ")[0] == str(python.value).splitlines()[0].split(": ")[0]
