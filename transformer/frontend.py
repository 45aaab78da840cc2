"""Parse: a Python callable in, a `Function` (gast AST + resolved environment) out.

Handles plain, decorated, nested (closure) and other-module functions, lambdas passed
straight to a transformation (told apart by column when several share a line), Numba
dispatchers (read through `py_func`) and objects secant has already wrapped. A function
wrapped by a decorator is parsed as its wrapper (`decorated`), never silently unwrapped.

Invariant of the output: the FunctionDef has no decorators; its line numbers and
columns are those of the user's file; every free name of the body is a key of `env`;
its defaults are the values the function object holds (`defaults`). Every binding read
is reported to the active `freshness` recordings.
"""
from __future__ import annotations

import ast
import builtins
import functools
import inspect
import sys
import textwrap
import types

import gast

from codegen.backends import is_library_module

from . import decorated, freshness
from .checkpoint_for import lower_checkpoint_loops
from .at_updates import rewrite_at_updates
from .defaults import take_defaults
from .desugar import numpy_name
from .errors import TransformError
from .fence import check_supported
from .function import Function, Origin, source_lines
from .function_arguments import bind_function_arguments
from .helper_returns import flatten_helper_returns
from .inline_transforms import bind_callees
from .lambda_source import lambdas_of
from .library_functions import is_library_primitive, wrapper_for
from .lax_lowering import lower_lax_calls
from .names import Namer, outer_names, stored_and_loaded
from .object_attributes import bind_object_attributes, bound_self, called_method
from .nodes import copy_tree, walk
from .partials import is_partial, parse_partial
from .pyforms import generators_as_lists
from .running_source import running_source
from .syntax import shift_positions

# wrappers that return exactly what the function under them returns
_TRANSPARENT = tuple(t for t in (getattr(functools, "_lru_cache_wrapper", None),)
                     if t is not None)


def unwrap(obj):
    """What to parse for `obj`: the Python function behind a Numba dispatcher or a
    `functools.lru_cache`; a secant wrapper or any other object as it is."""
    seen = set()
    while id(obj) not in seen:
        seen.add(id(obj))
        if hasattr(obj, "__secant_function__"):
            return obj
        if hasattr(obj, "py_func"):          # numba.njit dispatcher
            obj = obj.py_func
            continue
        if _TRANSPARENT and isinstance(obj, _TRANSPARENT):
            obj = obj.__wrapped__
            continue
        break
    return obj


