"""Forward mode (jvp): tangents carried beside primals.

`jvp_function(fn, active)` maps a Function `f(p1, ..., pn)` to the Function

    def f_jvp(p1, ..., pn, dp_a, dp_b, ...):   # one tangent per active parameter
        ...
        return (out, dout)

Output invariant: the body is the A-normal form of `f` (see `anf.py`) with, after each
statement that assigns an *active* value (one that depends on an active parameter), the
statements computing its tangent (`dx` is the tangent of `x`), annotated
`# jvp of: <source line>`. Control flow (if/elif, for, while, break, continue, early
return) is the primal's own; every `return r` becomes `return (r, dr)`. In-place writes
`x[i] = v` also write `dx[i] = dv`. A call to a user function (or to another generated
Function) calls that function's own jvp Function, generated recursively and bound in the
environment. The output uses only constructs every transformation accepts as input, so
`jvp(grad(f))`, `grad(jvp(f))` and `jacfwd(jacrev(f))` compose.

Activity is flow-insensitive: a variable that is active anywhere carries a tangent
everywhere; where it receives an inactive value its tangent is set to zeros. Within a
straight run of statements, tangents known to be zero are tracked so that rules drop
their contributions, and tangents nothing reads are removed at the end (`forward_tidy.py`).

Names that may share an array written in place (`z = y; z[0] = v`, `z = y[1:]`, `z += v`
on a shared array; see `aliases.py`) are active together, never known zero, and their
tangents share arrays exactly as the primals do: `dz = dy`, `dz = dy[1:]`, an update
written in place where the primal's is, and a copy wherever the primal is a fresh array.
A view of another kind (`reshape`, `transpose`) written in place, and a call to a
function that writes into its argument, are refused at the user's line.

Derivative code is itself input here (`jvp(grad(f))`): the tape helpers of reverse mode
only move values, so their tangent is the same call on tangents (`STRUCTURAL`); an
in-place accumulation `scatter_add(bx, i, v)` gets `dbx = accumulated(dbx, i, dv)`, an
assignment, so that transformations of this output see the flow into `dbx` (`EFFECTS`).
"""
from __future__ import annotations

import copy
import inspect

import gast
import numpy as np

from . import helper_rules  # (also registers the rules for helpers in derivative code)
from . import basis, runtime, templates
from .anf import anf
from .callbacks import refuse_in_vjp_rule
from .checkpoint_names import refuse_saved_stack
from .errors import effect_hint
from .aliases import (argument_write_hint, write_through, writes_read_by_caller,
                      written_alias_groups, written_params, written_params_of_source)
from .desugar import desugar, numpy_name, view_sources
from .forward_refusals import method_error, shared_view_error
from .forward_tidy import drop_unread
from .function import Function, resolve, signature
from .function_arguments import refuse_parameter_call
from .names import Namer, assigned_names
from .nodes import copy_tree, walk
from .primitives import registry
from .runtime import tapes
from .syntax import assign, call, const, located, name, store, subscript

from codegen.emit import annotate

# attributes of an array that carry no derivative
_SHAPE_ATTRIBUTES = {"shape", "ndim", "dtype", "size", "itemsize", "nbytes"}
# primal expressions whose result may alias their operand; a tangent then aliases too
_VIEW_VALUES = (gast.Name, gast.Subscript)

_cache: dict = {}

# helpers that only move values (the tapes of reverse mode): the tangent is the same call
# with each value slot's argument replaced by its tangent
STRUCTURAL: dict = {}


# statements that write a value into an array in place: function -> (target, value)
# positions; the tangent statement writes the value's tangent into the target's
# (`np.add.at(y, i, v)`, linear in `y` and `v`: `np.add.at(dy, i, dv)`)
EFFECTS: dict = {runtime.scatter_add: (0, 2), basis.set_row: (0, 1), basis.set_column: (0, 1),
                 np.add.at: (0, 2)}


