"""`nodes.walk` and `nodes.copy_tree` against their oracles, `ast.walk` and `copy.deepcopy`,
on every module of secant's own source (as gast and as ast trees) and on trees that share
a node or carry extra attributes."""
import ast
import copy
import pathlib

import gast
import numpy as np
import pytest

from transformer.nodes import copy_tree, walk

# every tenth module of secant's source: some 20 modules with every kind of statement
SOURCES = sorted(pathlib.Path(__file__).resolve().parents[2].joinpath("transformer")
                 .rglob("*.py"))[::10]


def _trees():
    for path in SOURCES:
        text = path.read_text()
        yield gast.parse(text)
        yield ast.parse(text)


def _assert_same_copy(original, a, b):
    """`a` and `b` are equal fresh copies of `original`: same types, same fields and
    attributes, no node or list of `original` reused."""
    if isinstance(original, ast.AST):
        assert type(a) is type(b) is type(original)
        assert a is not original and b is not original
        assert a.__dict__.keys() == b.__dict__.keys() == original.__dict__.keys()
        for key, value in original.__dict__.items():
            _assert_same_copy(value, a.__dict__[key], b.__dict__[key])
    elif isinstance(original, (list, tuple)):
        assert type(a) is type(b) is type(original)
        assert isinstance(original, tuple) or (a is not original and b is not original)
        assert len(a) == len(b) == len(original)
        for value, x, y in zip(original, a, b):
            _assert_same_copy(value, x, y)
    elif isinstance(original, np.ndarray):
        assert a is not original and np.array_equal(a, b) and np.array_equal(a, original)
    else:
        assert a == b == original or (a != a and b != b)


def test_walk_visits_what_ast_walk_visits_in_its_order():
    count = 0
    for tree in _trees():
        assert [id(n) for n in walk(tree)] == [id(n) for n in ast.walk(tree)]
        count += 1
    assert count > 35


@pytest.mark.slow
def test_copy_tree_copies_what_deepcopy_copies():
    for tree in _trees():
        _assert_same_copy(tree, copy_tree(tree), copy.deepcopy(tree))


def test_copy_tree_keeps_a_node_met_twice_shared_and_copies_other_values():
    tree = gast.parse("y = x + x")
    binop = tree.body[0].value
    binop.right = binop.left                       # one Name object in two fields
    binop.notes = (binop.left, [1.0, 2.0])         # an attribute a pass added
    binop.left.value = np.arange(3.0)
    copied = copy_tree(tree)
    expected = copy.deepcopy(tree)
    for result in (copied, expected):
        new = result.body[0].value
        assert new.left is new.right is new.notes[0]
        assert new.left is not binop.left
        assert new.notes[1] == [1.0, 2.0] and new.notes[1] is not binop.notes[1]
        assert new.left.value is not binop.left.value
    _assert_same_copy(tree, copied, expected)


@pytest.mark.parametrize("value", [[gast.Pass(), gast.Pass()], (1, "a"), None, 3.5])
def test_copy_tree_of_a_list_or_any_value_is_deepcopy(value):
    copied = copy_tree(value)
    if isinstance(value, list):
        assert copied is not value and [type(n) for n in copied] == [type(n) for n in value]
        assert all(a is not b for a, b in zip(copied, value))
    else:
        assert copied == copy.deepcopy(value)