def parse(fn) -> Function:
    """The Function for Python callable `fn`; TransformError if it has no Python source."""
    if not freshness.recording_active():    # a build of its own: each callee parsed once
        with freshness.recording(freshness.Bindings()):
            return parse(fn)
    if is_library_primitive(fn):           # grad(np.tanh): through a one-line wrapper
        fn = wrapper_for(fn)
    fn = unwrap(fn)
    if is_partial(fn):                      # grad(partial(loss, scale=2.0))
        return parse_partial(fn, parse)
    if hasattr(fn, "__secant_function__"):
        return fn.__secant_function__()
    fn = called_method(fn) or fn            # grad(model): its class's __call__
    if inspect.ismethod(fn):                # grad(model.loss): `self` bound, as a partial
        return parse_partial(functools.partial(fn.__func__, bound_self(fn)), parse)
    if not inspect.isfunction(fn):
        module = sys.modules.get(getattr(fn, "__module__", None) or "")
        if hasattr(fn, "__wrapped__") and not (module and is_library_module(module)):
            raise _opaque_wrapper(fn)
        raise TransformError(
            f"cannot transform {fn!r}: it is not a Python function with source code",
            hint="pass a function defined with `def` (or a lambda) in a .py file; builtins and "
                 "C extensions have no source to rewrite. Wrap it: `def f(x): return g(x)`, "
                 "and register a rule for it with transformer.defadjoint if needed.")
    filename = inspect.getsourcefile(fn) or fn.__code__.co_filename
    try:
        if fn.__code__.co_filename == "<string>":   # exec'd: every such string shares the
            raise OSError("exec'd code keeps no source")   # name, so linecache may lie
        lines, first = source_lines(fn)     # fn's own, not its `__wrapped__`'s
    except (OSError, TypeError) as exc:
        raise TransformError(
            f"cannot read the source of {fn.__qualname__} ({exc})",
            filename=filename, lineno=fn.__code__.co_firstlineno, col=0,
            hint="secant rewrites source code: define the function in a .py file "
                 "(not in exec'd strings or an interactive prompt without source)") from None
    lines, first = running_source(fn, filename, lines, first)   # the code that runs
    origin = Origin(filename, _origin_name(fn), first)
    node = _function_node(fn, lines, first, origin)
    node.decorator_list = []
    namer = Namer(set().union(*stored_and_loaded(node)))
    bindings = freshness.Bindings()
    forwarded = decorated.forward_parameters(fn, node, origin, namer, parse) \
        if decorated.is_decorated(fn) else None
    if forwarded is None:
        extra, owners = take_defaults(fn, node, namer), (fn,)
    else:
        extra, owners = forwarded
    for owner in owners:
        if inspect.isfunction(owner):
            bindings.read_defaults(owner)
    if decorated.is_decorated(fn) and fn.__name__.isidentifier() and \
            fn.__name__ not in namer.taken:
        node.name = fn.__name__             # generated code is named after what users call
    # before the fence, which refuses lambdas and generator expressions (not `sum(...)`'s)
    node = generators_as_lists(lower_lax_calls(node, fn, origin, namer))
    # the fence runs before names resolve: a refused construct (an import, a nested def)
    # must be reported as such, not as the undefined name it leaves behind
    try:
        check_supported(Function(node, {}, origin))
    except TransformError as exc:
        if not decorated.is_decorated(fn):
            raise
        raise _in_wrapper(exc, fn) from None
    env = _resolve_env(fn, node, origin, extra, bindings)
    env = bind_object_attributes(node, env, namer)          # `cfg.scale`: a name of its own
    # JAX's `x.at[i].set(v)` becomes a write on a copy here, so that every function secant
    # reads has it rewritten: a helper the transformed function calls as well as itself
    env = dict(env)
    parsed = Function(node, env, origin)
    rewrite_at_updates(parsed, node, lambda: numpy_name(parsed, env, namer))
    # after the reads are recorded: `grad(energy)(x)`, `mod.f(x)` then call a bound name
    env = bind_callees(node, env, origin, namer)
    env = bind_function_arguments(node, env, namer, parse_callee)
    # a helper returning a dict or a nested tuple: its leaves, read by position
    env = flatten_helper_returns(Function(node, env, origin), namer, parse_callee)
    env = lower_checkpoint_loops(node, env, origin, namer, getattr(fn, "__module__", ""))
    freshness.note(bindings)
    return Function(node, env, origin)


def parse_callee(fn) -> Function:
    """`parse(fn)` for a function that a function being transformed calls: parsed once per
    build (`freshness.once_per_build`), however many callers and passes read it."""
    return freshness.once_per_build(("parse", fn), lambda: parse(fn))


def _origin_name(fn) -> str:
    """`fn`'s qualified name; for a decorator's wrapper, also which function it wraps: one
    wrapper's code put around two functions (`@scaled @scaled def f`) is two functions."""
    if decorated.is_decorated(fn):
        return f"{fn.__qualname__} around {id(fn.__wrapped__):#x}"
    return fn.__qualname__


def _opaque_wrapper(obj) -> TransformError:
    """A decorator returned an object (not a function) around a function: refuse it,
    located at the function under it, rather than transform that function alone."""
    inner = inspect.unwrap(obj)
    code = getattr(inner, "__code__", None)
    filename = code.co_filename if code else None
    lineno = code.co_firstlineno if code else None
    line = Origin(filename, "", lineno).source_line(lineno) if code else None
    return TransformError(
        f"cannot transform {getattr(obj, '__name__', obj)!r}: a decorator replaced the "
        f"function with a {type(obj).__name__} object whose code secant cannot read, and "
        "transforming the function under it would drop what the decorator does",
        filename=filename, lineno=lineno, col=0, line=line,
        hint="make the decorator return a function defined with `def` (functools.wraps), "
             "or, if it changes no value, transform the undecorated function")


