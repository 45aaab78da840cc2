"""Python forms: rewrite the Python people write inside a transformed function into the
core the other passes handle. Runs first in `desugar` (and in `methods_to_functions`).

Output invariant - none of these remain; each is rewritten or refused with a located
TransformError:
- a list or dict comprehension over a sequence whose length the source states (`range`
  of literal ints, a tuple/list/dict literal, a name bound once to one, `enumerate`/`zip`
  of those, `d.items()/keys()/values()`) becomes the list/dict literal of its items;
- a constant-key read of a dict from the env (`CONFIG["lr"]`, `ACT["relu"]`) whose value
  is a literal or a function is that value (`transformer.dict_reads`);
- a `for` over a tuple or list of functions known before the run is unrolled
  (`transformer.function_values`), and a local name bound once to a function
  (`act = np.tanh`) is that function;
- a local function (`g = lambda v: ...`, a nested `def h(v): return ...`) is inlined at
  each call: its parameters are replaced by the call's arguments, and its free names are
  the enclosing function's, read when it is called, as Python's closures read them;
- `f(*t)` with `t` of a length the source states is `f(t[0], ..., t[n-1])`, and a call of
  a module-level helper that forwards `*args` is its returned expression;
- a `for` over a list, tuple or dict the function builds from a literal (`for w in ws`,
  `for k, v in d.items()`) is written out, one copy of the body per item
  (`transformer.container_loops`);
- a dict bound once to a literal with constant keys and read only by constant keys
  (`d["a"]`, what a dict comprehension over a literal leaves) is one variable per key;
- `first, *rest = (a, b, c)` over such a sequence binds each name to its item and the
  starred name to the list of the items between (over a container argument, the pytree
  boundary unpacked it before); any other starred target is refused;
- a generator expression given to `sum`, `min`, `max`, `any`, `all`, `list`, `tuple` or
  `sorted` is its list comprehension (`generators_as_lists`, before the fence), and `sum`
  of a sequence whose length the source states is the sum of its items, in order;
- a list literal (or a name bound once to one) passed to a NumPy reduction or ufunc
  (`np.sum([1, a * a, 2])`) is `np.array([...])`, whose adjoint splits per item (a
  sequence argument has none).
"""
from __future__ import annotations

import ast
from typing import Callable

import gast
import numpy as np

from codegen.backends import is_user_function
from codegen.emit import expression_source

from .dict_reads import fold_dict_reads
from .function import Function, resolve
from .function_values import bind_function_values
from .local_functions import LocalFunction, definition, instance
from .local_partials import inline_partials
from .names import Namer
from .nodes import copy_tree, substitute, walk
from .container_loops import unroll_container_loops
from .star_helpers import inline_star_helpers
from .syntax import (
    assign,
    const,
    located,
    map_own_expressions,
    name,
    rewrite_block,
    store,
    subscript,
)

# NumPy functions that read their first argument as one array (a list literal there is
# `np.array(list)`); functions taking a sequence of arrays (np.stack) are not among them
_ARRAY_FIRST = (np.sum, np.mean, np.prod, np.max, np.min, np.amax, np.amin, np.std, np.var,
                np.cumsum, np.cumprod, np.linalg.norm, np.average, np.median)
_SEQUENCE_HINT = ("iterate over range(n) with n an int literal, over a tuple/list literal, "
                  "or over a name bound once to one; or write a `for` loop")


def normalize(fn: Function, numpy: Callable[[], str], env: dict) -> Function:
    """`fn` in the output form above; `numpy()` names the numpy module in `env`, which
    also receives the names an inlined forwarding helper (`transformer.star_helpers`)
    reads."""
    fn = fn.replace(env=env)
    node = bind_function_values(fn, fold_dict_reads(fn, copy_tree(fn.node)))
    literals = _literal_bindings(node)
    expand = _Comprehensions(fn, literals, numpy)
    node = expand.visit(node)
    node = inline_star_helpers(fn, node, env,
                               lambda expr, mapping: expand.visit(substitute(expr, mapping)))
    # names the first pass bound to the lists it unrolled: `np.sum(pairs)` sees them now
    node = _Comprehensions(fn, _literal_bindings(node), numpy).visit(node)
    node = _inline_local_functions(fn, inline_partials(fn, node, env))
    node = unroll_container_loops(fn, node)
    _split_local_dicts(node, Namer.for_function(fn))
    return fn.replace(node=node)


