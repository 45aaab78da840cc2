"""Containers that hold one value do not make their other items share an array.

`t = (g, x)` and `lst = [x, h]` both hold `x`; a write into `g` reaches `t` but neither
`x`, `lst` nor `h`, so `M = h.reshape(2, 3)`, never written, needs no tangent that is the
same view of `h`'s tangent. Every program is checked against central differences of the
program as NumPy runs it (jvp, jacfwd, hessian, grad) and vmap against NumPy per example;
where a write does reach a view forward mode cannot follow, the refusal is at the user's
line, as it was before containers stopped joining their items.
"""
from __future__ import annotations

import inspect
import os

os.environ.setdefault("NUMBA_OPT", "0")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from gradcheck import assert_gradient_close, central_differences  # noqa: E402

from transformer import TransformError, grad, hessian, jacfwd, jvp, vmap  # noqa: E402
from transformer.test_util import numerical_jacobian  # noqa: E402

# no case compiles: every one runs in the quick set (about a second in all)
pytestmark = pytest.mark.every_case


def shared_number(x, v):
    h = v.copy(); g = np.zeros(6); M = h.reshape(2, 3)  # noqa: E702
    t = (g, x); lst = [x, h]; g[0] = np.tanh(x)  # noqa: E702, F841
    return np.sum(g * g) + M[1, 2]


X0, V0 = 0.3, np.linspace(0.5, 1.5, 6)
DV = np.array([1.0, -0.5, 0.25, 2.0, 0.5, -1.0])


def differences(f, args, argnum):
    return central_differences(lambda *a: f(*[np.array(b, copy=True) for b in a]),
                               args, argnum)


def test_jvp_of_containers_sharing_a_number():
    expected = differences(shared_number, (X0, V0), 0) * 0.7 + \
        differences(shared_number, (X0, V0), 1) @ DV
    out, tangent = jvp(shared_number, (X0, V0.copy()), (0.7, DV.copy()))
    np.testing.assert_allclose(out, shared_number(X0, V0.copy()))
    assert_gradient_close(tangent, expected)


@pytest.mark.parametrize("argnum", [0, 1])
def test_jacfwd_and_grad_of_containers_sharing_a_number(argnum):
    expected = differences(shared_number, (X0, V0), argnum)
    assert_gradient_close(jacfwd(shared_number, argnum)(X0, V0.copy()), expected)
    assert_gradient_close(grad(shared_number, argnum)(X0, V0.copy()), expected)


@pytest.mark.parametrize("argnum", [0, 1])
def test_hessian_of_containers_sharing_a_number(argnum):
    def gradient(arg):
        args = [X0, V0]
        args[argnum] = arg
        return central_differences(shared_number, args, argnum, eps=1e-4)
    expected = numerical_jacobian(gradient, (X0, V0)[argnum], eps=1e-4)
    np.testing.assert_allclose(hessian(shared_number, argnum)(X0, V0.copy()), expected,
                               rtol=1e-4, atol=1e-5)


# ---------------------------------------------------------------- arrays held by containers


def shared_array(x):
    h = x * 2.0
    g = np.zeros(6)
    M = np.reshape(h, (2, 3))
    t = (g, x)
    lst = [x, h]
    g[1] = np.sin(x[0]) * x[1]
    k = lst[1]
    return np.sum(t[0] * t[0]) + M[1, 2] * x[3] + np.sum(k * t[1])


def shared_item_written_through_one_container(x):
    y = x * 1.0
    g = np.zeros(6)
    h = np.ones(6)
    t = (g, y)
    lst = [y, h]
    u = t[1]
    u[0] = np.tanh(x[1]) * x[2]    # written
    w = lst[0]
    return np.sum(w * x) + np.sum(g) + np.sum(h * x)


def view_written_through_list_item(x):
    a = x * 1.0
    v = a[1:]
    lst = [v, x]
    w = lst[0]
    w[0] = x[0] * x[2]             # written
    return np.sum(a * x)


def view_written_read_through_list_item(x):
    a = np.ones(6)
    v = a[2:]
    lst = [x, v]
    v[1] = np.sin(x[0]) * x[3]     # written
    w = lst[1]
    return np.sum(w * x[2:]) + np.sum(a * x)


