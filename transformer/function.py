"""`Function`: what every transformation consumes and produces.

A Function is a gast `FunctionDef` plus the environment that resolves each of its free
names to a Python object, plus the `Origin` that maps its nodes back to the user's file.
Node line numbers are the user's file line numbers and column offsets are the user's
columns, so errors and comments in generated code point at real source lines.

Transformations map Function -> Function, which is why they compose. An environment
value may itself be a Function (a generated helper, e.g. the adjoint of a called user
function); the backend compiles such values before it loads the module that uses them.
"""
from __future__ import annotations

import dataclasses
import inspect
import linecache
import types
from typing import Any, Mapping

import gast

from .errors import TransformError
from .nodes import copy_tree, walk


def source_lines(fn) -> tuple[list[str], int]:
    """`inspect.getsourcelines(fn.__code__)`: the lines of function `fn`'s own definition
    (not of the function its `__wrapped__` names), and the first one's number. Read through
    a bare function over the same code, whose module inspect finds by name: for a code
    object it looks through every module loaded (30 ms, the first time in a process)."""
    bare = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__, None, fn.__closure__)
    return inspect.getsourcelines(bare)


@dataclasses.dataclass(frozen=True)
class Origin:
    """Where a function's source lives: its file and the text of that file's lines."""

    filename: str
    name: str
    lineno: int

    def source_line(self, lineno: int | None) -> str | None:
        if lineno is None:
            return None
        text = linecache.getline(self.filename, lineno)
        return text.rstrip("\n") if text else None

    def statement_text(self, lineno: int | None) -> str | None:
        """Line `lineno` without its indentation (what a `# grad of:` comment quotes), or
        None for a missing or blank line."""
        text = self.source_line(lineno)
        return text.strip() or None if text else None

    def error(self, node, message: str, hint: str | None = None) -> TransformError:
        lineno = getattr(node, "lineno", None) if node is not None else self.lineno
        col = getattr(node, "col_offset", None) if node is not None else 0
        return TransformError(message, filename=self.filename, lineno=lineno, col=col,
                              line=self.source_line(lineno), hint=hint)

    def describe(self) -> str:
        return f"{self.filename}:{self.lineno} ({self.name})"

    def where(self, node) -> str:
        """`file:line:col` (col from 1) of `node`, for a check that reports it at run time."""
        lineno = getattr(node, "lineno", None) or self.lineno
        return f"{self.filename}:{lineno}:{(getattr(node, 'col_offset', None) or 0) + 1}"


@dataclasses.dataclass(frozen=True, eq=False)
class Function:
    """A function definition, its resolved environment, and where it came from.

    `chain` lists the transformations applied so far, outermost last, e.g.
    ("grad(argnums=0)", "jit(backend='cpu')"); it is printed in generated headers.
    """

    node: gast.FunctionDef
    env: Mapping[str, Any]
    origin: Origin
    chain: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return self.node.name

    @property
    def params(self) -> list[str]:
        args = self.node.args
        return [a.id for a in args.posonlyargs + args.args + args.kwonlyargs]

    def replace(self, **changes) -> "Function":
        return dataclasses.replace(self, **changes)

    def __secant_function__(self) -> "Function":
        # a generated callee bound in another Function's env (`minimum_image_vjp` in a
        # gradient) is transformed again, like any function, by grad of that gradient
        return self

    def with_transform(self, node: gast.FunctionDef, label: str,
                       env: Mapping[str, Any] | None = None) -> "Function":
        """A new Function for `node`, made by the transformation named `label`."""
        merged = dict(self.env)
        if env:
            merged.update(env)
        return Function(node, merged, self.origin, self.chain + (label,))

    def copy_node(self) -> gast.FunctionDef:
        return copy_tree(self.node)


_MISSING = object()


def resolve(fn: Function, expr, default=_MISSING):
    """The object a Name or dotted Attribute (`np.linalg.norm`) refers to in `fn`'s env.

    Local variables do not resolve: `default` is returned (or KeyError raised).
    """
    return resolve_in(fn.env, expr, default)


def resolve_in(env: Mapping[str, Any], expr, default=_MISSING):
    """`resolve` in the environment `env`: the object `expr` (a Name or dotted Attribute)
    refers to; `default` (or KeyError) for a name `env` does not hold or any other
    expression. A caller that knows the function's local names refuses those first."""
    if isinstance(expr, gast.Name):
        if expr.id in env:
            return env[expr.id]
    elif isinstance(expr, gast.Attribute):
        base = resolve_in(env, expr.value, None)
        if base is not None and hasattr(base, expr.attr):
            return getattr(base, expr.attr)
    if default is _MISSING:
        raise KeyError(expr)
    return default