def _literal_bindings(fn_node) -> dict:
    """Name -> the Tuple/List/Dict literal it is bound to, for names bound exactly once (a
    top-level `t = (a, b)`), never a parameter and never reached through an attribute
    (`t.append(v)` would change its length)."""
    bound = [stmt for stmt in fn_node.body if isinstance(stmt, gast.Assign) and
             len(stmt.targets) == 1 and isinstance(stmt.targets[0], gast.Name) and
             isinstance(stmt.value, (gast.Tuple, gast.List, gast.Dict))]
    if not bound:                           # most functions: no walk needed
        return {}
    stores: dict = {}
    attributes = set()
    for sub in walk(fn_node):
        if isinstance(sub, gast.Name) and isinstance(sub.ctx, (gast.Store, gast.Param)):
            stores[sub.id] = stores.get(sub.id, 0) + 1
        elif isinstance(sub, gast.Attribute) and isinstance(sub.value, gast.Name):
            attributes.add(sub.value.id)
    found = {}
    for stmt in bound:
        target = stmt.targets[0].id
        if stores.get(target) == 1 and (target not in attributes or
                                        isinstance(stmt.value, gast.Dict)):
            found[target] = stmt.value
    return found


def _static_int(fn, node):
    if isinstance(node, gast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, gast.UnaryOp) and isinstance(node.op, gast.USub):
        inner = _static_int(fn, node.operand)
        return None if inner is None else -inner
    if isinstance(node, gast.Name):
        value = resolve(fn, node, None)
        return value if type(value) is int else None
    return None


