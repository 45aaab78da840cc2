"""Names in a function body: which are bound locally, which are free, and fresh ones."""
from __future__ import annotations

import itertools
import re

import gast

from .nodes import walk


def assigned_names(node) -> set[str]:
    """Every name stored anywhere under `node` (targets, loop variables, parameters,
    local functions `def h` inside it - not `node`'s own name)."""
    return stored_and_loaded(node)[0]


def loaded_names(node) -> set[str]:
    return {sub.id for sub in walk(node)
            if isinstance(sub, gast.Name) and isinstance(sub.ctx, gast.Load)}


def name_counts(node, ctx: type) -> dict[str, int]:
    """How many times each name is read (`ctx=gast.Load`) or bound (`gast.Store`) under
    `node`."""
    counts: dict = {}
    for sub in walk(node):
        if isinstance(sub, gast.Name) and isinstance(sub.ctx, ctx):
            counts[sub.id] = counts.get(sub.id, 0) + 1
    return counts


def stored_and_loaded(node) -> tuple[set[str], set[str]]:
    """(`assigned_names(node)`, `loaded_names(node)`), from one walk."""
    stored, loaded = set(), set()
    for sub in walk(node):
        if isinstance(sub, gast.Name):
            if isinstance(sub.ctx, gast.Load):
                loaded.add(sub.id)
            elif isinstance(sub.ctx, (gast.Store, gast.Param, gast.Del)):
                stored.add(sub.id)
        elif isinstance(sub, gast.FunctionDef) and sub is not node:
            stored.add(sub.name)
    return stored, loaded


def free_names(fn_node: gast.FunctionDef) -> set[str]:
    """Names a function reads but never binds: they resolve in its environment."""
    stored, loaded = stored_and_loaded(fn_node)
    return loaded - stored


def outer_names(fn_node: gast.FunctionDef) -> set[str]:
    """The names `fn_node` reads that Python resolves outside it (its closure, the
    globals, builtins): `free_names` (which counts a binding anywhere in the tree, and
    reads the function's defaults, decorators and annotations) together with the names
    its own code reads that only a nested function, lambda or comprehension binds
    (`[i for i in ...]` beside a global `i`), found by Python's scopes."""
    return free_names(fn_node) | _scope_reads(fn_node)


_COMPREHENSIONS = (gast.ListComp, gast.SetComp, gast.DictComp, gast.GeneratorExp)


def _scope_reads(scope) -> set[str]:
    """Names read in `scope` (a function, lambda or comprehension) or free in a scope
    nested in it, that `scope` does not bind."""
    bound: set = set()
    reads: set = set()
    pending = list(_scope_children(scope))
    while pending:
        node = pending.pop()
        if isinstance(node, (gast.FunctionDef, gast.AsyncFunctionDef, gast.ClassDef)):
            bound.add(node.name)
        if isinstance(node, (gast.FunctionDef, gast.AsyncFunctionDef, gast.Lambda,
                             gast.ClassDef) + _COMPREHENSIONS):
            reads |= _scope_reads(node)
            pending.extend(_outer_parts(node))        # defaults, decorators, first iterable
            if isinstance(node, _COMPREHENSIONS):     # `(n := v)` in one binds out here
                bound |= {sub.target.id for sub in walk(node) if isinstance(sub, gast.NamedExpr)}
            continue
        if isinstance(node, gast.Name):
            (reads if isinstance(node.ctx, gast.Load) else bound).add(node.id)
        pending.extend(gast.iter_child_nodes(node))
    return reads - bound


def _outer_parts(node) -> list:
    """The parts of a nested scope that its enclosing scope evaluates."""
    if isinstance(node, _COMPREHENSIONS):
        return [node.generators[0].iter]
    if isinstance(node, gast.ClassDef):
        return list(node.bases) + [k.value for k in node.keywords] + \
            list(node.decorator_list)
    args = node.args
    return list(args.defaults) + [d for d in args.kw_defaults if d is not None] + \
        list(getattr(node, "decorator_list", []))


def _scope_children(scope) -> list:
    """The nodes evaluated in `scope` itself (its own parameters, body and, for a
    comprehension, everything but its first iterable)."""
    if isinstance(scope, _COMPREHENSIONS):
        first, *rest = scope.generators
        parts = [first.target, *first.ifs]
        for gen in rest:
            parts += [gen.target, gen.iter, *gen.ifs]
        elts = [scope.key, scope.value] if isinstance(scope, gast.DictComp) else [scope.elt]
        return parts + elts
    if isinstance(scope, gast.ClassDef):
        return list(scope.body)
    args = scope.args
    params = [*args.posonlyargs, *args.args, *args.kwonlyargs,
              *([args.vararg] if args.vararg else []), *([args.kwarg] if args.kwarg else [])]
    body = scope.body if isinstance(scope.body, list) else [scope.body]
    return params + list(body)


class Namer:
    """Hands out fresh variable names that collide with no name already in use.

    Names are derived from what they hold (`r2`, `d_sum`, `bx`), with a numeric suffix
    only when the plain name is taken.
    """

    def __init__(self, taken=()):
        self.taken = set(taken)

    @classmethod
    def for_function(cls, fn) -> "Namer":
        """Names free of everything `fn` binds, reads or has in its environment, and of its
        own name: the emitted module defines `fn` under that name, so a helper bound to it
        (`random.normal` lowered inside a user `def normal`) would call `fn` itself."""
        own = {fn.node.name} if isinstance(fn.node, gast.FunctionDef) else set()
        return cls(set().union(*stored_and_loaded(fn.node), fn.env, own))

    def fresh(self, base: str) -> str:
        base = re.sub(r"\W", "_", base).strip("_") or "t"
        if base[0].isdigit():
            base = "t" + base
        if base not in self.taken:
            self.taken.add(base)
            return base
        for i in itertools.count(1):
            name = f"{base}_{i}"
            if name not in self.taken:
                self.taken.add(name)
                return name

    def reserve(self, name: str) -> None:
        self.taken.add(name)
