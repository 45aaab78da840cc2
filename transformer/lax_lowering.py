"""Lower `transformer.lax` calls to plain Python control flow, before the fence.

`lower_lax_calls(node, fn, origin, namer)` rewrites, in the body of FunctionDef `node`
(parsed from Python function `fn`), every call that resolves to `lax.cond`, `switch`,
`select`, `fori_loop`, `while_loop` or `scan` into statements placed before the statement
that held the call, and the call itself into the name (or tuple of names) holding its
result. Callees are lambdas written in the call and local functions passed by name (a
`def` or `g = lambda` at the top of the body, `transformer.local_functions`), both
inlined: their parameters are replaced by the names holding the arguments, a local
function's statements are placed in the loop or branch with fresh names for its own
locals; or functions resolvable now (module-level, closure cells; called by name).
Carries given as tuple literals are kept as one name per leaf.

Invariant of the output: no call to a `transformer.lax` function is left; the lambdas
passed to them are gone, and so are local functions used only there; everything else is
unchanged. Anything not lowerable raises a located TransformError.
"""
from __future__ import annotations

import builtins
import inspect

import gast
import numpy as np

from . import lax
from .helper_returns import none_items
from .local_functions import defined_name, definition, instance, module_function
from .names import assigned_names
from .nodes import copy_tree, walk
from .syntax import (
    assign,
    call,
    const,
    map_own_expressions,
    name,
    rewrite_block,
    store,
    subscript,
)

_LAX = {getattr(lax, k): k for k in ("cond", "switch", "select", "fori_loop", "while_loop",
                                     "scan")}
_HINT = ("pass the function as a lambda written in the call (`lambda i, c: c * x`), or "
         "define it with `def` once, at the top of the transformed function before the "
         "call, or at module level")


def lower_lax_calls(node, fn, origin, namer):
    """`node` with its lax calls lowered (see the module docstring); `node` is modified."""
    lowering = _Lowering(fn, origin, namer, node)
    out = []
    for stmt in node.body:
        out.extend(lowering.block([stmt]))
        if defined_name(stmt) is not None:
            lowering.defined[defined_name(stmt)] = stmt
    node.body = [stmt for stmt in out if not _unused_local(stmt, lowering, node)]
    return node


def _bindings(node, local: str) -> int:
    """How many times `local` is bound in `node` (assigned, or defined by a `def`)."""
    return sum(1 for sub in walk(node) if
               isinstance(sub, gast.Name) and sub.id == local and
               isinstance(sub.ctx, gast.Store) or
               isinstance(sub, gast.FunctionDef) and sub.name == local)


def _unused_local(stmt, lowering, node) -> bool:
    """Whether `stmt` defines a local function inlined into lax calls and read nowhere
    else (its own body aside)."""
    local = next((k for k, v in lowering.defined.items() if v is stmt), None)
    if local is None or local not in lowering.inlined:
        return False
    own = {id(sub) for sub in walk(stmt)}
    return not any(isinstance(sub, gast.Name) and sub.id == local and id(sub) not in own
                   for sub in walk(node))


_FOREIGN_TUPLE = ("a tuple carry or operand passed to a function called from a "
                  "transformer.lax call, defined in another module (or nested, or decorated)")
_FOREIGN_TUPLE_HINT = ("define the step function in this module, write it as a lambda in "
                       "the call, reading the tuple's items (`lambda i, c: (c[0] * x, "
                       "c[1] + c[0])`), or carry a single array")


