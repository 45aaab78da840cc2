"""Unroll loops over a list, tuple or dict the function builds: one copy of the body per item.

A loop over a container the function builds (`for c in [a, b]:`, `for W in layers:` after
`layers = [W1, W2]`, `for k, v in d.items():` after `d = {"a": a, "b": b}`) reads its items
at a run-time index, which the transformations cannot follow: reverse mode tracks the items
of a container only where they are read at constant indices, and vmap cannot index a dict.
The number of items, and a dict's keys, are known from the literal, so such a loop is
written out: one copy of the body per item, each copy preceded by the binding of the
loop's target to that item at a constant index or key (`c = layers[0]`; `i, c = 0,
layers[0]` for `enumerate`; `k, v = "a", d["a"]` for `.items()`). The copies run the same
statements on the same objects in the same order (a dict literal with distinct constant
keys iterates in the order it is written), so every value is the one the loop computes,
and the target holds the last item afterwards, as after the loop.

A loop is unrolled when all of these hold:
- it iterates over a list or tuple literal without starred items, over a name bound to one
  or read from outside the function holding a tuple (`for W, b in PARAMS`),
  or over `enumerate(...)` of either (no `start`); or over a name bound to a dict literal
  with distinct constant keys, directly or through `.keys()`, `.values()` or `.items()`;
  with 1 to `MAX_ITEMS` items;
- a name iterated over is bound exactly once in the function (or, for a tuple from outside,
  never; not a parameter, not
  `global`/`nonlocal`, not in a nested scope) by that literal, and read elsewhere only at
  constant indices or keys, with `len`, unpacked (a list or tuple), or iterated by loops
  unrolled here: nothing adds, removes or writes an item, rebinds it or passes it on, so
  its items are the literal's;
- the loop has no `else`, and its body holds no `break`, `continue`, `return`, `yield`,
  nested function, lambda, class or comprehension.

A literal iterated directly is evaluated once, into a new name, before the copies (Python
evaluates it once before the first trip). Parameters that are containers are unrolled by
`pytrees.py`, before this runs. Statements keep their source locations, so errors still
point at the user's line.

Runs in `pyforms.normalize`, after comprehensions are expanded and local functions
inlined, and before local dicts are split into one name per key (which the unrolled
`d["a"]` reads then allow). Output: the function with those loops replaced by their
copies; nothing else changes.
"""
from __future__ import annotations

import gast

from .function import Function, resolve
from .names import Namer
from .nodes import copy_tree, substitute, walk
from .syntax import assign, const, located, name, subscript

MAX_ITEMS = 16

_NOT_IN_BODY = (gast.Break, gast.Continue, gast.Return, gast.Yield, gast.YieldFrom,
                gast.FunctionDef, gast.AsyncFunctionDef, gast.Lambda, gast.ClassDef,
                gast.ListComp, gast.SetComp, gast.DictComp, gast.GeneratorExp,
                gast.Global, gast.Nonlocal)
_SCOPES = (gast.FunctionDef, gast.AsyncFunctionDef, gast.Lambda, gast.ClassDef,
           gast.ListComp, gast.SetComp, gast.DictComp, gast.GeneratorExp)
_DICT_VIEWS = ("keys", "values", "items")


def unroll_container_loops(fn: Function, node):
    """`node` (a copy of `fn.node`, rewritten in place and returned) with each loop over a
    container it builds written out (module docstring)."""
    if not any(isinstance(sub, gast.For) and _iterated(fn, sub.iter) is not None
               for sub in walk(node)):
        return node                             # most functions: one walk
    literals = _fixed_containers(fn, node)
    chosen = {id(sub) for sub in walk(node) if isinstance(sub, gast.For) and
              _unrollable(fn, sub, literals)}
    if chosen:
        _Unroll(fn, Namer.for_function(fn), literals, chosen).visit(node)
    return node


def _iterated(fn: Function, it):
    """(the container expression, how its items are read) of a loop's `iter`, or None.
    How: "items" (a list or tuple), "enumerate", or a dict view ("keys", "values",
    "items" of a dict: `_DICT_VIEWS`, spelled with a "dict." prefix)."""
    if isinstance(it, gast.Call) and len(it.args) == 1 and not it.keywords and \
            resolve(fn, it.func, None) is enumerate:
        inner = _iterated(fn, it.args[0])
        return None if inner is None or inner[1] != "items" else (inner[0], "enumerate")
    if isinstance(it, gast.Call) and not it.args and not it.keywords and \
            isinstance(it.func, gast.Attribute) and it.func.attr in _DICT_VIEWS and \
            isinstance(it.func.value, gast.Name):
        return it.func.value, "dict." + it.func.attr
    if isinstance(it, (gast.List, gast.Tuple, gast.Name)):
        return it, "items"
    return None


