"""Refusals of writes through views and aliases name what the user wrote - `h.reshape(2,
3)`, `d["k"]`, `lst[0]`, `g` - not the names secant's passes made for them (`reshape_h`,
`d_k`, `lst_item`, `g_1`), and their hints work."""
import numpy as np
import pytest
from gradcheck import write_module

from transformer import TransformError, grad, jvp
from transformer.test_util import numerical_grad

SOURCE = '''import numpy as np


def inline_reshape(x, v):
    h = v * x
    h.reshape(2, 3)[0, 1] = x * 2.0
    return np.sum(h * h)


def inline_reshape_fixed(x, v):
    h = v * x
    h[1] = x * 2.0
    return np.sum(h * h)


def dict_item(x, v):
    h = v * x
    d = {"k": h}
    d["k"][1] = x
    return np.sum(h * h)


def list_item(x, v):
    h = v * x
    M = h.reshape(3, 2)
    lst = [h]
    lst[0] *= x
    return M[1, 1]


def version(x, v):
    g = v * x
    g = g * 2.0
    h = g
    h[0] = x
    return np.sum(g * g)
'''
MADE = ("reshape_h", "d_k", "lst_item", "g_1", "unpacked")


@pytest.fixture(scope="module")
def module(tmp_path_factory):
    return write_module(tmp_path_factory.mktemp("spelled"), SOURCE, {})


def _refusal(run):
    with pytest.raises((TransformError, ValueError)) as caught:
        run()
    text = str(caught.value)
    assert not any(made in text for made in MADE), text
    return text


@pytest.mark.parametrize("case, spelled, line", [
    ("inline_reshape", "`h.reshape(2, 3)`", 6), ("dict_item", '`d["k"]`', 19),
    ("list_item", "'lst[0]'", 27), ("version", "'g'", 35)])
def test_reverse_mode_names_what_the_user_wrote(module, case, spelled, line):
    text = _refusal(lambda: grad(getattr(module, case))(0.5, np.ones(6)))
    assert spelled in text and f".py:{line}:5" in text, text


def test_forward_mode_names_what_the_user_wrote(module):
    text = _refusal(lambda: jvp(module.inline_reshape, (0.5, np.ones(6)), (1.0, np.ones(6))))
    assert "`h.reshape(2, 3)` may be a view of 'h'" in text and ".py:6:5" in text, text
    assert "write into 'h' itself at the same elements" in text, text


def test_the_hint_works(module):
    """Writing into `h` itself at the same elements is differentiated (oracle: central
    differences) and gives the numbers of the refused program."""
    f = module.inline_reshape_fixed
    v = np.linspace(-1.0, 1.0, 6)
    assert f(0.5, v.copy()) == module.inline_reshape(0.5, v.copy())
    np.testing.assert_allclose(grad(f, argnums=1)(0.5, v.copy()),
                               numerical_grad(f, (0.5, v.copy()), 1), rtol=1e-6)
    _, tangent = jvp(f, (0.5, v.copy()), (1.0, np.zeros(6)))
    np.testing.assert_allclose(tangent, numerical_grad(f, (0.5, v.copy()), 0), rtol=1e-6)
