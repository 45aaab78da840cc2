"""Pytrees: JAX's tree_util names on optree, and containers across the jit boundary."""
import collections
import dataclasses
import functools

import numpy as np
import pytest

import programs
from transformer import TransformError, jit, tree_util

Point = collections.namedtuple("Point", "x y")


@tree_util.register_dataclass
@dataclasses.dataclass
class Layer:
    scale: np.ndarray
    shift: float


class Box:
    """A user class registered by hand, with JAX's flatten/unflatten signature."""

    def __init__(self, value, label):
        self.value, self.label = value, label


tree_util.register_pytree_node(Box, lambda box: ([box.value], box.label),
                               lambda label, children: Box(children[0], label))

TREE = {"W": [1.0, 2.0], "b": (3.0, Point(4.0, None)), "layer": Layer(5.0, 6.0),
        "box": Box(7.0, "tag")}


def test_flatten_orders_leaves_and_unflatten_inverts():
    leaves, treedef = tree_util.tree_flatten(TREE)
    assert leaves == [1.0, 2.0, 3.0, 4.0, 7.0, 5.0, 6.0]       # dict keys sorted, None empty
    rebuilt = tree_util.tree_unflatten(treedef, leaves)
    assert rebuilt["b"] == (3.0, Point(4.0, None))
    assert rebuilt["layer"] == Layer(5.0, 6.0)
    assert (rebuilt["box"].value, rebuilt["box"].label) == (7.0, "tag")
    assert tree_util.tree_leaves(TREE) == leaves
    assert tree_util.tree_structure(TREE) == treedef


def test_tree_map_over_several_trees():
    doubled = tree_util.tree_map(lambda a: 2 * a, TREE)
    assert tree_util.tree_leaves(doubled) == [2.0, 4.0, 6.0, 8.0, 14.0, 10.0, 12.0]
    summed = tree_util.tree_map(lambda a, b: a + b, TREE, doubled)
    assert tree_util.tree_leaves(summed) == [3.0, 6.0, 9.0, 12.0, 21.0, 15.0, 18.0]


def test_paths_and_keystr_match_jax():
    pairs, _ = tree_util.tree_flatten_with_path(TREE)
    assert [tree_util.keystr(p) for p, _ in pairs] == [
        "['W'][0]", "['W'][1]", "['b'][0]", "['b'][1].x", "['box'][<flat index 0>]",
        "['layer'].scale", "['layer'].shift"]
    path, leaf = pairs[3]
    assert path == (tree_util.DictKey("b"), tree_util.SequenceKey(1), tree_util.GetAttrKey("x"))
    assert leaf == 4.0


def test_paths_agree_with_jax_keystr():
    jax_tree_util = pytest.importorskip("jax.tree_util")
    tree = {"W": [1.0, 2.0], "b": (3.0, Point(4.0, None))}
    ours = [tree_util.keystr(p) for p, _ in tree_util.tree_flatten_with_path(tree)[0]]
    theirs = [jax_tree_util.keystr(p) for p, _ in jax_tree_util.tree_flatten_with_path(tree)[0]]
    assert ours == theirs


@pytest.fixture(scope="module")
def affine():
    return jit(programs.affine)


def affine_inputs():
    rng = np.random.default_rng(3)
    params = {"W": rng.standard_normal((2, 3)), "b": rng.standard_normal(2)}
    return params, (rng.standard_normal(3), rng.standard_normal(4)), [0.5, 2.0]


def test_jit_takes_dict_tuple_list_and_returns_a_dict(affine):
    params, xs, weights = affine_inputs()
    got, want = affine(params, xs, weights), programs.affine(params, xs, weights)
    assert set(got) == {"h", "total"}
    np.testing.assert_allclose(got["h"], want["h"], rtol=1e-12)
    assert got["total"] == pytest.approx(want["total"], rel=1e-12)


def test_constant_key_reads_become_leaf_parameters(affine):
    params, xs, weights = affine_inputs()
    affine(params, xs, weights)
    text = affine._last_compiled.text
    assert "matmul(params_W, xs_0) + params_b" in text and '"W"' not in text


def test_dataclass_argument_fields_are_read_by_position():
    f = jit(programs.layer_norm, backend="python")
    layer, x = Layer(np.array([1.0, 2.0]), 0.5), np.array([3.0, 4.0])
    assert f(layer, x) == programs.layer_norm(layer, x) == 12.0


def test_dict_argument_read_with_a_variable_key_is_refused():
    f = jit(reads_variable_key, backend="python")
    with pytest.raises(TransformError, match="constant key") as info:
        f({"a": 1.0}, "a")
    assert info.value.line.strip() == "return params[name]"


def reads_variable_key(params, name):
    return params[name]


def test_new_argument_structure_is_a_new_specialization_with_its_reason():
    f = jit(programs.doubled_a, backend="python")
    assert f({"a": 1.5}) == f({"a": 1.5}) == 3.0
    assert f({"a": 1.5, "b": 9.0}) == 3.0             # a new key: a new layout
    info = f.cache_info()
    assert (info.hits, info.misses, info.specializations) == (1, 2, 2)
    assert info.last_reason == "new argument structure"


@dataclasses.dataclass
class Scaled:
    value: np.ndarray
    steps: int


tree_util.register_dataclass(Scaled, data_fields=["value"], meta_fields=["steps"])


def test_register_dataclass_takes_jax_data_and_meta_fields():
    leaves, treedef = tree_util.tree_flatten(Scaled(np.ones(2), 3))
    assert len(leaves) == 1 and np.array_equal(leaves[0], np.ones(2))
    rebuilt = tree_util.tree_unflatten(treedef, [np.zeros(2)])
    assert rebuilt.steps == 3 and np.array_equal(rebuilt.value, np.zeros(2))
    assert treedef != tree_util.tree_structure(Scaled(np.ones(2), 4))   # meta is structure


def test_register_dataclass_as_a_decorator_with_meta_fields():
    @functools.partial(tree_util.register_dataclass, meta_fields=["name"])
    @dataclasses.dataclass
    class Named:
        x: float
        name: str
    assert tree_util.tree_leaves(Named(1.5, "a")) == [1.5]


def test_none_is_a_leaf_treedef_as_in_jax():
    assert tree_util.treedef_is_leaf(tree_util.tree_structure(None))
    assert tree_util.treedef_is_leaf(tree_util.tree_structure(1.0))
    assert not tree_util.treedef_is_leaf(tree_util.tree_structure((1.0,)))


def test_jit_source_for_container_arguments_shows_the_flat_form():
    f = jit(programs.doubled_a, backend="python")
    text = f.source({"a": 1.5, "b": 2.0})
    assert "def doubled_a(params_a, params_b):" in text
    assert "return params_a * 2.0" in text
