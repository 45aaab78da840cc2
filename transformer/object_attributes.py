"""Attributes of plain Python objects a function reads (`cfg.scale` of a configuration
object it closes over, `self.W` in a bound method), and of the user's classes read as
namespaces (`Units.KB`, `Acts.relu`, a staticmethod), bound as names of their own.

JAX users close over configuration objects and transform bound methods
(`grad(model.loss)`). Numba cannot type an arbitrary Python object, so under jit a read
such as `cfg.A` failed inside Numba. `bind_object_attributes` replaces each read
`obj.attr` (or `obj.sub.attr`, `params.model.W` through a user's module, `Units.KB`)
whose root is a name the function's env binds to a plain object, or to a class or module
of the user's, with a fresh name bound to the attribute's value, when that value is one
secant passes on as it passes a global: an array, a number, a string, None, a function, a
module. (A module's own attributes, `cfg.SCALE`, stay as written: the generated module
imports it.) Each read is recorded in the build's bindings (`freshness`) in the namespace
it came from - the object's `__dict__`, or the class's for a method or class constant (with
the object's own `__dict__`, or the namespaces of the subclasses before it, recorded as not
holding it) - so `cfg.scale = 5.0` rebuilds the transformation as rebinding a global does;
an array changed in place keeps its identity.

An object called (`model(x)`, or `grad(model)`) is its class's `__call__` bound to it.

Left as written, for an object the function writes an attribute of, hands on whole, or
calls a method of that may set attributes (its values may change during the call): all its
attributes; and every object's, when the function calls a helper of the user's that may
set an attribute (`_changing_roots`). In any case: writes (`self.n = ...`), properties,
slots and other descriptors, and objects passed on whole (`helper(self, x)`): the python
backend runs them as Python does.

Invariant: every name the output adds is bound in `env` to the value its attribute held,
and that read is recorded.
"""
from __future__ import annotations

import inspect
import types

import gast
import numpy as np

from codegen.backends import is_library_name

from . import freshness
from .errors import TransformError
from .function import resolve_in
from .helper_effects import (defining_namespace, is_plain_object, may_set_attributes,
                             names_read, stores_attributes)
from .names import Namer
from .nodes import walk

# values bound to a name of their own (as a global holding one is)
_VALUES = (np.ndarray, np.generic, int, float, complex, bool, str, type(None), tuple, list, dict,
           types.FunctionType, types.ModuleType, np.ufunc)


def bind_object_attributes(node, env: dict, namer: Namer) -> dict:
    """Rewrite `node` in place (see the module docstring); the env with the new names."""
    bindings = freshness.Bindings()
    env = dict(env)
    _Binder(env, namer, bindings, _changing_roots(node, env)).visit(node)
    freshness.note(bindings)
    return env


def _root(expr):
    while isinstance(expr, gast.Attribute):
        expr = expr.value
    return expr.id if isinstance(expr, gast.Name) else None


def _changing_roots(node, env: dict) -> set:
    """Names of objects (or of classes and modules that lead to values) whose attributes
    may change while the function runs, so they are read as written, when read: the
    function writes an attribute of one (`self.n += 1`), hands one on whole
    (`helper(cfg)`), or calls a method of one that may set or delete an attribute
    (`cfg.set(3.0)`; `_may_set_attributes`)."""
    objects = {k for k, v in env.items() if is_plain_object(v) or _is_namespace(v)}
    if not objects:                 # nothing to leave alone: no helper need be read
        return set()
    bases, changing = set(), set()
    for sub in walk(node):
        if isinstance(sub, gast.Attribute):
            bases.add(id(sub.value))
            if not isinstance(sub.ctx, gast.Load):
                changing.add(_root(sub))
        if isinstance(sub, gast.Call) and isinstance(sub.func, gast.Attribute) and \
                _is_namespace(_holder_at(sub.func.value, env)):
            # a function of a class or module (`Units.convert(x)`): as any helper
            if may_set_attributes(resolve_in(env, sub.func, None)):
                return objects
        elif isinstance(sub, gast.Call) and _root(sub.func) in objects:
            owner, method = _method_called(sub.func, env)
            if owner is None or _may_set_attributes(type(owner), {method}, set()):
                changing.add(_root(sub.func))
        elif isinstance(sub, gast.Call) and \
                may_set_attributes(resolve_in(env, sub.func, None)):
            return objects          # a helper that sets attributes: of any object, maybe
    changing |= {sub.id for sub in walk(node) if isinstance(sub, gast.Name) and
                 sub.id in objects and id(sub) not in bases and
                 isinstance(sub.ctx, gast.Load) and not _called(sub, node)}
    return changing & objects


