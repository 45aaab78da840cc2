"""The user's line that a line of a generated module came from.

Errors found in generated code - Numba refusing a line while typing it, NumPy failing a
line when the Python form runs - know only the generated module's line. `user_site` finds
the user's statement or expression it came from, or says it cannot be told for sure.

Contract: the generated module's header names the user's file, the line of the function's
`def` and its name (`codegen.backends.ORIGIN_PREFIX`, read by
`random_sites.origin_function`). Within that function the site is, in order:
1. the location a check on that line reports (`'file:line:col'`, a string constant of
   the generated statement naming the user's file: an index check's site; several checks
   of one user line give that line, at the first of their columns);
2. the one statement whose syntax equals the generated statement's;
3. the one expression whose syntax equals the value the generated statement assigns or
   returns (a transformation names intermediate values: `t_times_y = t * y`);
4. the one expression equal to that value up to a one-to-one renaming of its names (a
   lambda's body inlined under fresh names: `carry + x_1` for `c + xi`).
Anything else (no header, several candidates, a file that cannot be read) gives None.

`first_binding` answers a different question, for an error about a variable rather than
a line (Numba giving one variable two types): where the user's function first binds it.
"""
from __future__ import annotations

import ast
import linecache
import re

from .nodes import copy_tree, walk
from .random_sites import function_at, origin_function

_SITE = re.compile(r"^(?P<file>.+):(?P<line>\d+):(?P<col>\d+)$")


def user_site(generated: str, lineno: int) -> tuple[str, int, int] | None:
    """(file, line, col from 0) of the user's code that generated line `lineno` of module
    `generated` was made from, or None when it cannot be told for sure."""
    found = origin_function(generated)
    statement = _statement_at(generated, lineno) if found else None
    if statement is None:
        return None
    filename, function = found
    checked = {(m["file"], int(m["line"]), int(m["col"]) - 1)
               for node in walk(statement) if isinstance(node, ast.Constant)
               and isinstance(node.value, str) and (m := _SITE.match(node.value))
               and m["file"] == filename}
    if len({(file, line) for file, line, _ in checked}) == 1:
        return min(checked, key=lambda site: site[2])   # checks of one line: its first
    same = _equal(function, statement, ast.stmt)
    value = getattr(statement, "value", None)
    if len(same) != 1 and isinstance(value, ast.expr):
        same = _equal(function, value, ast.expr)
    if len(same) != 1 and isinstance(value, ast.expr) and \
            not isinstance(value, (ast.Name, ast.Constant)):
        same = _equal_renamed(function, value)
    if len(same) != 1:
        return None
    return filename, same[0].lineno, same[0].col_offset


def first_binding(generated: str, variable: str) -> tuple[str, int, int] | None:
    """(file, line, col from 0) where the user's function that module `generated` was made
    from first binds `variable` (a parameter, or the first assignment in source order);
    None when the header names no function or the function never binds that name (one
    the transformation made)."""
    found = origin_function(generated)
    if found is None:
        return None
    filename, function = found
    sites = [(node.lineno, node.col_offset) for node in walk(function)
             if isinstance(node, ast.arg) and node.arg == variable
             or isinstance(node, ast.Name) and node.id == variable
             and isinstance(node.ctx, ast.Store)]
    return (filename, *min(sites)) if sites else None


def _statement_at(filename: str, lineno: int) -> ast.stmt | None:
    """The innermost simple statement starting at `lineno` of `filename`, else the one
    that line continues (Numba names the line of the expression it refused, which in a
    long statement the code printer wrapped is a later line of the statement)."""
    try:
        tree = ast.parse("".join(linecache.getlines(filename)))
    except (SyntaxError, ValueError):
        return None
    simple = [s for s in walk(tree) if isinstance(s, ast.stmt) and not isinstance(
        s, (ast.If, ast.For, ast.While, ast.With, ast.FunctionDef))]
    at = [s for s in simple if s.lineno == lineno] or \
        [s for s in simple if s.lineno < lineno <= (s.end_lineno or s.lineno)]
    if at:
        return at[-1]
    # a loop's header (Numba types the variables a loop carries there): the loop without
    # its body, compared as such in `user_site`
    loops = [_header(s) for s in walk(tree)
             if isinstance(s, (ast.For, ast.While)) and s.lineno == lineno]
    return loops[-1] if loops else None


def _header(loop):
    """`loop` with an empty body and no else: what its header line says."""
    copy = ast.For(target=loop.target, iter=loop.iter, body=[], orelse=[]) \
        if isinstance(loop, ast.For) else ast.While(test=loop.test, body=[], orelse=[])
    return ast.copy_location(copy, loop)


def _equal(function: ast.FunctionDef, node: ast.AST, kind: type) -> list:
    wanted = ast.dump(node)
    if isinstance(node, (ast.For, ast.While)) and not node.body:      # a loop's header
        return [n for n in walk(function) if isinstance(n, type(node))
                and ast.dump(_header(n)) == wanted]
    return [n for n in walk(function) if isinstance(n, kind) and ast.dump(n) == wanted]


def _equal_renamed(function: ast.FunctionDef, value: ast.expr) -> list:
    """The expressions of `function` that are `value` with its names renamed one to one."""
    wanted = _renamed(value)
    return [n for n in walk(function) if isinstance(n, type(value))
            and _renamed(n) == wanted]


def _renamed(node: ast.AST) -> str:
    """`ast.dump(node)` with each name replaced by the order of its first appearance, so
    two expressions give the same text exactly when one renames the other one to one. A
    constant-key read of a name (`p["W"]`, `p.W`, nested) counts as one name: a container
    argument's leaf is a parameter of its own in generated code (`p_W`)."""
    order: dict[str, str] = {}

    class Collapse(ast.NodeTransformer):
        def visit_Subscript(self, node):
            self.generic_visit(node)
            if isinstance(node.value, ast.Name) and isinstance(node.slice, ast.Constant):
                return ast.Name(id=f"{node.value.id}[{node.slice.value!r}]", ctx=ast.Load())
            return node

        def visit_Attribute(self, node):
            self.generic_visit(node)
            if isinstance(node.value, ast.Name):
                return ast.Name(id=f"{node.value.id}.{node.attr}", ctx=ast.Load())
            return node

    class Rename(ast.NodeTransformer):
        def visit_Name(self, name):
            return ast.Name(id=order.setdefault(name.id, f"_{len(order)}"), ctx=ast.Load())
    return ast.dump(Rename().visit(Collapse().visit(copy_tree(node))))


def einsum_site(filename: str, def_line: int, name: str,
                subscripts: str) -> tuple[int, int] | None:
    """(line, col from 0) of the one `einsum(subscripts, ...)` call in the user's function
    `name` defined at `def_line` of `filename`: where a derivative of it that transformed
    code calls without a location came from; None unless exactly one such call is found."""
    function = function_at(filename, def_line, name)
    calls = [node for node in walk(function) if isinstance(node, ast.Call) and node.args
             and isinstance(node.args[0], ast.Constant) and node.args[0].value == subscripts
             and (getattr(node.func, "attr", None) or getattr(node.func, "id", None))
             == "einsum"] if function is not None else []
    return (calls[0].lineno, calls[0].col_offset) if len(calls) == 1 else None