class _Comprehensions(gast.NodeTransformer):
    def __init__(self, fn, literals, numpy):
        self.fn, self.literals, self.numpy = fn, literals, numpy

    def refuse(self, node, message, hint=_SEQUENCE_HINT):
        raise self.fn.origin.error(node, message, hint)

    # ------------------------------------------------------------ sequences
    def items(self, expr):
        """The item expressions of `expr`, a sequence whose length the source states;
        None if it does not."""
        if isinstance(expr, (gast.Tuple, gast.List)):
            if any(isinstance(e, gast.Starred) for e in expr.elts):
                return None
            return list(expr.elts)
        if isinstance(expr, gast.Name) and expr.id in self.literals:
            literal = self.literals[expr.id]
            if isinstance(literal, gast.Dict):
                return [copy_tree(k) for k in literal.keys] \
                    if all(isinstance(k, gast.Constant) for k in literal.keys) else None
            return [subscript(name(expr.id), const(k)) for k in range(len(literal.elts))]
        if isinstance(expr, gast.Name):
            value = resolve(self.fn, expr, None)
            if isinstance(value, (tuple, list)):
                return [subscript(name(expr.id), const(k)) for k in range(len(value))]
            return None
        if isinstance(expr, gast.Call) and not expr.keywords:
            return self.call_items(expr)
        return None

    def call_items(self, expr):
        func = resolve(self.fn, expr.func, None)
        if func is range:
            bounds = [_static_int(self.fn, a) for a in expr.args]
            if not bounds or None in bounds or len(bounds) > 3 or bounds[-1:] == [0] and \
                    len(bounds) == 3:
                return None
            return [const(i) for i in range(*bounds)]
        if func is enumerate and len(expr.args) in (1, 2):
            start = _static_int(self.fn, expr.args[1]) if len(expr.args) == 2 else 0
            inner = self.items(expr.args[0])
            if inner is None or start is None:
                return None
            return [gast.Tuple(elts=[const(start + k), item], ctx=gast.Load())
                    for k, item in enumerate(inner)]
        if func is zip and expr.args:
            columns = [self.items(a) for a in expr.args]
            if any(c is None for c in columns):
                return None
            return [gast.Tuple(elts=list(row), ctx=gast.Load()) for row in zip(*columns)]
        if isinstance(expr.func, gast.Attribute) and not expr.args and \
                expr.func.attr in ("items", "keys", "values"):
            return self.dict_items(expr.func.value, expr.func.attr)
        return None

    def dict_items(self, base, method):
        if isinstance(base, gast.Dict):
            keys, values = list(base.keys), list(base.values)
        else:
            keys = self.items(base) if isinstance(base, gast.Name) and \
                isinstance(self.literals.get(base.id), gast.Dict) else None
            if keys is None:
                mapping = resolve(self.fn, base, None)
                if not isinstance(mapping, dict):
                    return None
                keys = [const(k) for k in mapping]
            values = [subscript(copy_tree(base), copy_tree(k)) for k in keys]
        if any(k is None for k in keys):
            return None                              # `**other` inside the literal
        if method == "keys":
            return keys
        if method == "values":
            return values
        return [gast.Tuple(elts=[k, v], ctx=gast.Load()) for k, v in zip(keys, values)]

    # ------------------------------------------------------------ comprehensions
    def bindings(self, node, generators):
        """One mapping (loop variable -> item expression) per iteration, in order."""
        mappings = [{}]
        for gen in generators:
            if getattr(gen, "is_async", 0):
                self.refuse(gen, "async comprehensions are not supported by secant",
                            "write a `for` loop")
            following = []
            for mapping in mappings:
                items = self.items(substitute(gen.iter, mapping))
                if items is None:
                    self.refuse(gen.iter, "a comprehension over a sequence whose length is "
                                "not known before the run is not supported by secant")
                for item in items:
                    inner = dict(mapping)
                    self.bind(gen.target, item, inner)
                    if all(self.condition(substitute(c, inner), c) for c in gen.ifs):
                        following.append(inner)
            mappings = following
        return mappings

    def bind(self, target, item, mapping):
        if isinstance(target, gast.Name):
            mapping[target.id] = item
        elif isinstance(target, (gast.Tuple, gast.List)):
            parts = item.elts if isinstance(item, gast.Tuple) and \
                len(item.elts) == len(target.elts) else \
                [subscript(copy_tree(item), const(k)) for k in range(len(target.elts))]
            for sub, part in zip(target.elts, parts):
                self.bind(sub, part, mapping)
        else:
            self.refuse(target, "this comprehension target is not supported by secant",
                        "bind plain names: `for k, v in ...`")

    def condition(self, expr, origin) -> bool:
        """The value of a comprehension's `if`, which must follow from the items alone."""
        if any(isinstance(sub, (gast.Name, gast.Call, gast.Attribute, gast.Subscript))
               for sub in walk(expr)):
            self.refuse(origin, "a comprehension condition that depends on array values is "
                        "not supported by secant", "test only the loop index (`if i % 2`), "
                        "or write a `for` loop with an `if`")
        tree = ast.fix_missing_locations(gast.gast_to_ast(gast.Expression(body=expr)))
        code = compile(tree, "<condition>", "eval")
        try:
            return bool(eval(code, {"__builtins__": {}}))
        except Exception as exc:        # 1 // 0 for one item: Python would raise it too
            raise self.fn.origin.error(origin, f"this comprehension condition fails for an "
                                       f"item ({type(exc).__name__}: {exc})",
                                       "make the condition valid for every item") from None

    def visit_ListComp(self, node):
        elts = [located(substitute(node.elt, m), node) for m in
                self.bindings(node, node.generators)]
        return self.visit(gast.copy_location(gast.List(elts=elts, ctx=gast.Load()), node))

    def visit_DictComp(self, node):
        mappings = self.bindings(node, node.generators)
        out = gast.Dict(keys=[located(substitute(node.key, m), node) for m in mappings],
                        values=[located(substitute(node.value, m), node) for m in mappings])
        return self.visit(gast.copy_location(out, node))

    def visit_Subscript(self, node):
        self.generic_visit(node)
        if isinstance(node.value, gast.Tuple) and isinstance(node.ctx, gast.Load) and \
                isinstance(node.slice, gast.Constant) and type(node.slice.value) is int and \
                -len(node.value.elts) <= node.slice.value < len(node.value.elts):
            return node.value.elts[node.slice.value]          # (a, b)[0], from `args[0]`
        return node

    # ------------------------------------------------------------ starred unpacking
    def visit_Assign(self, node):
        """`first, *rest = (a, b, c)` over a sequence whose length the source states: each
        name bound to its item, the starred one to the list of the items between."""
        node.value = self.visit(node.value)
        target = node.targets[0]
        stars = [i for i, t in enumerate(getattr(target, "elts", ()))
                 if isinstance(t, gast.Starred)]
        items = self.items(node.value) if len(node.targets) == 1 and len(stars) == 1 \
            else None
        if items is None:               # a starred target left is refused (visit_Starred)
            node.targets = [self.visit(t) for t in node.targets]
            return node
        star, names = stars[0], len(target.elts)
        after = names - star - 1
        if len(items) < names - 1:
            self.refuse(target, f"cannot unpack {len(items)} values into {names - 1} names "
                        "and a starred name", "unpack as many values as there are names")
        rest = gast.List(elts=items[star:len(items) - after], ctx=gast.Load())
        values = items[:star] + [located(rest, node.value)] + items[len(items) - after:]
        target.elts[star] = target.elts[star].value
        node.value = located(gast.Tuple(elts=values, ctx=gast.Load()), node.value)
        node.targets = [self.visit(t) for t in node.targets]
        return node

    def visit_Starred(self, node):
        """A starred target neither the rewrite above nor the pytree boundary (`first,
        *rest = layers` over a container argument) took: its value's length is unknown."""
        if isinstance(node.ctx, gast.Store):
            self.refuse(node, "unpacking into a starred name (`first, *rest = x`) is "
                        "supported for a tuple or list argument and a tuple or list "
                        "literal, not for a value whose length is not known before the run",
                        "index it instead: `first, rest = x[0], x[1:]`")
        self.generic_visit(node)
        return node

    # ------------------------------------------------------------ calls
    def visit_Call(self, node):
        self.generic_visit(node)
        if any(isinstance(a, gast.Starred) for a in node.args):
            args = []
            for arg in node.args:
                if not isinstance(arg, gast.Starred):
                    args.append(arg)
                    continue
                items = self.items(arg.value)
                if items is None:
                    self.refuse(arg, "star-arguments (`*x`) over a sequence whose length is "
                                "not known before the run are not supported by secant",
                                "pass a tuple literal (`f(*(a, b))`), a name bound once to "
                                "one, or the elements explicitly")
                args.extend(located(item, arg) for item in items)
            node.args = args
        func = resolve(self.fn, node.func, None)
        if func is len and len(node.args) == 1 and not node.keywords and \
                isinstance(node.args[0], (gast.Tuple, gast.List)):
            return gast.copy_location(const(len(node.args[0].elts)), node)   # len(args)
        if func is sum and 1 <= len(node.args) <= 2 and not node.keywords:
            # `sum(seq)` over a sequence whose length the source states: `start + seq[0]
            # + seq[1] + ...`, Python's own order (a list handed to `sum` whole would be
            # a container the transformations cannot follow)
            items = self.items(node.args[0])
            if items is not None:
                total = node.args[1] if len(node.args) == 2 else const(0)
                for item in items:
                    total = gast.BinOp(left=total, op=gast.Add(), right=item)
                return located(total, node)
        if node.args and (isinstance(node.args[0], gast.List) or
                          isinstance(self.literals.get(getattr(node.args[0], "id", None)),
                                     gast.List)) and \
                (isinstance(func, np.ufunc) or any(func is f for f in _ARRAY_FIRST)):
            array = gast.Attribute(value=name(self.numpy()), attr="array", ctx=gast.Load())
            node.args[0] = located(gast.Call(func=array, args=[node.args[0]], keywords=[]),
                                   node.args[0])
        return node


