"""The pytree boundary: every transformation sees leaves, never containers.

A call with container arguments (tuples, lists, dicts, namedtuples, dataclasses and classes
registered with `tree_util`, nested) is handled the same way by every API entry (grad,
value_and_grad, vjp, jvp, jacfwd, jacrev, hessian, vmap, jit, and their compositions):

1. `layout_of(value)` describes each argument's structure, exactly as `tree_util` flattens
   it (so the leaves passed and the parameters they bind to line up by construction).
2. `flat_function(target, layouts)` is the target's Function over leaves: for a plain
   function, `flatten_parameters` specializes its body to the layouts; a transformation
   answers `__secant_flat__(layouts)` itself, transforming the flat Function of what it
   wraps (so compositions flatten once, at the outermost call).
3. The caller passes `leaves(args)` and rebuilds the result with `Flat.rebuild`.

Invariant of `flatten_parameters`' output: no parameter is a container. Constant-key and
attribute reads (`p["W"]`, `p.W`, `p[0]`, nested) are the leaf's parameter, and a slice of
int literals (`layers[:-1]`) the container of the entries it selects; unpacking
(`W, b = params`) binds each name to its child; a `for` over a container (`for W, b in
layers:`, `enumerate(layers)`, a dict's `items()`, `values()`, `keys()`) is unrolled, one
copy of the body per entry; `len(p)` is a constant. A container handed to a function of
the user's (`predict(params, x)`) or to a transformation of one (`vmap(predict,
in_axes=(None, 0))(params, xs)`, `grad(loss)(params, x)`) becomes its leaves
(`pytree_calls`); a transformation's container result assigned to a name is bound leaf by
leaf. Under jit of a function itself, a tuple or list of leaves used whole otherwise
(`xs[i]`) is rebuilt as a tuple literal, and a dict, tuple or list returned (`return
tree_map(f, params, grads)`) as its literal. Any other use of a container is a located
TransformError. (Containers returned under jit: `pytree_returns.py`.)
"""
from __future__ import annotations

from typing import Callable

import gast

from . import tree_util
from .function import Function, resolve
from .names import Namer
from .nodes import copy_tree, substitute, walk
from .pytree_calls import ContainerCalls
from .pytree_layouts import (LEAF, NOT_CONSTANT, Flat, Key, Layout, Tree, all_leaves,
                             as_tuple, constant, constant_slice, layout_of, leaf_axes,
                             leaf_groups, leaf_names, leaves, names_in, sequences_only,
                             sliced, unflatten, with_names)
from .syntax import const, name

__all__ = ["LEAF", "Flat", "Layout", "all_leaves", "composed", "flat_function",
           "flatten_parameters", "layout_of", "leaf_axes", "leaf_groups", "leaves",
           "unflatten"]

def flat_function(target, layouts, base: Callable | None = None,
                  tuples: bool = False) -> Flat:
    """The Flat form of `target` for arguments laid out as `layouts`. A transformation
    answers `__secant_flat__`; a plain function is parsed (`base`, default `parse`) and
    its body specialized to the layouts (`tuples`: see `flatten_parameters`)."""
    hook = getattr(target, "__secant_flat__", None)
    if hook is not None:
        return hook(tuple(layouts))
    if base is None:
        from .frontend import parse as base
    return Flat(flatten_parameters(base(target), layouts, tuples))


def composed(inner: Callable | None, outer: Callable):
    """`outer` then `inner`'s rebuild, for a transformation that keeps its input's output
    nesting one level down (a Jacobian whose rows are the inner output)."""
    return outer if inner is None else (lambda result: inner(outer(result)))


# ---------------------------------------------------------------- flattening a body


