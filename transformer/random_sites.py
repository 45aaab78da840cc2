"""The user's line of a random sampler call that Numba refused while typing generated code,
and the runtime check that reports a key of the wrong length at that line.

The compiled samplers (`transformer.runtime.random*`) check their arguments' kinds when
Numba types a call and refuse with a message starting `random.<name>` (a float shape, a key
that is not an integer array, an unsupported dtype, array bounds). Numba reports the line of
the generated module; `user_site` maps it back to the call in the user's source.

Contract: the generated module's header names the user's file, the line of the function's
`def` and its name (`codegen.backends.ORIGIN_PREFIX`). Within that function, the call is the
one to `<name>` (as `random.<name>` or a bare name) whose arguments are those of the
generated call; when no argument list matches (code renamed by a transformation), the only
call to `<name>` in the function. Anything else (no header, several candidates, a file that
cannot be read) gives None, and the caller keeps the generated line.

A key's length is known only at run time: `check_key` makes a lowered sampler call take its
key through `runtime.random.checked_key`, with the message (user's file:line:col, the line,
a caret) formatted here, when the code is generated.
"""
from __future__ import annotations

import ast
import inspect
import linecache
import re

import gast

from codegen.backends import ORIGIN_PREFIX

from .nodes import walk

_SAMPLER = re.compile(r"^random\.(\w+)\b")
# the name is a qualified one for a function defined in another (`outer.<locals>.f`) or
# a method (`Model.loss`), and may say more after it (`Model.loss (partial)`)
_ORIGIN = re.compile(re.escape(ORIGIN_PREFIX) +
                     r"(?P<file>.+):(?P<line>\d+) \((?P<name>[\w.<>]+)( [^\n]*)?\)$")


def sampler_of(reason: str) -> str | None:
    """The sampler a compiled sampler's refusal names (`random.normal: ...` -> 'normal')."""
    match = _SAMPLER.match(reason)
    return match.group(1) if match else None


def user_site(generated: str, lineno: int, sampler: str) -> tuple[str, int, int] | None:
    """(file, line, col) of the user's call to `sampler` that generated line `lineno` of
    the module `generated` makes, or None when it cannot be told for sure."""
    found = origin_function(generated)
    if found is None:
        return None
    filename, function = found
    candidates = [call for call in walk(function) if _callee(call) == sampler]
    wanted = _generated_arguments(generated, lineno, sampler)
    same = [call for call in candidates if _arguments(call) == wanted]
    found = same if len(same) == 1 else candidates
    if len(found) != 1:
        return None
    return filename, found[0].lineno, found[0].col_offset


def origin_function(generated: str) -> tuple[str, ast.FunctionDef] | None:
    """(the user's file, the user's function) that module `generated` was made from, as
    its header names them; None for a file that is not a generated module or cannot be
    read."""
    header = next((line for line in linecache.getlines(generated)[:3]
                   if line.startswith(ORIGIN_PREFIX)), None)
    origin = _ORIGIN.match(header.strip()) if header else None
    if origin is None:
        return None
    function = function_at(origin["file"], int(origin["line"]),
                           origin["name"].rpartition(".")[2])
    return None if function is None else (origin["file"], function)


def function_at(filename: str, def_line: int, name: str):
    """The `def` (an `ast` node) of function `name` defined at `def_line` of `filename` (the
    line of the `def` or of one of its decorators); None when the file cannot be parsed."""
    try:
        tree = ast.parse("".join(linecache.getlines(filename)))
    except (SyntaxError, ValueError):
        return None
    for node in walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name \
                and def_line in [node.lineno] + [d.lineno for d in node.decorator_list]:
            return node
    return None


def _callee(node) -> str | None:
    """The called name of a call (`random.normal(...)` and `normal(...)` give 'normal')."""
    if not isinstance(node, ast.Call):
        return None
    func = node.func
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else None


def _arguments(call: ast.Call) -> str:
    return ast.dump(ast.Module(body=[ast.Expr(a) for a in call.args], type_ignores=[])) + \
        repr(sorted((k.arg or "", ast.dump(k.value)) for k in call.keywords))


def _generated_arguments(generated: str, lineno: int, sampler: str) -> str | None:
    """The arguments of the call to `sampler` (bound as `sampler` or `sampler_<n>` by the
    lowering) at line `lineno` of the generated module."""
    try:
        tree = ast.parse("".join(linecache.getlines(generated)))
    except (SyntaxError, ValueError):
        return None
    bound = re.compile(rf"^{re.escape(sampler)}(_\d+)?$")
    calls = [node for node in walk(tree) if isinstance(node, ast.Call)
             and getattr(node, "lineno", None) == lineno
             and isinstance(node.func, ast.Name) and bound.match(node.func.id)]
    return _arguments(calls[0]) if len(calls) == 1 else None


def check_key(fn, node: gast.Call, target, bind) -> None:
    """Pass the key argument of `node`, a call of the random primitive `target` lowered for
    Numba, through `checked_key` (`bind(obj, base)` names an object in the generated
    module). Seeds (`PRNGKey`, `key`) are not keys and are left alone."""
    from .runtime.random import checked_key
    try:
        first = next(iter(inspect.signature(target).parameters))
    except (StopIteration, TypeError, ValueError):
        return
    if first not in ("k", "key"):
        return
    refusal = key_refusal(fn.origin, node, target.__name__)
    wrap = lambda arg: gast.Call(func=bind(checked_key, "checked_key"),  # noqa: E731
                                 args=[arg, gast.Constant(value=refusal, kind=None)],
                                 keywords=[])
    if node.args and not isinstance(node.args[0], gast.Starred):
        node.args[0] = wrap(node.args[0])
        return
    for keyword in node.keywords:
        if keyword.arg == first:
            keyword.value = wrap(keyword.value)


def key_refusal(origin, node, sampler: str) -> str:
    """What a key of the wrong length passed to `sampler` at `node` raises: the message plain
    NumPy gives, at the user's `file:line:col`, with the line and a caret."""
    text = (f"{origin.where(node)}: random.{sampler}: expected a raw PRNG key of shape (2,), "
            "got an array of another length (make keys with random.PRNGKey or random.split)")
    line = origin.source_line(getattr(node, "lineno", None))
    if not line:
        return text
    col = getattr(node, "col_offset", None) or 0
    return f"{text}\n    {line.rstrip()}\n    {' ' * col}^"
