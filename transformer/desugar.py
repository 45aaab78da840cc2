"""Desugar: rewrite convenient syntax into the small core the other passes handle.

Invariant of the output (on top of the frontend's):
- no branch on a constant: `if 0.25 > 0.5:` keeps the branch taken (`fold_constants`);
- no augmented assignment: `x += v` is `x = x + v`, `y[i] += v` is `y[i] = y[i] + v`;
  where another name may hold the same array as `x` (`z = y`, `z = y[1:]`, `for row in Y`,
  `np.reshape(y, ...)`: see `shared_names`), `x += v` is
  `x = update_in_place(x, x + v)`, which writes an array in place as NumPy does;
- every Compare has one operator: `a < b < c` is `a < b and b < c`;
- array methods and properties are NumPy calls: `x.sum(axis=0)` is `np.sum(x, axis=0)`,
  `x.T` is `np.transpose(x)`, `x.reshape(a, b)` is `np.reshape(x, (a, b))`, and
  `x.astype(t)` is `astype(x, t)` (`transformer.runtime.astype`, a primitive);
- every `for` loop iterates over `range(...)`: `for v in arr`, `enumerate` and `zip`
  become indexed loops;
- every assignment has one target, a Name or a Subscript: tuple targets (`a, b = b, a`,
  `h, c = cell(x)`) go through temporaries, so swaps stay swaps.
"""
from __future__ import annotations

import types

import gast
import numba
import numpy as np

from . import pyforms
from .function import Function, resolve
from .names import Namer, assigned_names
from .nodes import copy_tree, walk
from .runtime import astype, update_in_place
from .specialize import fold_constants
from .syntax import as_load, assign, call, const, located, name, store, subscript

# ndarray method -> NumPy function taking the array first
ARRAY_METHODS = {
    "sum": "sum", "mean": "mean", "prod": "prod", "max": "max", "min": "min", "std": "std",
    "var": "var", "cumsum": "cumsum", "cumprod": "cumprod", "dot": "dot", "ravel": "ravel",
    "copy": "copy", "clip": "clip", "any": "any", "all": "all",
    "argmax": "argmax", "argmin": "argmin", "squeeze": "squeeze", "swapaxes": "swapaxes",
    "conj": "conj", "round": "round", "trace": "trace", "nonzero": "nonzero",
    "repeat": "repeat",
}
# methods whose positional arguments form one shape tuple: x.reshape(2, 3)
SHAPE_METHODS = {"reshape": "reshape", "transpose": "transpose"}
ARRAY_PROPERTIES = {"T": "transpose"}


def numpy_name(fn: Function, env: dict, namer: Namer) -> str:
    """A name bound to the numpy module in `env`, adding `np` (or a fresh one) if none."""
    for key, value in env.items():
        if value is np:
            return key
    key = "np" if "np" not in namer.taken else namer.fresh("numpy")
    namer.reserve(key)
    env[key] = np
    return key


def bound_name(env: dict, namer: Namer, obj) -> str:
    """A name bound to `obj` (a function) in `env`, adding its own name (or a fresh one)."""
    for key, value in env.items():
        if value is obj:
            return key
    key = obj.__name__ if obj.__name__ not in namer.taken else namer.fresh(obj.__name__)
    namer.reserve(key)
    env[key] = obj
    return key


def methods_to_functions(fn: Function) -> Function:
    """Only the method/property rewrite (what `jit` needs for Numba's missing forms)."""
    fn = python_forms(fn)
    env, namer = dict(fn.env), Namer.for_function(fn)
    node = _Methods(fn, env, namer).visit(copy_tree(fn.node))
    return fn.replace(node=node, env=env)


def python_forms(fn: Function) -> Function:
    """`fn` with comprehensions, local functions and star-arguments rewritten
    (`transformer.pyforms`); numpy is added to the env when a rewrite needs it."""
    env, namer = dict(fn.env), Namer.for_function(fn)
    fn = pyforms.normalize(fn, lambda: numpy_name(fn, env, namer), env)
    return fn.replace(env=env)


def desugar(fn: Function) -> Function:
    fn = fold_constants(python_forms(fn))
    env, namer = dict(fn.env), Namer.for_function(fn)
    node = copy_tree(fn.node)
    node = _Methods(fn, env, namer).visit(node)
    node = _Statements(fn, env, namer, shared_names(fn, node),
                       container_names(node)).visit(node)
    return fn.replace(node=node, env=env)