def flatten_parameters(fn: Function, layouts, tuples: bool = False,
                       active: frozenset = frozenset()) -> Function:
    """`fn` with each container parameter replaced by one parameter per leaf (see the
    module docstring for what the body may do with a container). `tuples`: a tuple or
    list of leaves used whole is rebuilt as a tuple literal (for jit of the function
    itself; the transformations have no rules through tuple literals, so it is refused
    for them rather than risk a wrong derivative or batch). `active`: the helpers being
    flattened around this one (`_Flattener.variant`), to refuse recursion."""
    layouts = tuple(layouts)
    if all_leaves(layouts):
        return fn
    namer = Namer.for_function(fn)
    params, env = [], {}
    for p, layout in zip(fn.params, layouts):
        if layout is LEAF:
            params.append(p)
            continue
        namer.reserve(p)
        tree = leaf_names(p, layout, namer)
        env[p] = tree
        params.extend(names_in(tree))
    node = copy_tree(fn.node)
    flattener = _Flattener(fn, tuples, namer, active)
    node.body = flattener.statements(node.body, env, nested=False)
    node.args = gast.arguments(args=[name(p, gast.Param()) for p in params], posonlyargs=[],
                               vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None,
                               defaults=[])
    return fn.replace(node=node, env={**fn.env, **flattener.env})


_USED_WHOLE_HINT = ("read what you need where it is used (p['W'], p.W, W, b = p, "
                    "for W, b in layers:) and pass those values on")


