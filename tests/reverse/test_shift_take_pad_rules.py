"""grad and jvp of np.roll, np.take, np.fliplr, np.flipud and np.pad: each was refused
("no adjoint rule for numpy.roll"). Every case is checked against central differences with
random weights on the output (`np.sum(w * np.sin(f(x)))`), so a transpose that moves an
entry to the wrong place cannot cancel out: negative shifts, a tuple of shifts, axis=None
(the flattened array), repeated and negative indices of np.take, a scalar index. Also the
compiled gradient, the Hessian, vmap of grad, and np.pad's refusal of the other modes."""
import numpy as np
import pytest

from transformer import TransformError, grad, hessian, jit, jvp, vmap
from transformer.test_util import numerical_grad, numerical_jacobian, numerical_jvp


def rolled(x, w):
    return np.sum(w * np.sin(np.roll(x, 2)))


def rolled_back_along_rows(x, w):
    return np.sum(w * np.sin(np.roll(x, -3, axis=1)))


def rolled_flat(x, w):
    return np.sum(w * np.sin(np.roll(x, -4)))


def rolled_two_axes(x, w):
    return np.sum(w * np.sin(np.roll(x, (1, -2), axis=(0, 1))))


def taken_flat(x, w):
    return np.sum(w * np.sin(np.take(x, np.array([0, 5, 5, -1, 5]))))


def taken_along_columns(x, w):
    return np.sum(w * np.sin(np.take(x, np.array([[2, 0], [2, 2]]), axis=1)))


def taken_one(x, w):
    return w * np.sin(np.take(x, 3))


def taken_last_row(x, w):
    return np.sum(w * np.sin(np.take(x, -1, axis=0)))


def flipped_left_right(x, w):
    return np.sum(w * np.sin(np.fliplr(x)))


def flipped_up_down(x, w):
    return np.sum(w * np.sin(np.flipud(x)))


def padded(x, w):
    return np.sum(w * np.sin(np.pad(x, ((1, 0), (2, 1)))))


def padded_evenly(x, w):
    return np.sum(w * np.sin(np.pad(x, 2, mode="constant")))


def padded_vector(x, w):
    return np.sum(w * np.sin(np.pad(x, (0, 3), constant_values=0.5)))


# (function, shape of x, shape of w)
CASES = [
    (rolled, (5,), (5,)), (rolled_back_along_rows, (3, 4), (3, 4)), (rolled_flat, (2, 3), (2, 3)),
    (rolled_two_axes, (3, 4), (3, 4)), (taken_flat, (2, 3), (5,)),
    (taken_along_columns, (2, 3), (2, 2, 2)), (taken_one, (2, 3), ()),
    (taken_last_row, (3, 4), (4,)), (flipped_left_right, (2, 3), (2, 3)),
    (flipped_up_down, (3, 2), (3, 2)), (padded, (2, 3), (3, 6)), (padded_evenly, (2, 2), (6, 6)),
    (padded_vector, (3,), (6,)),
]
IDS = [case[0].__name__ for case in CASES]


def _draw(shape, rng):
    return rng.normal(size=shape) if shape else float(rng.normal())


def _point(case, seed=0):
    rng = np.random.default_rng(seed)
    return _draw(case[1], rng), _draw(case[2], rng)


@pytest.mark.every_case
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_gradient_matches_central_differences(case):
    f = case[0]
    x, w = _point(case)
    np.testing.assert_allclose(grad(f)(x, w), numerical_grad(f, (x, w)), rtol=1e-6, atol=1e-8)


@pytest.mark.every_case
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_tangent_matches_central_differences(case):
    f = case[0]
    x, w = _point(case)
    t = _draw(case[1], np.random.default_rng(1))
    value, tangent = jvp(f, (x, w), (t, 0.0 * w))
    assert np.isclose(value, f(x, w))
    expected = numerical_jvp(lambda x: f(x, w), (x,), (t,))
    np.testing.assert_allclose(tangent, expected, rtol=1e-6, atol=1e-8)