# calls whose result may be a view of (share memory with) their first argument
_VIEW_FUNCTIONS = (update_in_place, np.transpose, np.reshape, np.ravel, np.asarray,
                   np.asanyarray, np.squeeze, np.expand_dims, np.swapaxes, np.moveaxis,
                   np.flip, np.fliplr, np.flipud, np.rot90, np.diagonal, np.real, np.imag,
                   np.broadcast_to, np.atleast_1d, np.atleast_2d, np.atleast_3d,
                   # lists of views of their first argument
                   np.split, np.array_split, np.hsplit, np.vsplit, np.dsplit,
                   np.lib.stride_tricks.as_strided) + tuple(
    getattr(np, name) for name in ("matrix_transpose", "permute_dims", "unstack")
    if hasattr(np, name))                               # NumPy 2 names

# array methods that return a view and that desugaring leaves as methods
_VIEW_METHODS = ("view",)


# attributes of an array that are views of it (`.T` is `np.transpose` by now)
_VIEW_ATTRIBUTES = ("real", "imag", "flat")


def shared_names(fn: Function, node) -> set:
    """Names that may hold the same array as another name: one bound to another name,
    to an item or slice of it, to a view of it (`_VIEW_FUNCTIONS`), or to a row of a
    sequence a `for` loop walks. Augmented assignments to them must write in place."""
    shared: set = set()

    def link(target, value):
        targets = _bound_names(target)        # an element write copies values
        sources = view_sources(fn, value)
        if targets and sources:
            shared.update(targets | sources)
    for sub in walk(node):
        if isinstance(sub, gast.Assign):
            for target in sub.targets:
                link(target, sub.value)
        elif isinstance(sub, gast.For) and not _is_call_to(fn, sub.iter, range):
            link(sub.target, sub.iter)
    return shared


def container_names(node) -> set:
    """Names bound to a list or tuple literal somewhere in the function: their items may
    be arrays, which `lst[0] += v` updates in place."""
    found = set()
    for sub in walk(node):
        if isinstance(sub, gast.Assign) and isinstance(sub.value, (gast.List, gast.Tuple)):
            for target in sub.targets:
                if isinstance(target, gast.Name):
                    found.add(target.id)
    return found


def _bound_names(target) -> set:
    if isinstance(target, gast.Name):
        return {target.id}
    if isinstance(target, (gast.Tuple, gast.List)):
        return set().union(*(_bound_names(e) for e in target.elts))
    return set()


def view_sources(fn: Function, value) -> set:
    """Names whose array the value of expression `value` may share."""
    if isinstance(value, gast.Name):
        return {value.id}
    if isinstance(value, gast.Subscript) or isinstance(value, gast.Attribute) and \
            value.attr in _VIEW_ATTRIBUTES and resolve(fn, value, None) is None:
        return view_sources(fn, value.value)
    if isinstance(value, (gast.Tuple, gast.List)):
        return set().union(*(view_sources(fn, e) for e in value.elts))
    if isinstance(value, gast.Dict):                  # `d = {"k": h}`: d["k"] is h
        return set().union(*(view_sources(fn, e) for e in value.values))
    if isinstance(value, gast.IfExp):
        return view_sources(fn, value.body) | view_sources(fn, value.orelse)
    if isinstance(value, gast.Call) and isinstance(value.func, gast.Attribute) and \
            value.func.attr in _VIEW_METHODS and resolve(fn, value.func, None) is None:
        return view_sources(fn, value.func.value)
    if isinstance(value, gast.Call) and value.args:
        func = resolve(fn, value.func, None)
        if any(func is f for f in _VIEW_FUNCTIONS):
            return view_sources(fn, value.args[0])
        if func is enumerate or func is zip:
            return set().union(*(view_sources(fn, a) for a in value.args))
    return set()


