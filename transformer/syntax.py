"""Small constructors for gast nodes, so passes read like the code they build."""
from __future__ import annotations

import gast

from .nodes import copy_tree, walk


def name(id_: str, ctx=None) -> gast.Name:
    return gast.Name(id=id_, ctx=ctx or gast.Load(), annotation=None, type_comment=None)


def store(id_: str) -> gast.Name:
    return name(id_, gast.Store())


def const(value) -> gast.Constant:
    return gast.Constant(value=value, kind=None)


def assign(target, value) -> gast.Assign:
    if isinstance(target, str):
        target = store(target)
    return gast.Assign(targets=[target], value=value, type_comment=None)


def call(func, *args, **keywords) -> gast.Call:
    if isinstance(func, str):
        func = dotted(func)
    return gast.Call(func=func, args=list(args),
                     keywords=[gast.keyword(arg=k, value=v) for k, v in keywords.items()])


def dotted(path: str) -> gast.expr:
    """`np.linalg.norm` as nested Attribute nodes over a Name."""
    head, *rest = path.split(".")
    node = name(head)
    for attr in rest:
        node = gast.Attribute(value=node, attr=attr, ctx=gast.Load())
    return node


def dotted_text(expr) -> str | None:
    """The inverse of `dotted`: `cfg.D` for a Name or a chain of Attributes over one, else
    None."""
    if isinstance(expr, gast.Name):
        return expr.id
    if isinstance(expr, gast.Attribute):
        base = dotted_text(expr.value)
        return None if base is None else f"{base}.{expr.attr}"
    return None


def subscript(value, index, ctx=None) -> gast.Subscript:
    return gast.Subscript(value=value, slice=index, ctx=ctx or gast.Load())


def as_load(node):
    """A copy of a target expression usable as a value."""
    node = copy_tree(node)
    for sub in walk(node):
        if hasattr(sub, "ctx"):
            sub.ctx = gast.Load()
    return node


def as_store(node):
    node = copy_tree(node)
    node.ctx = gast.Store()
    return node


_POSITION = ("lineno", "col_offset", "end_lineno", "end_col_offset")


def int_constant(node) -> int | None:
    """The value of an int literal, negated ones included (`3`, `-1`); else None."""
    if isinstance(node, gast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, gast.UnaryOp) and isinstance(node.op, gast.USub):
        inner = int_constant(node.operand)
        return None if inner is None else -inner
    return None


def is_atom(node) -> bool:
    return isinstance(node, (gast.Name, gast.Constant))


def parsed_at(text: str, old):
    """The first statement of `text`, every node of it placed at `old`'s position (code
    secant writes for a user's function reports errors at that function's line)."""
    node = gast.parse(text).body[0]
    for sub in walk(node):
        for attr in ("lineno", "col_offset", "end_lineno", "end_col_offset"):
            if hasattr(sub, attr):
                setattr(sub, attr, None)
    return located(node, old)


def shift_positions(tree, line_offset: int, col_offset: int = 0) -> None:
    """Move every node of `tree` down `line_offset` lines and right `col_offset` columns:
    source parsed on its own, placed where it stands in the user's file."""
    for node in walk(tree):
        if getattr(node, "lineno", None) is not None:
            node.lineno += line_offset
            if getattr(node, "end_lineno", None) is not None:
                node.end_lineno += line_offset
        if getattr(node, "col_offset", None) is not None:
            node.col_offset += col_offset
            if getattr(node, "end_col_offset", None) is not None:
                node.end_col_offset += col_offset


def located(new, old):
    """Give `new` and its descendants without a position the source position of `old`."""
    # what `gast.copy_location(sub, old)` copies, read from `old` once
    where = [(attr, getattr(old, attr)) for attr in _POSITION
             if attr in old._attributes and hasattr(old, attr)]
    for sub in walk(new):
        attributes = getattr(sub, "_attributes", ())
        if "lineno" in attributes and getattr(sub, "lineno", None) is None:
            for attr, value in where:
                if attr in attributes:
                    setattr(sub, attr, value)
    return new


def is_mask(value, name_is_mask, call_is_mask=lambda call: False) -> bool:
    """Whether expression `value` is a boolean mask for sure: a comparison, `~`/`not` of
    one, `&`/`|`/`^` of two, a name `name_is_mask(node)` vouches for, or a call
    `call_is_mask(node)` does (`np.logical_and`, say). Lowering (which indexing is by mask)
    and reverse mode (which reads are copies) each say which names and calls count."""
    if isinstance(value, gast.Compare):
        return True
    if isinstance(value, gast.UnaryOp) and isinstance(value.op, (gast.Invert, gast.Not)):
        return is_mask(value.operand, name_is_mask, call_is_mask)
    if isinstance(value, gast.BinOp) and isinstance(value.op, (gast.BitAnd, gast.BitOr,
                                                               gast.BitXor)):
        return is_mask(value.left, name_is_mask, call_is_mask) and \
            is_mask(value.right, name_is_mask, call_is_mask)
    if isinstance(value, gast.Name):
        return name_is_mask(value)
    if isinstance(value, gast.Call):
        return call_is_mask(value)
    return False


def rewrite_block(stmts, statement) -> list:
    """What `statement(stmt)` (a list of statements) gives for each of `stmts`, in order,
    each after the blocks nested in it (`body`, `orelse`) are rewritten the same way."""
    out = []
    for stmt in stmts:
        for field in ("body", "orelse"):
            if isinstance(getattr(stmt, field, None), list):
                setattr(stmt, field, rewrite_block(getattr(stmt, field), statement))
        out.extend(statement(stmt))
    return out


def map_own_expressions(stmt, visit) -> None:
    """Replace each node of `stmt` outside its nested blocks by `visit(node)`, in the order
    Python evaluates them (an assignment's value before its targets)."""
    fields = [f for f, _ in gast.iter_fields(stmt) if f not in ("body", "orelse")]
    for field in sorted(fields, key=lambda f: f != "value"):
        value = getattr(stmt, field)
        if isinstance(value, gast.AST):
            setattr(stmt, field, visit(value))
        elif isinstance(value, list):
            setattr(stmt, field, [visit(v) if isinstance(v, gast.AST) else v for v in value])