def _method_called(func, env: dict):
    """(the object, the method's name) a call of `func` runs: `obj.m(...)` (through
    attributes of plain objects) or `obj(...)` (`__call__`); (None, None) when unknown."""
    if isinstance(func, gast.Attribute):
        obj, method = _object_at(func.value, env), func.attr
    else:
        obj, method = _object_at(func, env), "__call__"
    return (obj, method) if obj is not None else (None, None)


def _object_at(expr, env: dict, left=frozenset()):
    """The plain object `expr` (a name, or a chain of attributes through plain objects,
    classes and modules of the user's) stands for, or None; a name in `left` stands for
    none."""
    value = _holder_at(expr, env, left)
    return value if is_plain_object(value) else None


def _holder_at(expr, env: dict, left=frozenset()):
    """The plain object, or the class or module of the user's, that `expr` (a name or a
    chain of attributes through such values) stands for, or None."""
    if isinstance(expr, gast.Name):
        value = env.get(expr.id) if expr.id not in left else None
    elif isinstance(expr, gast.Attribute):
        base = _holder_at(expr.value, env, left)
        found = _read_attribute(base, expr.attr) if base is not None else None
        value = found[0] if found is not None else None
    else:
        return None
    return value if is_plain_object(value) or _is_namespace(value) else None


def _is_namespace(value) -> bool:
    """A class or module of the user's, read as a namespace of values (`Units.KB`,
    `params.model.W`)."""
    if isinstance(value, types.ModuleType):
        return not is_library_name(value.__name__)
    return isinstance(value, type) and not is_library_name(value.__module__) and \
        type(value) is type                 # a metaclass may compute its attributes


def _called(name_node, tree) -> bool:
    return any(isinstance(sub, gast.Call) and sub.func is name_node for sub in walk(tree))


def _may_set_attributes(klass, names: set, seen: set) -> bool:
    """Whether calling a method named in `names` of `klass` may set or delete an attribute:
    its code (nested code included) stores one, or names another method that may. Names
    read by the code stand for the methods it may call, which over-approximates."""
    for name in names - seen:
        seen.add(name)
        namespace = defining_namespace(klass, name)
        code = getattr(namespace[name], "__code__", None) if namespace is not None else None
        if code is None:
            continue
        if stores_attributes(code) or _may_set_attributes(klass, names_read(code), seen):
            return True
    return False


class _Binder(gast.NodeTransformer):
    def __init__(self, env: dict, namer: Namer, bindings: freshness.Bindings, left: set):
        self.env, self.namer, self.bindings = env, namer, bindings
        self.left = left             # the names of objects whose attributes stay as written
        self.bound: dict = {}        # (id(object), attr) -> the name bound to its value

    def visit_Attribute(self, node):
        if isinstance(node.ctx, gast.Load):
            found = self.read(node)
            if found is not None:
                return gast.copy_location(
                    gast.Name(id=found, ctx=gast.Load(), annotation=None, type_comment=None),
                    node)
        return self.generic_visit(node)

    def visit_Call(self, node):
        obj = self.owner(node.func)         # `model(x)`: the object's own __call__
        method = called_method(obj) if obj is not None else None
        if method is not None:
            key = (id(obj), "__call__")
            if key not in self.bound:
                root = node.func.id if isinstance(node.func, gast.Name) else "obj"
                self.bound[key] = self.namer.fresh(f"{root}_call")
                self.env[self.bound[key]] = method
                self.bindings.read_name(defining_namespace(type(obj), "__call__"), "__call__",
                                        method.__func__)
            node.func = gast.copy_location(gast.Name(id=self.bound[key], ctx=gast.Load(),
                                                     annotation=None, type_comment=None),
                                           node.func)
        return self.generic_visit(node)

    def owner(self, expr):
        """The plain object `expr` (a name or a chain of attributes) stands for, or None."""
        return _object_at(expr, self.env, self.left)

    def read(self, node) -> str | None:
        """The name bound to `node`'s value (an `obj.attr` or `Class.attr` read), or None
        to leave it. A module's attributes are read where the module is imported."""
        base = _holder_at(node.value, self.env, self.left)
        if base is None or isinstance(base, types.ModuleType):
            return None
        found = _read_attribute(base, node.attr)
        if found is None:
            return None
        value, namespace, raw = found
        if not isinstance(value, _VALUES) and not _is_plain_method(value):
            return None
        key = (id(base), node.attr)
        if key not in self.bound:
            root = node.value.id if isinstance(node.value, gast.Name) else "obj"
            self.bound[key] = self.namer.fresh(f"{root}_{node.attr}")
            self.env[self.bound[key]] = value
            self.bindings.read_name(namespace, node.attr, raw)
            # not found before where it was: not the object's own, nor a subclass's
            for before in ([] if not isinstance(base, type) else
                           base.__mro__[:base.__mro__.index(_owner_class(base, node.attr))]):
                self.bindings.read_name(vars(before), node.attr, freshness.missing())
            if not isinstance(base, type) and namespace is not vars(base):
                self.bindings.read_name(vars(base), node.attr, freshness.missing())
        return self.bound[key]