class _Flattener(ContainerCalls):
    """Rewrites statements given `env`: name -> `Tree` (containers known by structure)."""

    def __init__(self, fn: Function, tuples: bool, namer: Namer, active: frozenset):
        self.fn, self.tuples, self.namer, self.active = fn, tuples, namer, active
        self.env: dict = {}             # the variants of helpers given containers
        self.variants: dict = {}        # (helper, layouts) -> its variant's name here
        self.flats: dict = {}           # a transformation's variant name -> its Flat

    def error(self, node, message, hint=_USED_WHOLE_HINT):
        return self.fn.origin.error(node, message, hint)

    # ------------------------------------------------------------ statements
    def statements(self, body, env, nested: bool) -> list:
        out = []
        for stmt in body:
            out.extend(self.statement(stmt, env, nested))
        return out

    def statement(self, stmt, env, nested):
        hoisted = self.hoist_container_result(stmt, env)
        if hoisted is not None:
            return [s for line in hoisted for s in self.statement(line, env, nested)]
        if isinstance(stmt, gast.Return) and self.tuples and stmt.value is not None:
            returned = self.returned_literal(stmt, env, nested)
            if returned is not None:
                return returned
        if isinstance(stmt, gast.Assign) and len(stmt.targets) == 1:
            mapped = self.tree_map(stmt, env, nested) or \
                self.container_result(stmt, env, nested)
            if mapped is not None:
                return mapped
            tree = self.resolve(stmt.value, env)
            if isinstance(tree, Tree):
                return self.bind(stmt.targets[0], tree, env, nested, stmt)
            built = self.dict_display(stmt, env, nested)
            if built is not None:
                return built
        if isinstance(stmt, gast.For):
            entries = self.iteration(stmt.iter, env)
            if entries is not None:
                return self.unroll(stmt, entries, env, nested)
        if isinstance(stmt, (gast.FunctionDef, gast.ClassDef)):
            self.refuse_uses(stmt, env)
            return [stmt]
        self.refuse_shadowing(stmt, env, nested)
        for field in ("body", "orelse", "finalbody"):
            if isinstance(getattr(stmt, field, None), list) and \
                    not isinstance(stmt, (gast.FunctionDef, gast.ClassDef)):
                setattr(stmt, field, self.statements(getattr(stmt, field), env, True))
        if isinstance(stmt, gast.Try):
            for handler in stmt.handlers:
                handler.body = self.statements(handler.body, env, True)
        for field, value in gast.iter_fields(stmt):
            if field in ("body", "orelse", "finalbody", "handlers"):
                continue
            setattr(stmt, field, self.rewrite(value, env))
        self.forget_rebound(stmt, env, nested)
        return [stmt]

    def refuse_shadowing(self, stmt, env, nested):
        """A container's name may be rebound only by a plain assignment in straight-line
        code (`forget_rebound`); a loop target, `+=` or a comprehension variable of that
        name would make its uses mean two things."""
        if isinstance(stmt, gast.Assign) and not nested:
            return
        for sub in walk(stmt):
            if isinstance(sub, gast.Name) and isinstance(sub.ctx, gast.Store) and \
                    sub.id in env and not isinstance(stmt, gast.Assign):
                raise self.error(sub, f"{sub.id!r} names a container argument and is bound "
                                 "again here", "give the new value another name")

    def forget_rebound(self, stmt, env, nested):
        """A container name assigned another value is no longer that container; inside a
        branch or a loop its meaning would depend on the path taken: refused."""
        targets = [t for t in walk(stmt) if isinstance(t, gast.Name) and
                   isinstance(t.ctx, gast.Store) and t.id in env]
        for target in targets:
            if nested:
                raise self.error(target, f"{target.id!r} holds a container argument and is "
                                 "assigned here inside a branch or loop",
                                 "give the new value another name")
            del env[target.id]

    def tree_map(self, stmt, env, nested):
        """`q = tree_map(f, p, ...)` over containers: one call of `f` per leaf, each bound
        to a name of its own, and `q` the container of those names. None otherwise."""
        call, target = stmt.value, stmt.targets[0]
        if not isinstance(call, gast.Call) or len(call.args) < 2 or call.keywords or \
                resolve(self.fn, call.func, None) is not tree_util.tree_map:
            return None
        trees = [self.resolve(a, env) for a in call.args[1:]]
        if not all(isinstance(t, Tree) for t in trees):
            return None
        if any(t.layout != trees[0].layout for t in trees) or \
                not isinstance(target, gast.Name):
            raise self.error(call, "tree_map over containers of different structures, or "
                             "into a target other than one name",
                             "map containers of one structure: q = tree_map(f, p, g)")
        if nested:
            raise self.error(target, f"a container is bound to {target.id!r} inside a "
                             "branch or loop", "bind it before the branch")
        columns = list(zip(*(names_in(t) for t in trees)))
        names = [self.namer.fresh(f"{target.id}_{column[0]}") for column in columns]
        lines = [gast.copy_location(gast.Assign(
            targets=[name(n, gast.Store())], type_comment=None,
            value=gast.Call(func=self.rewrite(copy_tree(call.args[0]), env),
                            args=[name(leaf) for leaf in column], keywords=[])), stmt)
            for n, column in zip(names, columns)]
        for line in lines:
            for sub in walk(line):
                if "lineno" in getattr(sub, "_attributes", ()):
                    gast.copy_location(sub, stmt)
        env[target.id] = with_names(trees[0], iter(names))
        return lines

    def bind_entry(self, target, entry, env, nested, where) -> list:
        """`target = entry` for one entry of an unrolled loop: a container, a leaf's
        parameter name, a `Key`, or a tuple of those (from enumerate and items())."""
        if isinstance(entry, Tree):
            return self.bind(target, entry, env, nested, where)
        if isinstance(entry, tuple):
            if not isinstance(target, (gast.Tuple, gast.List)) or \
                    len(target.elts) != len(entry):
                raise self.error(target, f"unpack the {len(entry)} items of each step "
                                 "into as many names")
            return [s for t, e in zip(target.elts, entry)
                    for s in self.bind_entry(t, e, env, nested, where)]
        value = const(entry.key) if isinstance(entry, Key) else name(entry)
        assign = gast.Assign(targets=[copy_tree(target)],
                             value=gast.copy_location(value, where), type_comment=None)
        return self.statement(gast.copy_location(assign, where), env, nested)

    def bind(self, target, tree, env, nested, where) -> list:
        """`target = <container>`: a name aliases it; a tuple target unpacks it."""
        if isinstance(target, gast.Name):
            if nested:
                raise self.error(target, f"a container is bound to {target.id!r} inside a "
                                 "branch or loop", "bind it before the branch")
            env[target.id] = tree
            return []
        if isinstance(target, (gast.Tuple, gast.List)):
            stars = [i for i, t in enumerate(target.elts) if isinstance(t, gast.Starred)]
            if tree.layout.kind not in ("sequence", "attrs") or len(stars) > 1:
                raise self.error(target, f"cannot unpack a {self.describe(tree)} here",
                                 "unpack a tuple, list or namedtuple into as many names "
                                 "as it has entries, or read a dict by its keys")
            pairs = self.unpacked(target, stars[0] if stars else None, tree)
            out = []
            for elt, child in pairs:
                if isinstance(child, Tree):
                    out.extend(self.bind(elt, child, env, nested, where))
                else:
                    assign = gast.Assign(targets=[elt], value=name(child), type_comment=None)
                    out.extend(self.statement(gast.copy_location(assign, where), env, nested))
            return out
        raise self.error(target, f"a {self.describe(tree)} cannot be assigned to this target")

    def unpacked(self, target, star, tree) -> list:
        """(target, entry) pairs of `a, b = tree`, or of `first, *rest = tree`, where the
        starred name (index `star`) receives the list of the entries between, as in
        Python."""
        names, entries = len(target.elts), len(tree.children)
        if star is None:
            if names != entries:
                raise self.error(target, f"cannot unpack {entries} entries into "
                                 f"{names} names")
            return list(zip(target.elts, tree.children))
        after = names - star - 1
        if entries < names - 1:
            raise self.error(target, f"cannot unpack {entries} entries into {names - 1} "
                             "names and a starred name")
        middle = list(range(star, entries - after))
        rest = Tree(sliced(tree.layout, middle, as_list=True),
                    tuple(tree.children[i] for i in middle))
        return list(zip(target.elts[:star], tree.children[:star])) + \
            [(target.elts[star].value, rest)] + \
            list(zip(target.elts[star + 1:], tree.children[entries - after:]))

    def iteration(self, expr, env):
        """The entries a `for` over a container visits, or None for any other loop:
        a list or tuple, `enumerate` of one, `zip` of several, a dict (its keys), a dict's
        `keys()`, `values()`, `items()`."""
        tree = self.resolve(expr, env)
        if isinstance(tree, Tree):
            if tree.layout.kind == "dict":          # as Python iterates a dict: its keys
                return [Key(k) for k in tree.layout.keys]
            if tree.layout.kind != "sequence":
                raise self.error(expr, f"cannot iterate over a {self.describe(tree)}",
                                 "iterate over a list or tuple argument, or over a dict's "
                                 ".items()")
            return list(tree.children)
        if not isinstance(expr, gast.Call) or expr.keywords:
            return None
        if len(expr.args) == 1 and resolve(self.fn, expr.func, None) is enumerate:
            entries = self.iteration(expr.args[0], env)
            return None if entries is None else \
                [(Key(i), entry) for i, entry in enumerate(entries)]
        if expr.args and not expr.keywords and resolve(self.fn, expr.func, None) is zip:
            # `zip(params, grads)`: every argument a container
            columns = [self.iteration(arg, env) for arg in expr.args]
            return None if any(c is None for c in columns) else list(zip(*columns))
        if expr.args or not isinstance(expr.func, gast.Attribute):
            return None
        tree = self.resolve(expr.func.value, env)
        if not isinstance(tree, Tree) or tree.layout.kind != "dict" or \
                expr.func.attr not in ("keys", "values", "items"):
            return None
        keys = [Key(k) for k in tree.layout.keys]
        return {"keys": keys, "values": list(tree.children),
                "items": list(zip(keys, tree.children))}[expr.func.attr]

    def unroll(self, loop, entries, env, nested) -> list:
        """`for W, b in layers:` over a container: one copy of the body per entry."""
        jumps = [n for stmt in loop.body for n in walk(stmt)
                 if isinstance(n, (gast.Break, gast.Continue))]
        if jumps:
            raise self.error(jumps[0], "break and continue are not supported in a loop over "
                             "a container argument (the loop is unrolled)",
                             "use an if around the rest of the body")
        out = []
        rebound = {n.id for stmt in loop.body for n in walk(stmt)
                   if isinstance(n, gast.Name) and not isinstance(n.ctx, gast.Load)}
        for entry in entries:
            out.extend(self.bind_entry(loop.target, entry, env, nested, loop))
            body = copy_tree(loop.body)
            if isinstance(loop.target, gast.Name) and isinstance(entry, Key) and \
                    loop.target.id not in rebound:    # `for k in params: params[k]`
                body = [substitute(stmt, {loop.target.id: const(entry.key)}) for stmt in body]
            out.extend(self.statements(body, env, nested))
        return out + self.statements(loop.orelse, env, nested)

    def comprehension(self, node, env):
        """A list or dict comprehension over container arguments (`[np.sum(W ** 2) for W, b
        in params]`) as the literal of its items, each entry bound as a `for` over the
        container binds it; None where a generator is not over a container or has an `if`."""
        scopes = [(dict(env), {})]          # (names -> trees or leaves, names -> constants)
        for gen in node.generators:
            if gen.ifs or getattr(gen, "is_async", 0):
                return None
            following = []
            for scope, constants in scopes:
                entries = self.iteration(gen.iter, scope)
                if entries is None:
                    return None
                for entry in entries:
                    inner, values = dict(scope), dict(constants)
                    if not _bind_in(gen.target, entry, inner, values):
                        return None
                    following.append((inner, values))
            scopes = following

        def item(expr, scope, constants):
            return self.rewrite(substitute(expr, {k: const(v) for k, v in constants.items()}),
                                scope)
        if isinstance(node, gast.ListComp):
            out = gast.List(elts=[item(node.elt, *s) for s in scopes], ctx=gast.Load())
        else:
            out = gast.Dict(keys=[item(node.key, *s) for s in scopes],
                            values=[item(node.value, *s) for s in scopes])
        return gast.copy_location(out, node)

    def refuse_uses(self, node, env):
        for sub in walk(node):
            if isinstance(sub, gast.Name) and sub.id in env:
                raise self.error(sub, f"container argument {sub.id!r} is used inside a "
                                 "nested function")

    # ------------------------------------------------------------ expressions
    def resolve(self, expr, env):
        """The `Tree` or leaf name `expr` denotes, or None when it is not a container read."""
        if isinstance(expr, gast.Name):
            return env.get(expr.id)
        if isinstance(expr, gast.Attribute):
            parent = self.resolve(expr.value, env)
            if isinstance(parent, Tree):
                if parent.layout.kind != "attrs" or expr.attr not in parent.layout.keys:
                    raise self.error(expr, f"a {self.describe(parent)} has no field "
                                     f"{expr.attr!r} here", "read one of its fields "
                                     f"{list(parent.layout.keys)}")
                return parent.child(expr.attr)
            return None
        if isinstance(expr, gast.Subscript):
            parent = self.resolve(expr.value, env)
            if isinstance(parent, Tree):
                return self.entry(parent, expr)
        return None

    def entry(self, tree, expr):
        key = constant(expr.slice)
        layout = tree.layout
        if layout.kind == "dict":
            if key is NOT_CONSTANT or key not in layout.keys:
                raise self.error(expr, "a dict argument can only be read with a constant key "
                                 f"(one of {list(layout.keys)})",
                                 "write params['W'] with a literal key")
            return tree.child(key)
        if layout.kind in ("sequence", "attrs") and isinstance(key, int) and \
                not isinstance(key, bool):
            if not -len(tree.children) <= key < len(tree.children):
                raise self.error(expr, f"index {key} is out of range for a container of "
                                 f"{len(tree.children)} entries")
            return tree.children[key]
        positions = constant_slice(expr.slice, len(tree.children))
        if layout.kind == "sequence" and positions is not None:
            return Tree(sliced(layout, positions),
                         tuple(tree.children[i] for i in positions))
        if key is NOT_CONSTANT and self.tuples and sequences_only(tree):
            return None                   # a tuple of leaves indexed at run time
        raise self.error(expr, f"a {self.describe(tree)} can only be read with a constant "
                         "index here", "index it with a literal (layers[0]) or a slice of "
                         "literals (layers[:-1]), or iterate over it (for W, b in layers:)")

    def rewrite(self, value, env):
        if isinstance(value, list):
            return [self.rewrite(v, env) for v in value]
        if not isinstance(value, gast.AST):
            return value
        if isinstance(value, (gast.Name, gast.Attribute, gast.Subscript)):
            if not isinstance(value.ctx, gast.Load):
                return self.target(value, env)
            found = self.resolve(value, env)
            if isinstance(found, str):
                return gast.copy_location(name(found), value)
            if isinstance(found, Tree):
                return self.whole(value, found)
        if isinstance(value, gast.Call) and isinstance(value.func, gast.Name) and \
                value.func.id == "len" and len(value.args) == 1 and not value.keywords:
            found = self.resolve(value.args[0], env)
            if isinstance(found, Tree):
                return gast.copy_location(const(len(found.children)), value)
        if isinstance(value, (gast.ListComp, gast.DictComp)):
            expanded = self.comprehension(value, env)
            if expanded is not None:
                return expanded
        if isinstance(value, gast.Lambda):
            self.refuse_uses(value, env)
            return value
        if isinstance(value, gast.Call):
            passed = self.passed_on(value, env)
            if passed is not None:
                return passed
        for field, child in gast.iter_fields(value):
            setattr(value, field, self.rewrite(child, env))
        return value

    def target(self, node, env):
        """An assignment target: a container's entry cannot be replaced (the caller's
        container would change); an array entry can be written into (`p["W"][0] = v`)."""
        if isinstance(node, gast.Name):
            return node
        if self.resolve(node, env) is not None:
            raise self.error(node, "an entry of a container argument cannot be assigned",
                             "build a new value under another name (W2 = p['W'] * 2)")
        node.value = self.rewrite(node.value, env)
        if isinstance(node, gast.Subscript):
            node.slice = self.rewrite(node.slice, env)
        return node

    def whole(self, expr, tree):
        """A container used as a value: a tuple of leaves if it holds only sequences."""
        if self.tuples and isinstance(getattr(expr, "ctx", None), gast.Load) and \
                sequences_only(tree):
            return as_tuple(tree, expr)
        what = expr.id if isinstance(expr, gast.Name) else "this container"
        raise self.error(expr, f"container argument {what!r} ({self.describe(tree)}) is "
                         "used whole here; transformations read its entries, they cannot "
                         "pass it on or change it")

    @staticmethod
    def describe(tree) -> str:
        kind = tree.layout.kind
        if kind == "sequence":
            return f"{tree.layout.structure.type.__name__} of {len(tree.children)}"
        if kind in ("attrs", "opaque"):
            return tree.layout.structure.type.__name__
        return {"dict": "dict", "empty": "None"}[kind]



    def flatten(self, helper: Function, layouts, active: frozenset) -> Function:
        """`helper` flattened for `layouts` the way this function is (`ContainerCalls`)."""
        return flatten_parameters(helper, layouts, self.tuples, active)


def _bind_in(target, entry, scope: dict, constants: dict) -> bool:
    """Bind a comprehension's `target` to one entry of a container (a `Tree`, a leaf's
    parameter name, a `Key`, or a tuple of those); False where the target does not fit."""
    if isinstance(target, gast.Name):
        if isinstance(entry, Key):
            constants[target.id] = entry.key
            scope.pop(target.id, None)
        elif isinstance(entry, (Tree, str)):
            scope[target.id] = entry
            constants.pop(target.id, None)
        else:
            return False
        return True
    if not isinstance(target, (gast.Tuple, gast.List)):
        return False
    if isinstance(entry, Tree):
        if entry.layout.kind not in ("sequence", "attrs"):
            return False
        entry = entry.children
    if not isinstance(entry, tuple) or len(entry) != len(target.elts):
        return False
    return all(_bind_in(t, e, scope, constants) for t, e in zip(target.elts, entry))

