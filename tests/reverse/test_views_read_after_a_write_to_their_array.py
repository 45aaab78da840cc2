"""A reshape, transpose, ravel or `.view()` of an array, read after a write into that array,
sees the write: reverse mode checked only items and slices for it (`check_not_view`) and
gave a silently wrong gradient for the others (`f = np.ravel(g); g[0] = x; sum(f * v)`).
Each is now checked at run time: a view is refused at the write, located, and a copy (the
ravel of a non-contiguous array) is differentiated. Oracle: central finite differences.
Found by benchmarks/hunt_writes.py."""
import numpy as np
import pytest
from gradcheck import write_module

from transformer import grad
from transformer.test_util import numerical_grad

SOURCE = '''import numpy as np


def ravel(x, v):
    g = v * 0.5
    f = np.ravel(g)
    g[0] = x
    return np.sum(f * v)


def view(x, v):
    g = v * 0.5
    f = g.view()
    g[0] = x
    return np.sum(f * v)


def reshape(x, v):
    g = v * 0.5
    f = g.reshape(2, 3)
    g[0] = x
    return np.sum(f[0] * v[:3])


def transpose(x, v):
    g = np.outer(v, v)
    f = g.T
    g[0, 1] = x
    return np.sum(f * v)


def ravel_of_a_strided_array(x, v):
    g = np.outer(v, v)[:, ::2]
    f = np.ravel(g)
    g[0, 1] = x
    return np.sum(f * f) + np.sum(g)


def view_of_a_view(x, v):
    g = v * 0.5
    f = g[None][0]
    g[1] = x
    return np.sum(f * v)


def fixed_by_the_hint(x, v):
    g = v * 0.5
    f = np.ravel(g).copy()
    g[0] = x
    return np.sum(f * v)


def written_after_a_swap(x, v):
    g = v * 0.5
    f = g[::-1]
    g, x = g, x
    g[1] = x
    return np.sum(f * v)


def written_after_a_copy_in_a_loop(x, v):
    g = v * 0.5
    f = g[::-1]
    for i in range(1):
        g, x = g, x
    g[1] += x
    return np.sum(f * v)


def a_renamed_copy_is_differentiated(x, v):
    g = v * 0.5
    f = g[::-1].copy()
    g, x = g, x
    g[1] = x
    return np.sum(f * v) + np.sum(g * g)
'''

V = np.linspace(-1.0, 1.0, 6)
X = 0.3
REFUSED = {"ravel": 7, "view": 14, "reshape": 21, "transpose": 28, "view_of_a_view": 42,
           # `g, x = g, x` renames g: the write went to the renamed name, unchecked
           "written_after_a_swap": 57, "written_after_a_copy_in_a_loop": 66}


@pytest.fixture(scope="module")
def module(tmp_path_factory):
    return write_module(tmp_path_factory.mktemp("views_after_writes"), SOURCE, {})


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_a_view_read_after_a_write_to_its_array_is_refused_at_the_write(module, case):
    f = getattr(module, case)
    with pytest.raises(ValueError, match="'f' is a view into 'g'") as caught:
        grad(f, argnums=(0, 1))(X, V.copy())
    assert f".py:{REFUSED[case]}:5:" in str(caught.value)


@pytest.mark.parametrize("case", ["ravel_of_a_strided_array", "fixed_by_the_hint",
                                  "a_renamed_copy_is_differentiated"])
def test_a_copy_is_differentiated(module, case):
    f = getattr(module, case)
    got = grad(f, argnums=(0, 1))(X, V.copy())
    for argnum in (0, 1):
        np.testing.assert_allclose(got[argnum], numerical_grad(f, (X, V.copy()), argnum),
                                   rtol=1e-6, atol=1e-8)