class _Lowering(gast.NodeTransformer):
    def __init__(self, fn, origin, namer, node):
        self.fn, self.origin, self.namer, self.node = fn, origin, namer, node
        self.locals = assigned_names(node)
        self.pending: list = []
        self.defined: dict = {}      # local function name -> its top-level definition
        self.inlined: set = set()
        self.depth = 0

    # ------------------------------------------------------------ statements
    def block(self, stmts):
        return rewrite_block(stmts, self.statement)

    def statement(self, stmt):
        """`stmt` (its nested blocks already lowered) after the statements its lax calls
        lower to."""
        if isinstance(stmt, gast.While) and self._has_lax(stmt.test):
            raise self.origin.error(stmt.test, "a transformer.lax call in a `while` condition",
                                    "assign its result to a variable before the loop and "
                                    "again at the end of the loop body")
        saved, self.pending = self.pending, []
        map_own_expressions(stmt, self.visit)
        hoisted, self.pending = self.pending, saved
        return hoisted + [stmt]

    def _has_lax(self, expr) -> bool:
        return any(isinstance(n, gast.Call) and self._lax_name(n) for n in walk(expr))

    # ------------------------------------------------------------ expressions
    def visit_IfExp(self, node):
        return self._conditional(node)

    def visit_BoolOp(self, node):
        return self._conditional(node)

    def _conditional(self, node):
        if self._has_lax(node):
            raise self.origin.error(node, "a transformer.lax call inside `and`/`or`/`x if c "
                                    "else y`, where it might not run",
                                    "assign the lax call's result to a variable first")
        return node

    def visit_Lambda(self, node):
        return node          # lambdas not passed to lax are left for the fence to refuse

    def visit_Call(self, node):
        self.generic_visit(node)
        kind = self._lax_name(node)
        if kind is None:
            return node
        bound = self._bind(node, getattr(lax, kind))
        return getattr(self, "_" + kind)(node, bound)

    def _lax_name(self, node):
        target = self.resolve(node.func)
        try:
            return _LAX.get(target)
        except TypeError:            # unhashable objects are no lax function
            return None

    def resolve(self, expr):
        """The object `expr` (a Name or dotted Attribute) names now; None for locals."""
        if isinstance(expr, gast.Name):
            if expr.id in self.locals:
                return None
            cells = dict(zip(self.fn.__code__.co_freevars, self.fn.__closure__ or ()))
            if expr.id in cells:
                try:
                    return cells[expr.id].cell_contents
                except ValueError:
                    return None
            if expr.id in self.fn.__globals__:
                return self.fn.__globals__[expr.id]
            return getattr(builtins, expr.id, None)
        if isinstance(expr, gast.Attribute):
            base = self.resolve(expr.value)
            return getattr(base, expr.attr, None) if base is not None else None
        return None

    def _bind(self, node, target):
        if any(isinstance(a, gast.Starred) for a in node.args):
            raise self.origin.error(node, "star-arguments in a transformer.lax call",
                                    "pass the operands explicitly")
        try:
            return inspect.signature(target).bind(
                *node.args, **{k.arg: k.value for k in node.keywords}).arguments
        except TypeError as exc:
            raise self.origin.error(node, f"lax.{target.__name__}: {exc}",
                                    f"call it as JAX does: lax.{target.__name__}"
                                    f"{inspect.signature(target)}") from None

    # ------------------------------------------------------------ carries and callees
    def fresh(self, base):
        return self.namer.fresh(base)

    def hold(self, expr, base, out):
        """A structure of names holding `expr`: a tuple literal stays one name per leaf."""
        if isinstance(expr, (gast.Tuple, gast.List)):
            return tuple(self.hold(e, base, out) for e in expr.elts)
        leaf = self.fresh(base)
        out.append(self._at(assign(leaf, expr), expr))
        return leaf

    def _at(self, new, old):
        for sub in walk(new):
            if "lineno" in getattr(sub, "_attributes", ()) and \
                    getattr(sub, "lineno", None) is None:
                gast.copy_location(sub, old)
        return new

    def value(self, structure):
        if isinstance(structure, tuple):
            return gast.Tuple(elts=[self.value(s) for s in structure], ctx=gast.Load())
        return const(None) if structure == "None" else name(structure)

    def target(self, structure):
        if isinstance(structure, tuple):
            return gast.Tuple(elts=[self.target(s) for s in structure], ctx=gast.Store())
        return store(self.fresh("unused") if structure == "None" else structure)

    def rebind(self, structure, expr, out, where):
        """Statements setting the names of `structure` to the value of `expr`."""
        out.append(self._at(assign(self.target(structure), expr), where))

    def apply(self, callee, args, out, where):
        """The expression of `callee(*args)` (args: structures of names); statements the
        lowering of a lambda body needs are appended to `out`."""
        if isinstance(callee, gast.Lambda):
            return self._inline(callee, args, out)
        if isinstance(callee, gast.Name) and callee.id in self.locals:
            return self._inline_local(callee, args, out)
        target = self.resolve(callee)
        if not (inspect.isfunction(target) or hasattr(target, "py_func")
                or hasattr(target, "__secant_function__")):
            raise self.origin.error(callee, "this function passed to a transformer.lax call "
                                    "cannot be resolved when the function is transformed",
                                    _HINT)
        if any(isinstance(a, tuple) for a in args):
            local = module_function(target, self.fn, self.origin, self.locals)
            if local is None:
                raise self.origin.error(where, _FOREIGN_TUPLE, _FOREIGN_TUPLE_HINT)
            return self._inline_definition(local, callee, args, out)
        return self._at(call(copy_tree(callee), *[self.value(a) for a in args]), where)

    def _inline(self, lam, args, out):
        params = lam.args
        if params.vararg or params.kwarg or params.kwonlyargs or params.defaults or \
                getattr(params, "posonlyargs", None):
            raise self.origin.error(lam, "a lambda with defaults, keyword-only or star "
                                    "parameters passed to a transformer.lax call",
                                    "give the lambda plain positional parameters")
        names = [p.id for p in params.args]
        if len(names) != len(args):
            raise self.origin.error(lam, f"this lambda takes {len(names)} arguments but the "
                                    f"lax call passes {len(args)}",
                                    "match the lambda's parameters to JAX's calling convention")
        body = _Substitute(dict(zip(names, args)), self).visit(copy_tree(lam.body))
        saved, self.pending = self.pending, []
        body = self.visit(body)
        out.extend(self.pending)
        self.pending = saved
        return body

    def _local(self, callee):
        """The LocalFunction `callee` names; refused unless defined once, at the top of
        the body, before this call."""
        stmt = self.defined.get(callee.id)
        if stmt is None or _bindings(self.node, callee.id) > 1:
            raise self.origin.error(callee, f"{callee.id!r} cannot be resolved when the "
                                    "function is transformed: it is a local name, but not "
                                    "a function defined once at the top of the body before "
                                    "this transformer.lax call", _HINT)
        return definition(stmt, self.origin)

    def _returned(self, callee, tupled: bool = False):
        """The expression `callee` (a lambda or local function, or with `tupled`, a tuple
        among its arguments, a module function inlined) returns; None if unknown."""
        if isinstance(callee, gast.Lambda):
            return callee.body
        if isinstance(callee, gast.Name) and callee.id in self.defined:
            return definition(self.defined[callee.id], self.origin).returned
        local = module_function(self.resolve(callee), self.fn, self.origin, self.locals) \
            if tupled else None
        return None if local is None else local.returned

    def _inline_local(self, callee, args, out):
        return self._inline_definition(self._local(callee), callee, args, out)

    def _inline_definition(self, local, callee, args, out):
        """A local function's statements appended to `out`, with fresh names for its own;
        its returned expression, lowered."""
        if len(args) > len(local.params) or \
                len(args) < len(local.params) - len(local.defaults):
            raise self.origin.error(callee, f"{local.name} takes {len(local.params)} "
                                    f"arguments but the lax call passes {len(args)}",
                                    "match its parameters to JAX's calling convention")
        if self.depth > 20:
            raise self.origin.error(callee, "a local function passed to a transformer.lax "
                                    "call inside itself", "define it at module level")
        self.inlined.add(local.name)
        passed = dict(zip(local.params, args))
        kept = set(passed) - local.bound_in_body()
        renames, statements, returned = instance(local, self.namer, kept)
        for param in local.params:
            if param in renames:        # rebound in the body, or left to its default
                value = self.value(passed[param]) if param in passed else \
                    copy_tree(local.defaults[param])
                out.append(self._at(assign(store(renames[param]), value), callee))
        substitute = _Substitute({p: passed[p] for p in kept}, self)
        self.depth += 1
        for stmt in statements:
            out.extend(self.block([substitute.visit(stmt)]))
        saved, self.pending = self.pending, []
        returned = self.visit(substitute.visit(returned))
        out.extend(self.pending)
        self.pending = saved
        self.depth -= 1
        return returned

    # ------------------------------------------------------------ the six primitives
    def _emit(self, stmts):
        self.pending.extend(stmts)

    def _fori_loop(self, node, b):
        out = []
        lo = self.hold(b["lower"], "lower", out)
        hi = self.hold(b["upper"], "upper", out)
        carry = self.hold(b["init_val"], "carry", out)
        i = self.fresh("i")
        body = []
        self.rebind(carry, self.apply(b["body_fun"], [i, carry], body, node), body, node)
        loop = gast.For(target=store(i), iter=call(name("range"), name(lo), name(hi)),
                        body=body, orelse=[], type_comment=None)
        out.append(self._at(loop, node))
        self._emit(out)
        return self.value(carry)

    def _while_loop(self, node, b):
        out = []
        carry = self.hold(b["init_val"], "carry", out)
        go = self.fresh("go")
        out.append(self._at(assign(go, self.apply(b["cond_fun"], [carry], out, node)), node))
        body = []
        self.rebind(carry, self.apply(b["body_fun"], [carry], body, node), body, node)
        body.append(self._at(assign(go, self.apply(b["cond_fun"], [carry], body, node)), node))
        out.append(self._at(gast.While(test=name(go), body=body, orelse=[]), node))
        self._emit(out)
        return self.value(carry)

    def _cond(self, node, b):
        out = []
        pred = self.hold(b["pred"], "pred", out)
        ops = [self.hold(op, "operand", out) for op in b.get("operands", ())]
        branches = [b["true_fun"], b["false_fun"]]
        result = self._branches(node, branches, ops, [name(pred)], out)
        self._emit(out)
        return result

    def _switch(self, node, b):
        out = []
        index = self.hold(b["index"], "index", out)
        branches = b["branches"]
        if not isinstance(branches, (gast.List, gast.Tuple)) or not branches.elts:
            raise self.origin.error(branches, "lax.switch with branches that are not a "
                                    "list or tuple written in the call",
                                    "write the branches in the call: "
                                    "lax.switch(i, [f0, f1, lambda x: x], x)")
        ops = [self.hold(op, "operand", out) for op in b.get("operands", ())]
        n = len(branches.elts)
        # clamped as JAX does: below 1 is branch 0, from n - 1 on the last branch
        tests = [gast.Compare(left=name(index), ops=[gast.Lt()], comparators=[const(k + 1)])
                 for k in range(n - 1)]
        result = self._branches(node, branches.elts, ops, tests, out)
        self._emit(out)
        return result

    def _branches(self, node, callees, ops, tests, out):
        """if tests[0]: r = callees[0](*ops) elif ...: else: r = callees[-1](*ops)."""
        arity = {len(r.elts) if isinstance(r, gast.Tuple) else None
                 for r in map(self._returned, callees)}
        k = arity.pop() if len(arity) == 1 else None
        result = tuple(self.fresh("branch_out") for _ in range(k)) if k else \
            self.fresh("branch_out")
        blocks = []
        for callee in callees:
            body = []
            self.rebind(result, self.apply(callee, ops, body, node), body, node)
            blocks.append(body)
        chain = blocks[-1]
        for test, body in reversed(list(zip(tests, blocks))):
            chain = [self._at(gast.If(test=test, body=body, orelse=chain), node)]
        out.extend(chain)
        return self.value(result)

    def _select(self, node, b):
        np_name = self._numpy_name(node, "lax.select lowers to numpy.where")
        return self._at(call(gast.Attribute(value=name(np_name), attr="where",
                                            ctx=gast.Load()),
                             b["pred"], b["on_true"], b["on_false"]), node)

    def _scan(self, node, b):
        np_name = self._numpy_name(node, "lax.scan stacks its outputs with numpy")
        reverse = b.get("reverse", const(False))
        if not isinstance(reverse, gast.Constant):
            raise self.origin.error(reverse, "lax.scan with a `reverse` that is not a "
                                    "literal True or False", "write reverse=True or False")
        out = []
        carry = self.hold(b["init"], "carry", out)
        xs_expr = b.get("xs", const(None))
        xs = None if isinstance(xs_expr, gast.Constant) and xs_expr.value is None else \
            self.hold(xs_expr, "xs", out)
        n = self._scan_length(node, b, xs, out)
        returned = self._returned(b["f"], isinstance(carry, tuple) or isinstance(xs, tuple))
        y_body = returned.elts[1] if isinstance(returned, gast.Tuple) and \
            len(returned.elts) == 2 else None
        if returned is None and none_items(self.resolve(b["f"])) == {1}:
            y_body = const(None)            # a module function returning `carry, None`

        def step(index, block):
            x = None if xs is None else self._slice(xs, index, block, node)
            value = self.apply(b["f"], [carry, x if x is not None else "None"], block, node)
            y = _names_like(y_body, "y", self.fresh)
            self.rebind((carry, y), value, block, node)
            return _leaves(y)

        def at(k):           # the index visited k-th
            if not reverse.value:
                return k
            return gast.BinOp(left=gast.BinOp(left=name(n), op=gast.Sub(), right=const(1)),
                              op=gast.Sub(), right=k)

        first_index = self.fresh("index")
        out.append(self._at(assign(first_index, at(const(0))), node))
        ys = _names_like(y_body, "ys", self.fresh)
        def numpy(attr, *args):
            return call(gast.Attribute(value=name(np_name), attr=attr, ctx=gast.Load()), *args)

        for stacked, y0 in zip(_leaves(ys), step(first_index, out)):
            shape = gast.BinOp(left=gast.Tuple(elts=[name(n)], ctx=gast.Load()), op=gast.Add(),
                               right=numpy("shape", name(y0)))
            # the stack keeps a float or complex y's dtype, as JAX's scan does; an int or
            # bool first y is stacked as float64, since later ys may be floats (`c = 0`
            # then `c + x`) and would be truncated or rounded. `one * 1 / 1`, for `one` an
            # array of y0's dtype, has that type in NumPy and Numba alike (`* 1` lifts a
            # bool to an int; Numba's `one / one` is float32 for bool and small ints)
            one = self.fresh("one")
            out.append(self._at(assign(one, numpy("ones", const(1), gast.Attribute(
                value=numpy("asarray", name(y0)), attr="dtype", ctx=gast.Load()))), node))
            floats = gast.BinOp(left=gast.BinOp(left=name(one), op=gast.Mult(),
                                                right=const(1)),
                                op=gast.Div(), right=const(1))
            dtype = gast.Attribute(value=floats, attr="dtype", ctx=gast.Load())
            out.append(self._at(assign(stacked, numpy("zeros", shape, dtype)), node))
            out.append(self._at(assign(subscript(name(stacked), name(first_index),
                                                 gast.Store()), name(y0)), node))
        k, index, body = self.fresh("k"), self.fresh("index"), []
        body.append(self._at(assign(index, at(name(k))), node))
        for stacked, y in zip(_leaves(ys), step(index, body)):
            body.append(self._at(assign(subscript(name(stacked), name(index), gast.Store()),
                                        name(y)), node))
        loop = gast.For(target=store(k), iter=call(name("range"), const(1), name(n)),
                        body=body, orelse=[], type_comment=None)
        out.append(self._at(loop, node))
        self._emit(out)
        return gast.Tuple(elts=[self.value(carry), self.value(ys)], ctx=gast.Load())

    def _numpy_name(self, node, what):
        """The name the user's module binds numpy to (lowered code calls numpy through it)."""
        found = next((k for k, v in self.fn.__globals__.items() if v is np), None)
        if found is None:
            raise self.origin.error(node, f"{what}, but this module does not import numpy",
                                    "add `import numpy as np` at the top of the module")
        return found

    def _scan_length(self, node, b, xs, out):
        """A name holding the number of scan steps: `length`, else the leading size of xs."""
        if "length" in b:
            return self.hold(b["length"], "length", out)
        if xs is None:
            raise self.origin.error(node, "lax.scan without xs needs length=", "pass length=n")
        first = xs
        while isinstance(first, tuple):
            first = first[0]
        n = self.fresh("length")
        out.append(self._at(assign(n, subscript(gast.Attribute(
            value=name(first), attr="shape", ctx=gast.Load()), const(0))), node))
        return n

    def _slice(self, xs, index, block, where):
        if isinstance(xs, tuple):
            return tuple(self._slice(x, index, block, where) for x in xs)
        leaf = self.fresh("x")
        block.append(self._at(assign(leaf, subscript(name(xs), name(index))), where))
        return leaf