def every_gather(x, w):
    total = np.sum(w * np.sin(np.roll(x, (1, -2), axis=(0, 1))))
    total += np.sum(w[0] * np.cos(np.roll(x, -5)[1]))
    total += np.sum(w[:2, :3] * np.sin(np.take(x, np.array([[0, 7, 7], [-1, 7, 2]]))))
    total += np.sum(w[1] * np.sin(np.take(x, np.array([3, 0, 3, 3]), axis=1)))
    total += np.sum(w[:, 0] * np.sin(np.take(x, -2, axis=1)))
    total += np.sum(w * np.sin(np.fliplr(x)) + w * np.cos(np.flipud(x)))
    return total + np.sum(np.sin(np.pad(x, ((1, 0), (2, 1)))) * np.pad(w, ((0, 1), (1, 2))))


def test_compiled_gradient_of_every_gather_matches_central_differences():
    rng = np.random.default_rng(2)
    x, w = rng.normal(size=(3, 4)), rng.normal(size=(3, 4))
    expected = numerical_grad(every_gather, (x, w))
    np.testing.assert_allclose(grad(every_gather)(x, w), expected, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(jit(grad(every_gather))(x, w), expected, rtol=1e-6, atol=1e-8)
    t = rng.normal(size=(3, 4))
    _, tangent = jit(jvp(every_gather))(x, w, t, np.zeros((3, 4)))
    assert np.isclose(tangent, np.sum(expected * t), rtol=1e-6)


def test_jit_compiles_the_axis_and_pad_numba_lacks():
    rng = np.random.default_rng(3)
    x, w = rng.normal(size=(3, 4)), rng.normal(size=(3, 4))
    np.testing.assert_allclose(jit(every_gather)(x, w), every_gather(x, w), rtol=1e-12)


def test_hessian_through_roll_take_and_pad():
    def f(x, w):
        return np.sum(w * np.sin(np.roll(x, -1))) + np.sum(np.take(x, np.array([1, 1, 0])) ** 3) \
            + np.sum(np.pad(x, 1) ** 2 * np.arange(6.0))
    rng = np.random.default_rng(4)
    x, w = rng.normal(size=4), rng.normal(size=4)
    expected = numerical_jacobian(lambda x: grad(f)(x, w), x)
    np.testing.assert_allclose(hessian(f)(x, w), expected, rtol=1e-5, atol=1e-7)


def test_batched_gradient_matches_a_loop_of_gradients():
    rng = np.random.default_rng(5)
    xs, w = rng.normal(size=(3, 3, 4)), rng.normal(size=(3, 4))
    got = vmap(grad(every_gather), in_axes=(0, None))(xs, w)
    np.testing.assert_allclose(got, [grad(every_gather)(x, w) for x in xs], rtol=1e-12)


def padded_at_the_edges(x):
    return np.sum(np.pad(x, 1, mode="edge"))


def wrapped_indices(x):
    return np.sum(np.take(x, np.array([0, 7]), mode="wrap"))


@pytest.mark.parametrize("transform", [grad, lambda f: (lambda x: jvp(f, (x,), (x,)))])
def test_pad_other_than_constant_is_refused_at_its_line(transform):
    with pytest.raises(TransformError) as info:
        transform(padded_at_the_edges)(np.ones(3))
    assert "numpy.pad with mode 'edge' has no derivative rule" in str(info.value)
    assert "mode='constant'" in str(info.value)
    assert info.value.line.strip() == 'return np.sum(np.pad(x, 1, mode="edge"))'


def test_take_with_a_mode_is_refused_with_what_to_write():
    with pytest.raises(TransformError) as info:
        grad(wrapped_indices)(np.ones(3))
    assert "mode=" in str(info.value) and "i % n" in str(info.value)
    assert info.value.line.strip() == 'return np.sum(np.take(x, np.array([0, 7]), mode="wrap"))'