# ---------------------------------------------------------------- local functions

def _inline_local_functions(fn, node):
    locals_ = {}
    body = []
    for stmt in node.body:
        local = definition(stmt, fn.origin)
        if local is None:
            body.append(stmt)
        else:
            if local.name in locals_:
                raise fn.origin.error(stmt, f"local function {local.name!r} is defined twice",
                                      "give each local function its own name")
            locals_[local.name] = local
    node.body = body
    inliner = _Inliner(fn, {k: v for k, v in locals_.items() if not v.statements},
                       {k for k, v in locals_.items() if v.statements})
    node.body = [inliner.visit(stmt) for stmt in node.body]
    hoister = _Hoister(fn, {k: v for k, v in locals_.items() if v.statements}, inliner,
                       Namer.for_function(fn.replace(node=node)))
    node.body = hoister.block(node.body)
    for sub in walk(node):
        if isinstance(sub, gast.Lambda):
            raise fn.origin.error(sub, "a lambda that is not called where it is defined, nor "
                                  "bound to a name, is not supported by secant",
                                  "bind it (`g = lambda v: ...`) and call it, or define a "
                                  "module-level function")
        if isinstance(sub, gast.FunctionDef) and sub is not node:
            raise fn.origin.error(sub, "a function defined inside a block (an `if`, a loop) "
                                  "or inside another local function is not supported by "
                                  "secant", "define it at the top of the transformed function")
    return node


