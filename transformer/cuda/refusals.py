"""Calls a CUDA thread cannot make, refused at the user's line with the registry's reason.

Input: a Function in the CUDA dialect (`.emit`: desugared, A-normal form, runtime helpers
and arrays lowered, scalar math rewritten), whose statements keep the user's line and
column. `refuse_calls_without_cuda_form` raises a TransformError at the first statement
that still calls a primitive the registry (`transformer.primitives`) marks as having no
CUDA form, naming it and giving the reason recorded there; `first_use` finds the statement
that uses a free name, so that a refusal found later (while the kernel module is put
together) points at that statement rather than at the `def`.
"""
from __future__ import annotations

import gast

from transformer.function import Function, resolve
from transformer.primitives import registry

_HINT = "or use backend='cpu' for this function"


def refuse_calls_without_cuda_form(fn: Function) -> None:
    """Raise at the first call of a primitive whose CUDA form the registry says is missing."""
    for stmt in _statements(fn.node.body):
        for node in _own_nodes(stmt):
            if not isinstance(node, gast.Call):
                continue
            func = resolve(fn, node.func, None)
            why = registry.reason(func, "cuda")
            if why:
                raise fn.origin.error(stmt, f"{display_name(func)} has no CUDA form",
                                      f"{why}; {_HINT}")


def missing_form_error(fn: Function, name: str, value):
    """The TransformError for free name `name` of `fn` bound to `value`, a Python function
    a CUDA thread cannot call: located at the statement using it, with the registry's
    reason when `value` is a registered primitive."""
    why = registry.reason(value, "cuda")
    what = f"{getattr(value, '__module__', '?')}.{getattr(value, '__qualname__', name)}"
    return fn.origin.error(first_use(fn, name),
                           f"{fn.name} calls {what}, which has no CUDA form"
                           + (f" ({why})" if why else ""),
                           "use backend='cpu' for this function")


def first_use(fn: Function, name: str):
    """The first statement (in source order) that reads `name`; the `def` when none does."""
    uses = [stmt for stmt in _statements(fn.node.body) if getattr(stmt, "lineno", None) and
            any(isinstance(n, gast.Name) and n.id == name for n in _own_nodes(stmt))]
    return min(uses, key=lambda s: (s.lineno, s.col_offset), default=fn.node)


def display_name(func) -> str:
    """`np.sign` for numpy.sign, else the registry's name of `func`."""
    found = registry.lookup(func)
    label = found.name if found is not None else getattr(func, "__name__", repr(func))
    return "np." + label[len("numpy."):] if label.startswith("numpy.") else label


def _statements(stmts):
    """Every statement of a body, nested ones included."""
    for stmt in stmts:
        yield stmt
        for field in ("body", "orelse"):
            yield from _statements(getattr(stmt, field, None) or [])


def _own_nodes(stmt):
    """The nodes of `stmt` outside its nested bodies (a loop's header, a branch's test)."""
    pending = [value for field, value in gast.iter_fields(stmt)
               if field not in ("body", "orelse")]
    while pending:
        item = pending.pop()
        if isinstance(item, list):
            pending.extend(item)
        elif isinstance(item, gast.AST):
            yield item
            pending.extend(gast.iter_child_nodes(item))