def signature(fn: Function) -> inspect.Signature:
    """An inspect.Signature for `fn`'s parameters, defaults evaluated in its env (the
    frontend made each default a literal or a name bound to the function's own value)."""

    def default(node):
        if node is None:
            return inspect.Parameter.empty
        expr = gast.gast_to_ast(gast.Expression(body=node))
        return eval(compile(expr, fn.origin.filename, "eval"), dict(fn.env))

    args = fn.node.args
    positional = args.posonlyargs + args.args
    defaults = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
    params = []
    for i, (a, d) in enumerate(zip(positional, defaults)):
        kind = inspect.Parameter.POSITIONAL_ONLY if i < len(args.posonlyargs) \
            else inspect.Parameter.POSITIONAL_OR_KEYWORD
        params.append(inspect.Parameter(a.id, kind, default=default(d)))
    for a, d in zip(args.kwonlyargs, args.kw_defaults):
        params.append(inspect.Parameter(a.id, inspect.Parameter.KEYWORD_ONLY, default=default(d)))
    return inspect.Signature(params)


def binder(fn: Function):
    """A function with `fn`'s parameters, kinds and defaults that returns the values bound
    to them, in `fn.params` order, defaults filled in.

    Python itself binds the call, so a transformation calling its generated code with
    these values accepts exactly the calls the original accepts, and raises Python's own
    TypeError for the others (too many positional arguments, a keyword-only one passed
    positionally, a missing one).
    """
    sig = signature(fn)
    params = list(sig.parameters.values())
    text = f"def {fn.name}({_parameter_list(params)}):\n    return ({_tuple(fn.params)})\n"
    scope: dict = {}
    exec(compile(text, f"<secant binding of {fn.origin.describe()}>", "exec"), scope)
    bind = scope[fn.name]
    positional = [p.default for p in params if p.kind is not inspect.Parameter.KEYWORD_ONLY
                  and p.default is not inspect.Parameter.empty]
    bind.__defaults__ = tuple(positional) or None
    bind.__kwdefaults__ = {p.name: p.default for p in params
                           if p.kind is inspect.Parameter.KEYWORD_ONLY
                           and p.default is not inspect.Parameter.empty} or None
    return bind


def _parameter_list(params) -> str:
    """`x, y=None, /, *, k=None`: defaults as placeholders (the binder sets the values)."""
    kinds = inspect.Parameter
    items = []
    for i, p in enumerate(params):
        if p.kind is kinds.KEYWORD_ONLY and (i == 0 or params[i - 1].kind is not p.kind):
            items.append("*")
        items.append(p.name if p.default is kinds.empty else f"{p.name}=None")
        last = i + 1 == len(params)
        if p.kind is kinds.POSITIONAL_ONLY and (last or params[i + 1].kind is not p.kind):
            items.append("/")
    return ", ".join(items)


def _tuple(names) -> str:
    return "".join(f"{n}, " for n in names)


def call_arguments(fn: Function) -> str:
    """The arguments of a call passing each of `fn`'s parameters on: `x, y, k=k`."""
    kw = {a.id for a in fn.node.args.kwonlyargs}
    return ", ".join(f"{p}={p}" if p in kw else p for p in fn.params)


def same_parameters(node: gast.FunctionDef, fn: Function) -> dict:
    """Give generated `node` (whose parameters are `fn.params`, in order) `fn`'s kinds and
    defaults; returns the env entries the defaults read."""
    node.args = copy_tree(fn.node.args)
    defaults = [d for d in node.args.defaults + node.args.kw_defaults if d is not None]
    return {n.id: fn.env[n.id] for d in defaults for n in walk(d)
            if isinstance(n, gast.Name) and n.id in fn.env}


def positional_parameters(fn: Function) -> Function:
    """`fn` taking every parameter positionally, without defaults: for a caller that has
    already bound the call with `binder`."""
    node = fn.copy_node()
    args = node.args
    params = args.posonlyargs + args.args + args.kwonlyargs
    node.args = gast.arguments(args=params, posonlyargs=[], vararg=None, kwonlyargs=[],
                               kw_defaults=[], kwarg=None, defaults=[])
    return fn.replace(node=node)


def hashable(obj) -> bool:
    """Whether `obj` (say, what `resolve` found) can be looked up in a registry dict."""
    try:
        hash(obj)
    except TypeError:
        return False
    return True
