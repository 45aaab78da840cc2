"""A-normal form: one operation per statement, temporaries named after what they hold.

Input: the output of `desugar`. Output invariant - the body contains only these shapes,
where an *atom* is a Name, a Constant, or a dotted reference to a global object
(`np.pi`, `np.float32`, `math.inf`: an Attribute chain whose root is in the environment):

    name = atom
    name = atom OP atom            (BinOp)
    name = OP atom                 (UnaryOp: USub, UAdd, Not, Invert)
    name = atom CMP atom           (Compare with a single operator)
    name = f(atom, ..., k=atom)    (Call; f is a Name or dotted Attribute of the env)
    name = atom[index]             (Subscript; index is an atom, a Slice of atoms/None,
                                    or a Tuple of those)
    name = atom.attr               (Attribute of a local: shape, ndim, dtype, size, ...)
    name = (atom, ...)             (Tuple or List literal)
    name[index] = atom             (in-place write; index as above)
    if atom: ... else: ...
    for name in range(atom[, atom[, atom]]): ...
    while atom: ...                (the test is recomputed at the end of the body and
                                    before each `continue` of that loop)
    return atom | break | continue | pass
    f(atom, ...)                   (Expr: a call for its effect, e.g. print)
    assert atom | raise ...

`and`/`or` and `a if c else b` become `if` statements (short-circuit preserved).
A negative constant is never the left operand of `**` (`(-2) ** k` gets a temporary,
since the emitted `-2 ** k` would read as `-(2 ** k)`).
Each statement keeps the source position of the statement it came from.
"""
from __future__ import annotations

import types

import gast

from .function import Function, resolve
from .names import Namer
from .nodes import copy_tree
from .syntax import assign, const, located, name, store

_OP_WORDS = {
    gast.Add: "plus", gast.Sub: "minus", gast.Mult: "times", gast.Div: "over",
    gast.FloorDiv: "floordiv", gast.Mod: "mod", gast.Pow: "pow", gast.MatMult: "matmul",
    gast.BitAnd: "and", gast.BitOr: "or", gast.BitXor: "xor", gast.LShift: "lshift",
    gast.RShift: "rshift",
}
_MAX_NAME = 24


def anf(fn: Function) -> Function:
    node = copy_tree(fn.node)
    normalizer = _Normalizer(fn, Namer.for_function(fn))
    node.body = normalizer.block(node.body) or [gast.Pass()]
    return fn.replace(node=node)


def is_global_ref(fn: Function, node) -> bool:
    """A dotted reference like `np.float32` rooted in the environment (not a local)."""
    if not isinstance(node, gast.Attribute):
        return False
    root = node
    while isinstance(root, gast.Attribute):
        root = root.value
    return isinstance(root, gast.Name) and root.id in fn.env


