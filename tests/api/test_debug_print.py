"""`transformer.debug.print` / `debug.callback`: printed when the generated code runs, with
run-time values - once per call under jit, in the forward sweep only under grad, once per
example (with its batch index through `axis_index`) under vmap."""
import math

import numpy as np
import pytest

import transformer
from transformer import axis_index, debug, grad, jit, vmap
from transformer.test_util import numerical_grad


def shown(x):
    debug.print("x = {x}, total = {}", np.sum(x), x=x)
    return np.sum(np.sin(x))


def looped(x):
    s = 0.0
    for i in range(x.shape[0]):
        debug.print("step {} x_i = {:.2f}", i, x[i])
        s = s + x[i] * x[i] * x[i]
    return s


def squared(v):
    debug.print("squared v = {}", v)
    return v * v


def through_helper(x):
    s = 0.0
    for i in range(x.shape[0]):
        s = s + squared(x[i])
    return s


SEEN = []


def record(*values):
    SEEN.append(tuple(np.asarray(v).tolist() for v in values))


def called_back(x):
    debug.callback(record, x, np.sum(x))
    return np.sum(x * x)


def per_example(x):
    debug.print("example {b}: {x}", b=axis_index("batch"), x=x)
    return np.sum(x * x)


jit_shown = jit(shown)


def test_debug_print_in_plain_python_prints_at_once(capsys):
    shown(np.array([1.0, 2.0]))
    assert capsys.readouterr().out == "x = [1. 2.], total = 3.0\n"


def test_jit_prints_at_run_time_on_every_call_with_run_time_values(capsys):
    transformer.source(jit_shown)                       # transforming prints nothing
    assert capsys.readouterr().out == ""
    first = jit_shown(np.array([1.0, 2.0]))
    second = jit_shown(np.array([0.5, 0.25]))
    assert capsys.readouterr().out == ("x = [1. 2.], total = 3.0\n"
                                       "x = [0.5  0.25], total = 0.75\n")
    assert first == pytest.approx(np.sin(1.0) + np.sin(2.0))
    assert second == pytest.approx(np.sin(0.5) + np.sin(0.25))


def test_grad_prints_in_the_forward_sweep_once_per_call_with_primal_values(capsys):
    x = np.array([0.5, -1.0, 2.0])
    expected = numerical_grad(looped, [x])
    capsys.readouterr()
    got = grad(looped)(x)
    assert capsys.readouterr().out == ("step 0 x_i = 0.50\nstep 1 x_i = -1.00\n"
                                       "step 2 x_i = 2.00\n")
    np.testing.assert_allclose(got, expected, rtol=1e-6)
    np.testing.assert_allclose(got, 3 * x * x)


def test_vmap_prints_once_per_example_with_its_batch_index(capsys):
    xs = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    got = vmap(per_example, axis_name="batch")(xs)
    assert capsys.readouterr().out == ("example 0: [1. 2.]\nexample 1: [3. 4.]\n"
                                       "example 2: [5. 6.]\n")
    np.testing.assert_allclose(got, np.sum(xs * xs, axis=1))


def test_debug_callback_receives_run_time_values_under_grad_and_vmap():
    SEEN.clear()
    x = np.array([1.0, 3.0])
    np.testing.assert_allclose(grad(called_back)(x), 2 * x)
    vmap(called_back)(np.array([[1.0], [2.0]]))
    assert SEEN == [([1.0, 3.0], 4.0), ([1.0], 1.0), ([2.0], 2.0)]


def test_show_has_the_print_where_it_sits_in_the_forward_sweep():
    text = transformer.source(grad(looped))
    note = 'host call (test_debug_print.py:22): debug.print("step {} x_i = {:.2f}", i, x[i])'
    assert text.count(note) == 1
    assert text.count("host_call(") == 1
    assert text.index(note) < text.index("host_call(") < text.index("grad of:")


def test_a_format_that_is_not_a_literal_is_refused_at_the_call():
    def bad(x):
        fmt = "{}"
        debug.print(fmt, x)
        return x * 2.0

    with pytest.raises(transformer.TransformError, match="string literal") as info:
        grad(bad)(1.0)
    assert "debug.print(fmt, x)" in str(info.value)


def test_the_table_of_primitives_states_each_transformation():
    rows = {r["name"]: r for r in transformer.primitives()}
    row = rows["transformer.debug.print"]
    assert row["kind"] == "effect" and row["grad"] and row["jit"]
    assert not row["cuda"] and "CUDA kernel" in row["reason"]
    assert "once per example" in row["reason"]


@pytest.mark.slow
def test_jit_of_vmap_of_grad_prints_per_example_in_the_forward_sweep(capfd):
    xs = np.array([[0.5, 1.0], [2.0, -1.0]])
    got = jit(vmap(grad(per_example), axis_name="batch"))(xs)
    out = capfd.readouterr().out
    assert [line for line in out.splitlines() if line.startswith("example")] == \
        ["example 0: [0.5 1. ]", "example 1: [ 2. -1.]"]
    np.testing.assert_allclose(got, 2 * xs)


def scalar_shown(x):
    debug.print("x = {}", x)
    return math.sin(x)


def test_a_cuda_kernel_refuses_debug_print_at_the_call_with_a_hint():
    with pytest.raises(transformer.TransformError, match="no CUDA form") as info:
        transformer.source(jit(scalar_shown, backend="cuda"))
    text = str(info.value)
    assert 'debug.print("x = {}", x)' in text and "CPU code around the kernel" in text


def test_jvp_prints_once_per_call_with_primal_values(capsys):
    x, t = np.array([0.5, 1.0]), np.array([1.0, -2.0])
    value, tangent = transformer.jvp(shown, (x,), (t,))
    assert capsys.readouterr().out == "x = [0.5 1. ], total = 1.5\n"
    assert value == pytest.approx(np.sum(np.sin(x)))
    assert tangent == pytest.approx(np.sum(np.cos(x) * t))


def test_grad_prints_a_helpers_line_once_per_call_not_again_in_its_vjp(capsys):
    x = np.array([1.5, -2.0])
    got = grad(through_helper)(x)
    assert capsys.readouterr().out == "squared v = 1.5\nsquared v = -2.0\n"
    np.testing.assert_allclose(got, 2 * x)
