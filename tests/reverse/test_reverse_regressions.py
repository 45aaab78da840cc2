"""Regression tests for reverse-mode bugs, each checked against finite differences."""
import numpy as np
import pytest

from gradcheck import assert_gradient_close, central_differences
from reverse_corpus import branch_defines_values
import transformer
from transformer import grad, jit
from transformer.errors import TransformError
from transformer.test_util import check_grads, numerical_jvp


def reads_array_items(xi):
    return xi[0] * xi[1] + np.sin(xi[2])


grad_items = grad(reads_array_items)


def gradient_step(xi, bparams):
    f_grads = grad_items(xi)
    return bparams + f_grads


@pytest.fixture(scope="module")
def compiled_step():
    return jit(gradient_step)


def test_grad_of_array_read_with_constant_indices_is_an_array():
    xi = np.array([0.4, -1.3, 0.9])
    g = grad(reads_array_items)(xi)
    assert isinstance(g, np.ndarray) and g.shape == xi.shape
    np.testing.assert_allclose(g, [xi[1], xi[0], np.cos(xi[2])])
    check_grads(reads_array_items, (xi,))


@pytest.mark.slow
def test_jit_grad_of_array_read_with_constant_indices(compiled_step):
    xi, bparams = np.array([0.4, -1.3, 0.9]), np.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(compiled_step(xi, bparams),
                               bparams + np.array([xi[1], xi[0], np.cos(xi[2])]))


def reads_local_array_items(x):
    a = np.sin(x)
    return a[0] * a[1] + a[2]


def test_grad_of_local_array_read_with_constant_indices():
    x = np.array([0.4, -1.3, 0.9])
    g = grad(reads_local_array_items)(x)
    c, s = np.cos(x), np.sin(x)
    np.testing.assert_allclose(g, [c[0] * s[1], s[0] * c[1], c[2]])
    check_grads(reads_local_array_items, (x,))


@pytest.mark.slow
def test_jit_grad_of_local_array_read_with_constant_indices():
    x = np.array([0.4, -1.3, 0.9])
    np.testing.assert_allclose(jit(grad(reads_local_array_items))(x),
                               grad(reads_local_array_items)(x))


def array_of_scalars(x, y):
    v = np.array([x - 1.0, y + 0.5, x * y])
    return np.sum(v * v)


def array_with_a_constant(x):
    a = np.array([x, 2.0 * x, 3.0])
    return a[0] * a[1] + a[2]


def nested_array_literal(u, x):
    a = np.array([[x, 1.0], [u[0], x * x]])
    return np.sum(a @ a)


def test_grad_of_np_array_of_a_scalar_list():
    x, y = 0.3, -0.7
    gx, gy = grad(array_of_scalars, argnums=(0, 1))(x, y)
    v = np.array([x - 1.0, y + 0.5, x * y])
    np.testing.assert_allclose([gx, gy], [2 * v[0] + 2 * v[2] * y, 2 * v[1] + 2 * v[2] * x])
    check_grads(array_of_scalars, (x, y))


def test_grad_of_np_array_with_a_constant_item():
    assert grad(array_with_a_constant)(1.5) == pytest.approx(4 * 1.5)
    check_grads(array_with_a_constant, (1.5,))


def test_grad_of_nested_np_array_literal():
    check_grads(nested_array_literal, (np.array([0.3, 0.2]), 0.8))


def test_jit_grad_of_np_array_of_a_scalar_list():
    g = grad(array_of_scalars, argnums=(0, 1))
    np.testing.assert_allclose(jit(g)(0.3, -0.7), g(0.3, -0.7))


@pytest.mark.parametrize("x", [0.9, 0.2])
def test_grad_of_grad_when_the_branch_not_taken_defines_values(x):
    check_grads(branch_defines_values, (x,), order=2)


def test_jit_grad_of_grad_when_the_branch_not_taken_defines_values():
    second = grad(grad(branch_defines_values))
    compiled = jit(second)
    for x in (0.9, 0.2):
        assert compiled(x) == pytest.approx(second(x), rel=1e-12)
    assert compiled(0.2) == pytest.approx(2.0)


SCALE = np.array([2.0, 3.0])


def shifted(x, shift=0.5, scale=SCALE):
    return np.sum(scale * (x - shift) ** 2)