class _Inliner(gast.NodeTransformer):
    """Replaces each call of a local function by its body, parameters bound to arguments."""

    def __init__(self, fn, locals_, hoisted=frozenset(), depth: int = 0):
        self.fn, self.locals, self.hoisted, self.depth = fn, locals_, hoisted, depth

    def visit_Call(self, node):
        node.args = [self.visit(a) for a in node.args]
        node.keywords = [self.visit(k) for k in node.keywords]
        if not (isinstance(node.func, gast.Name) and
                node.func.id in self.locals.keys() | self.hoisted):
            node.func = self.visit(node.func)
        if isinstance(node.func, gast.Lambda):
            args = node.func.args
            local = LocalFunction("<lambda>", node.func, [a.id for a in args.args],
                                  dict(zip([a.id for a in args.args][len(args.args) -
                                                                     len(args.defaults):],
                                           args.defaults)), [], node.func.body)
        elif isinstance(node.func, gast.Name) and node.func.id in self.locals:
            local = self.locals[node.func.id]
        else:
            return node
        if self.depth > 20:
            raise self.fn.origin.error(node, "a recursive local function is not supported by "
                                       "secant", "define it at module level")
        mapping = self.arguments(node, local)
        body = located(substitute(local.returned, mapping), node)
        return _Inliner(self.fn, self.locals, self.hoisted, self.depth + 1).visit(body)

    def arguments(self, node, local) -> dict:
        if len(node.args) > len(local.params) or \
                any(k.arg not in local.params for k in node.keywords):
            raise self.fn.origin.error(node, f"this call does not match the parameters of "
                                       f"{local.name}({', '.join(local.params)})",
                                       "pass one argument per parameter")
        mapping = dict(zip(local.params, node.args))
        for keyword in node.keywords:
            mapping[keyword.arg] = keyword.value
        for param in local.params:
            if param not in mapping:
                if param not in local.defaults:
                    raise self.fn.origin.error(node, f"missing argument {param!r} of "
                                               f"{local.name}", "pass one argument per "
                                               "parameter")
                mapping[param] = local.defaults[param]
        return mapping

    def visit_Name(self, node):
        if node.id in self.locals.keys() | self.hoisted and isinstance(node.ctx, gast.Load):
            raise self.fn.origin.error(node, f"the local function {node.id!r} is used as a "
                                       "value here; secant inlines local functions only where "
                                       "they are called", "call it directly, or define it at "
                                       "module level to pass it on")
        return node


class _Hoister:
    """Direct calls of local functions with statements: the function's statements, with
    fresh names for its own, go before the statement holding the call, and the call
    becomes the name holding its value. The call must run whenever that statement does."""

    def __init__(self, fn, locals_, inliner, namer, depth: int = 0):
        self.fn, self.locals, self.inliner, self.namer = fn, locals_, inliner, namer
        self.depth = depth

    def block(self, stmts):
        return rewrite_block(stmts, self.statement)

    def statement(self, stmt):
        calls = _CallsBefore(self, isinstance(stmt, gast.While))
        if not isinstance(stmt, gast.FunctionDef):     # refused by the caller, located
            map_own_expressions(stmt, calls.visit)
        return calls.hoisted + [stmt]

    def expand(self, call):
        """(statements computing `call`, the name holding its value)."""
        local = self.locals[call.func.id]
        if self.depth > 20:
            raise self.fn.origin.error(call, "a recursive local function is not supported by "
                                       "secant", "define it at module level")
        mapping = self.inliner.arguments(call, local)
        kept = {p for p, arg in mapping.items() if p not in local.bound_in_body() and
                isinstance(arg, (gast.Name, gast.Constant))}
        renames, statements, returned = instance(local, self.namer, kept)
        kept_args = {p: mapping[p] for p in kept}
        result = self.namer.fresh(local.name)
        body = [located(assign(store(renames[p]), mapping[p]), call)
                for p in local.params if p not in kept]
        body += [substitute(stmt, kept_args) for stmt in statements]
        body.append(located(assign(store(result), substitute(returned, kept_args)), call))
        inner = _Hoister(self.fn, self.locals, self.inliner, self.namer, self.depth + 1)
        return inner.block([self.inliner.visit(stmt) for stmt in body]), result


