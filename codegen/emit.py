"""gast in, Python source text out: the one place source is emitted.

A statement annotated with `annotate(stmt, "grad of: e += 4.0 * eps")` is preceded by
that comment in the output, so a reader can walk from generated code back to the user
line that produced it.
"""
from __future__ import annotations

import ast
import re

import gast

_COMMENT_ATTR = "secant_comment"
_MARKER = "__secant_comment_{}__"
_MARKER_LINE = re.compile(r"^(\s*)__secant_comment_(\d+)__\s*$", re.MULTILINE)


def annotate(stmt, comment: str):
    """Attach a comment line to be emitted just before `stmt`; returns `stmt`."""
    setattr(stmt, _COMMENT_ATTR, comment)
    return stmt


def comment_of(stmt) -> str | None:
    return getattr(stmt, _COMMENT_ATTR, None)


def to_source(node) -> str:
    """Python source for a gast module, function or statement, with its comments."""
    comments: list[str] = []
    swapped = _insert_markers(node, comments)
    try:
        tree = gast.gast_to_ast(node)      # a new tree: nothing in it is shared with `node`
    finally:
        for parent, field, stmts in reversed(swapped):
            setattr(parent, field, stmts)
    import astor    # on first use: `import transformer` does not need the printer

    text = astor.to_source(_Negation().visit(tree))
    return _MARKER_LINE.sub(lambda m: m.group(1) + "# " + comments[int(m.group(2))], text)


def expression_source(node) -> str:
    import astor

    return astor.to_source(gast.gast_to_ast(gast.Expr(value=node))).strip()


class _Negation(ast.NodeTransformer):
    """astor prints Constant(-2) bare, so `(-2) ** k` would read `-2 ** k`; as a negation
    node it gets the parentheses its precedence needs."""

    def visit_Constant(self, node):
        value = node.value
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value < 0:
            return ast.UnaryOp(op=ast.USub(), operand=ast.Constant(value=-value, kind=None))
        return node


def _insert_markers(node, comments) -> list:
    """Put a marker line before each annotated statement of `node`, in place, and return
    what to put back afterwards: (parent, field, original statements) for each list
    replaced. Cheaper than copying the tree, which `gast_to_ast` copies anyway."""
    swapped = []
    for parent in _walk(node):
        for field in ("body", "orelse"):
            stmts = getattr(parent, field, None)
            if not isinstance(stmts, list) or not any(comment_of(s) for s in stmts):
                continue
            out = []
            for stmt in stmts:
                text = comment_of(stmt)
                if text:
                    for line in text.splitlines():
                        comments.append(line)
                        marker = gast.Name(id=_MARKER.format(len(comments) - 1),
                                           ctx=gast.Load(), annotation=None, type_comment=None)
                        out.append(gast.Expr(value=marker))
                out.append(stmt)
            swapped.append((parent, field, stmts))
            setattr(parent, field, out)
    return swapped


def _walk(node):
    """Every node under `node`, as `ast.walk` (each node's children are listed before it
    is handed out, so a list replaced then is not walked)."""
    todo = [node]
    while todo:
        node = todo.pop()
        for field in node._fields:
            value = getattr(node, field, None)
            if isinstance(value, gast.AST):
                todo.append(value)
            elif isinstance(value, list):
                todo.extend(item for item in value if isinstance(item, gast.AST))
        yield node
