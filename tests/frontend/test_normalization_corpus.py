"""The normalization passes preserve meaning.

Every corpus function goes through `anf(desugar(parse(f)))`, is loaded with the python
backend, and must return what the original returns on the same inputs, without changing
its inputs. The generated code must also be in A-normal form as anf.py's docstring states
(checked structurally on every case).
"""
import gast
import numpy as np
import pytest
from corpus import CASES, by_name

from codegen.backends import Options
from transformer.anf import anf, is_global_ref
from transformer.desugar import desugar
from transformer.frontend import parse
from transformer.materialize import compile_function

PYTHON = Options(backend="python")


def normalized(fn):
    return anf(desugar(parse(fn)))


def assert_same(expected, got):
    if isinstance(expected, tuple):
        assert isinstance(got, tuple) and len(got) == len(expected)
        for e, g in zip(expected, got):
            assert_same(e, g)
        return
    np.testing.assert_allclose(np.asarray(got), np.asarray(expected), rtol=1e-12, atol=1e-12)
    assert np.shape(got) == np.shape(expected)


def test_corpus_size():
    assert sum(c.differentiable for c in CASES) >= 120
    assert sum("control" in c.tags for c in CASES) >= 40


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_normalized_function_returns_the_same(case):
    compiled = compile_function(normalized(case.fn), PYTHON).function
    args = case.args()
    got = compiled(*args)
    for before, after in zip(case.args(), args):
        np.testing.assert_array_equal(after, before)
    assert_same(case.fn(*case.args()), got)


def augmented_assignment_through_alias(x):
    y = x.copy()
    z = y
    z += 1.0          # in-place on the array both names hold
    return np.sum(y)


def test_augmented_assignment_updates_aliased_array():
    compiled = compile_function(normalized(augmented_assignment_through_alias), PYTHON).function
    x = np.ones(3)
    assert compiled(x) == augmented_assignment_through_alias(x) == 6.0


def test_jit_of_enumerate_with_start():
    from transformer import jit
    case = by_name("loop_enumerate_with_start")
    np.testing.assert_allclose(jit(case.fn)(*case.args()), case.fn(*case.args()))


# ------------------------------------------------------------------ A-normal form shape
def _is_atom(fn, node) -> bool:
    return isinstance(node, (gast.Name, gast.Constant)) or is_global_ref(fn, node)


def _is_index(fn, node) -> bool:
    if isinstance(node, gast.Slice):
        return all(p is None or _is_atom(fn, p) for p in (node.lower, node.upper, node.step))
    if isinstance(node, gast.Tuple):
        return all(_is_index(fn, e) for e in node.elts)
    return _is_atom(fn, node)


def _is_simple(fn, value) -> bool:
    atom = lambda n: _is_atom(fn, n)  # noqa: E731
    if atom(value):
        return True
    if isinstance(value, gast.BinOp):
        return atom(value.left) and atom(value.right)
    if isinstance(value, gast.UnaryOp):
        return atom(value.operand)
    if isinstance(value, gast.Compare):
        return len(value.ops) == 1 and atom(value.left) and atom(value.comparators[0])
    if isinstance(value, gast.Call):
        callee = isinstance(value.func, gast.Name) or is_global_ref(fn, value.func) or \
            (isinstance(value.func, gast.Attribute) and atom(value.func.value))
        return callee and all(map(atom, value.args)) and \
            all(atom(k.value) for k in value.keywords)
    if isinstance(value, gast.Subscript):
        return atom(value.value) and _is_index(fn, value.slice)
    if isinstance(value, gast.Attribute):
        return atom(value.value)
    if isinstance(value, (gast.Tuple, gast.List)):
        return all(map(atom, value.elts))
    return False


def _check_block(fn, stmts):
    for stmt in stmts:
        if isinstance(stmt, gast.Assign):
            assert len(stmt.targets) == 1
            target = stmt.targets[0]
            if isinstance(target, gast.Subscript):
                assert _is_atom(fn, target.value) and _is_index(fn, target.slice)
                assert _is_atom(fn, stmt.value)
            else:
                assert isinstance(target, gast.Name)
                assert _is_simple(fn, stmt.value), gast.dump(stmt)
        elif isinstance(stmt, gast.If):
            assert _is_atom(fn, stmt.test)
            _check_block(fn, stmt.body)
            _check_block(fn, stmt.orelse)
        elif isinstance(stmt, gast.For):
            assert isinstance(stmt.target, gast.Name)
            assert isinstance(stmt.iter, gast.Call) and all(_is_atom(fn, a) for a in stmt.iter.args)
            _check_block(fn, stmt.body)
        elif isinstance(stmt, gast.While):
            assert _is_atom(fn, stmt.test)
            _check_block(fn, stmt.body)
        elif isinstance(stmt, gast.Return):
            assert _is_atom(fn, stmt.value)
        elif isinstance(stmt, gast.Expr):
            assert _is_simple(fn, stmt.value)
        else:
            assert isinstance(stmt, (gast.Break, gast.Continue, gast.Pass, gast.Assert,
                                     gast.Raise)), gast.dump(stmt)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_normalized_function_is_in_anf(case):
    fn = normalized(case.fn)
    _check_block(fn, fn.node.body)
