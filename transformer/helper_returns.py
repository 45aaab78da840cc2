"""Containers a user's helper returns, read by position at the call.

`return loss, {"mse": m}` or `return {"loss": l, "acc": a}` in a helper: transformations
differentiate and batch a helper returning one value or one flat tuple of values. So a
call of a helper whose every return is a literal of one container shape with something
nested in it - a dict with constant keys, or a tuple or list holding one of those or a
tuple or list - calls a variant returning the flat tuple of its leaves (in the order the
shape lists them), and the caller reads each leaf by its position:

    step(x)[1]["mse"]              ->  step_flat(x)[1]
    r = step(x); r[0] + r[1]["mse"]   ->  r = step_flat(x); r[0] + r[1]
    l, aux = step(x); aux["mse"]   ->  result = step_flat(x); l = result[0]; ... result[1]

Applies to a call when every use of its result is such a read: a chain of constant keys
and indices that ends at a leaf, a name bound once to the result or to a part of it (or
unpacked from it) and itself only read so, or a return of it (`return r`: the literal of
its container built from its leaves, which `jit` hands back whole). Otherwise the
function is left as written (and refused where a transformation cannot take it).

Output invariant: a call rewritten reads only leaves of the flat result, by constant
index; the variant returns a flat tuple at every return.
"""
from __future__ import annotations

import ast
import textwrap
import threading
import weakref

import gast

from codegen.backends import is_user_function

from .errors import TransformError
from .function import Function, resolve, source_lines
from .names import Namer, name_counts
from .nodes import copy_tree, own_returns, walk
from .pytree_returns import container_shape, literal_entries
from .syntax import const, name


def flatten_helper_returns(fn: Function, namer: Namer, parse) -> dict:
    """The env of `fn` with the variants its rewritten calls need; `fn.node` is rewritten
    in place. `namer` gives fresh names (the frontend's); `parse` reads a callee (the
    frontend's, passed in: the frontend calls this)."""
    targets = {}
    for call in walk(fn.node):
        if isinstance(call, gast.Call) and isinstance(call.func, gast.Name):
            target = resolve(fn, call.func, None)
            if target is not None and id(target) not in targets and \
                    (isinstance(target, Function) or is_user_function(target)):
                targets[id(target)] = target
    if not targets:
        return fn.env
    env = dict(fn.env)
    fn = fn.replace(env=env)
    helpers = {}
    for key, target in targets.items():
        shape = _returned_shape(target, parse)
        if shape is not None:
            helpers[key] = (target, shape)
    if helpers:
        _Rewrite(fn, helpers, namer, parse).run()
    return env


_examining = threading.local()


def _returned_shape(target, parse):
    """The shape every return of `target` has, when it nests a container or is a dict or
    a list (a flat tuple is returned as it is). Read from the source's returns alone
    (`_source_shape`), so a helper returning anything else is not parsed for it."""
    if isinstance(target, Function):
        return _shape_of(_returns(target.node), lambda node: container_shape(target, node))
    code = getattr(target, "__code__", None)
    if code is None or _source_shape(target) is None:
        return None
    examining = getattr(_examining, "ids", None)
    if examining is None:
        examining = _examining.ids = set()
    if id(target) in examining:
        return None                        # recursion: its parse is under way
    examining.add(id(target))
    try:
        helper = _function(target, parse)
    except TransformError:                 # refused where it is called, as before
        return None
    finally:
        examining.discard(id(target))
    return _shape_of(_returns(helper.node), lambda node: container_shape(helper, node))


def _returns(node) -> list:
    return [n for n in walk(node) if isinstance(n, gast.Return)]


def _shape_of(returns, shape_of):
    if not returns or any(r.value is None for r in returns):
        return None
    shapes = {shape_of(r.value) for r in returns}
    shape = shapes.pop() if len(shapes) == 1 else None
    if shape is None or not _plain(shape):
        return None
    if shape[0] == "tuple" and all(child is None for child in shape[-1]):
        return None
    return shape


