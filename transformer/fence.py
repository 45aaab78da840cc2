"""Fence: refuse, with a located TransformError, every construct secant does not handle.

Runs right after parsing, before any pass, so no pass ever sees these nodes.
"""
from __future__ import annotations

import gast

# node type -> (what it is, what to write instead)
REFUSED = {
    gast.Yield: ("`yield` (generators)", "return an array instead of yielding values"),
    gast.YieldFrom: ("`yield from` (generators)", "return an array instead of yielding values"),
    gast.Await: ("`await`", "transform a plain (non-async) function"),
    gast.AsyncFunctionDef: ("async functions", "transform a plain (non-async) function"),
    gast.AsyncFor: ("`async for`", "use a plain `for` loop"),
    gast.AsyncWith: ("`async with`", "move the context manager outside the function"),
    gast.Try: ("try/except", "move error handling outside the transformed function"),
    gast.With: ("`with` blocks", "move the context manager outside the transformed function"),
    gast.Global: ("`global`", "pass the value as an argument and return the new value"),
    gast.Nonlocal: ("`nonlocal`", "pass the value as an argument and return the new value"),
    gast.ClassDef: ("class definitions", "define the class at module level"),
    gast.Lambda: ("a lambda inside the transformed function",
                  "define a module-level function with `def` and call it"),
    gast.FunctionDef: ("a function defined inside the transformed function",
                       "define it at module level and call it"),
    gast.Delete: ("`del`", "let the variable go out of scope or rebind it"),
    gast.Import: ("`import` inside the function", "import at module level"),
    gast.ImportFrom: ("`import` inside the function", "import at module level"),
    gast.ListComp: ("list comprehensions", "write a `for` loop that fills a preallocated array"),
    gast.SetComp: ("set comprehensions", "write a `for` loop"),
    gast.DictComp: ("dict comprehensions", "write a `for` loop"),
    gast.GeneratorExp: ("generator expressions", "write a `for` loop or use np.sum on an array"),
    gast.NamedExpr: ("the walrus operator `:=`", "assign in a separate statement"),
    gast.Set: ("set literals", "use a tuple"),
    gast.JoinedStr: ("f-strings", "format strings outside the transformed function"),
}
if hasattr(gast, "Match"):
    REFUSED[gast.Match] = ("`match` statements", "use if/elif/else")
if hasattr(gast, "TryStar"):
    REFUSED[gast.TryStar] = ("try/except*", "move error handling outside the function")


def check_supported(fn) -> None:
    """Raise a TransformError at the first construct of `fn` that secant refuses."""
    args = fn.node.args
    if args.vararg is not None or args.kwarg is not None:
        star = args.vararg or args.kwarg
        raise fn.origin.error(star, "*args / **kwargs parameters are not supported",
                              hint="name each parameter, or pass a tuple/dict (a pytree)")
    for stmt in fn.node.body:
        for node in gast.walk(stmt):
            refused = REFUSED.get(type(node))
            if refused:
                what, hint = refused
                raise fn.origin.error(node, f"{what} is not supported by secant", hint)
            if isinstance(node, gast.Starred):
                raise fn.origin.error(node, "star-arguments (`*x`) are not supported by secant",
                                      "pass the elements explicitly or pass the tuple itself")
            if isinstance(node, gast.Call) and any(k.arg is None for k in node.keywords):
                raise fn.origin.error(node, "`**kwargs` in a call is not supported by secant",
                                      "pass the keyword arguments by name")
            if isinstance(node, (gast.For, gast.While)) and node.orelse:
                raise fn.origin.error(node, "`else` on a loop is not supported by secant",
                                      "set a flag before `break` and test it after the loop")
