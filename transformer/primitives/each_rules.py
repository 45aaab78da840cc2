"""The rules of `over_examples(h, flags)` (`h_each`, `h` applied to each example) derived
from `h`'s own rule templates, for a helper that is not a recorded linear form: a vmap
inside a vmap applies the inner vmap's `dot_left`, `outer_both`, ... example by example.

Each statement of `h`'s template is rewritten to act on every example at once:

- a parameter is batched when its argument is (`flags`), `z` and `d[z]` always are, a
  temporary when its value is; an expression that reads nothing batched is kept as is;
- a call reading a batched value becomes its per-example form
  (`over_examples(call, flags of its arguments)`), whose rules are made the same way;
- an operator between values of which one is batched aligns them as vmap does
  (`align(x, shared) * shared`, `align_batched(x, y) * align_batched(y, x)`): each example
  then broadcasts as `h`'s own example would;
- `d[p] += e` into a shared parameter `p` sums `e` over the batch (`sum_batch`); a tangent
  `d[z] = e` must be batched, as `z` is.

Anything else (a conditional, an attribute such as `x.shape`, a subscript, keywords) leaves
`h_each` without that rule: differentiating it stays the located "no adjoint rule" error,
never a number computed as if the batch axis were an example axis.
"""
from __future__ import annotations

import ast
import itertools
import textwrap

from transformer import runtime
from transformer.runtime import examples
from transformer.runtime.batching import align, align_batched
from transformer.templates import ADJOINTS, CALL_CHECKS, TANGENTS, rule_from_source

from ..nodes import walk

_OPERATORS = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.Pow, ast.FloorDiv, ast.Mod)
_COMPARISONS = (ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE)


class _Unmapped(Exception):
    """A construct of the base rule that has no safe per-example form."""


class _PerExample:
    """Rewrites one rule template's statements for the batch (see the module docstring).
    `batched`: parameter and temporary name -> whether it holds one value per example."""

    def __init__(self, glb: dict, batched: dict, scope: dict):
        self.glb, self.batched, self.scope = glb, batched, scope
        self.params = set(batched)
        self.hoisted: list = []         # temporaries the statement being rewritten reads

    def statements(self, stmt: ast.stmt, result: str, broadcast: bool) -> list:
        """`stmt` for the batch, after the temporaries it reads."""
        self.hoisted = []
        rewritten = self.statement(stmt, result, broadcast)
        return self.hoisted + [rewritten]

    # ------------------------------------------------------------ statements

    def statement(self, stmt: ast.stmt, result: str, broadcast: bool) -> ast.stmt:
        if isinstance(stmt, ast.AugAssign) and _is_derivative(stmt.target) and \
                isinstance(stmt.op, (ast.Add, ast.Sub)):
            value, batched = self.expr(stmt.value)
            if not batched:                  # adjoints are linear in d[z], which is batched
                raise _Unmapped("an adjoint that reads no batched value")
            if not self.batched[stmt.target.slice.id]:
                value = self.call(examples.sum_batch, [value])
            return ast.AugAssign(target=stmt.target, op=stmt.op, value=value)
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            target = stmt.targets[0]
            value, batched = self.expr(stmt.value)
            if _is_derivative(target) and target.slice.id == result:
                if not batched:
                    raise _Unmapped("a tangent that reads no batched value")
                if broadcast:                # the rule's contributions broadcast to z
                    value = self.each(runtime.broadcast_like, [value, _name(result)],
                                      (True, True))
                return ast.Assign(targets=[target], value=value)
            if isinstance(target, ast.Name) and target.id not in self.params:
                self.batched[target.id] = batched          # a temporary
                return ast.Assign(targets=[target], value=value)
        raise _Unmapped(type(stmt).__name__)

    # ------------------------------------------------------------ expressions

    def expr(self, node: ast.expr) -> tuple[ast.expr, bool]:
        """(the node for the batch, whether its value is batched)."""
        if not any(self.reads_batched(n) for n in walk(node)):
            return node, False
        if _is_derivative(node):
            return node, True
        if isinstance(node, ast.Name):            # a tuple parameter keeps its items' flags
            return node, self.batched[node.id]
        if isinstance(node, ast.Call):
            return self.call_node(node), True
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
            return self.each_call(runtime.matmul, [node.left, node.right]), True
        if isinstance(node, ast.BinOp) and isinstance(node.op, _OPERATORS):
            left, right = self.aligned([node.left, node.right])
            return ast.BinOp(left=left, op=node.op, right=right), True
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and \
                isinstance(node.ops[0], _COMPARISONS):
            left, right = self.aligned([node.left, node.comparators[0]])
            return ast.Compare(left=left, ops=node.ops, comparators=[right]), True
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            return ast.UnaryOp(op=node.op, operand=self.expr(node.operand)[0]), True
        raise _Unmapped(type(node).__name__)

    def reads_batched(self, node: ast.AST) -> bool:
        if _is_derivative(node):
            return self.batched.get(node.slice.id, False)
        return isinstance(node, ast.Name) and self.batched.get(node.id, False)

    def aligned(self, operands: list) -> list:
        """The operands of an elementwise operator, each batched one padded so that examples
        broadcast against the others (vmap's `aligned`)."""
        pairs = [(self.hoist(node, batched), batched)
                 for node, batched in map(self.expr, operands)]
        out = []
        for i, (node, batched) in enumerate(pairs):
            for j, (other, other_batched) in enumerate(pairs):
                if batched and j != i and not isinstance(other, ast.Constant):
                    pad = align_batched if other_batched else align
                    node = self.call(pad, [node, other])
            out.append(node)
        return out

    def hoist(self, node: ast.expr, batched: bool) -> ast.expr:
        """`node` as a temporary when an alignment would evaluate it a second time; one that
        reads a derivative stays in place (the expander finds derivatives in the statement)."""
        if isinstance(node, (ast.Name, ast.Constant)) or \
                any(_is_derivative(n) for n in walk(node)):
            return node
        name = f"each_operand_{len(self.batched)}"
        self.batched[name] = batched
        self.hoisted.append(ast.Assign(targets=[ast.Name(id=name, ctx=ast.Store())],
                                       value=node))
        return _name(name)

    def call_node(self, node: ast.Call) -> ast.expr:
        if node.keywords or any(isinstance(a, ast.Starred) for a in node.args):
            raise _Unmapped("a call with keywords or *arguments")
        return self.each_call(self.callee(node.func), node.args)

    def callee(self, func: ast.expr):
        if any(isinstance(n, ast.Name) and n.id in self.batched for n in walk(func)):
            raise _Unmapped("a method of a value")         # `x.sum(...)`, not a function
        try:
            return eval(compile(ast.Expression(body=func), "<rule>", "eval"),  # noqa: S307
                        dict(self.glb))
        except Exception as error:         # a name the rule's scope does not hold
            raise _Unmapped(ast.unparse(func)) from error

    def each_call(self, fn, args: list) -> ast.expr:
        pairs = [self.expr(a) for a in args]
        return self.each(fn, [n for n, _ in pairs], tuple(b for _, b in pairs))

    def each(self, fn, args: list, flags: tuple) -> ast.expr:
        if not any(flags):
            return self.call(fn, args)
        return self.call(examples.over_examples(fn, flags), args)

    def call(self, fn, args: list) -> ast.expr:
        return ast.Call(func=_name(_own_name(fn, self.scope)), args=args, keywords=[])