# calls made for a check or for output only: they change no value, carry no derivative
# calls made for an effect that leaves every value alone (printing; the reverse sweep's
# guards, which raise where a recorded value would be wrong): copied, no tangent
CHECKS: set = {print, tapes.check_shape, tapes.check_not_view, tapes.check_not_shared}


def structural(function, *slots: int) -> None:
    """Register `function` as moving the values in argument positions `slots`."""
    STRUCTURAL[function] = slots


def _register_reverse_helpers() -> None:
    from . import tape
    CHECKS.add(tape.check_shape)
    structural(tape.reserve, 0)
    for function in (tape.push, tape.push_items, tape.pop_items, helper_rules.accumulated):
        structural(function, 0, 2)


def jvp_function(fn: Function, active: tuple[str, ...] | None = None) -> Function:
    """The forward-mode Function of `fn`, carrying tangents for the parameters `active`."""
    if not STRUCTURAL:
        _register_reverse_helpers()
    active = tuple(fn.params if active is None else active)
    key = (fn, active)
    if key not in _cache:
        _cache[key] = _build(fn, active)
    return _cache[key]


def _build(fn: Function, active: tuple[str, ...]) -> Function:
    prepared = anf(desugar(fn))
    return _Forward(prepared, active).function()


FORWARD_OF_CUSTOM_VJP = "can't apply forward-mode autodiff (jvp) to a custom_vjp function"
FORWARD_OF_CUSTOM_VJP_HINT = ("its rule is a vjp, which forward mode cannot use (as in JAX): "
                              "give it a custom_jvp rule instead (grad transposes that one "
                              "too), or use grad / jacrev")


def refuses_forward_mode(value) -> bool:
    """A function with only a custom vjp rule: forward mode would ignore the rule."""
    return hasattr(value, "__secant_vjp__") and not hasattr(value, "__secant_jvp__")


def callee_function(value) -> Function | None:
    """The Function a called object stands for, if secant can differentiate through it."""
    from codegen.backends import is_user_function

    from .frontend import parse_callee
    if isinstance(value, Function):
        return value
    if hasattr(value, "__secant_function__"):
        return value.__secant_function__()
    if hasattr(value, "py_func") and inspect.isfunction(value.py_func):
        return parse_callee(value)
    if is_user_function(value):
        return parse_callee(value)
    return None


# ---------------------------------------------------------------- activity


def activity(fn: Function, seeds, groups=()) -> set[str]:
    """The variables whose value may depend on a seed (a fixed point over all writes);
    names in one of `groups` (that may share an array written in place) are all active
    or none, since a write through one changes what the others hold."""
    active = set(seeds)
    writes = list(_writes(fn, fn.node.body))
    changed = True
    while changed:
        changed = False
        for target, value in writes:
            if target not in active and _value_active(fn, value, active):
                active.add(target)
                changed = True
        for group in groups:
            if group & active and not group <= active:
                active |= group
                changed = True
    return active


def _writes(fn, stmts):
    """(target name, value) of every assignment and in-place write below `stmts`."""
    for stmt in stmts:
        accumulated = _scatter_target(fn, stmt)
        if accumulated is not None:
            yield accumulated.id, stmt.value
        if isinstance(stmt, gast.Assign):
            target = stmt.targets[0]
            if isinstance(target, gast.Name):
                yield target.id, stmt.value
            elif isinstance(target, gast.Subscript) and isinstance(target.value, gast.Name):
                yield target.value.id, stmt.value
        for field in ("body", "orelse"):
            yield from _writes(fn, getattr(stmt, field, []) or [])


def _scatter_target(fn, stmt):
    """The array an in-place effect statement (`scatter_add(target, index, values)`,
    `set_row(jac, row, k)`) accumulates into."""
    effect = _effect(fn, stmt)
    if effect is not None and isinstance(stmt.value.args[effect[0]], gast.Name):
        return stmt.value.args[effect[0]]
    return None


