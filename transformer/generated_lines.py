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
   lambda's body inlined under fresh names: `carry + x_1` for `c + xi`), tried again
   with the transformation's own temporaries written back in (`np.nanmax(y_times_y)`,
   after `y_times_y = y * y`, for `np.nanmax(y * y)`);
5. the one line of the function that the nearest `# <transformation> of: <user line>`
   comment above the generated statement quotes (vmap writes one above the statements it
   batched from each user line, whose syntax rarely equals the user's: `np.all(c, axis=2)`
   for `np.all(c, axis=1)`), at that line's first simple statement;
6. the calls in the function of the functions the generated statement's value calls,
   when they all lie on one line (`np.pad(x, arg)` with its literal argument hoisted into
   `arg`; `repeat(x, arg)`, secant's runtime form of `np.repeat`).
Anything else (no header, several candidates, a file that cannot be read) gives None.

`first_binding` answers a different question, for an error about a variable rather than
a line (Numba giving one variable two types): where the user's function first binds it.
"""
from __future__ import annotations

import ast
import copy
import linecache
import re

from .nodes import copy_tree, walk
from .random_sites import function_at, origin_function

_SITE = re.compile(r"^(?P<file>.+):(?P<line>\d+):(?P<col>\d+)$")


def user_site(generated: str, lineno: int, *,
              by_line: bool = True) -> tuple[str, int, int] | None:
    """(file, line, col from 0) of the user's code that generated line `lineno` of module
    `generated` was made from, or None when it cannot be told for sure. `by_line=False`
    leaves out rules 5 and 6, which name the user's line but not the expression in it
    (an error about a variable is better told where the variable starts)."""
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
        inlined = _temporaries_inlined(generated, value, function)
        if len(same) != 1 and inlined is not None:
            same = _equal(function, inlined, ast.expr)
            same = same if len(same) == 1 else _equal_renamed(function, inlined)
    if len(same) != 1 and by_line:
        quoted = _quoted_site(generated, lineno, filename, function)
        if quoted is not None:
            return quoted
        same = _same_callee(function, value)
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


def first_use(generated: str, name: str) -> int | None:
    """The first line of module `generated` (a generated file) whose code names `name`."""
    try:
        tree = ast.parse("".join(linecache.getlines(generated)))
    except (SyntaxError, ValueError):
        return None
    lines = [node.lineno for node in walk(tree)
             if isinstance(node, ast.Name) and node.id == name]
    return min(lines) if lines else None


_QUOTE = re.compile(r"^\s*# [\w() ]+ of: (?P<text>.+)$")


def _quoted_site(generated: str, lineno: int, filename: str,
                 function: ast.FunctionDef) -> tuple[str, int, int] | None:
    """Rule 5 of `user_site`: the user's line quoted by the nearest comment above generated
    line `lineno` within its function, when exactly one line of `function` reads so."""
    lines = linecache.getlines(generated)
    quoted = None
    for text in reversed(lines[:lineno - 1]):
        if text.lstrip().startswith(("def ", "@")):
            break                                   # the generated function's start
        if (match := _QUOTE.match(text.rstrip())) is not None:
            quoted = match["text"].strip()
            break
    if not quoted:
        return None
    end = function.end_lineno or function.lineno
    at = [n for n in range(function.lineno, end + 1)
          if linecache.getline(filename, n).strip() == quoted]
    if len(at) != 1:
        return None
    starts = [s.col_offset for s in walk(function) if isinstance(s, ast.stmt)
              and s.lineno == at[0] and not isinstance(s, ast.FunctionDef)]
    text = linecache.getline(filename, at[0])
    return filename, at[0], min(starts) if starts else len(text) - len(text.lstrip())


def _temporaries_inlined(generated: str, value: ast.expr, function: ast.FunctionDef):
    """`value` with each name that the generated module assigns once and the user's
    `function` never mentions replaced by the expression assigned to it (a transformation
    names intermediate values), or None when it has no such name."""
    try:
        tree = ast.parse("".join(linecache.getlines(generated)))
    except (SyntaxError, ValueError):
        return None
    users = {n.id for n in walk(function) if isinstance(n, ast.Name)} | \
        {a.arg for a in walk(function) if isinstance(a, ast.arg)}
    assigned: dict[str, list] = {}
    for node in walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and \
                isinstance(node.targets[0], ast.Name):
            assigned.setdefault(node.targets[0].id, []).append(node.value)
    made = {name: values[0] for name, values in assigned.items()
            if len(values) == 1 and name not in users}

    class Inline(ast.NodeTransformer):
        depth = 0

        def visit_Name(self, node):
            if node.id not in made or self.depth > 8:
                return node
            self.depth += 1
            try:
                return self.visit(copy.deepcopy(made[node.id]))
            finally:
                self.depth -= 1

    if not any(isinstance(n, ast.Name) and n.id in made for n in walk(value)):
        return None
    return Inline().visit(copy.deepcopy(value))


def _same_callee(function: ast.FunctionDef, value) -> list:
    """Rule 6 of `user_site`: the calls in `function` of a function the generated `value`
    calls, by its dotted name (`np.pad`) or else by its last name (`repeat`, secant's
    runtime form of `np.repeat`; `moveaxis_1`, a renamed import of it), when they all lie
    on one line of `function`: the first of them."""
    if not isinstance(value, ast.expr):
        return []
    calls = [n for n in walk(function) if isinstance(n, ast.Call) and _dotted(n.func)]
    found = []
    for call in (n for n in walk(value) if isinstance(n, ast.Call) and _dotted(n.func)):
        same = [n for n in calls if ast.dump(n.func) == ast.dump(call.func)] or \
            [n for n in calls if _last_name(n.func) == _last_name(call.func)]
        found += [n for n in same if n not in found]
    if len({n.lineno for n in found}) != 1:
        return []
    return [min(found, key=lambda n: (n.lineno, n.col_offset))]


def _dotted(node) -> bool:
    return isinstance(node, ast.Name) or isinstance(node, ast.Attribute) and _dotted(node.value)


def _last_name(node) -> str:
    """The name a call's function ends in, without a renaming suffix (`moveaxis_1`)."""
    return re.sub(r"_\d+$", "", node.id if isinstance(node, ast.Name) else node.attr)


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
