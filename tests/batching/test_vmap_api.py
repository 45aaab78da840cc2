"""vmap's API: every in_axes/out_axes form, keyword arguments, axis_size, size errors,
nested vmap, and what show_vmap reports. Oracles: NumPy broadcasting and Python loops."""
import numpy as np
import pytest

from transformer import TransformError, jit, show_vmap, vmap


def affine(x, y):
    return x * 2.0 + y


def loss(params, x):
    return np.sum(params["w"] * x) + params["b"]


def pair_sum(t, s):
    return t[0] * s + t[1]


def two_outputs(x):
    return np.sum(x), 1.0


def dist(a, b):
    d = a - b
    return np.sqrt(np.sum(d * d))


rng = np.random.default_rng(0)
X = rng.normal(size=(3, 4))
Y = rng.normal(size=3)


@pytest.mark.parametrize("axis", [1, -1])
def test_in_axes_int_and_negative_map_columns(axis):
    got = vmap(affine, in_axes=(axis, None))(X, Y)
    want = np.stack([affine(X[:, j], Y) for j in range(4)])
    np.testing.assert_allclose(got, want)


@pytest.mark.parametrize("out_axes", [1, -1])
def test_out_axes_places_the_batch_axis(out_axes):
    got = vmap(affine, in_axes=(1, None), out_axes=out_axes)(X, Y)
    np.testing.assert_allclose(got, X * 2.0 + Y[:, None])


def test_in_and_out_axes_compiled():
    got = jit(vmap(affine, in_axes=(1, None), out_axes=1))(X, Y)
    np.testing.assert_allclose(got, X * 2.0 + Y[:, None])


def test_in_axes_none_broadcasts_an_unmapped_argument():
    got = vmap(affine, in_axes=(None, 0))(Y[0], X[:, 0])
    np.testing.assert_allclose(got, Y[0] * 2.0 + X[:, 0])


def test_in_axes_dict_prefix_maps_some_leaves():
    params = {"w": rng.normal(size=(5, 3)), "b": 1.5}
    xs = rng.normal(size=(5, 3))
    got = vmap(loss, in_axes=({"w": 0, "b": None}, 0))(params, xs)
    want = [loss({"w": params["w"][i], "b": 1.5}, xs[i]) for i in range(5)]
    np.testing.assert_allclose(got, want)


def test_unmapped_dict_argument():
    params = {"w": rng.normal(size=3), "b": 0.5}
    xs = rng.normal(size=(4, 3))
    got = vmap(loss, in_axes=(None, 0))(params, xs)
    np.testing.assert_allclose(got, [loss(params, x) for x in xs])


def test_in_axes_tuple_prefix_for_a_tuple_argument():
    got = vmap(pair_sum, in_axes=((0, None), 0))((np.arange(3.0), 10.0), np.ones(3))
    np.testing.assert_allclose(got, [10.0, 11.0, 12.0])


def test_axis_size_when_nothing_is_mapped():
    got = vmap(affine, in_axes=(None, None), axis_size=3)(1.0, 2.0)
    np.testing.assert_allclose(got, [4.0, 4.0, 4.0])


def test_all_unmapped_without_axis_size_is_an_error():
    with pytest.raises(TransformError, match="axis_size"):
        vmap(affine, in_axes=None)(1.0, 2.0)


def test_mismatched_sizes_name_the_arguments_and_sizes():
    with pytest.raises(ValueError, match=r"'x' has size 3, 'y' has size 4"):
        vmap(affine)(np.ones(3), np.ones(4))


def test_mismatched_sizes_compiled_name_the_arguments_and_sizes():
    # jit checks the mapped axes as vmap does, before the compiled code runs
    with pytest.raises(ValueError, match=r"'x' has size 3, 'y' has size 4"):
        jit(vmap(affine))(np.ones(3), np.ones(4))


def test_keyword_arguments_are_mapped_over_axis_0():
    got = vmap(affine, in_axes=(0, None))(np.ones(3), y=np.arange(3.0))
    np.testing.assert_allclose(got, [2.0, 3.0, 4.0])


def test_an_in_axes_tuple_shorter_than_the_positional_arguments_is_refused():
    # as JAX: one entry per positional argument (it used to map the missing ones at 0)
    for fn in (vmap(affine, in_axes=(0,)), jit(vmap(affine, in_axes=(0,)))):
        with pytest.raises(ValueError, match="in_axes has 1 entry for 2 positional "
                                             "arguments of affine"):
            fn(np.ones(3), np.arange(3.0))
    got = vmap(affine, in_axes=(0,))(np.ones(3), y=np.arange(3.0))   # y by keyword: axis 0
    np.testing.assert_allclose(got, [2.0, 3.0, 4.0])


def test_out_axes_none_for_an_output_that_does_not_vary():
    total, one = vmap(two_outputs, out_axes=(0, None))(np.ones((3, 2)))
    np.testing.assert_allclose(total, [2.0, 2.0, 2.0])
    assert one == 1.0


def test_out_axes_none_for_a_varying_output_is_an_error_at_the_line():
    with pytest.raises(TransformError, match="out_axes is None") as info:
        vmap(two_outputs, out_axes=None)(np.ones((3, 2)))
    assert "test_vmap_api.py" in str(info.value)