def calls_with_defaults_omitted(x):
    return shifted(x) + shifted(x, 1.5)


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_call_omitting_defaulted_parameters_differentiates_the_right_slot(backend):
    x = np.array([0.3, -0.7])
    g = jit(grad(calls_with_defaults_omitted), backend=backend)(x)
    expected = np.array([2.0, 3.0]) * (2 * (x - 0.5) + 2 * (x - 1.5))
    np.testing.assert_allclose(g, expected, rtol=1e-12)


def reads_previous_trip(x):
    s = 0.0
    for i in range(3):
        if i > 0:
            s = s + t * t           # noqa: F821  (t from the previous trip)
        t = x * i                   # noqa: F841  (read by the next trip)
    return s


def test_grad_of_value_read_in_the_next_trip_before_its_assignment():
    # s = x^2 (0 + 1): the read of t at trip i is the t of trip i - 1, which is neither
    # recomputed from the current trip nor its adjoint zeroed at each trip
    x = 0.7
    assert grad(reads_previous_trip)(x) == pytest.approx(2.0 * x)
    check_grads(reads_previous_trip, (x,))


# ---------------------------------------------- in-place writes between a binding and a use
# A name rebound in a loop is recorded at each assignment and restored, at the reverse of
# the next one, to the latest record; an in-place write in between (`w[0] = x`) must be in
# the restored value, or the adjoint of `w * w` sees `w` without it (a silent wrong value).
def square(a):
    return a * a


def write_then_rebind(x, v):
    w = v.copy()
    for _ in range(2):
        w[0] = x
        w = w * w
    return w[0]


def write_then_sin(x, v):
    w = v.copy()
    for _ in range(2):
        w[0] = x
        w = np.sin(w)
    return w[0] * w[1]


def write_then_helper(x, v):
    w = v.copy()
    for _ in range(2):
        w[0] = x
        w = square(w)
    return w[0] + w[2]


def write_at_loop_index(x, v):
    w = v.copy()
    for i in range(2):
        w[i] = x
        w = w * w
    return w[0] + w[1]


def add_in_place_then_rebind(x, v):
    w = v.copy()
    for _ in range(2):
        w[0] += x
        w = w * w
    return w[0]


def rebind_then_write(x, v):
    w = v * 1.0
    for _ in range(3):
        w = w * w
        w[1] += x
    return np.sum(w)


def straight_line_write(x, v):
    w = v.copy()
    if x > 0:                       # w assigned in a branch: one name, recorded
        w = w * 2.0
    w[0] = x
    w = w * w
    return w[0] + w[2]


def while_write(x, v):
    w = v.copy()
    n = 0
    while n < 3:
        w[n] += x
        w = w * w
        n += 1
    return np.sum(w)


def two_writes_per_trip(x, v):
    w = v.copy()
    for i in range(2):
        w[i] = x
        w[i + 1] = w[i] * x
        w = w * w
    return np.sum(w)


def every_write(x, v):
    """The variants above in one function: one compilation for jit(grad)."""
    w = v.copy()
    w[2] = x
    w = w * w
    for i in range(2):
        w[i] += x * w[i + 1]
        w = np.sin(w) + square(w)
    n = 0
    while n < 2:
        w[n] = x
        w = w * w
        n += 1
    return w[0] * w[1] + w[2]


WRITES_BETWEEN = [write_then_rebind, write_then_sin, write_then_helper, write_at_loop_index,
                  add_in_place_then_rebind, rebind_then_write, straight_line_write,
                  while_write, two_writes_per_trip, every_write]
WRITE_POINT = (0.63, np.array([-0.9, -0.6, 0.4]))


@pytest.mark.parametrize("argnum", [0, 1])
@pytest.mark.parametrize("f", WRITES_BETWEEN, ids=lambda f: f.__name__)
def test_grad_sees_an_inplace_write_between_a_binding_and_its_use(f, argnum):
    expected = central_differences(f, WRITE_POINT, argnum)
    assert_gradient_close(grad(f, argnums=argnum)(*WRITE_POINT), expected, f.__name__)


def test_grad_sees_an_inplace_write_at_a_negative_argument():
    # the branch of straight_line_write not taken: w keeps its first value
    point = (-0.63, WRITE_POINT[1])
    expected = central_differences(straight_line_write, point, 0)
    assert_gradient_close(grad(straight_line_write)(*point), expected)


@pytest.mark.parametrize("f", [write_then_rebind, every_write], ids=lambda f: f.__name__)
@pytest.mark.slow
def test_jit_grad_sees_an_inplace_write_between_a_binding_and_its_use(f):
    compiled = jit(grad(f))
    for x in (0.63, -0.41):
        point = (x, WRITE_POINT[1])
        assert_gradient_close(compiled(*point), central_differences(f, point, 0), f.__name__)