class _Normalizer:
    def __init__(self, fn: Function, namer: Namer):
        self.fn, self.namer = fn, namer
        self.loop_tests: list[tuple[list, gast.stmt] | None] = []

    # ---------------------------------------------------------------- statements
    def block(self, stmts) -> list:
        out = []
        for stmt in stmts:
            out.extend(self.statement(stmt))
        return out

    def statement(self, stmt) -> list:
        out: list = []
        method = getattr(self, "stmt_" + type(stmt).__name__, None)
        if method is None:
            raise self.fn.origin.error(stmt, f"{type(stmt).__name__} statements are not "
                                       "supported here", "rewrite with assignments, if, for")
        result = method(stmt, out)
        if result is not None:
            out.append(result)
        return [located(s, stmt) for s in out]

    def stmt_Assign(self, stmt, out):
        target = stmt.targets[0]
        if isinstance(target, gast.Name):
            out.append(assign(store(target.id), self.simple(stmt.value, out, target.id)))
            return None
        if isinstance(target, gast.Subscript):
            value = self.atom(stmt.value, out, "value")
            base = self.atom(target.value, out, "base")
            index = self.index(target.slice, out)
            write = gast.copy_location(gast.Subscript(value=base, slice=index, ctx=gast.Store()),
                                       target)
            out.append(assign(write, value))
            return None
        raise self.fn.origin.error(stmt, "assignment to this target is not supported",
                                   "assign to a variable or an array element")

    def stmt_Expr(self, stmt, out):
        if isinstance(stmt.value, gast.Constant):        # docstring
            return None
        if isinstance(stmt.value, gast.Call):
            return gast.Expr(value=self.call(stmt.value, out))
        return None                                      # a bare expression has no effect

    def stmt_Return(self, stmt, out):
        if stmt.value is None:
            return gast.Return(value=const(None))
        return gast.Return(value=self.atom(stmt.value, out, "result"))

    def stmt_If(self, stmt, out):
        test = self.atom(stmt.test, out, "cond")
        return gast.If(test=test, body=self.block(stmt.body) or [gast.Pass()],
                       orelse=self.block(stmt.orelse))

    def stmt_For(self, stmt, out):
        it = stmt.iter
        args = [self.atom(a, out, "bound") for a in it.args]
        self.loop_tests.append(None)
        body = self.block(stmt.body) or [gast.Pass()]
        self.loop_tests.pop()
        loop_iter = gast.Call(func=it.func, args=args, keywords=[])
        return gast.For(target=stmt.target, iter=loop_iter, body=body, orelse=[],
                        type_comment=None)

    def stmt_While(self, stmt, out):
        test_stmts: list = []
        test = self.atom(stmt.test, test_stmts, "cond")
        if not isinstance(test, gast.Name):
            flag = self.namer.fresh("cond")
            test_stmts.append(assign(store(flag), test))
            test = name(flag)
        out.extend(test_stmts)
        self.loop_tests.append(test_stmts)
        body = self.block(stmt.body)
        self.loop_tests.pop()
        body.extend(copy_tree(test_stmts))
        return gast.While(test=test, body=body, orelse=[])

    def stmt_Continue(self, stmt, out):
        if self.loop_tests and self.loop_tests[-1]:
            out.extend(copy_tree(self.loop_tests[-1]))
        return stmt

    def stmt_Break(self, stmt, out):
        return stmt

    def stmt_Pass(self, stmt, out):
        return None

    def stmt_Assert(self, stmt, out):
        return gast.Assert(test=self.atom(stmt.test, out, "check"), msg=stmt.msg)

    def stmt_Raise(self, stmt, out):
        return stmt

    # ---------------------------------------------------------------- expressions
    def atom(self, expr, out, hint: str):
        """An atom holding the value of `expr`, emitting statements into `out`."""
        if isinstance(expr, (gast.Name, gast.Constant)) or is_global_ref(self.fn, expr):
            return expr
        folded = _fold_negative_constant(expr)
        if folded is not None:
            return folded
        value = self.simple(expr, out, hint)
        if isinstance(value, gast.Name):     # and/or, if-else: already in a variable
            return value
        return self._bind(value, out, _describe(value, hint))

    def _bind(self, value, out, label: str) -> gast.Name:
        tmp = self.namer.fresh(label)
        out.append(assign(store(tmp), value))
        return name(tmp)

    def simple(self, expr, out, hint: str):
        """`expr` as one operation over atoms (may emit statements for its operands), at
        `expr`'s position (a check on it reports the user's column, not its statement's)."""
        simple = self._simple(expr, out, hint)
        if simple is not expr and getattr(simple, "lineno", None) is None \
                and getattr(expr, "lineno", None) is not None:
            gast.copy_location(simple, expr)
        return simple

    def _simple(self, expr, out, hint: str):
        folded = _fold_negative_constant(expr)
        if folded is not None:
            return folded
        if isinstance(expr, (gast.Name, gast.Constant)) or is_global_ref(self.fn, expr):
            return expr
        if isinstance(expr, gast.BinOp):
            left = self.atom(expr.left, out, "lhs")
            if isinstance(expr.op, gast.Pow) and _is_negative_constant(left):
                # emitted as `-2 ** k`, which Python reads as -(2 ** k)
                left = self._bind(left, out, "base")
            return gast.BinOp(left=left, op=expr.op, right=self.atom(expr.right, out, "rhs"))
        if isinstance(expr, gast.UnaryOp):
            return gast.UnaryOp(op=expr.op, operand=self.atom(expr.operand, out, "operand"))
        if isinstance(expr, gast.Compare):
            return gast.Compare(left=self.atom(expr.left, out, "lhs"), ops=expr.ops,
                                comparators=[self.atom(expr.comparators[0], out, "rhs")])
        if isinstance(expr, gast.Call):
            return self.call(expr, out)
        if isinstance(expr, gast.Subscript):
            return gast.Subscript(value=self.atom(expr.value, out, "base"),
                                  slice=self.index(expr.slice, out), ctx=gast.Load())
        if isinstance(expr, gast.Attribute):
            return gast.Attribute(value=self.atom(expr.value, out, "obj"), attr=expr.attr,
                                  ctx=gast.Load())
        if isinstance(expr, (gast.Tuple, gast.List)):
            return type(expr)(elts=[self.atom(e, out, "elt") for e in expr.elts],
                              ctx=gast.Load())
        if isinstance(expr, gast.BoolOp):
            return name(self.bool_op(expr, out, hint))
        if isinstance(expr, gast.IfExp):
            return name(self.if_exp(expr, out, hint))
        if isinstance(expr, gast.Dict):
            return gast.Dict(keys=[self.atom(k, out, "key") for k in expr.keys],
                             values=[self.atom(v, out, "item") for v in expr.values])
        raise self.fn.origin.error(expr, f"{type(expr).__name__} expressions are not "
                                   "supported by secant", "compute it in separate statements")

    def call(self, expr, out) -> gast.Call:
        func = expr.func
        if not (isinstance(func, gast.Name) or is_global_ref(self.fn, func)):
            if isinstance(func, gast.Attribute) and \
                    not isinstance(resolve(self.fn, func, None), types.ModuleType):
                func = gast.Attribute(value=self.atom(func.value, out, "obj"), attr=func.attr,
                                      ctx=gast.Load())
            else:
                raise self.fn.origin.error(expr, "this call target is not supported",
                                           _call_target_hint(self.fn, func))
        args = [self.atom(a, out, "arg") for a in expr.args]
        keywords = [gast.keyword(arg=k.arg, value=self.atom(k.value, out, k.arg))
                    for k in expr.keywords]
        return gast.Call(func=func, args=args, keywords=keywords)

    def index(self, index, out):
        if isinstance(index, gast.Slice):
            return gast.Slice(*(None if part is None else self.atom(part, out, "bound")
                                for part in (index.lower, index.upper, index.step)))
        if isinstance(index, gast.Tuple):
            return gast.Tuple(elts=[self.index(e, out) for e in index.elts], ctx=gast.Load())
        return self.atom(index, out, "index")

    def bool_op(self, expr, out, hint) -> str:
        result = self.namer.fresh(hint if hint != "value" else "flag")
        first = self.atom(expr.values[0], out, "operand")
        out.append(assign(store(result), first))
        for operand in expr.values[1:]:
            branch: list = []
            branch.append(assign(store(result), self.simple(operand, branch, "operand")))
            if isinstance(expr.op, gast.And):
                out.append(gast.If(test=name(result), body=branch, orelse=[]))
            else:
                out.append(gast.If(test=name(result), body=[gast.Pass()], orelse=branch))
        return result

    def if_exp(self, expr, out, hint) -> str:
        result = self.namer.fresh(hint)
        test = self.atom(expr.test, out, "cond")
        body: list = []
        body.append(assign(store(result), self.simple(expr.body, body, "then")))
        orelse: list = []
        orelse.append(assign(store(result), self.simple(expr.orelse, orelse, "otherwise")))
        out.append(gast.If(test=test, body=body, orelse=orelse))
        return result