def row_of_a_tuple_of_views(x):
    A = np.ones((2, 3))
    t = (A[0], A[1], x)
    s = (x, A)
    r = t[1]
    r[2] = x[0] * x[4]             # written
    B = s[1]
    return np.sum(B[0] * x[:3]) + np.sum(B[1] * x[3:] * x[3:])


ALLOWED = [shared_array, shared_item_written_through_one_container,
           view_written_through_list_item, view_written_read_through_list_item,
           row_of_a_tuple_of_views]

X = np.array([0.7, -1.3, 2.1, 0.4, -0.2, 1.1])
V = np.array([1.0, 0.5, -2.0, 0.3, 0.8, -0.6])


def line_marked(fn, mark: str = "# written") -> int:
    lines, first = inspect.getsourcelines(fn)
    return first + next(i for i, line in enumerate(lines) if mark in line)


def fresh(f):
    """f on a copy of its argument: the programs write in place, the oracle must not see it."""
    return lambda x: f(np.array(x, copy=True))


@pytest.mark.parametrize("fn", ALLOWED)
def test_forward_through_containers_matches_finite_differences(fn):
    expected = central_differences(fresh(fn), (X,), 0)
    out, tangent = jvp(fn, (X.copy(),), (V.copy(),))
    np.testing.assert_allclose(out, fn(X.copy()))
    assert_gradient_close(tangent, expected @ V, fn.__name__)
    assert_gradient_close(jacfwd(fn)(X.copy()), expected, fn.__name__)


def test_grad_through_containers_sharing_an_array_matches_finite_differences():
    assert_gradient_close(grad(shared_array)(X.copy()),
                          central_differences(fresh(shared_array), (X,), 0))


# reverse mode keeps one adjoint per name: a write through a container's item into an
# array read afterwards under another name is refused at the write
@pytest.mark.parametrize("fn", ALLOWED[1:])
def test_grad_refuses_a_write_through_a_container_item_read_afterwards(fn):
    with pytest.raises(TransformError, match="reverse mode does not follow a write") as info:
        grad(fn)(X.copy())
    assert info.value.lineno == line_marked(fn)


@pytest.mark.parametrize("fn", ALLOWED)
def test_vmap_through_containers_matches_numpy_per_example(fn):
    batch = np.stack([X, X + 0.5, -X])
    expected = np.array([fn(row.copy()) for row in batch])
    np.testing.assert_allclose(vmap(fn)(batch.copy()), expected, rtol=1e-12)


# ---------------------------------------------------------------- writes forward mode refuses


def reshaped_view_written_through_a_container(x):
    h = np.ones(6)
    M = np.reshape(h, (2, 3))      # forward refuses
    t = (M, x)
    u = t[0]
    u[1, 2] = x[0] * x[1]          # written
    return np.sum(h * x)


def reshaped_view_written_beside_a_shared_item(x):
    h = np.ones(6)
    g = np.zeros(6)
    M = np.reshape(h, (2, 3))
    t = (g, x)
    lst = [x, h]
    M[0, 1] = x[0] * x[1]          # written, forward refuses
    return np.sum(h * x) + np.sum(g) + np.sum(t[1] * lst[0])


REFUSED = [reshaped_view_written_through_a_container, reshaped_view_written_beside_a_shared_item]


@pytest.mark.parametrize("fn", REFUSED)
def test_forward_refuses_a_view_written_through_a_container(fn):
    with pytest.raises(TransformError, match="may be a view of .* written in place") as info:
        jvp(fn, (X.copy(),), (V.copy(),))
    assert info.value.lineno == line_marked(fn, "forward refuses")
    assert info.value.filename.endswith("test_alias_groups.py")


@pytest.mark.parametrize("fn", REFUSED)
def test_vmap_of_a_view_written_through_a_container_matches_numpy(fn):
    batch = np.stack([X, X + 0.5, -X])
    expected = np.array([fn(row.copy()) for row in batch])
    np.testing.assert_allclose(vmap(fn)(batch.copy()), expected, rtol=1e-12)


@pytest.mark.parametrize("fn", REFUSED)
def test_grad_refuses_a_view_written_through_a_container(fn):
    with pytest.raises(TransformError, match="reverse mode does not follow a write") as info:
        grad(fn)(X.copy())
    assert info.value.lineno == line_marked(fn)
