"""`pure_callback` and `io_callback`: host Python called from generated code, its result
checked against the declared shapes and dtypes, under jit, grad (custom_vjp) and vmap
(`vmap_method`), with JAX's refusals - compared with JAX itself where it is installed."""
import numpy as np
import pytest

import transformer
from transformer import (ShapeDtypeStruct, custom_vjp, debug, grad, io_callback, jit,
                         pure_callback, vmap)
from transformer.test_util import numerical_grad

VEC3 = ShapeDtypeStruct((3,), np.float64)
PAIR = (ShapeDtypeStruct((3,), np.float64), ShapeDtypeStruct((), np.int64))
CALLS = []
BEHAVIOUR = {"sin": np.sin}


def host_sin(a):
    CALLS.append(np.shape(a))
    return BEHAVIOUR["sin"](a)


def host_pair(a):
    return np.cos(a), np.int64(a.shape[0])


def log(*values):
    CALLS.append(tuple(np.asarray(v).tolist() for v in values))


def sequential(x):
    y = pure_callback(host_sin, VEC3, x, vmap_method="sequential")
    return np.sum(y * x)


def broadcast_all(x, w):
    y = pure_callback(host_sin, VEC3, x * w, vmap_method="broadcast_all")
    return np.sum(y)


def expand_dims(x, w):
    y = pure_callback(host_sin, VEC3, x, w, vmap_method="expand_dims")
    return np.sum(y)


def undeclared(x):
    y = pure_callback(host_sin, VEC3, x)
    return np.sum(y)


def pair(x):
    c, n = pure_callback(host_pair, PAIR, x)
    io_callback(log, None, n)
    return np.sum(c) * n


def logged(x):
    io_callback(log, None, x)
    return np.sum(x * x)


def shape_logged(x):
    io_callback(log, None, x.shape[0])
    return np.sum(x * x)


def ordered(x):
    io_callback(log, None, x, ordered=True)
    return np.sum(x)


@custom_vjp
def hsin(x):
    return pure_callback(host_sin, VEC3, x, vmap_method="sequential")


def _hsin_fwd(x):
    return hsin(x), x


def _hsin_bwd(x, g):
    return (g * np.cos(x),)


hsin.defvjp(_hsin_fwd, _hsin_bwd)


def through_custom_vjp(x):
    return np.sum(hsin(x) * x)


jit_pair = jit(pair)
X = np.array([0.25, 0.5, 1.0])
XS = np.array([[0.25, 0.5, 1.0], [1.5, -0.5, 2.0]])


@pytest.fixture(autouse=True)
def _fresh():
    CALLS.clear()
    BEHAVIOUR["sin"] = np.sin
    yield


def test_jit_calls_the_host_at_run_time_and_keeps_the_declared_tree(capsys):
    got = jit_pair(X)
    assert got == pytest.approx(np.sum(np.cos(X)) * 3)
    got = jit_pair(X[:3] * 2.0)
    assert got == pytest.approx(np.sum(np.cos(2 * X)) * 3)
    assert CALLS == [(3,), (3,)]
    assert pair(X) == pytest.approx(np.sum(np.cos(X)) * 3)     # plain Python agrees


def test_jit_reports_a_result_of_the_wrong_shape_or_dtype_at_the_call():
    BEHAVIOUR["sin"] = lambda a: np.sin(a)[:2].astype(np.float32)
    with pytest.raises(transformer.TransformError) as info:
        jit(sequential)(X)
    text = str(info.value)
    assert "test_callbacks.py:32:" in text and "pure_callback(host_sin" in text
    assert "shape (2,) and dtype float32" in text and "shape (3,) and dtype float64" in text


def test_plain_call_reports_a_result_of_the_wrong_shape():
    BEHAVIOUR["sin"] = lambda a: np.sin(a).astype(np.float32)
    with pytest.raises(transformer.TransformError, match="dtype float32.*dtype float64") as info:
        sequential(X)
    assert "test_callbacks.py:32:" in str(info.value)


def test_grad_through_a_custom_vjp_around_the_callback():
    expected = numerical_grad(through_custom_vjp, [X])
    np.testing.assert_allclose(grad(through_custom_vjp)(X), expected, rtol=1e-6)
    np.testing.assert_allclose(grad(through_custom_vjp)(X), np.sin(X) + X * np.cos(X))


def test_grad_without_custom_vjp_raises_jaxs_error_at_the_call():
    with pytest.raises(transformer.TransformError,
                       match="Pure callbacks do not support JVP") as info:
        grad(sequential)(X)
    assert "test_callbacks.py:32:" in str(info.value)


def test_io_callback_under_grad_raises_only_when_it_sees_the_differentiated_value():
    with pytest.raises(transformer.TransformError, match="IO callbacks do not support JVP"):
        grad(logged)(X)
    np.testing.assert_allclose(grad(shape_logged)(X), 2 * X)
    assert CALLS == [(3,)]


