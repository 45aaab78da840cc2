"""Fence: every refused construct is a TransformError at the user's line, with a hint."""
import importlib.util
import inspect
import sys

import numpy as np
import pytest

import refused
from test_frontend import check_located
from transformer import TransformError, grad
from transformer.frontend import parse

# function -> (the message's subject and verb, which agree; text the caret must point at)
CASES = {
    "uses_yield": ("`yield` (a generator) is", "yield x"),
    "uses_yield_from": ("`yield from` (a generator) is", "yield from"),
    "uses_async_def": ("async functions are", "async def uses_async_def"),
    "uses_nested_async_def": ("async functions are", "async def inner"),
    "uses_try": ("try/except is", "try:"),
    "uses_with": ("`with` blocks are", "with "),
    "uses_global": ("`global` is", "global COUNTER"),
    "uses_nonlocal": ("`nonlocal` is", "nonlocal x"),
    "uses_class": ("class definitions are", "class Box"),
    "uses_del": ("`del` is", "del y"),
    "uses_import": ("`import` inside the function is", "import math"),
    "uses_import_from": ("`import` inside the function is", "from math"),
    "uses_set_comp": ("set comprehensions are", "{v for"),
    "uses_generator": ("generator expressions are", "(v for v"),
    "uses_walrus": ("the walrus operator `:=` is", "y := x"),
    "uses_set_literal": ("set literals are", "{x, 1}"),
    "uses_fstring": ("f-strings are", 'f"{x}"'),
    "uses_match": ("`match` statements are", "match x"),
    "uses_varargs": ("*args / **kwargs parameters are", "xs"),
    "uses_kwargs": ("*args / **kwargs parameters are", "options"),
    "uses_double_star_call": ("`**kwargs` in a call is", "np.sum(x, **options)"),
    "uses_for_else": ("`else` on a loop is", "for i in range"),
    "uses_while_else": ("`else` on a loop is", "while x > 0"),
    "uses_await": ("async functions are", "async def uses_await"),
}


def refused_line(fun) -> int:
    lines, first = inspect.getsourcelines(fun)
    marked = [i for i, line in enumerate(lines) if line.rstrip().endswith("# refused")]
    assert len(marked) == 1, fun.__name__
    return first + marked[0]


def test_every_refused_function_has_a_case():
    defined = {name for name, value in vars(refused).items()
               if name.startswith("uses_") and callable(value)}
    assert defined == set(CASES)


@pytest.mark.parametrize("name", sorted(CASES))
def test_refused_construct_is_located_with_caret_and_hint(name):
    fun = getattr(refused, name)
    words, at_caret = CASES[name]
    with pytest.raises(TransformError) as info:
        parse(fun)
    err = info.value
    assert err.message == f"{words} not supported by secant"
    assert err.filename == refused.__file__
    assert err.lineno == refused_line(fun)
    assert err.line[err.col:].startswith(at_caret), (err.line, err.col)
    check_located(err)


TRY_STAR = """\
def uses_try_star(x):
    try:
        y = 1.0 / x
    except* ZeroDivisionError:
        y = 0.0
    return y
"""


@pytest.mark.skipif(sys.version_info < (3, 11), reason="except* is Python 3.11 syntax")
def test_try_star_is_refused(tmp_path):
    path = tmp_path / "try_star_module.py"
    path.write_text(TRY_STAR)
    spec = importlib.util.spec_from_file_location("try_star_module", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with pytest.raises(TransformError, match="try/except") as info:
        parse(module.uses_try_star)
    assert (info.value.lineno, info.value.col) == (2, 4)
    check_located(info.value)


# hints that ask for a copy name both arrays, never an empty `....copy()`
def update_shared(x):
    y = x * 2.0
    z = y
    z *= x                # updates y as well
    return np.sum(y * y)


def view_then_write(x):
    y = x * 1.0
    row = y[0]            # a view of y ...
    y[0, 0] = 3.0         # ... changed here while still used below
    return np.sum(row * y)


def test_hint_for_an_array_shared_with_an_update_names_both_names():
    with pytest.raises(ValueError, match="'y' shares its array with 'z'") as info:
        grad(update_shared)(np.ones(3))
    assert "`z = y.copy()`" in str(info.value) and "....copy()" not in str(info.value)


def test_hint_for_a_view_changed_by_a_write_names_the_view_and_its_array():
    with pytest.raises(ValueError, match="'row' is a view into 'y'") as info:
        grad(view_then_write)(np.ones((2, 2)))
    assert "`row = y[...].copy()`" in str(info.value)
