"""Local functions: a nested `def` at the top of a transformed function's body whose
statements end in its one `return`, or a name bound there to a lambda.

`definition(stmt, origin)` reads one (None for any other statement) and refuses, located,
what cannot be inlined: a `return` before the last statement, `global`/`nonlocal`, a
function defined inside it, a local read where it may not be assigned yet (Python would
raise UnboundLocalError; a copy placed in a loop would read the last iteration's value).

`module_function(target, caller, origin, caller_locals)` reads a function defined at the top
level of the caller's own module the same way, for a lax call that hands it a tuple carry
(`lax.scan(step, (h, c), xs)`, JAX's RNN idiom): its free names are the module's globals,
which a copy placed in the caller reads alike unless the caller binds one of them itself.

`instance(local, namer, kept)` is a copy of its statements and returned expression for
one call: each name it binds (its parameters but those in `kept`, its assigned locals)
gets a fresh name, so the copy can be placed among the enclosing function's statements;
its free names are left as they are, read where the copy is placed - at the call, which
is when a closure reads them. Callers bind the parameters (`transformer.lax_lowering`
for functions passed to lax calls, `transformer.pyforms` for direct calls).
"""
from __future__ import annotations

import inspect
from typing import NamedTuple

import gast

from .function import source_lines
from .nodes import copy_tree, walk
from .syntax import shift_positions

_NESTED = (gast.FunctionDef, gast.AsyncFunctionDef, gast.ClassDef)
_SCOPES = (gast.Lambda, gast.ListComp, gast.DictComp, gast.SetComp, gast.GeneratorExp)


class LocalFunction(NamedTuple):
    name: str
    node: gast.AST             # the `def`, or the lambda
    params: list               # parameter names
    defaults: dict             # parameter -> literal default
    statements: list           # the body before its `return`
    returned: gast.expr        # the value it returns

    def bound_in_body(self) -> set:
        """Names the statements assign (comprehension variables are their own scope)."""
        return _stored(self.statements)

    def free_names(self) -> set:
        """Names it reads from where it is defined: neither parameters nor its own."""
        return {use.id for part in (*self.statements, self.returned)
                for use in _reads(part)} - self.bound_in_body() - set(self.params)


def defined_name(stmt) -> str | None:
    """The name of the local function `stmt` defines, unchecked; None if it defines none."""
    if isinstance(stmt, gast.FunctionDef):
        return stmt.name
    if isinstance(stmt, gast.Assign) and len(stmt.targets) == 1 and \
            isinstance(stmt.targets[0], gast.Name) and isinstance(stmt.value, gast.Lambda):
        return stmt.targets[0].id
    return None


def definition(stmt, origin) -> LocalFunction | None:
    """The local function `stmt` (`def h(...)` or `g = lambda ...`) defines, or None."""
    local_name = defined_name(stmt)
    if local_name is None:
        return None
    if isinstance(stmt, gast.Assign):
        args, where, statements, returned = stmt.value.args, stmt.value, [], stmt.value.body
    else:
        if stmt.decorator_list:
            raise origin.error(stmt, "a decorated local function is not supported by "
                               "secant", "define it at module level")
        args, where = stmt.args, stmt
        statements, returned = _body(stmt, origin)
    if args.vararg or args.kwarg or args.kwonlyargs or args.posonlyargs:
        raise origin.error(where, "a local function with *args, **kwargs or keyword-only "
                           "parameters is not supported by secant",
                           "name each parameter, or define it at module level")
    if not all(isinstance(d, gast.Constant) for d in args.defaults):
        raise origin.error(where, "a local function's default values must be literals",
                           "pass the value at each call")
    params = [a.id for a in args.args]
    defaults = dict(zip(params[len(params) - len(args.defaults):], args.defaults))
    local = LocalFunction(local_name, where, params, defaults, statements, returned)
    _check_assigned_before_read(local, origin)
    return local


def module_function(target, caller, origin, caller_locals) -> LocalFunction | None:
    """`target` read as a local function of `caller` (a transformed function whose source
    is at `origin`), or None when it is not a plain function defined at the top level of
    the caller's module, in the same file. Refused, located, when the copy would read
    another value than the call: `caller` binds a name the function reads from the
    module."""
    if not inspect.isfunction(target) or hasattr(target, "__wrapped__") or \
            target.__globals__ is not caller.__globals__ or \
            target.__qualname__ != target.__name__ or target.__code__.co_freevars:
        return None
    try:
        if inspect.getsourcefile(target) != origin.filename:
            return None
        lines, first = source_lines(target)
        module = gast.parse("".join(lines))
    except (OSError, TypeError, SyntaxError):
        return None
    stmt = module.body[0] if len(module.body) == 1 else None
    if not isinstance(stmt, gast.FunctionDef) or stmt.name != target.__name__:
        return None
    shift_positions(module, first - 1)
    local = definition(stmt, origin)
    shadowed = sorted(local.free_names() & (set(caller_locals) | set(caller.__code__.co_freevars)))
    if shadowed:
        raise origin.error(stmt, f"{local.name} reads the module's {shadowed[0]!r}, which "
                           f"the function calling it through a transformer.lax call "
                           "binds too; the carry is a tuple, so the call is inlined there",
                           f"rename {shadowed[0]!r} in one of the two functions")
    return local


