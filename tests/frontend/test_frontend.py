"""Frontend: source of every kind of callable in, a Function with resolved names out."""
import functools
import inspect
import collections
import math
import sys

import numpy as np
import pytest

import programs
from codegen import backends
from transformer import TransformError, jit
from transformer import materialize
from transformer.frontend import parse
from transformer.function import source_lines

PYTHON = backends.Options(backend="python")

# two lambdas on one line, told apart by column
first, second = (lambda x: x + 1.0), (lambda x: x * 2.0)


def run(fun, *args):
    """Run the generated code of `fun` (python backend): what every transform builds on."""
    return materialize.compile_function(parse(fun), PYTHON).function(*args)


def test_plain_function_resolves_globals_modules_and_helpers():
    fn = parse(programs.pair_sum)
    assert fn.name == "pair_sum"
    assert fn.env["math"] is math
    assert fn.env["sqdist"] is programs.sqdist
    assert fn.origin.filename == programs.__file__
    assert fn.node.lineno == programs.pair_sum.__code__.co_firstlineno
    x = np.arange(12.0).reshape(4, 3)
    assert run(programs.pair_sum, x) == pytest.approx(programs.pair_sum(x))


def test_dotted_library_names_resolve():
    fn = parse(programs.scaled_norm)
    assert fn.env["np"] is np and fn.env["SCALE"] == 3.0
    x = np.array([3.0, 4.0])
    assert run(programs.scaled_norm, x) == pytest.approx(15.0)


def test_decorated_function_loses_its_decorator():
    fn = parse(programs.plain_decorated)
    assert fn.node.decorator_list == []
    assert run(programs.plain_decorated, np.ones(3)) == pytest.approx(6.0)


def test_functools_wraps_decorator_is_read_through_wrapped():
    fn = parse(programs.wrapped)
    assert fn.name == "wrapped"
    assert run(programs.wrapped, np.array([1.0, 2.0])) == pytest.approx(5.0)


def test_nested_function_closure_cells_resolve():
    scale = programs.make_scaler(4.0)
    fn = parse(scale)
    assert fn.env["factor"] == 4.0 and fn.env["offset"] == 1.0
    assert run(scale, 2.0) == pytest.approx(scale(2.0))


def test_function_from_another_module_uses_that_modules_globals():
    SCALE = 100.0  # noqa: F841 - a local of the same name must not leak in
    fn = parse(programs.running)
    assert fn.env["SCALE"] == programs.SCALE


def test_lambda_passed_straight_to_jit():
    f = jit(lambda x: programs.cubic(x) + 2.0, backend="python")
    assert f(3.0) == pytest.approx(29.0)


def test_two_lambdas_on_one_line_are_told_apart_by_column():
    a, b = parse(first), parse(second)
    assert a.node.col_offset < b.node.col_offset
    assert a.node.lineno == b.node.lineno
    assert (run(first, 3.0), run(second, 3.0)) == (4.0, 6.0)


def test_lambdas_sharing_a_line_are_told_apart_or_refused_on_python_310():
    scale = 2.0
    f, g = (lambda x: x * scale), (lambda x: x + scale)
    if sys.version_info >= (3, 11):                  # code objects carry columns
        assert (run(f, 3.0), run(g, 3.0)) == (6.0, 5.0)
    else:                                            # closures compile alike: refuse, not guess
        with pytest.raises(TransformError, match="cannot tell them apart") as error:
            parse(f)
        assert "test_frontend.py" in str(error.value) and "own" in str(error.value)


def test_numba_dispatcher_is_read_through_py_func():
    fn = parse(programs.numba_kernel)
    assert fn.name == "numba_kernel" and fn.node.decorator_list == []
    x = np.arange(4.0)
    assert run(programs.numba_kernel, x) == pytest.approx(programs.numba_kernel.py_func(x))


def check_located(err: TransformError):
    """A located error: file:line:col prefix, the source line, a caret, a hint."""
    text = str(err)
    assert err.location.startswith(f"{err.filename}:{err.lineno}:")
    assert text.startswith(err.location)
    lines = text.splitlines()
    assert lines[1].strip() == err.line.strip()
    assert lines[2] == "    " + " " * err.col + "^"
    assert err.hint and lines[-1] == f"hint: {err.hint}"


@pytest.mark.parametrize("fun", [math.gcd, hash, np.busday_count],
                         ids=["math.gcd", "hash", "np.busday_count"])
def test_builtin_and_c_functions_without_rules_are_refused_with_a_hint(fun):
    """(those secant has rules for, `math.sqrt`, `np.sin`, are transformed through a
    wrapper: tests/api/test_library_functions.py)"""
    with pytest.raises(TransformError, match="not a Python function with source") as info:
        parse(fun)
    assert "def f(x)" in info.value.hint


def test_a_method_bound_to_a_library_object_is_refused_with_a_pytree_hint():
    """(a method bound to an object of the user's class is transformed with `self` bound:
    tests/api/test_object_attributes.py)"""
    class Counter(collections.Counter):
        def loss(self, x):
            return x

    with pytest.raises(TransformError, match="bound method .*Counter.loss") as info:
        parse(Counter().loss)
    assert "pytree" in info.value.hint


def test_execd_function_is_refused_with_location_and_hint():
    namespace = {}
    exec("def made_up(x):\n    return x + 1\n", namespace)
    with pytest.raises(TransformError, match="cannot read the source of made_up") as info:
        parse(namespace["made_up"])
    assert info.value.lineno == 1 and ".py file" in info.value.hint


def test_undefined_name_is_located():
    with pytest.raises(TransformError, match="'undefined_thing' is not defined") as info:
        parse(uses_undefined)
    check_located(info.value)
    assert info.value.line.strip().startswith("return undefined_thing + x")
    assert info.value.line[info.value.col:].startswith("undefined_thing")


def uses_undefined(x):
    return undefined_thing + x  # noqa: F821


def _wrapping(fn):
    @functools.wraps(fn)                  # sets __wrapped__: inspect would follow it
    def wrapper(x):
        return 2.0 * fn(x)
    return wrapper


@_wrapping
def _doubled(x):
    return x + 1.0


def _closure(k):
    return lambda x: k * x


@pytest.mark.parametrize("fn", [_doubled, _closure(3.0), programs.pair_sum],
                         ids=["decorated", "closure", "other-module"])
def test_source_lines_are_a_functions_own_as_inspect_reads_them_from_its_code(fn):
    assert source_lines(fn) == inspect.getsourcelines(fn.__code__)
    text = "".join(source_lines(fn)[0])
    assert ("def wrapper" in text) == (fn is _doubled) and "def _doubled" not in text
