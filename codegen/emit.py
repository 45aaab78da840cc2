"""gast in, Python source text out: the one place source is emitted.

A statement annotated with `annotate(stmt, "grad of: e += 4.0 * eps")` is preceded by
that comment in the output, so a reader can walk from generated code back to the user
line that produced it.
"""
from __future__ import annotations

import copy
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
    marked = _negative_constants_as_negation(_insert_markers(node, comments))
    import astor    # on first use: `import transformer` does not need the printer

    text = astor.to_source(gast.gast_to_ast(marked))
    return _MARKER_LINE.sub(lambda m: m.group(1) + "# " + comments[int(m.group(2))], text)


def expression_source(node) -> str:
    import astor

    return astor.to_source(gast.gast_to_ast(gast.Expr(value=node))).strip()


class _Negation(gast.NodeTransformer):
    def visit_Constant(self, node):
        value = node.value
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value < 0:
            return gast.UnaryOp(op=gast.USub(), operand=gast.Constant(value=-value, kind=None))
        return node


def _negative_constants_as_negation(node):
    """astor prints Constant(-2) bare, so `(-2) ** k` would read `-2 ** k`; as a negation
    node it gets the parentheses its precedence needs."""
    return _Negation().visit(node)


def _insert_markers(node, comments):
    """A copy of `node` where each annotated statement is preceded by a marker line."""
    node = copy.deepcopy(node)
    for parent in gast.walk(node):
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
            setattr(parent, field, out)
    return node
