"""Parse: a Python callable in, a `Function` (gast AST + resolved environment) out.

Handles plain, decorated, nested (closure) and other-module functions, lambdas passed
straight to a transformation (told apart by column when several share a line), Numba
dispatchers (read through `py_func`) and objects secant has already wrapped.

Invariant of the output: the FunctionDef has no decorators; its line numbers and
columns are those of the user's file; every free name of the body is a key of `env`.
"""
from __future__ import annotations

import ast
import builtins
import copy
import inspect
import textwrap
import types

import gast

from .errors import TransformError
from .fence import check_supported
from .function import Function, Origin
from .names import free_names


def unwrap(obj):
    """The Python function behind a secant wrapper or a Numba dispatcher, if any."""
    seen = set()
    while id(obj) not in seen:
        seen.add(id(obj))
        if hasattr(obj, "__secant_function__"):
            return obj
        if hasattr(obj, "py_func"):          # numba.njit dispatcher
            obj = obj.py_func
            continue
        if hasattr(obj, "__wrapped__"):      # functools.wraps: the source is the wrapped def
            obj = obj.__wrapped__
            continue
        break
    return obj


def parse(fn) -> Function:
    """The Function for Python callable `fn`; TransformError if it has no Python source."""
    fn = unwrap(fn)
    if hasattr(fn, "__secant_function__"):
        return fn.__secant_function__()
    if inspect.ismethod(fn):
        raise TransformError(
            f"cannot transform the bound method {fn.__qualname__}: `self` is not an array",
            hint="transform a module-level function and pass the object's arrays (or a "
                 "dataclass or dict of them, a pytree) as arguments")
    if not inspect.isfunction(fn):
        raise TransformError(
            f"cannot transform {fn!r}: it is not a Python function with source code",
            hint="pass a function defined with `def` (or a lambda) in a .py file; builtins and "
                 "C extensions have no source to rewrite. Wrap it: `def f(x): return g(x)`, "
                 "and register a rule for it with transformer.defadjoint if needed.")
    filename = inspect.getsourcefile(fn) or fn.__code__.co_filename
    try:
        lines, first = inspect.getsourcelines(fn)
    except (OSError, TypeError) as exc:
        raise TransformError(
            f"cannot read the source of {fn.__qualname__} ({exc})",
            filename=filename, lineno=fn.__code__.co_firstlineno, col=0,
            hint="secant rewrites source code: define the function in a .py file "
                 "(not in exec'd strings or an interactive prompt without source)") from None
    origin = Origin(filename, fn.__qualname__, first)
    node = _function_node(fn, lines, first, origin)
    node.decorator_list = []
    # the fence runs before names resolve: a refused construct (an import, a nested def)
    # must be reported as such, not as the undefined name it leaves behind
    check_supported(Function(node, {}, origin))
    return Function(node, _resolve_env(fn, node, origin), origin)


def _function_node(fn, lines, first, origin) -> gast.FunctionDef:
    text = "".join(lines)
    dedented = textwrap.dedent(text)
    indent = _common_indent(text)
    try:
        module = gast.parse(dedented)
    except SyntaxError:
        # a lambda inside a larger expression spanning lines: parse the statement's line
        module = gast.parse(_wrap_fragment(dedented))
    _shift_positions(module, first - 1, indent)
    if fn.__name__ == "<lambda>":
        return _lambda_node(fn, module, origin)
    for node in gast.walk(module):
        if isinstance(node, gast.FunctionDef) and node.name == fn.__name__:
            return node
        if isinstance(node, gast.AsyncFunctionDef) and node.name == fn.__name__:
            raise origin.error(node, "async functions are not supported by secant",
                               "transform a plain (non-async) function")
    raise TransformError(f"could not find the definition of {fn.__name__} in its source",
                         filename=origin.filename, lineno=first, col=0)


def _wrap_fragment(text: str) -> str:
    return "(\n" + text + "\n)"


def _common_indent(text: str) -> int:
    widths = [len(line) - len(line.lstrip()) for line in text.splitlines() if line.strip()]
    return min(widths) if widths else 0