def _effect(fn, stmt):
    """(target position, value position) of an effect statement, or None."""
    if isinstance(stmt, gast.Expr) and isinstance(stmt.value, gast.Call):
        return EFFECTS.get(resolve(fn, stmt.value.func, None))
    return None


def _operands(value) -> list:
    if isinstance(value, gast.BinOp):
        return [value.left, value.right]
    if isinstance(value, gast.UnaryOp):
        return [value.operand]
    if isinstance(value, gast.Call):
        # a method of a local value (`v.take(i)`, `w.fill(0.0)`) reads its receiver
        receiver = [value.func.value] if isinstance(value.func, gast.Attribute) else []
        return receiver + list(value.args) + [k.value for k in value.keywords]
    if isinstance(value, gast.Subscript):
        return [value.value]
    if isinstance(value, (gast.Tuple, gast.List)):
        return list(value.elts)
    if isinstance(value, gast.Dict):
        return list(value.values)
    if isinstance(value, gast.Attribute) and value.attr not in _SHAPE_ATTRIBUTES:
        return [value.value]
    return [value] if isinstance(value, gast.Name) else []


def _value_active(fn: Function, value, active) -> bool:
    if isinstance(value, gast.Compare):
        return False
    key = primitive_key(fn, value)
    if key is not None and templates.is_nondifferentiable(key):
        return False
    return any(isinstance(a, gast.Name) and a.id in active for a in _operands(value))


def primitive_key(fn: Function, value):
    """The rule registry key of a simple expression (an operator class, a function)."""
    if isinstance(value, (gast.BinOp, gast.UnaryOp)):
        return type(value.op)
    if isinstance(value, gast.Call):
        return resolve(fn, value.func, None)
    if isinstance(value, gast.Subscript):
        return "getitem"
    return None


# ---------------------------------------------------------------- the transformation


