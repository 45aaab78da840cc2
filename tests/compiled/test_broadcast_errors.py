"""Broadcasting failures in compiled code are NumPy's ValueError at the user's line
(`transformer.broadcast_errors`), where Numba's own message names neither the shapes nor
a line of the program. Oracle: NumPy's message for the same operands."""
import re

import numpy as np
import pytest

from transformer import grad, jit


def added(x, y):
    z = x + y
    return np.sum(z)


def weighted_sines(x, y):
    t = np.sin(x)
    return np.sum(t * y)


def bumped_then_added(x, y):
    x[0] += 1.0
    return np.sum(x + y)


def refuses(x):
    if x[0] > 0.0:
        raise ValueError("x[0] must not be positive")
    return x[0]


def numpy_message(x, y) -> str:
    with pytest.raises(ValueError) as info:
        np.add(x, y)
    return str(info.value).strip()


def line_of(fragment: str) -> int:
    lines = open(__file__).read().splitlines()
    return next(i for i, line in enumerate(lines, 1) if fragment in line)


@pytest.mark.parametrize("shapes", [((3,), (4,)), ((2, 3), (3, 2))])
def test_jit_reports_numpys_shapes_at_the_users_statement(shapes):
    x, y = np.ones(shapes[0]), np.ones(shapes[1])
    with pytest.raises(ValueError) as info:
        jit(added)(x, y)
    message = str(info.value)
    assert numpy_message(x, y) in message
    assert message.startswith(f"{__file__}:{line_of('z = x + y')}:5: ")
    assert message.splitlines()[1].strip() == "z = x + y"


def test_grad_points_at_the_expression_that_failed():
    with pytest.raises(ValueError) as info:
        jit(grad(weighted_sines))(np.ones(3), np.ones(4))
    first, shown, caret = str(info.value).splitlines()
    assert re.match(rf"{re.escape(__file__)}:{line_of('np.sum(t * y)')}:\d+: operands could "
                    r"not be broadcast together with shapes \(3,\) \(4,\)", first)
    assert shown[caret.index("^"):].startswith("t * y")


def rows_added(x, y):
    out = np.zeros_like(x)
    for i in range(x.shape[0]):
        out[i] = x[i] + y[i]
    return out


@pytest.mark.parametrize("fn, fragment, shapes", [
    (weighted_sines, "np.sum(t * y)", ((3,), (4,))),
    (rows_added, "out[i] = x[i] + y[i]", ((4, 3), (4, 2))),
])
def test_parallel_array_expressions_report_numpys_shapes(fn, fragment, shapes):
    # Numba's parfors assert the operands' sizes: "AssertionError: Sizes of $a, $b do
    # not match on <generated module> (22)"
    x, y = np.ones(shapes[0]), np.ones(shapes[1])
    with pytest.raises(ValueError) as info:
        jit(fn, parallel=True)(x, y)
    first = str(info.value).splitlines()[0]
    assert first.startswith(f"{__file__}:{line_of(fragment)}:")
    assert first.endswith(numpy_message(x[0] if x.ndim == 2 else x, y[0] if y.ndim == 2
                                        else y))


def test_arguments_are_written_once_as_numpy_writes_them():
    x, expected = np.zeros(3), np.zeros(3)
    with pytest.raises(ValueError):
        bumped_then_added(expected, np.ones(4))
    with pytest.raises(ValueError, match="could not be broadcast"):
        jit(bumped_then_added)(x, np.ones(4))
    np.testing.assert_array_equal(x, expected)      # [1, 0, 0]: not bumped twice


def test_other_value_errors_pass_through_unchanged():
    with pytest.raises(ValueError, match=r"^x\[0\] must not be positive$"):
        jit(refuses)(np.ones(2))