class _CallsBefore(gast.NodeTransformer):
    """Calls of local functions with statements in one statement's own expressions,
    replaced by their values' names; their statements gathered in `hoisted`, in the
    order Python evaluates the calls. A call that might not run is refused."""

    def __init__(self, hoister, in_while_test):
        self.hoister, self.hoisted = hoister, []
        self.where = "a `while` condition" if in_while_test else None
        self.done: list = []           # the other calls visited so far, in Python's order

    def _maybe(self, nodes, where):
        saved, self.where = self.where, self.where or where
        nodes = [self.visit(n) for n in nodes]
        self.where = saved
        return nodes

    def visit_IfExp(self, node):
        node.test = self.visit(node.test)
        node.body, node.orelse = self._maybe([node.body, node.orelse], "`x if c else y`")
        return node

    def visit_BoolOp(self, node):
        node.values = [self.visit(node.values[0])] + \
            self._maybe(node.values[1:], f"`{type(node.op).__name__.lower()}`")
        return node

    def visit_Call(self, node):
        self.generic_visit(node)
        if not (isinstance(node.func, gast.Name) and node.func.id in self.hoister.locals):
            self.done.append(node)
            return node
        own = {id(sub) for sub in walk(node)}
        reads = self.hoister.locals[node.func.id].free_names() | _names(node)
        earlier = [c for c in self.done if id(c) not in own and
                   _may_write(self.hoister.fn, c) and _names(c) & reads]
        if earlier:
            # Python runs `earlier` first, and it is handed an array the local function
            # reads; the hoisted statements would run before it
            raise self.hoister.fn.origin.error(
                node, f"local function {node.func.id!r} is called after "
                f"`{expression_source(earlier[0])}` in the same statement, which may change "
                "an array in place, and its statements run before the statement that holds "
                "it", f"call `{expression_source(earlier[0])}` on a line of its own first")
        if self.where is not None:
            raise self.hoister.fn.origin.error(
                node, f"a call of local function {node.func.id!r} in {self.where}, where it "
                "might not run (its statements run before the statement that holds it)",
                f"assign `t = {node.func.id}(...)` first, where it always runs, and use `t`")
        statements, result = self.hoister.expand(node)
        self.hoisted.extend(statements)
        return located(name(result), node)


def _names(node) -> set:
    return {sub.id for sub in walk(node) if isinstance(sub, gast.Name)}


def _may_write(fn: Function, call) -> bool:
    """Whether `call` may change an array in place: a method of a value (`buf.fill(0.0)`),
    a function held in a local name, an `out=` argument, or a user function that writes
    into its arguments (the last registered of `ARGUMENT_WRITES` tells)."""
    if any(k.arg == "out" for k in call.keywords):
        return True
    target = resolve(fn, call.func, None)
    return target is None or is_user_function(target) and \
        (not ARGUMENT_WRITES or ARGUMENT_WRITES[-1](target))


# `writes(target) -> bool`: whether user function `target` may write into an array passed
# to it. Reading that needs the parser, which sits above this pass (frontend -> desugar ->
# pyforms): `transformer.aliases` registers `writes_into_arguments` when it is imported.
# Before then every user function may write.
ARGUMENT_WRITES: list[Callable[[object], bool]] = []


# ---------------------------------------------------------------- generator expressions

# builtins that consume an iterable whole, once: given a list instead of a generator, each
# returns the same value (the items are computed first instead of one at a time)
_CONSUMERS = ("sum", "min", "max", "any", "all", "list", "tuple", "sorted")