def _count(literal) -> int | None:
    """The number of items of a list, tuple or dict literal that may be unrolled."""
    if isinstance(literal, (gast.List, gast.Tuple)):
        if any(isinstance(e, gast.Starred) for e in literal.elts):
            return None
        count = len(literal.elts)
    elif isinstance(literal, gast.Dict):
        keys = [k.value if isinstance(k, gast.Constant) and
                type(k.value) in (str, int, bool) else None for k in literal.keys]
        if None in keys or len(set(keys)) != len(keys):
            return None
        count = len(keys)
    else:
        return None
    return count if 1 <= count <= MAX_ITEMS else None


def _fixed_containers(fn: Function, node) -> dict:
    """name -> its literal, for each name whose items are its literal's (see above)."""
    bindings: dict = {}
    for sub in walk(node):
        if isinstance(sub, gast.Name) and not isinstance(sub.ctx, gast.Load):
            bindings[sub.id] = bindings.get(sub.id, 0) + 1
    literals = {}
    for sub in walk(node):
        if isinstance(sub, gast.Assign) and len(sub.targets) == 1 and \
                isinstance(sub.targets[0], gast.Name) and _count(sub.value) is not None and \
                bindings.get(sub.targets[0].id) == 1:
            literals[sub.targets[0].id] = sub.value
    literals.update(_outside_tuples(fn, node, bindings))
    if not literals:
        return {}
    excluded = set(fn.params)
    for sub in walk(node):
        if isinstance(sub, (gast.Global, gast.Nonlocal)):
            excluded.update(sub.names)
        elif isinstance(sub, _SCOPES) and sub is not node:
            excluded.update(n.id for n in walk(sub) if isinstance(n, gast.Name))
    allowed = _allowed_reads(fn, node)
    for sub in walk(node):
        if isinstance(sub, gast.Name) and isinstance(sub.ctx, gast.Load) and \
                sub.id in literals and id(sub) not in allowed.get(type(literals[sub.id]), ()):
            excluded.add(sub.id)
    return {k: v for k, v in literals.items() if k not in excluded}


def _outside_tuples(fn: Function, node, bindings: dict) -> dict:
    """name -> a tuple literal of as many items, for each name the function reads but does
    not bind whose value is a tuple (a global or closed-over `PARAMS = ((W1, b1), (W2,
    b2))`): a tuple's items cannot change, so a loop over it is written out like one over
    a literal (under reverse mode the activations of `for W, b in PARAMS` may change shape
    from layer to layer, which a loop's one typed tape per name cannot hold)."""
    found = {}
    for sub in walk(node):
        if isinstance(sub, gast.Name) and isinstance(sub.ctx, gast.Load) and \
                sub.id not in bindings and sub.id not in found and sub.id in fn.env:
            value = fn.env[sub.id]
            if isinstance(value, tuple) and 1 <= len(value) <= MAX_ITEMS:
                found[sub.id] = gast.Tuple(elts=[const(None)] * len(value), ctx=gast.Load())
    return found


def _allowed_reads(fn: Function, node) -> dict:
    """literal type -> ids of the name reads that cannot change such a container or let
    it escape."""
    sequence, mapping = set(), set()
    for sub in walk(node):
        if isinstance(sub, gast.Subscript) and isinstance(sub.value, gast.Name) and \
                isinstance(sub.ctx, gast.Load) and isinstance(sub.slice, gast.Constant):
            if type(sub.slice.value) is int:
                sequence.add(id(sub.value))
            if type(sub.slice.value) in (str, int, bool):
                mapping.add(id(sub.value))
        elif isinstance(sub, gast.Call) and len(sub.args) == 1 and not sub.keywords and \
                isinstance(sub.args[0], gast.Name) and resolve(fn, sub.func, None) is len:
            sequence.add(id(sub.args[0]))
            mapping.add(id(sub.args[0]))
        elif isinstance(sub, gast.Assign) and isinstance(sub.value, gast.Name) and \
                all(isinstance(t, (gast.Tuple, gast.List)) for t in sub.targets):
            sequence.add(id(sub.value))
        elif isinstance(sub, gast.For):
            found = _iterated(fn, sub.iter)
            if found is None or not isinstance(found[0], gast.Name):
                continue
            container, how = found
            # a name iterated directly is a list's items, or a dict's keys
            uses = [(sequence, how), (mapping, "dict.keys")] if how == "items" else \
                [(mapping if how.startswith("dict.") else sequence, how)]
            for allowed, meaning in uses:
                allowed.add(id(container))
                key = _key_name(sub, meaning)
                if key is not None:
                    allowed.update(_key_reads(sub, container.id, key))
    return {gast.List: sequence, gast.Tuple: sequence, gast.Dict: mapping}