def _in_wrapper(exc: TransformError, fn) -> TransformError:
    hint = f"{exc.hint}; " if exc.hint else ""
    return TransformError(f"{exc.message} (in the wrapper a decorator put around "
                          f"{fn.__name__})", filename=exc.filename, lineno=exc.lineno,
                          col=exc.col, line=exc.line, hint=hint + decorated.hint(fn))


def _function_node(fn, lines, first, origin) -> gast.FunctionDef:
    text = "".join(lines)
    dedented = textwrap.dedent(text)
    indent = _common_indent(text)
    try:
        module = gast.parse(dedented)
    except SyntaxError:
        module = _fragment(dedented, fn.__code__.co_name == "<lambda>")
    shift_positions(module, first - 1, indent)
    # the code's name: a wrapper made by functools.wraps carries the wrapped one's __name__
    code_name = fn.__code__.co_name
    if code_name == "<lambda>":
        return _lambda_node(fn, module, origin)
    for node in walk(module):
        if isinstance(node, gast.FunctionDef) and node.name == code_name:
            return node
        if isinstance(node, gast.AsyncFunctionDef) and node.name == code_name:
            raise origin.error(node, "async functions are not supported by secant",
                               "transform a plain (non-async) function")
    raise TransformError(f"could not find the definition of {code_name} in its source",
                         filename=origin.filename, lineno=first, col=0)


def _fragment(text: str, is_lambda: bool) -> gast.Module:
    """The module of source `text` that does not parse as it is: a lambda inside a larger
    expression spanning lines parses in parentheses; one in a compound statement's header
    (`for f in [lambda x: x * x]:`) or in a cut-off expression is cut out by its tokens."""
    try:
        return gast.parse(_wrap_fragment(text))
    except SyntaxError:
        if not is_lambda:
            raise
    return lambdas_of(text)


def _wrap_fragment(text: str) -> str:
    return "(\n" + text + "\n)"


def _common_indent(text: str) -> int:
    widths = [len(line) - len(line.lstrip()) for line in text.splitlines() if line.strip()]
    return min(widths) if widths else 0


def _lambda_node(fn, module, origin) -> gast.FunctionDef:
    lambdas = [n for n in walk(module) if isinstance(n, gast.Lambda)]
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
        tree = ast.fix_missing_locations(gast.gast_to_ast(gast.Expression(copy_tree(lam))))
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


def _resolve_env(fn, node, origin, extra: dict, bindings: freshness.Bindings) -> dict:
    """Each free name of `node`: from `extra` (the defaults' names), the closure, the
    globals, or builtins; records in `bindings` where each was read."""
    cells = dict(zip(fn.__code__.co_freevars, fn.__closure__ or ()))
    env = {}
    for name in sorted(outer_names(node)):
        if name in extra:
            env[name] = extra[name]
        elif name in cells and freshness.cell_contents(cells[name]) is not freshness.missing():
            env[name] = cells[name].cell_contents
            bindings.read_cell(cells[name], env[name])
        elif name in fn.__globals__:
            env[name] = fn.__globals__[name]
            bindings.read_name(fn.__globals__, name, env[name])
        elif hasattr(builtins, name):
            env[name] = getattr(builtins, name)
            bindings.read_name(fn.__globals__, name, freshness.missing())
        else:
            use = next(n for n in walk(node) if isinstance(n, gast.Name) and n.id == name)
            raise origin.error(use, f"name {name!r} is not defined",
                               hint="define it before transforming the function")
    _read_through_modules(node, env, bindings)
    return env


def _read_through_modules(node, env, bindings: freshness.Bindings) -> None:
    """Record `cfg.SCALE`, `pkg.cfg.SCALE`, ... read through a user's module."""
    for sub in walk(node):
        if not isinstance(sub, gast.Attribute):
            continue
        base = _module_of(sub.value, env)
        if base is not None and not is_library_module(base):
            bindings.read_name(base.__dict__, sub.attr,
                               base.__dict__.get(sub.attr, freshness.missing()))


def _module_of(expr, env):
    """The module `expr` (a Name or a dotted path of modules) stands for, or None."""
    if isinstance(expr, gast.Name):
        value = env.get(expr.id)
    elif isinstance(expr, gast.Attribute):
        base = _module_of(expr.value, env)
        value = getattr(base, expr.attr, None) if base is not None else None
    else:
        return None
    return value if isinstance(value, types.ModuleType) else None
