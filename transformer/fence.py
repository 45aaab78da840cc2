"""Fence: refuse, with a located TransformError, every construct secant does not handle.

Runs right after parsing, before any pass, so no pass ever sees these nodes. Comprehensions,
local functions (lambda, nested def) and call star-arguments pass: `transformer.pyforms`
rewrites them first in `desugar`, or refuses the forms it cannot rewrite.
"""
from __future__ import annotations

from typing import NamedTuple

import gast

from .nodes import walk

class Construct(NamedTuple):
    """A refused construct: its name as the subject of the message, and what to write."""
    name: str
    hint: str
    plural: bool

    def message(self) -> str:
        """`"`with` blocks are not supported by secant"`: the verb agrees with the name."""
        return f"{self.name} {'are' if self.plural else 'is'} not supported by secant"


def many(name: str, hint: str) -> Construct:
    return Construct(name, hint, plural=True)


def one(name: str, hint: str) -> Construct:
    return Construct(name, hint, plural=False)


# node type -> the construct it is
REFUSED = {
    gast.Yield: one("`yield` (a generator)", "return an array instead of yielding values"),
    gast.YieldFrom: one("`yield from` (a generator)",
                        "return an array instead of yielding values"),
    gast.Await: one("`await`", "transform a plain (non-async) function"),
    gast.AsyncFunctionDef: many("async functions", "transform a plain (non-async) function"),
    gast.AsyncFor: one("`async for`", "use a plain `for` loop"),
    gast.AsyncWith: one("`async with`", "move the context manager outside the function"),
    gast.Try: one("try/except", "move error handling outside the transformed function"),
    gast.With: many("`with` blocks", "move the context manager outside the transformed function"),
    gast.Global: one("`global`", "pass the value as an argument and return the new value"),
    gast.Nonlocal: one("`nonlocal`", "pass the value as an argument and return the new value"),
    gast.ClassDef: many("class definitions", "define the class at module level"),
    gast.Delete: one("`del`", "let the variable go out of scope or rebind it"),
    gast.Import: one("`import` inside the function", "import at module level"),
    gast.ImportFrom: one("`import` inside the function", "import at module level"),
    gast.SetComp: many("set comprehensions", "write a `for` loop"),
    gast.GeneratorExp: many("generator expressions",
                            "write a `for` loop or use np.sum on an array"),
    gast.NamedExpr: one("the walrus operator `:=`", "assign in a separate statement"),
    gast.Set: many("set literals", "use a tuple"),
    gast.JoinedStr: many("f-strings", "format strings outside the transformed function"),
}
STAR_PARAMETERS = many("*args / **kwargs parameters",
                       "name each parameter, or pass a tuple/dict (a pytree)")
STAR_ARGUMENTS = many("star-arguments (`*x`)",
                      "pass the elements explicitly or pass the tuple itself")
KEYWORD_UNPACKING = one("`**kwargs` in a call", "pass the keyword arguments by name")
LOOP_ELSE = one("`else` on a loop", "set a flag before `break` and test it after the loop")
if hasattr(gast, "Match"):
    REFUSED[gast.Match] = many("`match` statements", "use if/elif/else")
if hasattr(gast, "TryStar"):
    REFUSED[gast.TryStar] = one("try/except*", "move error handling outside the function")


def check_supported(fn) -> None:
    """Raise a TransformError at the first construct of `fn` that secant refuses."""
    args = fn.node.args
    if args.vararg is not None or args.kwarg is not None:
        refuse(fn, args.vararg or args.kwarg, STAR_PARAMETERS)
    # `f(*t)` is expanded by transformer.pyforms when t's length is known before the run
    call_stars = {id(a) for node in walk(fn.node) if isinstance(node, gast.Call)
                  for a in node.args if isinstance(a, gast.Starred)}
    for stmt in fn.node.body:
        for node in walk(stmt):
            if id(node) in call_stars:
                continue
            if isinstance(node, gast.Starred) and isinstance(node.ctx, gast.Store):
                continue        # `first, *rest = v`: unpacked by pytrees or pyforms
            construct = refused_construct(node)
            if construct is not None:
                refuse(fn, node, construct)


def refused_construct(node) -> Construct | None:
    """The construct `node` is, when secant refuses it; else None."""
    if type(node) in REFUSED:
        return REFUSED[type(node)]
    if isinstance(node, gast.Starred):
        return STAR_ARGUMENTS
    if isinstance(node, gast.Call) and any(k.arg is None for k in node.keywords):
        return KEYWORD_UNPACKING
    if isinstance(node, (gast.For, gast.While)) and node.orelse:
        return LOOP_ELSE
    return None


def refuse(fn, node, construct: Construct):
    raise fn.origin.error(node, construct.message(), construct.hint)