def _key_name(loop, how: str) -> str | None:
    """The name a loop binds to each item's index or key (`i` of `for i, w in
    enumerate(ws)`, `k` of `for k in d` and `for k, v in d.items()`), where its body never
    rebinds it: each copy reads the constant instead."""
    target = loop.target
    if how in ("enumerate", "dict.items"):
        target = target.elts[0] if isinstance(target, gast.Tuple) and \
            len(target.elts) == 2 else None
    elif how != "dict.keys":
        return None
    if not isinstance(target, gast.Name) or any(
            isinstance(sub, gast.Name) and sub.id == target.id and
            not isinstance(sub.ctx, gast.Load) for stmt in loop.body for sub in walk(stmt)):
        return None
    return target.id


def _key_reads(loop, container: str, key: str) -> set:
    """ids of the reads of `container` at the loop's own index or key inside its body
    (`d[k]` in `for k in d:`, `ws[i]` in `for i, w in enumerate(ws):`): each copy reads
    a constant there."""
    return {id(read.value) for stmt in loop.body for read in walk(stmt)
            if isinstance(read, gast.Subscript) and isinstance(read.ctx, gast.Load) and
            isinstance(read.value, gast.Name) and read.value.id == container and
            isinstance(read.slice, gast.Name) and read.slice.id == key}


def _unrollable(fn: Function, loop, literals: dict) -> bool:
    found = _iterated(fn, loop.iter)
    if found is None or loop.orelse:
        return False
    container, how = found
    if isinstance(container, gast.Name):
        literal = literals.get(container.id)
        if literal is None:
            return False
        is_dict = isinstance(literal, gast.Dict)
        if is_dict and how == "enumerate" or not is_dict and how.startswith("dict."):
            return False
    elif _count(container) is None:              # a list or tuple literal
        return False
    return not any(isinstance(sub, _NOT_IN_BODY) for stmt in loop.body for sub in walk(stmt))


class _Unroll(gast.NodeTransformer):
    """Replaces each chosen loop (innermost first) with its copies."""

    def __init__(self, fn: Function, namer: Namer, literals: dict, chosen: set):
        self.fn, self.namer, self.literals, self.chosen = fn, namer, literals, chosen

    def visit_For(self, loop):
        self.generic_visit(loop)
        if id(loop) not in self.chosen:
            return loop
        container, how = _iterated(self.fn, loop.iter)
        before = []
        if isinstance(container, gast.Name):
            held, literal = container.id, self.literals[container.id]
        else:
            held, literal = self.namer.fresh("items"), container
            before.append(located(assign(held, gast.Tuple(elts=container.elts,
                                                          ctx=gast.Load())), loop))
        if isinstance(literal, gast.Dict) and how == "items":
            how = "dict.keys"                           # `for k in d`
        index = _key_name(loop, how)
        copies = []
        for key in self.keys(literal):
            item = subscript(name(held), const(key))
            if how in ("enumerate", "dict.items"):        # `key` is `k` for a sequence
                value = gast.Tuple(elts=[const(key), item], ctx=gast.Load())
            elif how == "dict.keys":
                value = const(key)
            else:
                value = item
            copies.append(located(assign(copy_tree(loop.target), value), loop))
            body = [copy_tree(stmt) for stmt in loop.body]
            if index is not None:
                body = [substitute(stmt, {index: const(key)}) for stmt in body]
            copies.extend(body)
        return before + copies

    @staticmethod
    def keys(literal) -> list:
        if isinstance(literal, gast.Dict):
            return [k.value for k in literal.keys]
        return list(range(len(literal.elts)))

