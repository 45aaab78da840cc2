"""Forward mode's last stage: tangents nothing reads are removed.

Input: the FunctionDef `forward.py` built (primal statements, each active one followed by
its tangent statements, annotated `# jvp of: <source line>`) and the names of its tangents.
Output: the same function without assignments to tangents no statement reads (the tangent
of a loop counter, of a value only compared) and without zeros given to a tangent that the
next statement touching it assigns afresh; a removed statement's `jvp of:` comment moves to
the next kept tangent statement from the same source line. Nothing else changes.
"""
from __future__ import annotations

import gast

from codegen.emit import annotate, comment_of

from .nodes import walk


def drop_unread(node: gast.FunctionDef, tangents: set[str],
                effects: frozenset = frozenset()) -> None:
    """Remove assignments to tangents nothing reads (the tangent of a loop counter, of a
    value only compared): they cost work, and in a batched Jacobian a whole array each.
    An assignment from a call of one of `effects` stays: the call writes in place into a
    tangent array another name holds (`update_tangent`), whatever its result."""
    while True:
        read = {n.id for n in walk(node) if isinstance(n, gast.Name)
                and isinstance(n.ctx, gast.Load)}
        dead = tangents - read
        removed = _remove_assignments(node, dead, tangents, effects)
        if not removed:
            return


def _writes_in_place(stmt, effects) -> bool:
    value = stmt.value
    return isinstance(value, gast.Call) and isinstance(value.func, gast.Name) and \
        value.func.id in effects


def _remove_assignments(node, dead: set[str], tangents: set[str], effects) -> bool:
    removed = False
    for parent in walk(node):
        for field in ("body", "orelse"):
            stmts = getattr(parent, field, None)
            if not isinstance(stmts, list) or not stmts or not isinstance(stmts[0], gast.stmt):
                continue
            kept = [s for i, s in enumerate(stmts) if not (
                isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name)
                and not _writes_in_place(s, effects)
                and (s.targets[0].id in dead or (s.targets[0].id in tangents and
                                                 _overwritten(s.targets[0].id, stmts[i + 1:]))))]
            if len(kept) != len(stmts):
                removed = True
                _keep_comment(stmts, kept, tangents)
                setattr(parent, field, kept or [gast.Pass()])
    return removed


def _overwritten(target: str, following) -> bool:
    """Whether the next statement of the block touching `target` assigns it afresh (the
    zeros given to a tangent before a straight-line update replaces them). A statement
    that may leave the block (`break`, `continue`, `return`, also inside an `if`) ends the
    straight line: the value may be read where the jump lands."""
    for stmt in following:
        names = [n for n in walk(stmt) if isinstance(n, gast.Name) and n.id == target]
        if not names and not any(isinstance(n, (gast.Break, gast.Continue, gast.Return))
                                 for n in walk(stmt)):
            continue
        return isinstance(stmt, gast.Assign) and isinstance(stmt.targets[0], gast.Name) and \
            stmt.targets[0].id == target and \
            all(isinstance(n.ctx, gast.Store) for n in names)
    return False


def _keep_comment(before, after, tangents: set[str]) -> None:
    """A removed statement's `jvp of:` comment moves to the next kept tangent statement
    that came from the same source line."""
    kept_ids = {id(s) for s in after}
    pending = None                                   # (comment, source line)
    for stmt in before:
        line = getattr(stmt, "lineno", None)
        if id(stmt) not in kept_ids:
            if comment_of(stmt):
                pending = (comment_of(stmt), line)
            continue
        if pending is None or line != pending[1]:
            continue
        if isinstance(stmt, gast.Assign) and isinstance(stmt.targets[0], gast.Name) and \
                stmt.targets[0].id in tangents:
            if comment_of(stmt) is None:
                annotate(stmt, pending[0])
            pending = None
