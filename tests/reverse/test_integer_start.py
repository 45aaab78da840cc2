"""A variable whose first value is an integer and whose later values are floats.

Reverse mode records such a variable on a tape typed by its first value. An integer tape
used to truncate the floats stored later, and the gradient came out silently wrong:
`f(x, 1, 4)` below gave 1.089 where finite differences give 0.976, and an argument halved
in the loop gave 0.0 where they give 0.030. Now an active variable (one the gradient flows
through) is recorded as floats from the start, under both backends; an inactive one is
promoted when the first float arrives in Python, and compiled code, whose types are fixed,
refuses it at the user's line with a hint that works. A carry of `checkpoint_range` that
starts as `loss = 0` is differentiated under every schedule.
"""
import random

import numpy as np
import pytest

from gradcheck import assert_gradient_close, central_differences, write_module
from transformer import TransformError, checkpoint_range, grad, jit, vmap


def state_from_int_argument(x, y, n):
    for _ in range(n):
        y = np.sin(y) * x
    return y


def halved_int_argument(x, n, k):
    y = x
    for _ in range(k):
        n = n / 2
        y = np.sin(y * n)
    return y


def halved_float_argument(x, n, k):
    scale = float(n)            # the hint of the refusal below
    y = x
    for _ in range(k):
        scale = scale / 2
        y = np.sin(y * scale)
    return y


def test_an_active_state_starting_as_an_int_argument_gets_the_true_gradient():
    expected = central_differences(lambda x: state_from_int_argument(x, 1, 4), (0.7,))
    assert_gradient_close(grad(state_from_int_argument)(0.7, 1, 4), expected)
    assert_gradient_close(jit(grad(state_from_int_argument))(0.7, 1, 4), expected)


def test_an_inactive_int_argument_that_becomes_a_float_gets_the_true_gradient_in_python():
    expected = central_differences(lambda x: halved_int_argument(x, 3, 4), (0.7,))
    assert_gradient_close(grad(halved_int_argument)(0.7, 3, 4), expected)


@pytest.mark.slow
def test_compiled_code_refuses_it_at_the_users_line_and_the_hint_works():
    with pytest.raises(TransformError) as info:
        jit(grad(halved_int_argument))(0.7, 3, 4)
    error = str(info.value)
    assert "'n' starts as an integer and later holds floats" in error
    assert "test_integer_start.py" in error and "n = n / 2" in error
    assert "scale = float(n)" in error
    expected = central_differences(lambda x: halved_int_argument(x, 3, 4), (0.7,))
    assert_gradient_close(jit(grad(halved_float_argument))(0.7, 3, 4), expected)
    assert_gradient_close(jit(grad(halved_int_argument))(0.7, 3.0, 4), expected)


def counted_from_a_flag(x, n):
    c = x[0] > 0
    y = x[1]
    for _ in range(n):
        c = c + 1
        y = np.sin(y * c)
    return y


def counted_from_an_int(x, n):
    c = int(x[0] > 0)           # the hint of the refusal below
    y = x[1]
    for _ in range(n):
        c = c + 1
        y = np.sin(y * c)
    return y


@pytest.mark.slow
def test_a_flag_that_becomes_a_count_gets_the_true_gradient_and_a_located_refusal():
    """`c = x[0] > 0; c = c + 1`: a boolean tape truncated the counts to True (grad gave
    0.274 where finite differences give 1.645)."""
    x = np.array([0.5, 0.3])
    expected = central_differences(lambda x: counted_from_a_flag(x, 3), (x,))
    assert_gradient_close(grad(counted_from_a_flag)(x, 3), expected)
    with pytest.raises(TransformError) as info:
        jit(grad(counted_from_a_flag))(x, 3)
    assert "'c' starts as a boolean and later holds an integer" in str(info.value)
    assert "c = c + 1" in str(info.value) and "int(flag)" in str(info.value)
    assert_gradient_close(jit(grad(counted_from_an_int))(x, 3), expected)


def carried_revolve(x):
    loss = 0
    for t in checkpoint_range(0, 7, snapshots=2):
        loss = loss + np.sum(np.sin(x) * t)
    return loss


def carried_segments(x):
    loss = 0
    for t in checkpoint_range(0, 7, snapshots=2, schedule="segments"):
        loss = loss + np.sum(np.sin(x) * t)
    return loss