def _is_library(function) -> bool:
    return (getattr(function, "__module__", None) or "").split(".")[0] in ("numpy", "math")


def _names_like(expr, base: str, fresh) -> tuple | str:
    """Names from `fresh(base)` in the structure of tuple literal `expr` (one name if not a
    tuple); a literal None stays "None" (a scan step returning `carry, None` stacks nothing
    and gives ys None, as JAX's does)."""
    if isinstance(expr, gast.Tuple):
        return tuple(_names_like(e, base, fresh) for e in expr.elts)
    if isinstance(expr, gast.Constant) and expr.value is None:
        return "None"
    return fresh(base)


def _leaves(structure) -> list:
    """The names of `structure`, without its Nones."""
    if isinstance(structure, tuple):
        return [leaf for s in structure for leaf in _leaves(s)]
    return [] if structure == "None" else [structure]


class _Substitute(gast.NodeTransformer):
    """A lambda body with its parameters replaced by the structures of names they are
    bound to; `p[k]` on a tuple-structured parameter is its k-th item."""

    def __init__(self, bindings, lowering):
        self.bindings, self.lowering = bindings, lowering

    def visit_Lambda(self, node):
        """An inner lambda sees the outer parameters it does not shadow."""
        inner = {a.id for a in node.args.args + node.args.kwonlyargs} | \
            {a.id for a in (node.args.vararg, node.args.kwarg) if a is not None}
        kept = {k: v for k, v in self.bindings.items() if k not in inner}
        node.body = _Substitute(kept, self.lowering).visit(node.body)
        return node

    def visit_Call(self, node):
        """A tuple-structured parameter handed whole to a Python function is refused: such
        a helper call does not differentiate through the tuple today."""
        target = self.lowering.resolve(node.func)
        if inspect.isfunction(target) and not _is_library(target):
            for arg in node.args:
                if isinstance(arg, gast.Name) and isinstance(self.bindings.get(arg.id), tuple):
                    raise self.lowering.origin.error(
                        arg, "a tuple carry or operand passed whole to a function called "
                        "from a transformer.lax call",
                        "pass its items (`step(i, c[0], c[1])`) and return a tuple literal, "
                        "or carry a single array")
        return self.generic_visit(node)

    def visit_Subscript(self, node):
        if isinstance(node.value, gast.Name) and \
                isinstance(self.bindings.get(node.value.id), tuple) and \
                isinstance(node.slice, gast.Constant) and isinstance(node.slice.value, int):
            items = self.bindings[node.value.id]
            if -len(items) <= node.slice.value < len(items):
                return self.lowering.value(items[node.slice.value])
        return self.generic_visit(node)

    def visit_Name(self, node):
        if node.id in self.bindings:
            bound = self.bindings[node.id]
            if bound == "None":
                return const(None)
            return gast.copy_location(self.lowering.value(bound), node)
        return node