class _Methods(gast.NodeTransformer):
    def __init__(self, fn, env, namer):
        self.fn, self.env, self.namer = fn, env, namer
        self._np = None

    @property
    def np(self) -> str:
        if self._np is None:
            self._np = numpy_name(self.fn, self.env, self.namer)
        return self._np

    def _is_module_attr(self, node) -> bool:
        return isinstance(resolve(self.fn, node, None), types.ModuleType) or \
            isinstance(resolve(self.fn, node.value, None), types.ModuleType)

    def visit_Call(self, node):
        self.generic_visit(node)
        func = node.func
        if not isinstance(func, gast.Attribute) or self._is_module_attr(func):
            return node
        if func.attr in ARRAY_METHODS:
            target = f"{self.np}.{ARRAY_METHODS[func.attr]}"
            return located(call(target, func.value, *node.args,
                                **{k.arg: k.value for k in node.keywords}), node)
        if func.attr == "flatten":
            # always a new array, where `np.ravel` is a view of a contiguous one
            flat = call(f"{self.np}.ravel", func.value, *node.args,
                        **{k.arg: k.value for k in node.keywords})
            return located(call(f"{self.np}.copy", located(flat, node)), node)
        dtype = _cast_dtype(node)
        if func.attr == "astype" and dtype is not None:
            return located(call(bound_name(self.env, self.namer, astype), func.value, dtype),
                           node)
        if func.attr == "view" and not node.args and not node.keywords:
            # `x.view()`: the same memory, the same values - a view as np.asarray is one
            # for the write analyses, and the identity for the derivative rules
            return located(call(f"{self.np}.asarray", func.value), node)
        if func.attr in SHAPE_METHODS and not node.keywords:
            args = node.args
            if len(args) > 1:
                args = [gast.Tuple(elts=args, ctx=gast.Load())]
            return located(call(f"{self.np}.{SHAPE_METHODS[func.attr]}", func.value, *args),
                           node)
        return node

    def visit_Attribute(self, node):
        self.generic_visit(node)
        if node.attr in ARRAY_PROPERTIES and isinstance(node.ctx, gast.Load) \
                and not self._is_module_attr(node):
            return located(call(f"{self.np}.{ARRAY_PROPERTIES[node.attr]}", node.value), node)
        return node


def _cast_dtype(node: gast.Call):
    """The dtype of `x.astype(t)` or `x.astype(dtype=t)`; None for other arguments
    (`copy=False`, `casting=...`: the method is left as it is)."""
    if len(node.args) == 1 and not node.keywords:
        return node.args[0]
    if not node.args and [k.arg for k in node.keywords] == ["dtype"]:
        return node.keywords[0].value
    return None


def _item_of(target, containers) -> bool:
    """Whether `target` is an item of a list or tuple literal's name (`lst[0]`)."""
    return isinstance(target, gast.Subscript) and isinstance(target.value, gast.Name) and \
        target.value.id in containers


