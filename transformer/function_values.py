"""Functions held in local names and tuples, bound before the run.

JAX traces these away; Numba cannot hold most functions as values, and a transformation
must know which function each call is to differentiate or batch it. Two forms:

- a local name bound once, in the function's top-level code, to a function known before
  the run (`act = np.tanh`, `act = relu`; after `static_argnums` folded a test, also
  `act = relu if use_relu else np.tanh`) is that function: its reads after the binding
  read the function itself, and the binding is dropped. A choice made at run time (`act =
  relu if use_relu else np.tanh`, `use_relu` not static and not assigned in the function)
  is made at each call instead, when every read of the name is a call: `act(z)` becomes
  `relu(z) if use_relu else np.tanh(z)`;
- a `for` whose sequence is a tuple or list of such functions - a literal, a name bound
  once to one in the function, or a module-level tuple (not a list: one changed in place
  later would not be seen) - becomes one copy of the body per function, the loop variable
  replaced by that function (`for act in (np.tanh, relu): h = act(W @ h)`). A local name
  bound to such a literal and read nowhere else is dropped with it.

Output invariant: no local name is bound to a function known before the run, except where
a read of it comes before the binding; no `for` loop walks a sequence of known functions,
except one refused at its line (a `break`/`continue` in it, or its loop variable assigned
or read outside the body), whose unrolling would change what the code means.
"""
from __future__ import annotations

import gast
import numpy as np

from .function import Function, resolve
from .names import Namer, name_counts, stored_and_loaded
from .nodes import copy_tree, walk
from .syntax import located, name


def bind_function_values(fn: Function, node: gast.FunctionDef) -> gast.FunctionDef:
    """`node` (a copy of `fn.node`, rewritten in place) in the output form above;
    `fn.env` receives a name for each function of a module-level tuple."""
    _bind_function_names(fn, node)
    loops = [n for n in walk(node) if isinstance(n, gast.For) and _maybe_functions(n.iter)]
    if not loops:
        return node
    unroller = _Unroller(fn, node)
    node = unroller.visit(node)
    _drop_consumed_literals(node, unroller.consumed)
    return node


def _bind_function_names(fn: Function, node) -> None:
    """`act = np.tanh` at the top level, `act` bound nowhere else: its later reads are
    `np.tanh` and the binding goes."""
    candidates = [(i, stmt) for i, stmt in enumerate(node.body)
                  if isinstance(stmt, gast.Assign) and len(stmt.targets) == 1 and
                  isinstance(stmt.targets[0], gast.Name) and
                  isinstance(stmt.value, (gast.Name, gast.Attribute, gast.IfExp))]
    if not candidates:
        return
    stored, _ = stored_and_loaded(node)
    bindings = _bindings(node)
    assigned = {sub.id for sub in walk(node) if isinstance(sub, gast.Name) and
                isinstance(sub.ctx, gast.Store)}
    dropped = set()
    for i, stmt in candidates:
        var, value = stmt.targets[0].id, stmt.value
        if bindings.get(var) != 1 or \
                any(_load_counts(before).get(var) for before in node.body[:i]):
            continue                      # read before it is bound: Python's error stays
        if isinstance(value, gast.IfExp):
            if not _chosen_functions(fn, value, stored, assigned) or \
                    not _calls_only(node.body[i + 1:], var):
                continue
            for later in node.body[i + 1:]:
                _ChosenCalls(var, value).visit(later)
        elif isinstance(value, gast.Name) and value.id in stored or \
                not _is_function(resolve(fn, value, None)):
            continue
        else:
            for later in node.body[i + 1:]:
                _replace_loads(later, var, value)
        dropped.add(id(stmt))
    node.body = [stmt for stmt in node.body if id(stmt) not in dropped]


def _chosen_functions(fn, value, stored, assigned) -> bool:
    """`relu if use_relu else np.tanh`: known functions (or such choices), chosen by a
    test that reads no name the function assigns (its parameters as passed, globals), so
    the choice made at the binding is the one made at each call."""
    if isinstance(value, gast.IfExp):
        tested = {sub.id for sub in walk(value.test) if isinstance(sub, gast.Name)}
        return not tested & assigned and \
            _chosen_functions(fn, value.body, stored, assigned) and \
            _chosen_functions(fn, value.orelse, stored, assigned)
    if isinstance(value, gast.Name) and value.id in stored:
        return False
    return isinstance(value, (gast.Name, gast.Attribute)) and \
        _is_function(resolve(fn, value, None))


def _calls_only(body, var: str) -> bool:
    """Whether every read of `var` in `body` is the function of a call."""
    called = {id(sub.func) for stmt in body for sub in walk(stmt) if isinstance(sub, gast.Call)}
    return all(id(sub) in called for stmt in body for sub in walk(stmt)
               if isinstance(sub, gast.Name) and sub.id == var)