class _Forward:
    def __init__(self, fn: Function, seeds: tuple[str, ...]):
        for seed in seeds:
            if seed not in fn.params:
                raise fn.origin.error(fn.node, f"{fn.name} has no parameter {seed!r}")
        self.fn, self.seeds = fn, seeds
        self.namer = Namer.for_function(fn)
        groups = written_alias_groups(fn, tuple(EFFECTS))
        self.active = activity(fn, seeds, groups)
        self.tangents: dict[str, str] = {}
        self.env: dict[str, object] = {}
        # names that may share an array written in place: their tangents share arrays
        # the same way (see `shared_tangent`), so none is ever known zero on its own
        self.shared = set().union(*groups) & self.active
        self.owned = _inplace_targets(fn.node.body) | self.shared | {  # np.add.at's too
            s.value.args[0].id for s in walk(fn.node) if _effect(fn, s) and
            resolve(fn, s.value.func, None) == np.add.at and _scatter_target(fn, s)}
        self.annotated: int | None = None
        # variables whose tangent is known to be zero here: rules drop their contributions
        self.zero: set[str] = set()

    def d(self, primal: str) -> str:
        if primal not in self.tangents:
            self.tangents[primal] = self.namer.fresh("d" + primal)
        return self.tangents[primal]

    def tangent_of(self, primal: str) -> str | None:
        """The tangent variable of `primal`; None where it is inactive or known zero."""
        if primal not in self.active or (primal in self.zero and primal not in self.shared):
            return None
        return self.d(primal)

    def function(self) -> Function:
        node = self.fn.copy_node()
        params = self.fn.params
        seeds = [store(self.d(p)) for p in self.seeds]
        for arg in seeds:
            arg.ctx = gast.Param()
        primal_args = [gast.Name(id=p, ctx=gast.Param(), annotation=None, type_comment=None)
                       for p in params]
        node.args = gast.arguments(args=primal_args + seeds, posonlyargs=[], vararg=None,
                                   kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[])
        prologue = [located(self.zeros(p), self.fn.node) for p in params
                    if p in self.active and p not in self.seeds]
        # a parameter written in place has its tangent written there too: on a copy, so the
        # caller's tangent (a basis vector used again) is left as it was given
        written = set(written_params(self.fn, tuple(EFFECTS)))
        prologue += [located(assign(store(self.d(p)), call(
            self.helper("own_copy", runtime.own_copy), name(self.d(p)))), self.fn.node)
            for p in self.seeds if p in written]
        node.body = prologue + self.block(self.fn.node.body)
        drop_unread(node, set(self.tangents.values()) - {self.d(p) for p in self.seeds},
                    effects=frozenset({"update_tangent"}))
        node.name = self.namer.fresh(self.fn.name + "_jvp")
        label = f"jvp(active={', '.join(self.seeds)})"
        return self.fn.with_transform(node, label, self.env)

    # -------------------------------------------------------- statements
    def block(self, stmts) -> list:
        out = []
        for stmt in stmts:
            out.extend(self.statement(stmt))
        return out or [gast.Pass()]

    def statement(self, stmt) -> list:
        if isinstance(stmt, gast.Assign):
            target = stmt.targets[0]
            if isinstance(target, gast.Name):
                return self.assignment(stmt, target.id, stmt.value)
            return self.inplace(stmt, target)
        if isinstance(stmt, gast.If):
            before = set(self.zero)
            body = self.block(stmt.body)
            after_body, self.zero = self.zero, before
            orelse = self.block(stmt.orelse) if stmt.orelse else []
            self.zero &= after_body
            return [gast.If(test=stmt.test, body=body, orelse=orelse)]
        if isinstance(stmt, (gast.For, gast.While)):
            return [self.loop(stmt)]
        if isinstance(stmt, gast.Return):
            return [self.returns(stmt)]
        if isinstance(stmt, gast.Expr):
            if _scatter_target(self.fn, stmt) is not None:
                return self.scatter(stmt)
            self.check_effect(stmt)
        return [stmt]

    def loop(self, stmt):
        """A loop body sees only what holds on every iteration: names it assigns (or,
        through aliases, writes in place) are not known zero there."""
        if _inplace_targets(stmt.body) or any(_scatter_target(self.fn, s) is not None
                                              for s in walk(stmt)):
            self.zero.clear()
        self.zero -= assigned_names(stmt)
        start = set(self.zero)
        body = self.block(stmt.body)
        if isinstance(stmt, gast.For) and stmt.target.id in self.shared:
            raise self.fn.origin.error(
                write_through(self.fn, {stmt.target.id}) or stmt,
                f"the loop variable {stmt.target.id!r} is a row of the sequence the loop "
                "walks and is written in place: forward mode cannot follow the write",
                "loop over indices: for i in range(len(...)) and write through the array")
        if isinstance(stmt, gast.For) and stmt.target.id in self.active:
            body.insert(0, located(self.zeros(stmt.target.id), stmt))
        self.zero = start
        loop = copy.copy(stmt)
        loop.body = body
        return loop

    def scatter(self, stmt) -> list:
        """An in-place effect `scatter_add(t, i, v)` accumulates `dv` into `dt` alike;
        `scatter_add` itself becomes `dt = accumulated(dt, i, dv)`, an assignment, so
        that transformations of this code see the tangent flow into `dt`."""
        function = resolve(self.fn, stmt.value.func, None)
        target_at, value_at = _effect(self.fn, stmt)
        args = stmt.value.args
        target, values = args[target_at], args[value_at]
        if target.id not in self.active:
            return [stmt]
        if not (isinstance(values, gast.Name) and values.id in self.active):
            return [stmt]
        self.zero.clear()
        tangent_args = [copy_tree(a) for a in args]
        tangent_args[target_at] = name(self.d(target.id))
        tangent_args[value_at] = name(self.d(values.id))
        if function is runtime.scatter_add:
            self.env["accumulated"] = helper_rules.accumulated
            tangent = assign(store(self.d(target.id)), call("accumulated", *tangent_args))
        else:
            tangent = gast.Expr(value=gast.Call(func=copy_tree(stmt.value.func),
                                                args=tangent_args, keywords=[]))
        return [stmt] + self.tangent_block(stmt, [tangent])

    def tangent_block(self, stmt, tangent_stmts) -> list:
        tangent_stmts = [located(s, stmt) for s in tangent_stmts]
        lineno = getattr(stmt, "lineno", None)
        line = self.fn.origin.source_line(lineno)
        # one comment per source line: ANF splits a line into several statements
        if tangent_stmts and line and lineno != self.annotated:
            annotate(tangent_stmts[0], "jvp of: " + line.strip())
            self.annotated = lineno
        return tangent_stmts

    def zeros(self, primal: str) -> gast.stmt:
        if primal not in self.shared:
            self.zero.add(primal)
        self.env["zeros_like"] = runtime.zeros_like
        return assign(store(self.d(primal)), call("zeros_like", name(primal)))

    def assignment(self, stmt, target: str, value) -> list:
        if target not in self.active:
            return [stmt]
        if not _value_active(self.fn, value, self.active) or self.known_zero(value):
            return [stmt] + self.tangent_block(stmt, [self.zeros(target)])
        if target in self.shared:
            self.check_shared_view(stmt, target, value)
        if target in _read_names(value):
            # the tangent reads the operands' old values: compute the primal aside first
            # (owned and shared as `target` is: its in-place writes will change this array)
            fresh = self.namer.fresh(target + "_new")
            self.active.add(fresh)
            self.owned |= {fresh} if target in self.owned else set()
            self.shared |= {fresh} if target in self.shared else set()
            block = self.assignment(located(assign(store(fresh), value), stmt), fresh, value)
            self.zero.discard(target)
            self.zero |= {target} if fresh in self.zero else set()
            return block + [located(assign(store(target), name(fresh)), stmt),
                            located(assign(store(self.d(target)), name(self.d(fresh))), stmt)]
        self.zero.discard(target)
        if isinstance(value, gast.Name) and value.id in self.zero:
            self.zero.add(target)
        callee = self.differentiable_callee(value)
        if callee is not None:
            return self.user_call(stmt, target, value, callee)
        tangent = self.tangent_stmts(stmt, target, value)
        if target in self.owned and not isinstance(value, _VIEW_VALUES) and \
                not (target in self.shared and _holds_operands(self.fn, value)):
            # an in-place write to this tangent must not reach the operand's tangent
            if target in self.shared:
                tangent.append(assign(store(self.d(target)), call(
                    self.helper("own_copy", runtime.own_copy), name(self.d(target)))))
                return [stmt] + self.tangent_block(stmt, tangent)
            numpy = next((k for k, v in self.fn.env.items() if v is np), None) or \
                numpy_name(self.fn, self.env, self.namer)
            tangent.append(assign(store(self.d(target)),
                                  call(f"{numpy}.copy", name(self.d(target)))))
        return [stmt] + self.tangent_block(stmt, tangent)

    def check_shared_view(self, stmt, target: str, value) -> None:
        """`z = y` and `z = y[i]` give `dz = dy` and `dz = dy[i]`, which share the tangent
        array as the primals share theirs; a tangent of another view (`reshape`,
        `transpose`) need not be a view of the operand's tangent."""
        sources = view_sources(self.fn, value)
        if not sources or isinstance(value, _VIEW_VALUES + (gast.Tuple, gast.List, gast.Dict)) or \
                _is_update(self.fn, value):
            return
        raise shared_view_error(self.fn, write_through(self.fn, {target}) or stmt, target,
                                sorted(sources)[0])

    def known_zero(self, value) -> bool:
        """A primitive (operator or rule) whose active operands all have zero tangents."""
        if not isinstance(value, (gast.BinOp, gast.UnaryOp, gast.Call)):
            return False
        key = primitive_key(self.fn, value)
        if isinstance(value, gast.Call) and (key in STRUCTURAL or not templates.has_tangent(key)):
            return False
        return not any(isinstance(a, gast.Name) and self.tangent_of(a.id) is not None
                       for a in _operands(value))

    def tangent_stmts(self, stmt, target: str, value) -> list:
        dt = self.d(target)
        if isinstance(value, gast.Name):
            return [assign(store(dt), name(self.d(value.id)))]
        if isinstance(value, (gast.Tuple, gast.List, gast.Dict)):
            return [assign(store(dt), self.container_tangent(value))]
        if _is_update(self.fn, value):
            # `z += v` on an array another name holds: the tangent is updated in place too
            update = self.helper("update_tangent", runtime.update_tangent)
            return [assign(store(dt), call(update, copy_tree(value.args[0]),
                                           name(self.d(value.args[0].id)),
                                           self.tangent_atom(value.args[1])))]
        if isinstance(value, gast.Call) and resolve(self.fn, value.func, None) in STRUCTURAL:
            return [assign(store(dt), self.structural_tangent(value))]
        if isinstance(value, gast.Call) and isinstance(value.func, gast.Attribute) and \
                resolve(self.fn, value.func, None) is None:
            raise method_error(self.fn, stmt, value.func.attr)
        if isinstance(value, gast.Attribute):
            raise self.fn.origin.error(stmt, f"no tangent for attribute .{value.attr} of an "
                                       "array being differentiated",
                                       "use a NumPy function instead")
        return self.expand(stmt, primitive_key(self.fn, value), value, target)

    def expand(self, stmt, key, value, target: str) -> list:
        args, keywords = _call_parts(value)
        try:
            stmts, env = templates.expand_tangent(
                key, args, keywords, name(target), self.tangent_of, self.d(target),
                fresh_name=lambda tmp: self.namer.fresh(f"{target}_{tmp}"))
        except templates.MissingRule as exc:
            refuse_in_vjp_rule(self.fn, stmt, key)
            if isinstance(value, gast.Call):
                refuse_parameter_call(self.fn, stmt, value.func)
            raise self.fn.origin.error(stmt, f"cannot differentiate this (forward mode): {exc}",
                                       exc.hint or "register a rule with transformer."
                                       "templates.tangent, or wrap it in a function with "
                                       "custom_jvp") from None
        self.env.update(env)
        if len(stmts) == 1 and _is_zeros(stmts[0], env):      # no argument contributed
            self.zero.add(target)
        return stmts

    def structural_tangent(self, value) -> gast.Call:
        slots = STRUCTURAL[resolve(self.fn, value.func, None)]
        args = [self.tangent_atom(a) if i in slots else copy_tree(a)
                for i, a in enumerate(value.args)]
        return gast.Call(func=copy_tree(value.func), args=args,
                         keywords=copy_tree(value.keywords))

    def tangent_atom(self, atom):
        """The tangent of an atom: its tangent variable, or zeros for an inactive one."""
        if isinstance(atom, gast.Name) and atom.id in self.active:
            return name(self.d(atom.id))
        return self.zeros_expr(atom)

    def container_tangent(self, value):
        parts = [self.tangent_atom(e) for e in
                 (value.values if isinstance(value, gast.Dict) else value.elts)]
        if isinstance(value, gast.Dict):
            return gast.Dict(keys=copy_tree(value.keys), values=parts)
        return type(value)(elts=parts, ctx=gast.Load())

    def helper(self, label: str, obj) -> str:
        self.env[label] = obj
        return label

    def zeros_expr(self, atom):
        self.env["zeros_like"] = runtime.zeros_like
        return call("zeros_like", copy_tree(atom))

    def differentiable_callee(self, value):
        """For a call to a user function (or custom_jvp): the object called, else None."""
        if not isinstance(value, gast.Call):
            return None
        callee = resolve(self.fn, value.func, None)
        if callee is None:
            return None
        if hasattr(callee, "__secant_jvp__"):
            return callee
        if templates.has_tangent(callee) or templates.is_nondifferentiable(callee):
            return None
        return callee if callee_function(callee) is not None else None

    def user_call(self, stmt, target: str, value, callee) -> list:
        """`t = g(a, b)` -> `t_pair = g_jvp(a, b, da, db)`, then t and dt from the pair."""
        function = callee_function(callee)
        written = written_params(function)                 # an element write, `p[i] = v`
        if written:                                         # on some path
            on_some_path = written_params_of_source(function)
            written = [p for p in written if p in on_some_path]
        read_after = not written
        if read_after:                                                   # `p *= k`
            written = writes_read_by_caller(function, value, stmt, self.fn)
        hint = argument_write_hint(function, written[0], read_after) if written else ""
        if written and not hasattr(callee, "__secant_jvp__"):
            if function.name.startswith("vjp_"):
                # reverse mode's vjp of a helper that fills an array (forward over reverse)
                hint = "take this second derivative forward over forward, jacfwd(jacfwd(f)), " \
                    f"or write {function.name[4:]} without element-by-element writes"
            raise self.fn.origin.error(
                stmt, f"{function.name} writes into its argument {written[0]!r}; forward "
                "mode cannot differentiate a call that changes its arguments", hint)
        bound = _bind(self.fn, stmt, function, value)
        active = tuple(p for p, arg in bound.items()
                       if isinstance(arg, gast.Name) and arg.id in self.active)
        if active and refuses_forward_mode(callee):
            raise self.fn.origin.error(stmt, FORWARD_OF_CUSTOM_VJP, FORWARD_OF_CUSTOM_VJP_HINT)
        custom = getattr(callee, "__secant_jvp__", None)
        jvp_fn = custom(active) if custom is not None else _callee_jvp(callee, function, active)
        helper = self.namer.fresh(function.name + "_jvp")
        self.env[helper] = jvp_fn
        pair = self.namer.fresh(target + "_pair")
        args = list(bound.values()) + [name(self.d(bound[p].id)) for p in active]
        stmts = [assign(store(pair), call(name(helper), *args)),
                 assign(store(target), subscript(name(pair), const(0))),
                 assign(store(self.d(target)), subscript(name(pair), const(1)))]
        return self.tangent_block(stmt, stmts)

    def inplace(self, stmt, target) -> list:
        base = target.value.id
        if base not in self.active:
            return [stmt]
        index = target.slice
        try:
            stmts, env = templates.expand_tangent(
                "setitem", [name(base), copy_tree(index), stmt.value], {}, name(base),
                self.tangent_of, self.d(base))
        except templates.MissingRule as exc:
            raise self.fn.origin.error(stmt, str(exc)) from None
        self.env.update(env)
        self.zero.clear()                  # the written tangent may be another's alias
        return [stmt] + self.tangent_block(stmt, stmts)

    def returns(self, stmt) -> gast.Return:
        value = stmt.value
        if isinstance(value, gast.Constant) and value.value is None:
            tangent = const(None)
        else:
            tangent = self.tangent_atom(value)
        return located(gast.Return(value=gast.Tuple(elts=[value, tangent], ctx=gast.Load())),
                       stmt)

    def check_effect(self, stmt) -> None:
        refuse_saved_stack(self.fn, stmt)
        value = stmt.value
        if not isinstance(value, gast.Call):
            return
        if any(isinstance(a, gast.Name) and a.id in self.active for a in _operands(value)):
            callee = resolve(self.fn, value.func, None)
            kind = getattr(registry.lookup(callee), "kind", "")
            if callee in CHECKS or kind == "effect":        # debug.print: no tangent
                return
            if kind == "callback":                           # JAX's words (io_callback)
                raise self.fn.origin.error(stmt, registry.reason(callee, "jvp"))
            hint = effect_hint(value, "return the new value from the function and assign it")
            raise self.fn.origin.error(stmt, "a call whose result is unused cannot be "
                                       "differentiated (it may modify its arguments)", hint)


