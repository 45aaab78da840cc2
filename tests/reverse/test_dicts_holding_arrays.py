"""A dict literal holding an array (`d = {"k": g}`) is another name for it, as a tuple or
list is: `d["k"][1] = x` writes `g`. Views and aliases did not count dicts, so reverse mode
gave a silently wrong gradient once `d` was rebound (`d = {"k": v}`), and forward mode a
wrong tangent in a drawn program. Oracle: central finite differences. Found by
benchmarks/hunt_writes.py."""
import numpy as np
import pytest
from gradcheck import write_module

from transformer import TransformError, grad, jvp
from transformer.test_util import numerical_grad

SOURCE = '''import numpy as np


def rebound(x, v):
    g = v * 1.0
    d = {"k": g}
    d["k"][1] = x
    d = {"k": v}
    return np.sum(g * v)


def drawn(x, v, a):
    h = np.zeros(6) + x
    g = v[::-1].copy()
    s = x * 0.5
    c = np.tanh(v[0])
    u = h[5:2:-1]
    f = g
    M = h.reshape(3, 2).T
    d = {"k": g}
    d["k"][-3] = np.tanh(np.tanh((-0.75 / (1.5 + c * c))))
    d = {"k": h}
    return s + c * x + np.sum(np.tanh(h)) + 0.5 * np.sum(g * g) + np.sum(u) * 0.25 + \\
        np.sum(f * v) * 0.125 + M[1, 2] - 0.5 * np.sum(a)


def written_constant(x, v):
    g = v * 1.0
    d = {"k": g}
    d["k"][1] = np.tanh(v[0])
    d = {"k": x}
    return np.sum(g * v)
'''

V = np.linspace(-1.0, 1.0, 6)


@pytest.fixture(scope="module")
def module(tmp_path_factory):
    return write_module(tmp_path_factory.mktemp("dicts"), SOURCE, {})


def test_reverse_mode_refuses_a_write_through_a_rebound_dict(module):
    with pytest.raises(TransformError, match="into 'g'") as caught:
        grad(module.rebound, argnums=(0, 1))(0.3, V.copy())
    assert caught.value.location.endswith(".py:7:5")


def test_jvp_is_right_or_refused(module):
    args = (0.3, V.copy(), np.cos(V))
    want = sum(np.sum(numerical_grad(module.drawn, args, k)) for k in range(3))
    try:
        _, tangent = jvp(module.drawn, tuple(a.copy() if hasattr(a, "copy") else a
                                             for a in args), (1.0, np.ones(6), np.ones(6)))
    except TransformError as error:
        assert error.location.split(":")[-2] in ("19", "21"), str(error)
    else:
        np.testing.assert_allclose(tangent, want, rtol=1e-6, atol=1e-8)


def test_jvp_of_a_write_through_a_dict_is_not_refused(module):
    f = module.written_constant
    _, tangent = jvp(f, (0.3, V.copy()), (0.0, np.eye(6)[0]))
    np.testing.assert_allclose(tangent, numerical_grad(f, (0.3, V.copy()), 1)[0], rtol=1e-6)
