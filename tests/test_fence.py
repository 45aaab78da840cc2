"""Fence: every refused construct is a TransformError at the user's line, with a hint."""
import importlib.util
import inspect
import sys

import pytest

import refused
from test_frontend import check_located
from transformer import TransformError
from transformer.frontend import parse

# function -> (words the message must contain, text the caret must point at)
CASES = {
    "uses_yield": ("`yield`", "yield x"),
    "uses_yield_from": ("`yield from`", "yield from"),
    "uses_async_def": ("async functions", "async def uses_async_def"),
    "uses_nested_async_def": ("async functions", "async def inner"),
    "uses_try": ("try/except", "try:"),
    "uses_with": ("`with`", "with "),
    "uses_global": ("`global`", "global COUNTER"),
    "uses_nonlocal": ("function defined inside", "def inner"),
    "uses_class": ("class definitions", "class Box"),
    "uses_lambda": ("lambda inside", "lambda y"),
    "uses_nested_def": ("function defined inside", "def inner"),
    "uses_del": ("`del`", "del y"),
    "uses_import": ("`import`", "import math"),
    "uses_import_from": ("`import`", "from math"),
    "uses_list_comp": ("list comprehensions", "[v for"),
    "uses_set_comp": ("set comprehensions", "{v for"),
    "uses_dict_comp": ("dict comprehensions", "{v: v"),
    "uses_generator": ("generator expressions", "(v for v"),
    "uses_walrus": ("walrus", "y := x"),
    "uses_set_literal": ("set literals", "{x, 1}"),
    "uses_fstring": ("f-strings", 'f"{x}"'),
    "uses_match": ("`match`", "match x"),
    "uses_varargs": ("*args / **kwargs parameters", "xs"),
    "uses_kwargs": ("*args / **kwargs parameters", "options"),
    "uses_star_call": ("star-arguments", "*x"),
    "uses_double_star_call": ("`**kwargs` in a call", "np.sum(x, **options)"),
    "uses_for_else": ("`else` on a loop", "for i in range"),
    "uses_while_else": ("`else` on a loop", "while x > 0"),
    "uses_await": ("async functions", "async def uses_await"),
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
    assert words in err.message and "not supported" in err.message
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