# ---------------------------------------------------------------- helpers


def _callee_jvp(callee, function: Function, active: tuple[str, ...]):
    """The jvp of a called function; of a vmap-ed one, the vmap of its jvp (tangents
    mapped over the same axes as their primals), so batching stays vectorized."""
    from .api_batching import Batched
    if not isinstance(callee, Batched):
        return jvp_function(function, active)
    from .api_batching import vmap
    from .transformed import Transformed
    base = callee_function(callee.fun)
    axes = callee.in_axes
    per_param = list(axes) if isinstance(axes, (tuple, list)) else [axes] * len(base.params)
    per_param += [0] * (len(base.params) - len(per_param))
    tangent_axes = [per_param[base.params.index(p)] for p in active]
    inner = Transformed(callee.fun, lambda: jvp_function(base, active), "jvp")
    return vmap(inner, in_axes=tuple(per_param + tangent_axes),
                out_axes=(callee.out_axes, callee.out_axes), axis_size=callee.axis_size,
                axis_name=callee.axis_name, method=callee.method)


def _is_zeros(stmt, env) -> bool:
    value = stmt.value if isinstance(stmt, gast.Assign) else None
    return isinstance(value, gast.Call) and isinstance(value.func, gast.Name) and \
        env.get(value.func.id) is runtime.zeros_like