# `w[:-1]` is a view of `w` that the write `w[1:] = ...` changes; the adjoint of `w[:-1] * x`
# with respect to `x` runs after it, so the forward sweep must keep the values read.
def shifted_by_view(x, v):
    w = v.copy()
    w[1:] = w[:-1] * x
    return np.sum(w)


def shifted_through_alias(x, v):
    w = v.copy()
    u = w[:-1]
    w[1:] = u * x
    return np.sum(w * w)


def shifted_in_loop(x, v):
    w = v.copy()
    for _ in range(3):
        w[1:] = w[:-1] * x
    return np.sum(w * w)


def every_shift(x, v):
    """The variants above in one function: one compilation for jit(grad)."""
    w = v.copy()
    w[1:] = w[:-1] * x
    u = w[:-1]
    w[1:] = u * x + w[1:]
    for _ in range(3):
        w[1:] = np.sin(w[:-1]) * x
    return np.sum(w * w)


VIEW_SHIFTS = [shifted_by_view, shifted_through_alias, shifted_in_loop, every_shift]
SHIFT_POINT = (0.7, np.array([0.3, -1.2, 2.5, 0.8, 1.7]))


@pytest.mark.parametrize("argnum", [0, 1])
@pytest.mark.parametrize("f", VIEW_SHIFTS, ids=lambda f: f.__name__)
def test_grad_reads_a_view_as_it_was_before_a_later_write_to_its_array(f, argnum):
    expected = central_differences(f, SHIFT_POINT, argnum)
    assert_gradient_close(grad(f, argnums=argnum)(*SHIFT_POINT), expected, f.__name__)


@pytest.mark.slow
def test_jit_grad_reads_a_view_as_it_was_before_a_later_write_to_its_array():
    compiled = jit(grad(every_shift))
    for x in (0.7, -1.3):
        point = (x, SHIFT_POINT[1])
        assert_gradient_close(compiled(*point), central_differences(every_shift, point, 0))


def test_derivatives_of_a_gradient_that_copies_a_view():
    """The gradient's copy of a view (`own_value`) is itself differentiated and batched:
    under jvp (a Hessian-vector product), grad of grad and vmap."""
    dx = grad(shifted_through_alias)
    x, v = SHIFT_POINT
    assert "own_value" in transformer.source(grad(shifted_through_alias))
    assert_gradient_close(grad(dx)(x, v), central_differences(dx, SHIFT_POINT, 0), "grad(grad)")
    _, tangent = transformer.jvp(dx, (x, v), (1.0, np.zeros_like(v)))
    assert_gradient_close(tangent, central_differences(dx, SHIFT_POINT, 0), "jvp(grad)")
    xs = np.array([0.7, -1.3, 0.2])
    batched = transformer.vmap(grad(shifted_through_alias), in_axes=(0, None))(xs, v)
    assert_gradient_close(batched, [dx(t, v) for t in xs], "vmap(grad)")


def scaled_row(x, M):
    W = M.copy()
    row = W[0]          # an integer index of a 2-D array is a view too
    W[0] = row * x
    return np.sum(W * W)


def test_grad_reads_a_row_view_as_it_was_before_a_write_to_the_row():
    point = (0.7, np.arange(6.0).reshape(2, 3) - 2.0)
    for argnum in (0, 1):
        expected = central_differences(scaled_row, point, argnum)
        assert_gradient_close(grad(scaled_row, argnums=argnum)(*point), expected)


def view_read_after_the_last_write(x, v):
    w = v.copy()
    w[0] = x
    u = w[1:]
    return np.sum(u * x)


def test_view_read_after_every_write_is_not_copied():
    assert "own_value" not in transformer.source(grad(view_read_after_the_last_write))
    expected = central_differences(view_read_after_the_last_write, SHIFT_POINT, 0)
    assert_gradient_close(grad(view_read_after_the_last_write)(*SHIFT_POINT), expected)


def view_bound_before_the_loop(x, v):
    w = v.copy()
    u = w[:-1]
    for _ in range(3):
        w[1:] = u * x
    return np.sum(w)


def view_bound_in_some_trips(x, v):
    w = v.copy()
    for k in range(3):
        if k == 0:
            u = w[:-1]
        w[1:] = u * x
    return np.sum(w)


@pytest.mark.parametrize("f", [view_bound_before_the_loop, view_bound_in_some_trips],
                         ids=lambda f: f.__name__)
