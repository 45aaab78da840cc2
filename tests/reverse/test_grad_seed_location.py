"""A gradient's seed (`unit_cotangent` of the returned value) is located at the function's
return line: grad of a function returning an array is refused there under jit, as it is
refused without jit, not at a line of the generated module."""
import numpy as np
import pytest

from transformer import grad, jit
from transformer.errors import TransformError


def doubled(a):
    return a * 2.0


def test_grad_of_an_array_output_is_refused_at_the_return_line_under_jit():
    with pytest.raises(TypeError, match="grad requires a scalar output"):
        grad(doubled)(np.arange(3.0))
    with pytest.raises(TransformError, match="grad requires a scalar output") as info:
        jit(grad(doubled))(np.arange(3.0))
    assert "test_grad_seed_location.py:12:5" in str(info.value)
    assert "return a * 2.0" in str(info.value)


def test_the_seed_comment_is_written_once():
    text = jit(grad(lambda a: np.sum(a * a))).source(np.arange(3.0))
    body = text.split("@numba.njit", 1)[1]
    assert body.count("# grad of: ") == len(set(
        line.strip() for line in body.splitlines() if "# grad of: " in line))
