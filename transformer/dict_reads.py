"""Constant-key reads of a dict the function does not bind: `CONFIG["lr"]`, `ACT["relu"]`.

A module-level (or closed-over) dict of settings or of functions, or one read through a
user's module (`cfg.PARAMS["w"]`), read with a literal key
(written so, or made so by `static_argnums`: `ACT[name]` with `name` static), is read when
the function is transformed, as a module attribute (`cfg.SCALE`) is: Numba cannot hold a
Python dict, and a transformation must know which function `ACT["relu"](x)` calls.

`fold_dict_reads` replaces each such read whose value is a literal (a number, bool, str,
None or a tuple of those) by that literal, and one whose value is a function or an array
by a fresh name bound to it in the env (under jit such an array is a hidden argument, read
from the dict at each call: `captured_arrays`); any other value is left as written. Each
item folded is reported to the recordings active on this thread (`freshness.note`), keyed
by the dict and the key, so assigning `CONFIG["lr"] = 0.2` later makes `grad`, `vmap`, ...
rebuild and a new `jit` specialization read the new value, exactly as rebinding a global
does.

Output invariant: no Load of `d[k]` with `d` a dict from the env (not a local) and `k` a
literal present in it whose value is a literal or a function, where every use of `d` in
the function is such a read (a dict it writes, `d["n"] += 1`, or hands on whole is read
at each read, as is one a helper it calls may change: `helper_effects.may_change`).
"""
from __future__ import annotations

import types

import gast
import numpy as np

from . import freshness
from .function import Function, resolve
from .helper_effects import may_change
from .names import Namer, stored_and_loaded
from .nodes import walk
from .specialize import is_literal, literal_node
from .syntax import dotted_text, name


def fold_dict_reads(fn: Function, node: gast.FunctionDef) -> gast.FunctionDef:
    """`node` (a copy of `fn.node`), rewritten in place; `fn.env` receives the names of
    the functions read."""
    reads = [sub for sub in walk(node) if isinstance(sub, gast.Subscript) and
             isinstance(sub.ctx, gast.Load) and dotted_text(sub.value) is not None and
             isinstance(sub.slice, gast.Constant)]
    if not reads:
        return node
    stored, _ = stored_and_loaded(node)
    # a dict the function writes, or hands on whole, is read as it is at each read
    read_ids = {id(read.value) for read in reads}
    other_uses = {dotted_text(sub) for sub in walk(node)
                  if isinstance(sub, (gast.Name, gast.Attribute)) and id(sub) not in read_ids}
    called = [resolve(fn, sub.func, None) for sub in walk(node) if isinstance(sub, gast.Call)]
    changing: dict = {}         # id(mapping) -> whether a helper called may change it
    folded: dict = {}
    bindings = freshness.Bindings()
    namer = None
    for read in reads:
        path = dotted_text(read.value)
        mapping = resolve(fn, read.value, None)
        key = read.slice.value
        if path.partition(".")[0] in stored or path in other_uses or \
                not isinstance(mapping, dict) or not _in_modules(fn, read.value) or \
                not _hashable(key) or key not in mapping:
            continue
        if id(mapping) not in changing:
            changing[id(mapping)] = any(may_change(f, mapping) for f in called)
        if changing[id(mapping)]:
            continue
        value = mapping[key]
        if is_literal(value):
            replacement = literal_node(value)
        elif (callable(value) and not isinstance(value, type)) or \
                type(value) is np.ndarray:      # an array: jit passes it as a hidden argument
            namer = namer or Namer.for_function(fn)
            base = path.replace(".", "_")
            fresh = namer.fresh(f"{base}_{key}" if isinstance(key, str) and
                                key.isidentifier() else base)
            fn.env[fresh] = value
            replacement = name(fresh)
        else:
            continue
        bindings.read_name(mapping, key, value)
        folded[id(read)] = gast.copy_location(replacement, read)
    if folded:
        freshness.note(bindings)
        _Replace(folded).visit(node)
    return node


def _in_modules(fn: Function, expr) -> bool:
    """Whether `expr` is a Name, or an attribute of a module (`cfg.D`, `pkg.cfg.D`): the
    attributes of other objects are read where `transformer.object_attributes` reads them."""
    return isinstance(expr, gast.Name) or \
        isinstance(resolve(fn, expr.value, None), types.ModuleType)


def _hashable(key) -> bool:
    try:
        hash(key)
    except TypeError:
        return False
    return True


class _Replace(gast.NodeTransformer):
    def __init__(self, folded: dict):
        self.folded = folded

    def visit_Subscript(self, node):
        if id(node) in self.folded:
            return self.folded[id(node)]
        self.generic_visit(node)
        return node