def test_vmap_sequential_calls_once_per_example():
    got = vmap(sequential)(XS)
    np.testing.assert_allclose(got, [np.sum(np.sin(x) * x) for x in XS])
    assert CALLS == [(3,), (3,)]


def test_vmap_broadcast_all_calls_once_with_every_argument_batched():
    w = np.array([1.0, 2.0, 3.0])
    got = vmap(broadcast_all, in_axes=(0, None))(XS, w)
    np.testing.assert_allclose(got, [np.sum(np.sin(x * w)) for x in XS])
    assert CALLS == [(2, 3)]


def test_vmap_expand_dims_gives_unbatched_arguments_a_leading_axis_of_one():
    seen = []
    BEHAVIOUR["sin"] = lambda a: np.sin(a)
    w = np.array([1.0, 2.0, 3.0])

    def two(a, b):
        seen.append((a.shape, b.shape))
        return np.sin(a) * b

    spec = VEC3

    def f(x, w):
        y = pure_callback(two, spec, x, w, vmap_method="expand_dims")
        return np.sum(y)

    got = vmap(f, in_axes=(0, None))(XS, w)
    np.testing.assert_allclose(got, [np.sum(np.sin(x) * w) for x in XS])
    assert seen == [((2, 3), (1, 3))]


def test_vmap_without_vmap_method_raises_jaxs_error_at_the_call():
    with pytest.raises(transformer.TransformError, match="Got vmap_method=None") as info:
        vmap(undeclared)(XS)
    assert "test_callbacks.py:47:" in str(info.value)


def test_vmap_of_an_ordered_io_callback_raises_and_an_unordered_one_loops():
    with pytest.raises(transformer.TransformError, match="Cannot `vmap` ordered IO callback"):
        vmap(ordered)(XS)
    np.testing.assert_allclose(vmap(logged)(XS), np.sum(XS * XS, axis=1))
    assert CALLS == [(XS[0].tolist(),), (XS[1].tolist(),)]


def test_a_result_declaration_made_inside_the_function_is_refused_with_a_hint():
    def f(x):
        y = pure_callback(host_sin, ShapeDtypeStruct((3,), np.float64), x)
        return np.sum(y)

    with pytest.raises(transformer.TransformError, match="bound outside") as info:
        jit(f)(X)
    assert "define spec" in str(info.value)


def test_the_table_of_primitives_lists_the_callbacks_with_their_limits():
    rows = {r["name"]: r for r in transformer.primitives()}
    pure = rows["transformer.callbacks.pure_callback"]
    io = rows["transformer.callbacks.io_callback"]
    assert pure["kind"] == io["kind"] == "callback"
    assert pure["vmap"] and pure["jit"] and not pure["grad"] and not pure["cuda"]
    assert "do not support JVP" in pure["reason"] and "do not support JVP" in io["reason"]


@pytest.mark.parametrize("case", ["grad_pure", "vmap_none", "vmap_ordered", "grad_io"])
def test_refusals_match_jax(case):
    jax_ = pytest.importorskip("jax")
    jnp = pytest.importorskip("jax.numpy")
    from jax.experimental import io_callback as jax_io
    spec = jax_.ShapeDtypeStruct((3,), jnp.float32)

    def jax_pure(x):
        return jnp.sum(jax_.pure_callback(np.sin, spec, x))

    def jax_ordered(x):
        jax_io(lambda a: None, None, x, ordered=True)
        return jnp.sum(x)

    def jax_logged(x):
        jax_io(lambda a: None, None, x)
        return jnp.sum(x)

    x, xs = jnp.ones(3, jnp.float32), jnp.ones((2, 3), jnp.float32)
    jax_run, ours, phrase = {
        "grad_pure": (lambda: jax_.grad(jax_pure)(x), lambda: grad(sequential)(X),
                      "Pure callbacks do not support JVP."),
        "vmap_none": (lambda: jax_.vmap(jax_pure)(xs), lambda: vmap(undeclared)(XS),
                      "Got vmap_method=None"),
        "vmap_ordered": (lambda: jax_.vmap(jax_ordered)(xs), lambda: vmap(ordered)(XS),
                         "Cannot `vmap` ordered IO callback."),
        "grad_io": (lambda: jax_.grad(jax_logged)(x), lambda: grad(logged)(X),
                    "IO callbacks do not support JVP."),
    }[case]
    with pytest.raises(Exception) as theirs:
        jax_run()
    with pytest.raises(transformer.TransformError) as mine:
        ours()
    assert phrase in str(theirs.value) and phrase in str(mine.value)