class _Statements(gast.NodeTransformer):
    """Statement-level rewrites; each visit returns a list of statements."""

    def __init__(self, fn, env, namer, shared: set = frozenset(),
                 containers: set = frozenset()):
        self.fn, self.env, self.namer, self.shared = fn, env, namer, shared
        self.containers = containers

    def builtin(self, obj) -> str:
        """A name bound to builtin `obj` in the new environment (added if missing)."""
        return bound_name(self.env, self.namer, obj)

    def visit_AugAssign(self, node):
        self.generic_visit(node)
        target = node.target
        if not isinstance(target, (gast.Name, gast.Subscript)):
            raise self.fn.origin.error(node, "augmented assignment to this target is "
                                       "not supported", "assign to a variable or an element")
        value = gast.BinOp(left=as_load(target), op=node.op, right=node.value)
        if isinstance(target, gast.Name) and target.id in self.shared or \
                _item_of(target, self.containers):
            # NumPy updates an array in place, whichever name or list holds it (`lst[0] *=
            # k` changes the array `lst[0]` is): `lst[0] = lst[0] * k` left it as it was
            value = call(name(self.builtin(update_in_place)), as_load(copy_tree(target)),
                         value)
        return [located(assign(target, value), node)]

    def visit_Compare(self, node):
        self.generic_visit(node)
        if len(node.ops) == 1:
            return node
        parts, left = [], node.left
        for op, right in zip(node.ops, node.comparators):
            parts.append(gast.Compare(left=copy_tree(left), ops=[op],
                                      comparators=[copy_tree(right)]))
            left = right
        return located(gast.BoolOp(op=gast.And(), values=parts), node)

    def visit_Assign(self, node):
        self.generic_visit(node)
        stmts = []
        if len(node.targets) > 1:          # a = b = value
            tmp = self.namer.fresh("value")
            stmts.append(located(assign(tmp, node.value), node))
            for target in node.targets:
                stmts.extend(self._unpack(target, name(tmp), node))
            return stmts
        return self._unpack(node.targets[0], node.value, node)

    def _unpack(self, target, value, origin):
        if not isinstance(target, (gast.Tuple, gast.List)):
            return [located(assign(target, value), origin)]
        if isinstance(value, (gast.Tuple, gast.List)) and len(value.elts) == len(target.elts):
            temps = [self.namer.fresh(_base(t)) for t in target.elts]
            stmts = [located(assign(t, v), origin) for t, v in zip(temps, value.elts)]
            for t, tmp in zip(target.elts, temps):
                stmts.extend(self._unpack(t, name(tmp), origin))
            return stmts
        if isinstance(value, gast.Name):
            source, stmts = value.id, []
        else:
            source = self.namer.fresh("unpacked")
            stmts = [located(assign(source, value), origin)]
        for i, t in enumerate(target.elts):
            stmts.extend(self._unpack(t, subscript(name(source), const(i)), origin))
        return stmts

    def visit_For(self, node):
        self.generic_visit(node)
        it = node.iter
        # a prange loop (an inner vmap's loop over examples, vmapped again) stays a loop
        if _is_call_to(self.fn, it, range) or _is_call_to(self.fn, it, numba.prange):
            if isinstance(node.target, gast.Name):
                return node
        index = self.namer.fresh("i" if not isinstance(node.target, gast.Name)
                                 else "i_" + node.target.id)
        rebound = assigned_names(gast.Module(body=node.body, type_ignores=[]))
        prologue, length, elements = self._sequence(it, index, node, rebound)
        loop_target = store(index)
        body = [located(s, node) for s in self._bind(node.target, elements, node)]
        loop = gast.For(target=loop_target, iter=call(name(self.builtin(range)), length),
                        body=body + node.body, orelse=[], type_comment=None)
        return prologue + [located(loop, node)]

    def _sequence(self, it, index, node, rebound):
        """Statements before the loop, its trip count, and element expressions.

        A sequence named by a variable the body rebinds is copied to a temporary first:
        Python iterates over the object the name held when the loop started.
        """
        prologue = []

        def bind(expr, base):
            if isinstance(expr, gast.Name) and expr.id not in rebound:
                return expr.id
            tmp = self.namer.fresh(base)
            prologue.append(located(assign(tmp, expr), node))
            return tmp

        if _is_call_to(self.fn, it, range):
            seq = bind(it, "seq")
            return prologue, call(name(self.builtin(len)), name(seq)), \
                subscript(name(seq), name(index))
        if _is_call_to(self.fn, it, enumerate) and it.args:
            seq = bind(it.args[0], "seq")
            count = name(index)
            start = it.args[1:] + [k.value for k in it.keywords if k.arg == "start"]
            if start:           # enumerate(seq, start): the count is offset, not the index
                count = gast.BinOp(left=name(index), op=gast.Add(),
                                   right=name(bind(start[0], "start")))
            return prologue, call(name(self.builtin(len)), name(seq)), gast.Tuple(
                elts=[count, subscript(name(seq), name(index))], ctx=gast.Load())
        if _is_call_to(self.fn, it, zip):
            seqs = [bind(a, "seq") for a in it.args]
            lengths = [call(name(self.builtin(len)), name(s)) for s in seqs]
            length = lengths[0] if len(lengths) == 1 else call(name(self.builtin(min)),
                                                                *lengths)
            return prologue, length, gast.Tuple(
                elts=[subscript(name(s), name(index)) for s in seqs], ctx=gast.Load())
        if isinstance(it, gast.Call) and isinstance(it.func, gast.Attribute) and \
                it.func.attr in ("items", "keys", "values") and not it.args and \
                resolve(self.fn, it.func, None) is None:
            # a dict's view has a length but no index: its items as a list
            it = located(call(name(self.builtin(list)), it), it)
        seq = bind(it, "seq")
        return prologue, call(name(self.builtin(len)), name(seq)), \
            subscript(name(seq), name(index))

    def _bind(self, target, value, origin):
        return self._unpack(target, value, origin)


def _base(target) -> str:
    return target.id if isinstance(target, gast.Name) else "elt"


def _is_call_to(fn, node, builtin) -> bool:
    return isinstance(node, gast.Call) and resolve(fn, node.func, None) is builtin
