"""Reverse mode refuses a write through a view (`row = P[i]; row[0] = v`, `head = h[:2]`,
a reshape, transpose or ravel, a tuple or list holding the array, a name unpacked from one)
when the viewed array is read afterwards: the write changes that array, and reverse mode,
which keeps one adjoint and one record of writes per name, would not see it (it gave a
silently wrong gradient), also where the array is written under its own name as well, or
read through another view of it. The
refusal is located and its hint works. Oracle: central
finite differences."""
import numpy as np
import pytest

from transformer import TransformError, grad, jit, jvp
from transformer.test_util import numerical_grad

RNG = np.random.default_rng(3)
W = RNG.normal(size=(4, 4)) * 0.5
H0 = np.abs(RNG.normal(size=4)) + 0.1


def row_view(W, h0):
    P = np.outer(h0, h0) + W
    row = P[1]
    row[0] = row[2] * 3.0
    return np.sum(np.tanh(P))


def slice_view_in_loop(W, h0):
    h = h0.copy()
    for _t in range(2):
        head = h[:2]
        head[0] = head[1] * 0.5
        h = np.tanh(W @ h)
    return np.sum(h)


def view_of_view(W, h0):
    h = h0 * 2.0
    head = h[:3]
    first = head[:1]
    first[0] = 7.0
    return np.sum(np.tanh(W @ h))


def reshaped_view(W, h0):
    h = h0 * 2.0
    column = h.reshape(4, 1)
    column[1, 0] = 7.0
    return np.sum(np.tanh(W @ h))


def transposed_view(W, h0):
    P = np.outer(h0, h0) + W
    Q = P.T
    Q[0, 1] = 7.0
    return np.sum(np.tanh(P))


def raveled_view(W, h0):
    P = np.outer(h0, h0) + W
    flat = np.ravel(P)
    flat[5] = 7.0
    return np.sum(np.tanh(P))


def tuple_holding_the_array(W, h0):
    h = h0 * 2.0
    pair = (h, 2.0)
    pair[0][1] = 7.0
    return np.sum(np.tanh(W @ h))


def list_holding_the_array(W, h0):
    h = h0 * 2.0
    held = [h]
    held[0][0] *= 3.0
    return np.sum(np.tanh(W @ h))


def unpacked_alias(W, h0):
    h = h0 * 2.0
    a, b = h, 2.0
    a[1] = 7.0 * b
    return np.sum(np.tanh(W @ h))


def view_method(W, h0):
    h = h0 * 2.0
    same = h.view()
    same[1] = 7.0
    return np.sum(np.tanh(W @ h))


def split_parts(W, h0):
    h = h0 * 2.0
    first, second = np.split(h, 2)
    second[0] = 7.0
    return np.sum(np.tanh(W @ h))


def reshaped_copy(W, h0):               # the hint's rewrite of reshaped_view
    h = h0 * 2.0
    column = h.reshape(4, 1).copy()
    column[1, 0] = 7.0
    return np.sum(np.tanh(W @ h)) + np.sum(column)


def tuple_of_a_copy(W, h0):             # ... of tuple_holding_the_array
    h = h0 * 2.0
    pair = (h.copy(), 2.0)
    pair[0][1] = 7.0
    return np.sum(np.tanh(W @ h))


def row_written_directly(W, h0):         # the hint's first rewrite of row_view
    P = np.outer(h0, h0) + W
    P[1, 0] = P[1, 2] * 3.0
    return np.sum(np.tanh(P))


def loop_written_directly(W, h0):        # ... of slice_view_in_loop
    h = h0.copy()
    for _t in range(2):
        h[0] = h[1] * 0.5
        h = np.tanh(W @ h)
    return np.sum(h)


def row_copied(W, h0):                   # the hint's second rewrite: P must not change
    P = np.outer(h0, h0) + W
    row = P[1].copy()
    row[0] = row[2] * 3.0
    return np.sum(np.tanh(P)) + np.sum(row)