def _fold_negative_constant(expr):
    if isinstance(expr, gast.UnaryOp) and isinstance(expr.op, gast.USub) and \
            isinstance(expr.operand, gast.Constant) and \
            isinstance(expr.operand.value, (int, float)) and \
            not isinstance(expr.operand.value, bool):
        return const(-expr.operand.value)
    return None


def _is_negative_constant(atom) -> bool:
    return isinstance(atom, gast.Constant) and isinstance(atom.value, (int, float)) and \
        not isinstance(atom.value, bool) and atom.value < 0


def _describe(value, hint: str) -> str:
    """A readable temporary name for the value of a simple expression."""
    label = hint
    if isinstance(value, gast.BinOp):
        word = _OP_WORDS.get(type(value.op), "op")
        label = f"{_word(value.left)}_{word}_{_word(value.right)}"
    elif isinstance(value, gast.UnaryOp):
        label = f"neg_{_word(value.operand)}" if isinstance(value.op, gast.USub) \
            else f"not_{_word(value.operand)}"
    elif isinstance(value, gast.Call):
        func = value.func
        fname = func.attr if isinstance(func, gast.Attribute) else func.id
        label = f"{fname}_{_word(value.args[0])}" if value.args else fname
    elif isinstance(value, gast.Subscript):
        label = f"{_word(value.value)}_item"
    elif isinstance(value, gast.Attribute):
        label = f"{_word(value.value)}_{value.attr}"
    elif isinstance(value, gast.Compare):
        label = "cond"
    if len(label) > _MAX_NAME:
        label = hint if len(hint) <= _MAX_NAME else label[:_MAX_NAME]
    return label


def _word(atom) -> str:
    if isinstance(atom, gast.Name):
        return atom.id
    if isinstance(atom, gast.Constant):
        return str(atom.value).replace("-", "m").replace(".", "_")
    return "v"


def _call_target_hint(fn, func) -> str:
    """What to write instead of calling `func`: for `ACT[name](x)` over a dict of
    functions, a key known before the run."""
    if isinstance(func, gast.Subscript) and isinstance(resolve(fn, func.value, None), dict):
        return ("read the dict with a literal key (`ACT['relu'](x)`), or make the key a "
                "static argument of the function itself (`jit(f, static_argnums=...)`), "
                "or test it: `relu(x) if name == 'relu' else np.tanh(x)`")
    return "call a function by its name"