def _read_names(value) -> set[str]:
    return {n.id for n in walk(value) if isinstance(n, gast.Name)}


def _inplace_targets(stmts) -> set[str]:
    return {node.targets[0].value.id for stmt in stmts for node in walk(stmt)
            if isinstance(node, gast.Assign) and isinstance(node.targets[0], gast.Subscript)
            and isinstance(node.targets[0].value, gast.Name)}


def _holds_operands(fn, value) -> bool:
    """A container of its operands, or an in-place update: its tangent holds the operands'
    tangent arrays themselves, and copying it would break their sharing."""
    return isinstance(value, (gast.Tuple, gast.List)) or _is_update(fn, value)


def _is_update(fn, value) -> bool:
    return isinstance(value, gast.Call) and len(value.args) == 2 and \
        isinstance(value.args[0], gast.Name) and \
        resolve(fn, value.func, None) is runtime.update_in_place


def _call_parts(value):
    """Positional argument nodes and keyword argument nodes of a simple expression."""
    if isinstance(value, gast.BinOp):
        return [value.left, value.right], {}
    if isinstance(value, gast.UnaryOp):
        return [value.operand], {}
    if isinstance(value, gast.Subscript):
        return [value.value, _index_value(value.slice)], {}
    if isinstance(value, gast.Call):
        return list(value.args), {k.arg: k.value for k in value.keywords}
    return [value], {}


def _index_value(index):
    return copy_tree(index)


def _bind(fn: Function, stmt, callee: Function, value: gast.Call) -> dict:
    """The call's arguments bound to the callee's parameters, in parameter order."""
    try:
        bound = signature(callee).bind(*value.args, **{k.arg: k.value for k in value.keywords})
    except TypeError as exc:
        raise fn.origin.error(stmt, f"cannot call {callee.name} this way: {exc}") from None
    bound.apply_defaults()
    out = {}
    for param, arg in bound.arguments.items():
        if not isinstance(arg, gast.AST):
            if not isinstance(arg, (int, float, bool, str, type(None))):
                raise fn.origin.error(stmt, f"the default of {callee.name}'s parameter "
                                      f"{param!r} is not a literal",
                                      "pass the argument explicitly")
            arg = const(arg)
        out[param] = arg
    return out


__all__ = ["activity", "callee_function", "jvp_function", "primitive_key"]