def mask_selection_written(W, h0):       # x[mask] is a copy: nothing to refuse
    sel = h0[h0 > 0.2]
    sel[0] = 2.0
    return np.sum(sel * h0[0]) + np.sum(np.tanh(W @ h0))


def view_written_base_not_read(W, h0):   # the base is never read after the write
    P = np.outer(h0, h0) + W
    row = P[1]
    row[0] = 0.0
    return np.sum(row * row)


def base_also_written_directly(W, h0):   # the base's own write hid the view's write
    P = np.outer(h0, h0) + W
    row = P[1]
    row[0] = row[2] * 3.0
    P[0, 1] = h0[0] * h0[1]
    return np.sum(P * P)


def base_written_on_the_other_path(W, h0):
    g = h0 * W[0]
    if h0[0] > 10.0:
        g[0] = np.tanh(h0[1])
    else:
        g[::-1][2] -= 0.5 * np.tanh(h0[1])
    return np.sum(g * g)


def sibling_view_read(W, h0):            # `u` and `M` view the same array
    P = (h0 * W[0]) * 1.0
    u = P[::-2]
    M = P[::-1]
    M[2] = np.tanh(h0[0])
    return np.sum(u * u)


def both_names_written(W, h0):           # each name written: the check was skipped
    g = np.tanh(W @ h0) * 0.5
    k = g
    g[1] = 0.3
    k[2] = 0.2
    return np.sum(g[2:] ** 2)


def both_names_written_copied(W, h0):    # the hint's rewrite of both_names_written
    g = np.tanh(W @ h0) * 0.5
    k = g.copy()
    g[1] = 0.3
    k[2] = 0.2
    return np.sum(g[2:] ** 2)


def assert_gradients_match_differences(f):
    for k in (0, 1):
        got = grad(f, argnums=k)(W.copy(), H0.copy())
        want = numerical_grad(f, [W.copy(), H0.copy()], k)
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("f, line", [
    (row_view, "row[0] = row[2] * 3.0"),
    (slice_view_in_loop, "head[0] = head[1] * 0.5"),
    (view_of_view, "first[0] = 7.0"),
    (reshaped_view, "column[1, 0] = 7.0"),
    (transposed_view, "Q[0, 1] = 7.0"),
    (raveled_view, "flat[5] = 7.0"),
    (tuple_holding_the_array, "pair[0][1] = 7.0"),
    (list_holding_the_array, "held[0][0] *= 3.0"),
    (unpacked_alias, "a[1] = 7.0 * b"),
    (view_method, "same[1] = 7.0"),
    (split_parts, "second[0] = 7.0"),
    (base_also_written_directly, "row[0] = row[2] * 3.0"),
    (base_written_on_the_other_path, "g[::-1][2] -= 0.5 * np.tanh(h0[1])"),
    (sibling_view_read, "M[2] = np.tanh(h0[0])"),
    (both_names_written, "k[2] = 0.2"),
])
def test_a_write_through_a_view_of_an_array_read_later_is_refused_at_the_write(f, line):
    for transform in (grad, lambda g: jit(grad(g))):
        with pytest.raises(TransformError) as info:
            transform(f)(W.copy(), H0.copy())
        err = info.value
        assert err.filename == __file__ and err.line.strip() == line
        assert "is a view into" in err.message and "write into" in err.hint or \
            "are the same array here" in err.message and ".copy()" in err.hint


@pytest.mark.parametrize("f", [row_written_directly, loop_written_directly, row_copied,
                               mask_selection_written, view_written_base_not_read,
                               reshaped_copy, tuple_of_a_copy, both_names_written_copied])
def test_the_hints_rewrites_and_copies_get_the_finite_difference_gradient(f):
    assert_gradients_match_differences(f)


def test_forward_mode_follows_the_write_through_the_view():
    dW, dh = RNG.normal(size=(4, 4)), RNG.normal(size=4)
    eps = 1e-6
    fd = (row_view(W + eps * dW, H0 + eps * dh) - row_view(W - eps * dW, H0 - eps * dh)) \
        / (2 * eps)
    assert abs(jvp(row_view, (W, H0), (dW, dh))[1] - fd) < 1e-7