def test_unmapped_output_is_broadcast_with_out_axes_0():
    total, one = vmap(two_outputs)(np.ones((3, 2)))
    np.testing.assert_allclose(one, [1.0, 1.0, 1.0])


def test_nested_vmap_gives_pairwise_distances():
    a, b = rng.normal(size=(5, 3)), rng.normal(size=(6, 3))
    pairwise = vmap(vmap(dist, (None, 0)), (0, None))
    want = np.sqrt(((a[:, None] - b[None]) ** 2).sum(-1))
    np.testing.assert_allclose(pairwise(a, b), want)
    np.testing.assert_allclose(jit(pairwise)(a, b), want)


def test_invalid_arguments():
    with pytest.raises(ValueError, match="method"):
        vmap(affine, method="fast")
    with pytest.raises(TypeError, match="in_axes"):
        vmap(affine, in_axes=(0.5, 0))
    with pytest.raises(ValueError, match="in_axes has 3 entries"):
        vmap(affine, in_axes=(0, 0, 0))(X, Y)
    with pytest.raises(ValueError, match="out of range"):
        vmap(affine, in_axes=(2, None))(X, Y)


def test_show_vmap_reports_strategy_and_reason():
    text = show_vmap(affine, in_axes=(0, None))
    assert "vmap: vectorize strategy - every statement has a batching rule" in text
    assert "def affine_vmap(x, y):" in text


def test_matvec_becomes_one_matrix_product():
    def matvec(m, v):
        return m @ v
    text = show_vmap(matvec, in_axes=(None, 0))
    assert "dot_right(m, v)" in text and "for " not in text
    m, v = rng.normal(size=(4, 3)), rng.normal(size=(6, 3))
    np.testing.assert_allclose(vmap(matvec, in_axes=(None, 0))(m, v), v @ m.T)


def scaled(x, y=2.0, *, z=1.0):
    return x * y + z


def halves(x):
    return {"a": x * 2.0, "b": 1.0}


def determinant(m):
    return np.linalg.det(m)


def test_defaults_are_not_mapped_and_keywords_are():
    xs = np.arange(3.0)
    np.testing.assert_allclose(vmap(scaled)(xs), xs * 2.0 + 1.0)
    np.testing.assert_allclose(vmap(scaled)(xs, np.ones(3)), xs + 1.0)
    np.testing.assert_allclose(vmap(scaled, in_axes=[0, None])(xs, 5.0), xs * 5.0 + 1.0)
    np.testing.assert_allclose(vmap(scaled)(xs, z=np.arange(3.0)), xs * 3.0)


def test_out_axes_dict_prefix():
    got = vmap(halves, out_axes={"a": 0, "b": None})(np.arange(3.0))
    np.testing.assert_allclose(got["a"], [0.0, 2.0, 4.0])
    assert got["b"] == 1.0


def test_primitive_without_batching_rule_loops_and_says_so():
    ms = rng.normal(size=(3, 2, 2))
    text = show_vmap(determinant)
    assert "vmap: loop strategy - no batching rule for np.linalg.det" in text
    np.testing.assert_allclose(vmap(determinant)(ms), [np.linalg.det(m) for m in ms])
    with pytest.raises(TransformError, match="no batching rule for np.linalg.det"):
        vmap(determinant, method="vectorize")(ms)


def test_tuple_argument_with_only_a_later_leaf_mapped():
    shared_then_mapped = ((None, 0), None)
    got = vmap(pair_sum, in_axes=shared_then_mapped)((10.0, np.arange(3.0)), 2.0)
    np.testing.assert_allclose(got, [20.0, 21.0, 22.0])
    # each leaf is a parameter of its own at the pytree boundary: any axis maps
    a, b = np.arange(6.0).reshape(2, 3), np.arange(3.0) * 10
    np.testing.assert_allclose(vmap(pair_sum, in_axes=((1, 0), None))((a, b), 2.0),
                               [pair_sum((a[:, i], b[i]), 2.0) for i in range(3)])


def test_empty_batch_under_the_loop_strategy_is_a_clear_error():
    with pytest.raises(ValueError, match="empty batch"):
        vmap(determinant)(np.zeros((0, 2, 2)))


def _keyword_scaled(x, v, s=0.5, *, k=1.5):
    return s * np.sum(np.sin(x) * v) + k * np.sum(x * x)


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_jit_of_vmap_maps_a_keyword_argument_over_axis_0_as_vmap_does(backend):
    xs = np.array([[0.3, -1.2, 0.7], [0.6, -2.4, 1.4], [-0.3, 1.2, -0.7]])
    v, ks = np.array([1.5, -0.5, 2.0]), np.array([0.5, -1.0, 2.0])
    batched = jit(vmap(_keyword_scaled, (0, None, None)), backend=backend)
    expected = [_keyword_scaled(x, v, 2.0, k=k) for x, k in zip(xs, ks)]
    np.testing.assert_allclose(batched(xs, v, 2.0, k=ks), expected, rtol=1e-12)
    # the usual call (k left at its default) is another compiled variant
    np.testing.assert_allclose(batched(xs, v, 2.0),
                               [_keyword_scaled(x, v, 2.0) for x in xs], rtol=1e-12)