def _body(stmt, origin):
    statements = [s for s in stmt.body if not (
        isinstance(s, gast.Expr) and isinstance(s.value, gast.Constant))]   # docstring
    last = statements[-1] if statements else None
    if not isinstance(last, gast.Return) or last.value is None:
        raise origin.error(last or stmt, f"local function {stmt.name!r} does not end in "
                           "`return <expression>`",
                           "end it with one `return` of the value it computes")
    for inner in statements[:-1]:
        for sub in walk(inner):
            if isinstance(sub, gast.Return):
                raise origin.error(sub, f"a `return` before the end of local function "
                                   f"{stmt.name!r}", "assign the value to a variable in "
                                   "each branch and `return` it once, at the end")
            if isinstance(sub, (gast.Global, gast.Nonlocal)):
                raise origin.error(sub, f"`{type(sub).__name__.lower()}` in local function "
                                   f"{stmt.name!r}", "return the new value and assign it "
                                   "where the function is called")
            if isinstance(sub, _NESTED):
                raise origin.error(sub, f"a function defined inside local function "
                                   f"{stmt.name!r}", f"define it at the top of the "
                                   f"transformed function, beside {stmt.name!r}, passing "
                                   "what it reads from there as arguments")
    return statements[:-1], last.value


def instance(local: LocalFunction, namer, kept=frozenset()):
    """(renames, statements, returned): a fresh copy of `local`'s body for one call."""
    bound = [p for p in local.params if p not in kept] + \
        sorted(local.bound_in_body() - set(local.params))
    renames = {old: namer.fresh(old) for old in bound}
    rename = _Rename(renames)
    statements = [rename.visit(copy_tree(s)) for s in local.statements]
    return renames, statements, rename.visit(copy_tree(local.returned))


class _Rename(gast.NodeTransformer):
    def __init__(self, renames):
        self.renames = renames

    def visit_Name(self, node):
        if node.id in self.renames:
            node.id = self.renames[node.id]
        return node


# ---------------------------------------------------------------- assigned before read

def _stored(nodes) -> set:
    names = set()
    for stmt in nodes:
        scoped = {id(n) for sub in walk(stmt) if isinstance(sub, _SCOPES)
                  for n in walk(sub)}
        names |= {sub.id for sub in walk(stmt) if isinstance(sub, gast.Name) and
                  isinstance(sub.ctx, gast.Store) and id(sub) not in scoped}
    return names


def _reads(node) -> list:
    """Names `node` reads, in order, leaving out those a lambda or comprehension binds."""
    inner = set()
    for sub in walk(node):
        if isinstance(sub, _SCOPES):
            bound = {n.id for n in walk(sub) if isinstance(n, gast.Name) and
                     isinstance(n.ctx, (gast.Store, gast.Param))}
            inner |= {id(n) for n in walk(sub) if isinstance(n, gast.Name) and
                      n.id in bound}
    return [sub for sub in walk(node) if isinstance(sub, gast.Name) and
            isinstance(sub.ctx, gast.Load) and id(sub) not in inner]


def _check_assigned_before_read(local: LocalFunction, origin) -> None:
    own = local.bound_in_body() - set(local.params)

    def read(node, assigned, where=None):
        for use in _reads(node):
            if use.id in own and use.id not in assigned:
                raise origin.error(where or use, f"{use.id!r} may be read before it is "
                                   f"assigned in local function {local.name!r}",
                                   f"assign {use.id!r} before the `if` or loop that sets it")

    def block(stmts, assigned):
        for stmt in stmts:
            if isinstance(stmt, gast.If):
                read(stmt.test, assigned)
                assigned = block(stmt.body, set(assigned)) & block(stmt.orelse, set(assigned))
            elif isinstance(stmt, (gast.For, gast.While)):
                read(stmt.iter if isinstance(stmt, gast.For) else stmt.test, assigned)
                inside = set(assigned) | (_stored([stmt.target])
                                          if isinstance(stmt, gast.For) else set())
                block(stmt.body, inside)        # the loop may run no time: nothing after
            else:
                if isinstance(stmt, gast.AugAssign) and isinstance(stmt.target, gast.Name):
                    read(gast.Name(id=stmt.target.id, ctx=gast.Load(), annotation=None,
                                   type_comment=None), assigned, where=stmt.target)
                read(stmt, assigned)
                assigned = assigned | _stored([stmt])
        return assigned

    assigned = block(local.statements, set(local.params))
    read(local.returned, assigned)
