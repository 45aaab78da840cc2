"""Containers crossing a call inside a flattened body: handed to a function of the user's
or to a transformation of one (`predict(params, x)`, `vmap(predict, in_axes=(None, 0))(params,
xs)`, `grad(loss)(params, x)`), and returned under jit (`return tree_map(f, params, grads)`).

`ContainerCalls` is a part of `pytrees._Flattener`; it relies on the flattener's
`resolve`, `rewrite`, `bind`, `statement`, `tree_map`, `comprehension`, `forget_rebound`,
`error` and `flatten`, and its `tuples` and `namer`.
Invariant: every call it emits passes leaves only, to a Function over leaves bound in the
flattener's env; a transformation's container result is bound leaf by leaf.
"""
from __future__ import annotations

import copy

import gast

from codegen.backends import is_user_function

from . import tree_util
from .bound_calls import bind_arguments
from .function import Function, resolve
from .nodes import walk
from .pytree_layouts import (LEAF, Flat, FlatResult, Tree, constant, layout_of, leaf_names,
                             literal, literal_kinds, locate, names_in)
from .syntax import const, name


def user_helper(obj) -> Function | None:
    """The Function of a function of the user's (or a generated one), else None."""
    if isinstance(obj, Function):
        return obj
    if not is_user_function(obj):
        return None
    from .frontend import parse_callee
    return parse_callee(obj)