def generators_as_lists(node):
    """`sum(np.sum(w ** 2) for w in ws)` -> `sum([np.sum(w ** 2) for w in ws])`: a generator
    expression that is the one argument of a call of a builtin of `_CONSUMERS` (not
    rebound in the function) is its list comprehension, which the comprehension forms
    then expand. Any other generator expression is left to the fence, which refuses it."""
    bound = {n.id for n in walk(node) if isinstance(n, gast.Name) and
             not isinstance(n.ctx, gast.Load)}
    for call in walk(node):
        if isinstance(call, gast.Call) and isinstance(call.func, gast.Name) and \
                call.func.id in _CONSUMERS and call.func.id not in bound and \
                len(call.args) == 1 and isinstance(call.args[0], gast.GeneratorExp):
            generator = call.args[0]
            call.args[0] = gast.copy_location(
                gast.ListComp(elt=generator.elt, generators=generator.generators), generator)
    return node


# ---------------------------------------------------------------- local dicts

def _split_local_dicts(node, namer: Namer) -> None:
    """`d = {"a": e1, "b": e2}` -> `d_a = e1; d_b = e2`, and `d["a"]` and `d.get("a")` ->
    `d_a`, for a dict bound once at the top of the body, every use of which is a constant-key
    subscript (read or written) of one of its keys or a `.get` of a constant key (one it
    lacks reads the default): the passes need no dict for it."""
    literals = {k: v for k, v in _literal_bindings(node).items()
                if isinstance(v, gast.Dict) and v.keys and
                all(isinstance(key, gast.Constant) and isinstance(key.value, (str, int))
                    for key in v.keys)}
    uses: dict = {}
    parents = {id(child): parent for parent in walk(node)
               for child in gast.iter_child_nodes(parent)}
    for sub in walk(node):
        if isinstance(sub, gast.Name) and sub.id in literals and \
                isinstance(sub.ctx, gast.Load):
            parent = parents.get(id(sub))
            keys = {key.value for key in literals[sub.id].keys}
            ok = isinstance(parent, gast.Subscript) and parent.value is sub and \
                isinstance(parent.slice, gast.Constant) and parent.slice.value in keys
            get = _constant_get(parent, sub, parents)
            uses.setdefault(sub.id, []).append(get if get is not None else
                                               parent if ok else None)
    for var, literal in literals.items():
        if None in uses.get(var, [None]):
            continue
        names = {key.value: namer.fresh(f"{var}_{key.value}") for key in literal.keys}
        for use in uses[var]:
            if isinstance(use, gast.Call):          # d.get(key) or d.get(key, default)
                key = use.args[0].value
                replacement = name(names[key], gast.Load()) if key in names else \
                    use.args[1] if len(use.args) == 2 else gast.Constant(value=None, kind=None)
            else:
                replacement = name(names[use.slice.value], use.ctx)
            _replace_child(parents[id(use)], use, gast.copy_location(replacement, use))
        k = next(i for i, stmt in enumerate(node.body) if isinstance(stmt, gast.Assign) and
                 stmt.value is literal)
        node.body[k:k + 1] = [gast.copy_location(
            gast.Assign(targets=[name(names[key.value], gast.Store())], value=value,
                        type_comment=None), node.body[k])
            for key, value in zip(literal.keys, literal.values)]


def _constant_get(attribute, dict_name, parents):
    """The call `d.get(key)` or `d.get(key, default)` with a constant key that `attribute`
    (`d.get`, `d` being `dict_name`) is the function of, or None."""
    call = parents.get(id(attribute))
    if isinstance(attribute, gast.Attribute) and attribute.value is dict_name and \
            attribute.attr == "get" and isinstance(call, gast.Call) and \
            call.func is attribute and 1 <= len(call.args) <= 2 and not call.keywords and \
            isinstance(call.args[0], gast.Constant):
        return call
    return None


def _replace_child(parent, old, new) -> None:
    for field, value in gast.iter_fields(parent):
        if value is old:
            setattr(parent, field, new)
        elif isinstance(value, list):
            for i, item in enumerate(value):
                if item is old:
                    value[i] = new
