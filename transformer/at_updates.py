"""At updates: JAX's functional index updates `x.at[i].set(v)` as writes on a fresh copy.

Runs in `frontend.parse` (every function secant reads, callees included), on statements.
Output invariant: no `<expr>.at[i].<m>(...)` call with `m` one of `AT_METHODS` remains;
each is
- `get()`: the read `x[i]`;
- `set(v)`: `t = np.copy(x); t[i] = v`, then `t` where the call was (x unchanged, as in JAX);
- `add(v)`: on the copy, `np.add.at(t, i, v)`, which adds every update of a repeated index
  as JAX does, or `t[i] = t[i] + v` where `i` is *repeat-free*: built of slices, None,
  Ellipsis and int expressions only (`int_names.py`: int constants, the index of a `for`
  over `range`, int arithmetic of those, `len(...)`, ...), so no element is selected twice;
- `multiply`, `divide`, `power`, `min`, `max`, `apply(f)`: `t[i] = t[i] * v` (`/`, `**`,
  `np.minimum`, `np.maximum`, `f(t[i])`) on the copy. Where one part of the index is not
  repeat-free (an index array, a parameter), it is first held in a name through the
  run-time check `k = distinct_entries(part, np.shape(t)[axis], message)`
  (`runtime/distinct.py`), which raises `ValueError(message)`, the user's located line,
  if it selects an element twice (JAX would apply each repeated update; NumPy has no
  differentiated accumulating form of these); an index with two such parts is refused.
The copies are statements hoisted before the statement holding the call, so the call may
sit anywhere that statement evaluates it once and always: not in a `while` test, nor in
the branches of `a if c else b`, `and`, `or` (refused there, with a hint).
Only `.at[...]` followed by one of these method calls is rewritten: pandas' `df.at[r, c]`
reads and writes are not calls of them and stay as they are.
"""
from __future__ import annotations

import gast

from .int_names import IntNames
from .names import Namer
from .runtime.distinct import distinct_entries
from .syntax import (as_load, assign, call, const, located, map_own_expressions, name,
                     rewrite_block, subscript)

AT_METHODS = ("set", "add", "multiply", "divide", "power", "min", "max", "get", "apply")
_BINARY = {"multiply": gast.Mult, "divide": gast.Div, "power": gast.Pow}
_FUNCTIONS = {"min": "minimum", "max": "maximum"}
# keywords that change nothing for in-bounds indices; `mode` only as below
_NEUTRAL_KEYWORDS = ("indices_are_sorted", "unique_indices")
_NEUTRAL_MODES = (None, "promise_in_bounds")


def is_at_call(node) -> bool:
    """`node` is `<expr>.at[<index>].<method>(...)` with a method of `AT_METHODS`."""
    return isinstance(node, gast.Call) and isinstance(node.func, gast.Attribute) and \
        node.func.attr in AT_METHODS and isinstance(node.func.value, gast.Subscript) and \
        isinstance(node.func.value.value, gast.Attribute) and \
        node.func.value.value.attr == "at"


def rewrite_at_updates(fn, fn_node, numpy) -> None:
    """Rewrite, in place, every at-update of `fn_node` (the Function `fn`'s tree) as the
    module docstring says; `numpy()` names the numpy module in the env."""
    if not any(is_at_call(node) for node in gast.walk(fn_node)):
        return
    rewriter = _Rewriter(fn, Namer.for_function(fn), numpy, IntNames(fn, fn_node))
    fn_node.body = rewrite_block(fn_node.body, rewriter.statement)