def printed_then_undeclared(x):
    debug.print("{}", x)                 # makes the whole batch a loop over the examples
    y = pure_callback(host_sin, VEC3, x)
    return np.sum(y)


def test_vmap_refuses_a_missing_vmap_method_in_the_loop_strategy_too():
    with pytest.raises(transformer.TransformError, match="Got vmap_method=None") as info:
        vmap(printed_then_undeclared)(XS)
    assert "pure_callback(host_sin, VEC3, x)" in str(info.value)
    assert CALLS == []


SHAPES = []


def shapes_seen(a, b):
    SHAPES.append((np.shape(a), np.shape(b)))
    return np.sin(a) * b


def by_sequential(x, w):
    return np.sum(pure_callback(shapes_seen, VEC3, x, w, vmap_method="sequential"))


def by_expand_dims(x, w):
    return np.sum(pure_callback(shapes_seen, VEC3, x, w, vmap_method="expand_dims"))


def by_broadcast_all(x, w):
    return np.sum(pure_callback(shapes_seen, VEC3, x, w, vmap_method="broadcast_all"))


@pytest.mark.parametrize("method", ["sequential", "expand_dims", "broadcast_all"])
def test_each_vmap_method_hands_the_callback_what_jax_hands_it(method):
    jax_ = pytest.importorskip("jax")
    jnp = pytest.importorskip("jax.numpy")
    theirs = []

    def jax_seen(a, b):
        theirs.append((np.shape(a), np.shape(b)))
        return (np.sin(a) * b).astype(np.float32)

    def jax_f(x, w):
        spec = jax_.ShapeDtypeStruct((3,), jnp.float32)
        return jnp.sum(jax_.pure_callback(jax_seen, spec, x, w, vmap_method=method))

    w = np.array([1.0, 2.0, 3.0])
    expected = np.asarray(jax_.vmap(jax_f, in_axes=(0, None))(XS.astype(np.float32),
                                                              w.astype(np.float32)))
    SHAPES.clear()
    ours = {"sequential": by_sequential, "expand_dims": by_expand_dims,
            "broadcast_all": by_broadcast_all}[method]
    got = vmap(ours, in_axes=(0, None))(XS, w)
    assert SHAPES == theirs
    np.testing.assert_allclose(got, expected, rtol=1e-5)
    np.testing.assert_allclose(got, [np.sum(np.sin(x) * w) for x in XS])


def nested(x):
    return 2.0 * np.sum(pure_callback(host_sin, VEC3, x)) + np.sum(x)


def maybe_called(x, flag):
    return flag and np.sum(pure_callback(host_sin, VEC3, x))


def test_a_callback_nested_in_an_expression_runs_once_before_the_statement():
    got = jit(nested, backend="python")(X)
    assert got == pytest.approx(2.0 * np.sum(np.sin(X)) + np.sum(X))
    assert CALLS == [(3,)]


def test_a_callback_that_may_not_run_is_refused_at_the_call():
    with pytest.raises(transformer.TransformError, match="may not run") as info:
        jit(maybe_called, backend="python")(X, True)
    assert "flag and np.sum(pure_callback" in str(info.value)


SCALED = ShapeDtypeStruct((3,), np.float64)


def table(n):
    return np.linspace(0.0, 1.0, 3) * n


def weighted_by_a_table(x):
    t = pure_callback(table, SCALED, x.shape[0])
    return np.sum(t * x * x)


def test_grad_through_a_callback_of_values_that_carry_no_derivative():
    x = np.array([0.3, -0.2, 0.5])
    expected = numerical_grad(weighted_by_a_table, [x])
    np.testing.assert_allclose(grad(weighted_by_a_table)(x), expected, rtol=1e-6)
    np.testing.assert_allclose(grad(weighted_by_a_table)(x), 2 * table(3) * x)


NAMED = {"a": VEC3}


def named_results(x):
    y = pure_callback(host_sin, NAMED, x)
    return np.sum(y["a"])


def test_a_result_declared_as_a_dict_is_refused_under_jit_not_rebuilt_as_a_tuple():
    with pytest.raises(transformer.TransformError, match="flat tuple") as info:
        jit(named_results, backend="python")(X)
    assert "pure_callback(host_sin, NAMED, x)" in str(info.value)


def test_a_jax_shape_dtype_struct_declares_the_result_too():
    jax_ = pytest.importorskip("jax")
    spec = jax_.ShapeDtypeStruct((3,), np.float64)

    def f(x):
        y = pure_callback(host_sin, spec, x)
        return np.sum(y * x)

    np.testing.assert_allclose(pure_callback(host_sin, spec, X), np.sin(X))
    np.testing.assert_allclose(jit(f, backend="python")(X), np.sum(np.sin(X) * X))
    with pytest.raises(transformer.TransformError, match="do not support JVP"):
        grad(f)(X)