def _source_shape(target):
    """`_returned_shape` of `target` read from its source with the standard parser, once
    per code object; None also when the source cannot be read."""
    code = target.__code__
    if code not in _SOURCE_SHAPES:
        try:
            lines, _ = source_lines(target)
            tree = ast.parse(textwrap.dedent("".join(lines)))
        except (OSError, TypeError, SyntaxError, IndentationError):
            _SOURCE_SHAPES[code] = None
        else:
            returns = [n for n in ast.walk(tree) if isinstance(n, ast.Return)]
            _SOURCE_SHAPES[code] = _shape_of(returns, _ast_shape)
    return _SOURCE_SHAPES[code]


_SOURCE_SHAPES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def none_items(target) -> frozenset:
    """The positions at which every `return` of Python function `target` returns a tuple
    literal with a literal None (`return carry, None`, a scan step stacking nothing);
    empty when the source cannot be read or a return is anything else. Returns of
    functions nested in it are not its own."""
    code = getattr(target, "__code__", None)
    if code is None:
        return frozenset()
    if code not in _NONE_ITEMS:
        _NONE_ITEMS[code] = _none_items_of_source(target)
    return _NONE_ITEMS[code]


_NONE_ITEMS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _none_items_of_source(target) -> frozenset:
    try:
        lines, _ = source_lines(target)
        tree = gast.parse(textwrap.dedent("".join(lines)))
    except (OSError, TypeError, SyntaxError, IndentationError):
        return frozenset()
    if not tree.body or not isinstance(tree.body[0], gast.FunctionDef):
        return frozenset()
    returns = own_returns(tree.body[0])
    if not returns or not all(isinstance(r.value, gast.Tuple) for r in returns):
        return frozenset()
    sizes = {len(r.value.elts) for r in returns}
    if len(sizes) != 1:
        return frozenset()
    return frozenset(k for k in range(sizes.pop()) if all(
        isinstance(r.value.elts[k], gast.Constant) and r.value.elts[k].value is None
        for r in returns))


def _ast_shape(node):
    """`pytree_returns.container_shape` for dict, tuple and list literals, on `ast`."""
    if isinstance(node, ast.Dict):
        if all(isinstance(k, ast.Constant) for k in node.keys):
            return ("dict", tuple(k.value for k in node.keys),
                    tuple(_ast_shape(v) for v in node.values))
        return None
    if isinstance(node, (ast.List, ast.Tuple)):
        if any(isinstance(e, ast.Starred) for e in node.elts):
            return None
        return ("list" if isinstance(node, ast.List) else "tuple",
                tuple(_ast_shape(e) for e in node.elts))
    return None


def _function(target, parse) -> Function:
    """A callee's Function: a variant made by the pytree boundary is one already."""
    return target if isinstance(target, Function) else parse(target)


def _plain(shape) -> bool:
    """Only dicts, tuples and lists (a namedtuple or dataclass is read by attribute)."""
    return shape is None or shape[0] in ("dict", "tuple", "list") and \
        all(_plain(child) for child in shape[-1])


def _keys(shape) -> tuple:
    return shape[1] if shape[0] == "dict" else tuple(range(len(shape[-1])))


def leaf_paths(shape, prefix=()) -> list:
    """The key paths of `shape`'s leaves, in the flat tuple's order."""
    if shape is None:
        return [prefix]
    return [path for key, child in zip(_keys(shape), shape[-1])
            for path in leaf_paths(child, prefix + (key,))]


def _child(shape, key):
    """The shape at `key` of `shape`, or a KeyError."""
    keys = _keys(shape)
    if shape[0] != "dict" and isinstance(key, int) and -len(keys) <= key < 0:
        key += len(keys)
    if key not in keys or isinstance(key, bool):
        raise KeyError(key)
    return shape[-1][keys.index(key)], key


class _Unsupported(Exception):
    """A use of a rewritten result that is not a read of a leaf by constant keys."""