class _Rewriter:
    def __init__(self, fn, namer: Namer, numpy, ints: IntNames):
        self.fn, self.namer, self.numpy, self.ints = fn, namer, numpy, ints
        self.prelude: list = []

    def repeat_free(self, index) -> bool:
        """`index` (a subscript's slice) is built of int expressions (`int_names`),
        slices, None and Ellipsis, so no element is selected twice."""
        parts = index.elts if isinstance(index, gast.Tuple) else [index]
        return all(isinstance(p, gast.Slice) or
                   (isinstance(p, gast.Constant) and (p.value is None or p.value is Ellipsis))
                   or self.ints.holds_int(p) for p in parts)

    def error(self, node, message: str, hint: str):
        return self.fn.origin.error(node, message, hint)

    def statement(self, stmt) -> list:
        if isinstance(stmt, gast.While) and any(is_at_call(n) for n in gast.walk(stmt.test)):
            node = next(n for n in gast.walk(stmt.test) if is_at_call(n))
            raise self.error(node, "JAX's `x.at[i]` update in a `while` test is not "
                             "supported by secant",
                             "assign it to a name before the loop and at the end of its body")
        self.prelude = []
        map_own_expressions(stmt, self.expression)
        return self.prelude + [stmt]

    def expression(self, node):
        """`node` with its at-updates replaced, their copies appended to the prelude, in
        the order Python evaluates them."""
        if isinstance(node, (gast.IfExp, gast.BoolOp, gast.Lambda)):
            self._refuse_conditional(node)
            return node
        for field, value in gast.iter_fields(node):
            if isinstance(value, gast.AST):
                setattr(node, field, self.expression(value))
            elif isinstance(value, list):
                setattr(node, field, [self.expression(v) if isinstance(v, gast.AST) else v
                                      for v in value])
        return self._update(node) if is_at_call(node) else node

    def _refuse_conditional(self, node) -> None:
        for inner in gast.walk(node):
            if is_at_call(inner):
                raise self.error(inner, "JAX's `x.at[i]` update inside `a if c else b`, "
                                 "`and`, `or` or a lambda is not supported by secant",
                                 "assign the update to a name in its own statement (under "
                                 "an `if` where it is conditional)")

    def _update(self, node):
        method = node.func.attr
        at = node.func.value
        receiver, index = at.value.value, at.slice
        self._check_keywords(node, method)
        if method == "get":
            if node.args:
                raise self.error(node, "`x.at[i].get()` takes no positional argument",
                                 "write `x.at[i].get()` or `x[i]`")
            return located(gast.Subscript(value=receiver, slice=index, ctx=gast.Load()), node)
        if len(node.args) != 1:
            raise self.error(node, f"`x.at[i].{method}(...)` takes one positional argument",
                             f"write `x.at[i].{method}(v)`")
        value = node.args[0]
        checked = method not in ("set", "add") and not self.repeat_free(index)
        part = self._checked_part(node, method, index) if checked else None
        copy = self.namer.fresh("at_copy")
        np_ = self.numpy()
        self.prelude.append(located(assign(copy, call(f"{np_}.copy", receiver)), node))
        if checked:
            index = self._check(node, method, index, part, copy, np_)
        target = gast.Subscript(value=name(copy), slice=index, ctx=gast.Store())
        if method == "add" and not self.repeat_free(index):
            if any(isinstance(n, gast.Slice) for n in gast.walk(index)):
                raise self.error(node, "JAX's `x.at[i].add(v)` with an index mixing slices "
                                 "and index arrays is not supported by secant",
                                 "index with arrays only (`np.add.at` adds each repeated "
                                 "update), or with ints and slices only")
            write = gast.Expr(value=call(f"{np_}.add.at", name(copy), as_load(index), value))
        else:
            write = assign(target, self._new_value(method, as_load(target), value, np_))
        self.prelude.append(located(write, node))
        return located(name(copy), node)

    def _checked_part(self, node, method, index) -> int:
        """The position of the one part of `index` that may select an element twice;
        an index with more than one such part is refused."""
        parts = index.elts if isinstance(index, gast.Tuple) else [index]
        unknown = [k for k, p in enumerate(parts) if not self.repeat_free(p)]
        if len(unknown) > 1 or any(isinstance(p, gast.Starred) for p in parts):
            raise self.error(
                node, f"JAX's `x.at[i].{method}(v)` with an index array (or a name not "
                "known to hold an int) in more than one place of the index is not supported "
                "by secant", "index with ints (a `for` index over range(...), int "
                "arithmetic of one, len(...)), slices, None or Ellipsis and at most one "
                "index array, or write the update as a loop over the indices")
        return unknown[0]

    def _check(self, node, method, index, k, copy, np_):
        """`index` with its part `k` replaced by a name holding it, after the run-time
        check that it selects no element of its axis twice (`distinct_entries`)."""
        parts = list(index.elts) if isinstance(index, gast.Tuple) else [index]
        consumes = [not (isinstance(p, gast.Constant) and p.value in (None, Ellipsis))
                    for p in parts]
        after_ellipsis = any(isinstance(p, gast.Constant) and p.value is Ellipsis
                             for p in parts[:k])
        axis = -1 - sum(consumes[k + 1:]) if after_ellipsis else sum(consumes[:k])
        message = str(self.error(
            node, f"JAX's `x.at[i].{method}(v)` with an index that selects an element "
            "twice is not supported by secant (JAX applies each repeated update)",
            "make the index's entries distinct, or write the update as a loop over them"))
        helper = self.namer.fresh("distinct_entries")
        self.fn.env[helper] = distinct_entries
        held = self.namer.fresh("at_index")
        length = subscript(call(f"{np_}.shape", name(copy)), const(axis))
        self.prelude.append(located(assign(held, call(helper, parts[k], length,
                                                      const(message))), node))
        parts[k] = name(held)
        return gast.Tuple(elts=parts, ctx=gast.Load()) if isinstance(index, gast.Tuple) \
            else parts[0]

    def _new_value(self, method, old, value, np_):
        if method == "set":
            return value
        if method == "add":
            return gast.BinOp(left=old, op=gast.Add(), right=value)
        if method in _BINARY:
            return gast.BinOp(left=old, op=_BINARY[method](), right=value)
        if method in _FUNCTIONS:
            return call(f"{np_}.{_FUNCTIONS[method]}", old, value)
        return gast.Call(func=value, args=[old], keywords=[])          # apply(f)

    def _check_keywords(self, node, method) -> None:
        for keyword in node.keywords:
            if keyword.arg in _NEUTRAL_KEYWORDS:
                continue
            if keyword.arg in ("mode", "fill_value") and isinstance(keyword.value,
                                                                    gast.Constant):
                if keyword.value.value is None or (keyword.arg == "mode" and
                                                   keyword.value.value in _NEUTRAL_MODES):
                    continue
            raise self.error(
                keyword.value, f"`x.at[i].{method}(..., {keyword.arg}=...)` is not supported "
                "by secant", "drop it: secant indexes as NumPy does, where an index out of "
                "bounds raises IndexError (JAX's modes \"clip\", \"drop\" and \"fill\" are "
                "not followed)")
        node.keywords = []