class _ChosenCalls(gast.NodeTransformer):
    """`act(z)` with `act = relu if c else np.tanh`: `relu(z) if c else np.tanh(z)`."""

    def __init__(self, var: str, choice):
        self.var, self.choice = var, choice

    def visit_Call(self, node):
        self.generic_visit(node)
        if isinstance(node.func, gast.Name) and node.func.id == self.var:
            return located(self.expand(self.choice, node), node)
        return node

    def expand(self, choice, call):
        if isinstance(choice, gast.IfExp):
            return gast.IfExp(test=copy_tree(choice.test), body=self.expand(choice.body, call),
                              orelse=self.expand(choice.orelse, call))
        out = copy_tree(call)
        out.func = located(copy_tree(choice), call.func)
        return out


def _maybe_functions(expr) -> bool:
    return isinstance(expr, (gast.Tuple, gast.List, gast.Name, gast.Attribute))


def _is_function(value) -> bool:
    return callable(value) and not isinstance(value, (type, np.ndarray))


class _Unroller(gast.NodeTransformer):
    def __init__(self, fn: Function, node):
        self.fn, self.namer = fn, Namer.for_function(fn)
        self.stored, _ = stored_and_loaded(node)
        self.bindings = _bindings(fn.node)
        self.literals = {stmt.targets[0].id: stmt.value for stmt in node.body
                         if isinstance(stmt, gast.Assign) and len(stmt.targets) == 1 and
                         isinstance(stmt.targets[0], gast.Name) and
                         isinstance(stmt.value, (gast.Tuple, gast.List))}
        self.loads = _load_counts(node)
        self.consumed: set = set()

    def functions(self, expr) -> list | None:
        """The expressions naming each function `expr` holds, or None when `expr` is not a
        sequence of functions known before the run."""
        if isinstance(expr, (gast.Tuple, gast.List)):
            items = list(expr.elts)
            known = [self.known(item) for item in items]
            return items if items and all(known) else None
        if isinstance(expr, gast.Name) and expr.id in self.literals and \
                self.bindings.get(expr.id) == 1:
            return self.functions(self.literals[expr.id])
        if isinstance(expr, gast.Name) and expr.id in self.stored:
            return None                              # a local of another kind
        value = resolve(self.fn, expr, None)
        if not isinstance(value, tuple) or not value or \
                not all(_is_function(v) for v in value):
            return None
        items = []
        for k, v in enumerate(value):                # a module-level sequence
            fresh = self.namer.fresh(f"{getattr(expr, 'id', getattr(expr, 'attr', 'f'))}_{k}")
            self.fn.env[fresh] = v
            items.append(name(fresh))
        return items

    def known(self, item) -> bool:
        if isinstance(item, gast.Name) and item.id in self.stored:
            return False
        return isinstance(item, (gast.Name, gast.Attribute)) and \
            _is_function(resolve(self.fn, item, None))

    def visit_For(self, node):
        self.generic_visit(node)
        items = self.functions(node.iter) if _maybe_functions(node.iter) else None
        if items is None:
            return node
        target = node.target
        if not isinstance(target, gast.Name) or node.orelse:
            raise self.fn.origin.error(node, "a loop over functions is unrolled: its target "
                                       "must be one name, with no `else`",
                                       "write `for f in functions:` and test after the loop")
        jumps = [n for stmt in node.body for n in walk(stmt)
                 if isinstance(n, (gast.Break, gast.Continue))]
        if jumps:
            raise self.fn.origin.error(jumps[0], "break and continue are not supported in a "
                                       "loop over functions (the loop is unrolled)",
                                       "use an if around the rest of the body")
        body_loads = sum(_load_counts(stmt).get(target.id, 0) for stmt in node.body)
        if self.loads.get(target.id, 0) != body_loads or \
                any(target.id in stored_and_loaded(stmt)[0] for stmt in node.body):
            raise self.fn.origin.error(target, f"the loop variable {target.id!r} of a loop "
                                       "over functions is assigned in the loop or read "
                                       "after it", "give the other value another name")
        if isinstance(node.iter, gast.Name):
            self.consumed.add(node.iter.id)
        out = []
        for item in items:
            for stmt in node.body:
                out.append(_replaced(stmt, target.id, item))
        return out


def _replaced(stmt, var: str, item):
    return _replace_loads(copy_tree(stmt), var, item)


def _replace_loads(stmt, var: str, item):
    """`stmt`, rewritten in place, with each read of `var` a copy of `item`."""
    class _Sub(gast.NodeTransformer):
        def visit_Name(self, node):
            if isinstance(node.ctx, gast.Load) and node.id == var:
                return located(copy_tree(item), node)
            return node
    return _Sub().visit(stmt)


def _load_counts(node) -> dict:
    return name_counts(node, gast.Load)


def _bindings(node) -> dict:
    return name_counts(node, (gast.Store, gast.Param))


def _drop_consumed_literals(node, consumed: set) -> None:
    """`acts = (np.tanh, relu)` read by unrolled loops only: a tuple of functions Numba
    could not hold."""
    if not consumed:
        return
    loads = _load_counts(node)
    node.body = [stmt for stmt in node.body
                 if not (isinstance(stmt, gast.Assign) and len(stmt.targets) == 1 and
                         isinstance(stmt.targets[0], gast.Name) and
                         stmt.targets[0].id in consumed and not loads.get(stmt.targets[0].id))]