def _shift_positions(tree, line_offset: int, col_offset: int) -> None:
    for node in gast.walk(tree):
        if hasattr(node, "lineno") and node.lineno is not None:
            node.lineno += line_offset
            if getattr(node, "end_lineno", None) is not None:
                node.end_lineno += line_offset
        if hasattr(node, "col_offset") and node.col_offset is not None:
            node.col_offset += col_offset
            if getattr(node, "end_col_offset", None) is not None:
                node.end_col_offset += col_offset


def _lambda_node(fn, module, origin) -> gast.FunctionDef:
    lambdas = [n for n in gast.walk(module) if isinstance(n, gast.Lambda)]
    lineno, col = _code_position(fn.__code__)
    chosen = [lam for lam in lambdas
              if _contains(lam.body, lineno, col)] or lambdas
    # innermost match: a lambda nested in another lambda's body is the one we want
    chosen.sort(key=lambda lam: (lam.body.lineno, lam.body.col_offset), reverse=True)
    if col is None and len(chosen) > 1:
        chosen = _same_code(chosen, fn.__code__)
        if not chosen:
            raise TransformError(
                "several lambdas share this line and Python 3.10 cannot tell them apart",
                filename=origin.filename, lineno=origin.lineno, col=0,
                hint="define the function with `def`, or put the lambda on a line of its own")
    if not chosen:
        raise TransformError("could not find the lambda in its source line",
                             filename=origin.filename, lineno=origin.lineno, col=0)
    lam = chosen[0]
    name = f"lambda_{lam.lineno}_{lam.col_offset}"
    ret = gast.Return(value=lam.body)
    gast.copy_location(ret, lam.body)
    node = gast.FunctionDef(name=name, args=lam.args, body=[ret], decorator_list=[],
                            returns=None, type_comment=None, type_params=[])
    gast.copy_location(node, lam)
    return node


def _code_position(code):
    """(line, col) of the first instruction with a real source span in `code`.

    Zero-width spans (the RESUME instruction sits at column 0) are skipped: they would
    match no lambda, or the wrong one when several lambdas share a line.
    """
    if not hasattr(code, "co_positions"):        # Python 3.10: line only
        return code.co_firstlineno, None
    for lineno, end_lineno, col, end_col in code.co_positions():
        if None in (lineno, col) or (lineno, col) == (end_lineno, end_col):
            continue
        return lineno, col
    return code.co_firstlineno, None


def _same_code(lambdas, code) -> list:
    """The lambdas whose compiled bytecode, constants and names are those of `code`.

    Python 3.10 code objects carry no columns; this tells lambdas on one line apart by what
    they compute. A lambda reading a closure variable compiles differently on its own
    (a global load), so it matches nothing and the caller refuses rather than guesses.
    """
    def signature(c):
        return c.co_code, c.co_consts, c.co_names, c.co_varnames

    found = []
    for lam in lambdas:
        tree = ast.fix_missing_locations(gast.gast_to_ast(gast.Expression(copy.deepcopy(lam))))
        compiled = compile(tree, "<lambda>", "eval")
        inner = [c for c in compiled.co_consts if isinstance(c, types.CodeType)]
        if inner and signature(inner[0]) == signature(code):
            found.append(lam)
    return found


def _contains(expr, lineno, col) -> bool:
    if col is None:
        return expr.lineno == lineno
    start = (expr.lineno, expr.col_offset)
    end = (expr.end_lineno, expr.end_col_offset)
    return start <= (lineno, col) <= end


def _resolve_env(fn, node, origin) -> dict:
    closure = {}
    if fn.__closure__:
        for name, cell in zip(fn.__code__.co_freevars, fn.__closure__):
            try:
                closure[name] = cell.cell_contents
            except ValueError:  # an empty cell: the variable is assigned later
                pass
    env = {}
    for name in sorted(free_names(node)):
        if name in closure:
            env[name] = closure[name]
        elif name in fn.__globals__:
            env[name] = fn.__globals__[name]
        elif hasattr(builtins, name):
            env[name] = getattr(builtins, name)
        else:
            use = next(n for n in gast.walk(node) if isinstance(n, gast.Name) and n.id == name)
            raise origin.error(use, f"name {name!r} is not defined",
                               hint="define it before transforming the function")
    return env