class ContainerCalls:
    """Calls given containers, and containers returned (see the module docstring)."""

    def passed_on(self, call, env):
        """`predict(params, x)`: a container handed to a function of the user's, or to a
        transformation of one (`vmap(predict, in_axes=(None, 0))`), becomes its leaves,
        passed to a variant flattened the same way (so the passes only ever see arrays).
        None for any other call."""
        found = self.leaf_call(call, env)
        if found is None:
            return None
        leaf_call, flat = found
        if flat is None or flat.rebuild is None:
            return leaf_call
        one = _results_tree(flat)
        if not isinstance(one, FlatResult):
            raise self.error(call, "a transformation given container arguments returns a "
                             "container here", "assign its result to a name first "
                             "(grads = grad(loss)(params, x)), then read that name")
        for i in one.path:          # `-grad(energy)(pos, params)`: one array, read in place
            leaf_call = gast.Subscript(value=leaf_call, slice=const(i), ctx=gast.Load())
        return leaf_call

    def dict_display(self, stmt, env, nested) -> list | None:
        """Under jit of the function itself, `new = {"W": w2, "b": b2}` (string keys, leaf
        values, in straight-line code) binds `new` as a container of leaves, so that
        `return new` hands it back as `return {...}` does (Numba cannot return the dict
        itself). Each value is bound to a name of its own; None for any other statement."""
        target, value = stmt.targets[0], stmt.value
        if self.tuples and not nested and isinstance(value, gast.DictComp):
            value = self.comprehension(value, env)      # over a container: a display
        if not self.tuples or nested or not isinstance(target, gast.Name) or \
                not isinstance(value, gast.Dict) or any(k is None for k in value.keys):
            return None
        keys = [constant(k) for k in value.keys]
        if not all(isinstance(k, str) for k in keys) or len(set(keys)) != len(keys) or \
                any(isinstance(self.resolve(v, env), Tree) for v in value.values):
            return None
        names = {k: self.namer.fresh(f"{target.id}_item") for k in keys}
        out = []
        for key, item in zip(keys, value.values):
            assign = gast.Assign(targets=[name(names[key], gast.Store())], value=item,
                                 type_comment=None)
            out.extend(self.statement(gast.copy_location(assign, stmt), env, nested))
        self.forget_rebound(gast.Assign(targets=[target], value=value), env, nested)
        layout = layout_of(dict.fromkeys(keys, 0.0))
        env[target.id] = Tree(layout, tuple(names[k] for k in layout.keys))
        return out

    def hoist_container_result(self, stmt, env) -> list | None:
        """`tree_map(f, params, grad(loss)(params, x))`: a transformation's container result
        used inside a statement is bound to a fresh name first (`grads = ...`, then the
        statement reads `grads`), as `container_result` binds one. Only a call that the
        statement always evaluates moves (not one under `if`-expressions, `and`/`or` or
        lambdas; in a list or dict comprehension, one that reads none of its names). It then
        runs before the statement's other calls, which changes nothing unless one of those
        writes into an array the transformation reads. None when there is nothing to move."""
        if not isinstance(stmt, (gast.Assign, gast.AugAssign, gast.Return, gast.Expr)) or \
                stmt.value is None:
            return None
        start = [stmt.value] if not isinstance(stmt, gast.Assign) else \
            list(gast.iter_child_nodes(stmt.value))
        todo = [(node, frozenset()) for node in start]   # (node, comprehension names)
        while todo:
            node, inside = todo.pop(0)
            if isinstance(node, (gast.IfExp, gast.BoolOp, gast.Lambda, gast.SetComp,
                                 gast.GeneratorExp)):
                continue
            if isinstance(node, (gast.ListComp, gast.DictComp)):    # `{k: g[k] for k in p}`
                inside = inside | {n.id for gen in node.generators for n in walk(gen.target)
                                   if isinstance(n, gast.Name)}
            if isinstance(node, gast.Call) and \
                    not any(isinstance(n, gast.Name) and n.id in inside for n in walk(node)) \
                    and self.returns_container(node, env):
                fresh = self.namer.fresh("result")
                bound = gast.copy_location(gast.Assign(targets=[name(fresh, gast.Store())],
                                                       value=node, type_comment=None), stmt)
                _replace(stmt, node, gast.copy_location(name(fresh), node))
                return [bound, stmt]
            todo.extend((child, inside) for child in gast.iter_child_nodes(node))
        return None

    def returns_container(self, call, env) -> bool:
        """Whether `call` is a transformation given containers whose result is a container
        that `container_result` can bind (`grad(loss)(params, x)`)."""
        given = call.args + [k.value for k in call.keywords]
        if not any(isinstance(self.resolve(a, env), Tree) for a in given):
            return False
        found = self.leaf_call(call, env)
        rebuilt = _results_tree(found[1]) if found is not None else None
        return rebuilt is not None and not isinstance(rebuilt, FlatResult)

    def leaf_call(self, call, env):
        """(the call of the variant over leaves, the transformation's Flat or None for a
        plain helper) when `call` hands a container to a function secant transforms."""
        given = call.args + [k.value for k in call.keywords]
        if not any(isinstance(self.resolve(a, env), Tree) for a in given):
            return None
        obj = resolve(self.fn, call.func, None)
        helper = user_helper(obj)
        transformed = helper is None and hasattr(obj, "__secant_flat__") and \
            hasattr(obj, "__secant_signature_function__")
        if transformed:
            helper = obj.__secant_signature_function__()
        if helper is None:
            return None                   # refused where the container is used whole
        if helper.node.args.vararg or helper.node.args.kwarg or \
                any(isinstance(a, gast.Starred) for a in call.args) or \
                any(k.arg is None for k in call.keywords):
            raise self.error(call, f"a container is passed to {helper.name}, which takes or "
                             "is given *args or **kwargs", "name each parameter in its def")
        call = copy.copy(call)
        bind_arguments(self.fn, call, helper, self.namer, self.env)
        found = [self.resolve(a, env) for a in call.args]
        layouts = tuple(t.layout if isinstance(t, Tree) else LEAF for t in found)
        args = []
        for a, t in zip(call.args, found):
            args.extend([name(n) for n in names_in(t)] if isinstance(t, Tree)
                        else [self.rewrite(a, env)])
        variant = self.variant(obj, helper, layouts, call)
        flat = self.flats.get(variant)
        return gast.copy_location(gast.Call(func=name(variant), args=args, keywords=[]),
                                  call), flat

    def container_result(self, stmt, env, nested):
        """`grads = grad(loss)(params, x)` (or `value, grads = value_and_grad(...)`): a
        transformation given containers whose result is a container. The variant's flat
        result is bound to a name, each leaf of the rebuilt container to a name of its
        own, and the target to the container of those names. None for any other
        statement."""
        call = stmt.value
        found = self.leaf_call(call, env) if isinstance(call, gast.Call) else None
        rebuilt = _results_tree(found[1]) if found is not None else None
        if rebuilt is None:
            return None                   # refused where the result is used
        leaf_call, leaves = found[0], tree_util.tree_leaves(rebuilt)
        result = self.namer.fresh("result")
        out = [gast.copy_location(gast.Assign(targets=[name(result, gast.Store())],
                                              value=leaf_call, type_comment=None), stmt)]
        tree = leaf_names(result, layout_of(rebuilt), self.namer)
        for leaf_name, leaf in zip(names_in(tree), leaves):
            value = name(result)
            for i in leaf.path:
                value = gast.Subscript(value=value, slice=const(i), ctx=gast.Load())
            out.append(gast.copy_location(gast.Assign(
                targets=[name(leaf_name, gast.Store())], value=value, type_comment=None),
                stmt))
        for line in out:
            locate(line, stmt)
        if isinstance(tree, str):
            assign = gast.Assign(targets=stmt.targets, value=name(tree), type_comment=None)
            return out + self.statement(gast.copy_location(assign, stmt), env, nested)
        return out + self.bind(stmt.targets[0], tree, env, nested, stmt)

    def variant(self, obj, helper: Function, layouts, call) -> str:
        """The name, bound in this function's env, of `helper` (the Function of `obj`)
        over leaves for `layouts`; for a transformation, its Flat is kept in `flats`."""
        key = (id(obj), layouts)
        if key not in self.variants:
            if key in self.active:
                raise self.error(call, f"{helper.name} passes a container argument on to "
                                 "itself (recursion over a container is not unrolled)",
                                 "pass the arrays the recursion needs as separate arguments")
            fresh = self.namer.fresh(f"{helper.name}_leaves")
            if hasattr(obj, "__secant_flat__") and user_helper(obj) is None:
                self.flats[fresh] = self.transformed_flat(obj, layouts, call)
                self.env[fresh] = self.flats[fresh].function
            else:
                flat = self.flatten(helper, layouts, self.active | {key})
                node = copy.copy(flat.node)
                node.name = fresh
                self.env[fresh] = flat.replace(node=node)
            self.variants[key] = fresh
        return self.variants[key]

    def transformed_flat(self, obj, layouts, call) -> Flat:
        """What a transformation (`vmap(predict, in_axes=(None, 0))`, `grad(loss)`)
        answers for containers laid out as `layouts`."""
        try:
            return obj.__secant_flat__(layouts)
        except ValueError as exc:          # in_axes that are not a prefix of the structure
            raise self.error(call, str(exc), "give in_axes one entry per argument: None, "
                             "an int, or a prefix of that argument's structure") from None

    def returned_literal(self, stmt, env, nested):
        """Under jit of the function itself, `return new` or `return value, new` with `new`
        a dict, tuple or list of leaves (`new = tree_map(f, params, grads)`, or that call,
        or a transformation's container result, returned directly) returns the literal
        of that container, which `pytree_returns` hands back whole. None when nothing
        returned is such a container."""
        lines, value = [], stmt.value
        if isinstance(value, gast.Call):
            held = self.namer.fresh("returned")
            assign = gast.copy_location(gast.Assign(targets=[name(held, gast.Store())],
                                                    value=value, type_comment=None), stmt)
            lines = self.tree_map(assign, env, nested) or \
                self.container_result(assign, env, nested)
            if lines is None:
                return None
            value = name(held)
        items = value.elts if isinstance(value, gast.Tuple) else [value]
        trees = [self.resolve(item, env) for item in items]
        if not any(isinstance(t, Tree) and literal_kinds(t) for t in trees):
            return None if not lines else lines + self.statement(
                gast.copy_location(gast.Return(value=value), stmt), env, nested)
        literals = [literal(t, item) if isinstance(t, Tree) and literal_kinds(t)
                    else self.rewrite(item, env) for t, item in zip(trees, items)]
        value = gast.Tuple(elts=literals, ctx=gast.Load()) \
            if isinstance(value, gast.Tuple) else literals[0]
        return lines + [gast.copy_location(gast.Return(value=value), stmt)]


def _replace(tree, old, new) -> None:
    """Put `new` where the node `old` is in `tree`, in place."""
    for sub in walk(tree):
        for field, value in gast.iter_fields(sub):
            if value is old:
                setattr(sub, field, new)
            elif isinstance(value, list) and any(v is old for v in value):
                setattr(sub, field, [new if v is old else v for v in value])


def _results_tree(flat):
    """The container a transformation's flat result rebuilds to, each leaf a FlatResult
    standing for one array of it (a FlatResult alone when the result is one array: a
    gradient with respect to an array, the other arguments containers); None when there
    is no rebuild, or it reads the result other than by constant indices."""
    if flat is None or flat.rebuild is None:
        return None
    try:
        rebuilt = flat.rebuild(FlatResult())
    except (TypeError, ValueError, KeyError, IndexError):
        return None
    leaves = tree_util.tree_leaves(rebuilt)
    return rebuilt if all(isinstance(leaf, FlatResult) for leaf in leaves) else None