class _Rewrite:
    def __init__(self, fn, helpers, namer, parse):
        self.fn, self.node, self.helpers, self.parse = fn, fn.node, helpers, parse
        self.namer = namer
        self.variants: dict = {}

    def run(self) -> None:
        self.stores = name_counts(self.node, (gast.Store, gast.Param))
        original = copy_tree(self.node)
        try:
            self.block(self.node.body, {})
        except _Unsupported:
            self.node.body = original.body       # the function is left as written
            for fresh in self.variants.values():
                self.fn.env.pop(fresh, None)

    # ------------------------------------------------------------ statements
    def block(self, body: list, aliases: dict) -> None:
        out = []
        for stmt in body:
            out.extend(self.statement(stmt, aliases))
        body[:] = out

    def statement(self, stmt, aliases) -> list:
        if isinstance(stmt, gast.Return) and stmt.value is not None:
            lines: list = []
            stmt.value = self.returned(stmt.value, aliases, lines)
            return lines + [stmt]
        if isinstance(stmt, gast.Assign) and len(stmt.targets) == 1:
            bound = self.binding(stmt, aliases)
            if bound is not None:
                return bound
        for field in ("body", "orelse"):
            inner = getattr(stmt, field, None)
            if isinstance(inner, list) and not isinstance(stmt, gast.FunctionDef):
                self.block(inner, aliases)
        for field, value in gast.iter_fields(stmt):
            if field in ("body", "orelse", "handlers", "finalbody"):
                continue
            setattr(stmt, field, self.expression(value, aliases))
        return [stmt]

    def binding(self, stmt, aliases):
        """`r = helper(x)`, `l, aux = helper(x)`, `aux = r[1]`, `a, b = r`: a name bound
        to a part of a flat result that is not a leaf is an alias; a leaf is read."""
        found = self.part(stmt.value, aliases)
        if found is None:
            return None
        holder, shape = found
        lines = []
        if shape is not None and isinstance(holder[0], gast.Call):
            result = self.namer.fresh("result")       # the call runs once, here
            lines.append(gast.copy_location(gast.Assign(
                targets=[name(result, gast.Store())], value=holder[0], type_comment=None),
                stmt))
            holder = (name(result),) + holder[1:]
        return lines + self.bind(stmt.targets[0], holder, shape, aliases, stmt)

    def bind(self, target, holder, shape, aliases, where) -> list:
        if shape is None:                           # a leaf: read it
            return [gast.copy_location(gast.Assign(targets=[target], value=holder,
                                                   type_comment=None), where)]
        if isinstance(target, gast.Name):
            if self.stores.get(target.id) != 1:
                raise _Unsupported(target.id)
            aliases[target.id] = (holder, shape)
            return []
        if isinstance(target, (gast.Tuple, gast.List)) and shape[0] != "dict" and \
                len(target.elts) == len(shape[-1]) and \
                not any(isinstance(t, gast.Starred) for t in target.elts):
            out = []
            for key, elt in zip(_keys(shape), target.elts):
                part, child = self.read(holder, shape, key)
                out.extend(self.bind(elt, part, child, aliases, where))
            return out
        raise _Unsupported(target)

    def returned(self, value, aliases, lines: list):
        """A returned result (or tuple holding one) as the literal of its container,
        built from its leaves: `return r` -> `return {"loss": r[0], "parts": (r[1],
        r[2])}`, which jit hands back whole (`pytree_returns`)."""
        if isinstance(value, gast.Tuple):
            value.elts = [self.returned(e, aliases, lines) for e in value.elts]
            return value
        found = self.part(value, aliases) if isinstance(value, (gast.Subscript, gast.Call,
                                                               gast.Name)) else None
        if found is None:
            return self.expression(value, aliases)
        holder, shape = found
        if shape is None:
            return gast.copy_location(holder, value)
        if isinstance(holder[0], gast.Call):
            result = self.namer.fresh("result")       # the call runs once, here
            lines.append(gast.copy_location(gast.Assign(
                targets=[name(result, gast.Store())], value=holder[0], type_comment=None),
                value))
            holder = (name(result),) + holder[1:]
        return gast.copy_location(self.literal(holder, shape), value)

    def literal(self, holder, shape):
        parts = []
        for key in _keys(shape):
            part, child = self.read(holder, shape, key)
            parts.append(part if child is None else self.literal(part, child))
        if shape[0] == "dict":
            return gast.Dict(keys=[const(k) for k in shape[1]], values=parts)
        kind = gast.List if shape[0] == "list" else gast.Tuple
        return kind(elts=parts, ctx=gast.Load())

    # ------------------------------------------------------------ expressions
    def part(self, expr, aliases):
        """(holder, shape) for a read of a rewritten call's result or of an alias: a leaf's
        read expression and None, or (base, path, whole shape) and the part's shape; None
        when `expr` is neither."""
        keys = []
        while isinstance(expr, gast.Subscript) and isinstance(expr.ctx, gast.Load) and \
                isinstance(expr.slice, gast.Constant):
            keys.append(expr.slice.value)
            expr = expr.value
        if isinstance(expr, gast.Name) and expr.id in aliases:
            holder, shape = aliases[expr.id]
        elif isinstance(expr, gast.Call) and id(self.target_of(expr)) in self.helpers:
            target, shape = self.helpers[id(self.target_of(expr))]
            expr.args = [self.expression(a, aliases) for a in expr.args]
            for keyword in expr.keywords:
                keyword.value = self.expression(keyword.value, aliases)
            expr.func = gast.copy_location(name(self.variant(target, shape)), expr.func)
            holder = (expr, (), shape)
        else:
            return None
        for key in reversed(keys):
            holder, shape = self.read(holder, shape, key)
        return holder, shape

    def read(self, holder, shape, key):
        """The part at `key` of the part `holder` of a flat result: a leaf's read of the
        flat tuple and None, or the part's holder and shape."""
        if shape is None:
            raise _Unsupported(key)                  # an array leaf indexed: left alone
        try:
            child, key = _child(shape, key)
        except KeyError:
            raise _Unsupported(key) from None
        base, path, whole = holder
        path = path + (key,)
        if child is not None:
            return (base, path, whole), child
        index = leaf_paths(whole).index(path)
        return gast.Subscript(value=copy_tree(base), slice=const(index), ctx=gast.Load()), None

    def expression(self, value, aliases):
        if isinstance(value, list):
            return [self.expression(v, aliases) for v in value]
        if not isinstance(value, gast.AST) or isinstance(value, gast.stmt):
            return value
        if isinstance(value, (gast.Subscript, gast.Call, gast.Name)):
            found = self.part(value, aliases)
            if found is not None:
                holder, shape = found
                if shape is not None:
                    raise _Unsupported(value)        # a container used whole
                return gast.copy_location(holder, value)
        if isinstance(value, gast.Name) and value.id in aliases:
            raise _Unsupported(value.id)
        for field, child in gast.iter_fields(value):
            setattr(value, field, self.expression(child, aliases))
        return value

    def target_of(self, call):
        return resolve(self.fn, call.func, None) if isinstance(call.func, gast.Name) else None

    def variant(self, target, shape) -> str:
        if id(target) not in self.variants:
            helper = _function(target, self.parse)
            node = copy_tree(helper.node)
            for ret in (n for n in walk(node) if isinstance(n, gast.Return)):
                leaves = _leaf_expressions(ret.value, shape)
                ret.value = gast.copy_location(gast.Tuple(elts=leaves, ctx=gast.Load()),
                                               ret.value)
            fresh = self.namer.fresh(f"{helper.name}_flat")
            node.name = fresh
            self.fn.env[fresh] = helper.replace(node=node)
            self.variants[id(target)] = fresh
        return self.variants[id(target)]


def _leaf_expressions(node, shape) -> list:
    if shape is None:
        return [node]
    return [leaf for entry, child in zip(literal_entries(node), shape[-1])
            for leaf in _leaf_expressions(entry, child)]