def bound_self(method):
    """The object a method of the user's is bound to; TransformError for any other."""
    if is_plain_object(method.__self__) and isinstance(method.__func__, types.FunctionType):
        return method.__self__
    raise TransformError(
        f"cannot transform the bound method {method.__qualname__}: it is bound to "
        f"{type(method.__self__).__name__!r}, not to an object of a class of yours",
        hint="transform a module-level function and pass the object's arrays (or a "
             "dataclass or dict of them, a pytree) as arguments")


def called_method(obj):
    """`obj.__call__` bound, for a plain object whose class defines `__call__` as a Python
    function (a model called as `model(x)`); else None."""
    if not is_plain_object(obj):
        return None
    namespace = defining_namespace(type(obj), "__call__")
    if namespace is None or not isinstance(namespace["__call__"], types.FunctionType):
        return None
    return obj.__call__


def _is_plain_method(value) -> bool:
    return isinstance(value, types.MethodType) and is_plain_object(value.__self__) and \
        isinstance(value.__func__, types.FunctionType)


def _read_attribute(holder, attr: str):
    """`_attribute` of a plain object, or of a class or module of the user's: (value,
    namespace it was read from, the entry there), or None."""
    if isinstance(holder, types.ModuleType):
        namespace = vars(holder)
        return (namespace[attr], namespace, namespace[attr]) if attr in namespace else None
    if isinstance(holder, type):
        owner = _owner_class(holder, attr)
        raw = vars(owner)[attr] if owner is not None else None
        if isinstance(raw, staticmethod):
            return raw.__func__, vars(owner), raw
        if owner is None or (hasattr(type(raw), "__get__") and
                             not isinstance(raw, types.FunctionType)):
            return None                     # a property, classmethod, ...
        return raw, vars(owner), raw
    return _attribute(holder, attr)


def _owner_class(klass, attr: str):
    """The first class in `klass`'s MRO whose own namespace holds `attr`, or None."""
    return next((c for c in klass.__mro__ if attr in vars(c)), None)


def _attribute(obj, attr: str):
    """(value, namespace it was read from, the entry there) for `obj.attr` read the plain
    way - the object's `__dict__`, else a class attribute that is a function or not a
    descriptor - or None (a property, a slot, anything else)."""
    for klass in type(obj).__mro__:
        if attr in vars(klass):
            raw = vars(klass)[attr]
            if inspect.isdatadescriptor(raw):
                return None
            break
    else:
        klass = raw = None
    own = vars(obj)
    if attr in own:
        return own[attr], own, own[attr]
    if klass is None:
        return None
    if isinstance(raw, types.FunctionType):
        return getattr(obj, attr), vars(klass), raw
    if isinstance(raw, staticmethod):
        return raw.__func__, vars(klass), raw
    if hasattr(type(raw), "__get__"):          # classmethod, others
        return None
    return raw, vars(klass), raw