def _is_derivative(node) -> bool:
    """`d[name]`."""
    return isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and \
        node.value.id == "d" and isinstance(node.slice, ast.Name)


def _name(text: str) -> ast.Name:
    return ast.Name(id=text, ctx=ast.Load())


def scope_name(key, scope: dict) -> str:
    """The name `key` goes by in the rules' `scope`, added if absent under a name no other
    rule gives another value: code expanded from several rules shares one namespace."""
    for name, value in scope.items():
        if value is key:
            return name
    name = f"{getattr(key, '__name__', 'helper')}_{next(_NUMBERS)}"
    while name in scope:
        name = f"{getattr(key, '__name__', 'helper')}_{next(_NUMBERS)}"
    scope[name] = key
    return name


def _own_name(key, scope: dict) -> str:
    """A name for `key` in `scope` that no rule gives another value (a name of the base
    rule's module may stand for something else in another rule's)."""
    if id(key) not in _OWN:
        _OWN[id(key)] = (f"{getattr(key, '__name__', 'helper')}_{next(_NUMBERS)}", key)
    name = _OWN[id(key)][0]
    scope[name] = key
    return name


_NUMBERS = itertools.count()
_OWN: dict = {}          # id -> (name, the object, kept alive so that its id stays its own)


def _template_def(template) -> ast.FunctionDef:
    fdef = ast.parse(textwrap.dedent(template.source_text())).body[0]
    fdef.decorator_list = []
    return fdef


def per_example_rule(template, flags: tuple):
    """The template of `h_each`'s rule from `template`, `h`'s rule, or None where one of
    its constructs has no safe per-example form."""
    if not template.has_result:
        return None
    fdef = _template_def(template)
    args = fdef.args
    names = [a.arg for a in args.posonlyargs + args.args]
    if args.vararg or args.kwonlyargs or args.kwarg or len(flags) > len(names) - 1:
        return None
    batched = {names[0]: True}
    for i, name in enumerate(names[1:]):
        batched[name] = flags[i] if i < len(flags) else False
    scope = dict(template.globals)
    rewrite = _PerExample(template.globals, batched, scope)
    try:
        fdef.body = [out for s in fdef.body
                     if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))
                     for out in rewrite.statements(s, names[0], template.broadcast)]
    except _Unmapped:
        return None
    return rule_from_source(ast.unparse(ast.fix_missing_locations(fdef)), scope)


def derive(key, flags: tuple, helper) -> bool:
    """Register the rules of `helper` (`key` of each example, `flags`: which arguments are
    batched) derived from `key`'s own; whether any was."""
    if key in CALL_CHECKS:          # a call its rules refuse: the check needs the call
        return False
    made = False
    for table in (ADJOINTS, TANGENTS):
        if helper not in table and key in table:
            rule = per_example_rule(table[key], flags)
            if rule is not None:
                table[helper] = rule
                made = True
    return made