def test_view_the_primal_reads_after_a_write_in_a_loop_is_a_located_error(f):
    with pytest.raises(TransformError) as info:
        grad(f)(*SHIFT_POINT)
    message = str(info.value)
    assert "w[1:] = u * x" in message and "'u' is a view of 'w'" in message
    assert "u = w[:-1].copy()" in message


# A tuple handed whole to a user function carried no derivative: grad gave 0.0 (f: 48.29,
# g: 1.47). It is refused at the call; items passed one by one are differentiated.
def tuple_body(i, c):
    a, b = c
    return a * b + i, b * 1.5


def tuple_carried_through_helper(x):
    a, b = x, 2.0 * x
    for i in range(3):
        a, b = tuple_body(i, (a, b))
    return a + b


def tuple_pair(c):
    return c[0] * c[1]


def tuple_bound_then_passed(x):
    t = (x, x * x)
    u = t
    return tuple_pair(u)


def items_body(i, a, b):
    return a * b + i, b * 1.5


def items_carried_through_helper(x):
    a, b = x, 2.0 * x
    for i in range(3):
        a, b = items_body(i, a, b)
    return a + b


def tuple_read_by_a_rule(x):
    t = (x, x * x)
    return np.sum(np.array(t) ** 2) + t[0] * t[1]


@pytest.mark.parametrize("f, line", [
    (tuple_carried_through_helper, "a, b = tuple_body(i, (a, b))"),
    (tuple_bound_then_passed, "return tuple_pair(u)")])
@pytest.mark.parametrize("transform", [grad, lambda f: transformer.vmap(grad(f))],
                         ids=["grad", "vmap(grad)"])
def test_a_tuple_of_differentiated_values_passed_to_a_helper_is_refused(f, line, transform):
    with pytest.raises(TransformError, match="passed on whole") as caught:
        transform(f)(np.array([0.7]) if transform is not grad else 0.7)
    assert caught.value.line.strip() == line and "separate arguments" in caught.value.hint


@pytest.mark.parametrize("f", [items_carried_through_helper, tuple_read_by_a_rule])
def test_tuple_items_passed_one_by_one_or_read_by_a_rule_are_differentiated(f):
    assert_gradient_close(grad(f)(0.7), central_differences(f, (0.7,), 0), f.__name__)


def scaled_in_place_after_a_copy(x, v):
    a = x               # the gradient guards `a *= ...` against sharing x (check_not_shared)
    a *= 0.5 + 0.25 * np.tanh(np.dot(v, v) * np.cos(a))
    return a * a + x * np.sum(v)


def test_a_hessian_vector_product_runs_through_the_gradients_guards():
    """jvp(grad(f)) copies the reverse sweep's guard calls (they change no value); it refused
    them as 'a call whose result is unused'."""
    gradient = grad(scaled_in_place_after_a_copy, argnums=(0, 1))
    point = (0.4, np.array([0.3, -0.8, 0.5]))
    direction = (0.75, np.array([1.0, -0.5, 0.25]))
    _, got = transformer.jvp(gradient, point, direction)
    expected = numerical_jvp(gradient, point, direction)
    for g, e in zip(got, expected):
        assert_gradient_close(g, e)


# A loop over a list of layers, unrolled, binds W twice; the per-binding renaming mutated a
# node the two copies shared, so the first layer read a global W and got a zero gradient
W = np.full((3, 4), 0.5)        # a module global of the same name, as notebooks have


def loss_over_layers(layers, x):
    h = x
    for W, b in layers:     # noqa: F402 - the loop variable shadows the global on purpose
        h = np.tanh(h @ W + b)
    return np.sum(h * h)


def test_each_unrolled_layer_reads_its_own_weights():
    rng = np.random.default_rng(3)
    layers = [(rng.normal(size=(3, 4)), rng.normal(size=4)),
              (rng.normal(size=(4, 2)), rng.normal(size=2))]
    x = rng.normal(size=(5, 3))
    got = grad(loss_over_layers)(layers, x)
    for k, (Wk, bk) in enumerate(layers):
        for j, leaf in enumerate((Wk, bk)):
            def partial(v, k=k, j=j):
                changed = [list(layer) for layer in layers]
                changed[k][j] = v
                return loss_over_layers([tuple(layer) for layer in changed], x)
            assert_gradient_close(got[k][j], central_differences(partial, (leaf,), 0),
                                  f"layer {k} leaf {j}")