def carried_two_levels(x):
    loss = 0
    for t in checkpoint_range(0, 7, snapshots=2, schedule="segments", levels=2):
        loss = loss + np.sum(np.sin(x) * t)
    return loss


@pytest.mark.slow
@pytest.mark.parametrize("f", [carried_revolve, carried_segments, carried_two_levels])
def test_a_checkpointed_carry_starting_as_an_int_is_differentiated(f):
    x = np.linspace(0.1, 1.0, 3)
    assert_gradient_close(grad(f)(x), 21.0 * np.cos(x))
    assert_gradient_close(jit(grad(f))(x), 21.0 * np.cos(x))


# ---------------------------------------------------------------- generated programs

UPDATES = ["y = np.sin(y) * x[{k}]", "y = y * y * {a} + x[{k}]",
           "y = np.tanh(y + x[{k}] * t)", "y = step(y, x[{k}])", "y = y / {d} + x[{k}] * y"]
STARTS = {"argument": "", "constant": "    y = {c}\n", "copy": "    y = m\n"}
LOOPS = {"for": "    for t in range(k):\n",
         "while": "    t = 0\n    while t < k:\n        t = t + 1\n"}


def _program(seed: int) -> tuple[str, bool]:
    """A function f(x, y, m, k) of a state `y` that starts as an int, and whether it also
    halves an int-started scale `s` the gradient does not flow through."""
    rng = random.Random(seed)
    fields = dict(k=rng.randrange(3), a=rng.choice([0.25, -0.5]), d=rng.choice([2, 3]),
                  c=rng.choice([0, 1, 2]))
    scaled = rng.random() < 0.4
    body = "".join(f"        {rng.choice(UPDATES).format(**fields)}\n"
                   for _ in range(rng.randint(1, 3)))
    if scaled:
        body = "        s = s / 2\n" + body + "        y = y * s\n"
    text = ("def step(y, v):\n    return np.cos(y) * v\n\n\n"
            "def f(x, y, m, k):\n" + rng.choice(list(STARTS.values())).format(**fields)
            + ("    s = m\n" if scaled else "") + rng.choice(list(LOOPS.values())) + body
            + "    return y + x[0] * 0.0\n")
    return text, scaled


def _check(seed: int, tmp_path) -> None:
    source, scaled = _program(seed)
    f = write_module(tmp_path, "import numpy as np\n\n\n" + source, {}).f
    x = np.random.default_rng(seed).uniform(0.2, 0.6, 3)
    expected = central_differences(lambda x: f(x, 1, 2, 3), (x,))
    assert_gradient_close(grad(f)(x, 1, 2, 3), expected, source)
    if scaled:
        with pytest.raises(TransformError, match="'s' starts as an integer"):
            jit(grad(f))(x, 1, 2, 3)
    else:
        assert_gradient_close(jit(grad(f))(x, 1, 2, 3), expected, source)


def test_one_generated_int_started_state_matches_finite_differences(tmp_path):
    _check(4, tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(12))
def test_generated_int_started_states_match_finite_differences(seed, tmp_path):
    _check(seed, tmp_path)


# ---------------------------------------------------------------- one type per variable

def scaled_state(x, y, n):
    for _ in range(n):
        y = np.sin(y) * x
    return y


@pytest.mark.parametrize("transform, fixed", [
    (jit, lambda xs: np.full_like(xs, 1.0)),
    (lambda f: jit(vmap(f, in_axes=(0, None, None))), lambda xs: 1.0)],
    ids=["jit", "jit(vmap)"])
def test_a_number_that_becomes_an_array_is_refused_at_the_loop_with_a_hint_that_works(
        transform, fixed):
    xs = np.linspace(0.1, 0.9, 5)
    f = transform(scaled_state)
    with pytest.raises(TransformError) as info:
        f(xs, 1, 4)
    error = info.value
    assert "'y' is " in error.message and "compiled code gives a variable one type" in \
        error.message
    assert error.filename == __file__ and error.line.strip() == "for _ in range(n):"
    assert "pass 1.0, not 1" in str(error) and "np.full_like(x, y)" in str(error)
    np.testing.assert_allclose(f(xs, fixed(xs), 4), scaled_state(xs, 1, 4), rtol=1e-14)
