"""Adjoint statements: what each simple statement adds to the adjoints of its operands.

Input: a `Classify` stage (prims, active names, adjoint variables). Output (on the stage
object): `adjoints`, id(statement) -> the statements of its adjoint, expanded from the
rules of `transformer.templates` (`d[x]` becomes `bx`), accumulating into the operands'
adjoints (`bx = bx + ...`); a call to a user function becomes a call to the callee's own vjp
Function, bound in the environment (`callees`); the adjoints of a tuple a call returns are
kept item by item (`elements`). Also where each adjoint lives (`home_blocks`) and when it is
zeroed again (`reset`). A statement without a rule raises a located error naming it.
"""
from __future__ import annotations

import abc
import re

import gast
import numpy as np

from codegen import emit

from .. import runtime
from ..aliases import argument_write_hint, writes_read_by_caller, written_params_of_source
from ..errors import TransformError
from ..function import Function, resolve
from ..function_arguments import refuse_parameter_call
from ..helper_returns import none_items
from ..callbacks import refuse_in_vjp_rule
from ..checkpoint_names import saved_stack_name
from ..host_calls import reaches_host
from ..int_names import IntNames
from ..nodes import copy_tree, walk
from ..primitives import registry
from ..syntax import assign, call, const, name, subscript
from ..templates import MissingRule, builtin_hint, describe, expand_adjoint
from .classify import Classify, helper_gradient_error, is_runtime_helper


class Adjoints(Classify, abc.ABC):
    """Builds the adjoint of every simple statement, last statement first."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.elements: dict = {}      # tuple-valued call result -> {k: adjoint of item k}
        self.callees: dict = {}       # (callee, active positions) -> (vjp name, outputs)
        self._homes: dict | None = None
        self._int_names: IntNames | None = None
        self._branch_defined: set | None = None
        # last statement first, as in the reverse sweep: element uses name the adjoints
        # of a call's tuple result before the call's own adjoint passes them on
        self.adjoints = {}
        errors = []
        for stmt in reversed(self.simple):
            try:
                self.adjoints[id(stmt)] = self.adjoint_stmts(stmt)
            except TransformError as exc:       # report the first one in source order
                errors.append(exc)
        if errors:
            raise errors[-1]

    @abc.abstractmethod
    def differentiate_callee(self, callee: Function, positions: tuple) -> Function:
        """The vjp Function of a user function this one calls: the whole pass again, which
        the assembled pass (`reverse._Reverse`) provides, as this stage cannot import it."""

    # ------------------------------------------------------------ adjoint statements
    def adjoint_stmts(self, stmt) -> list:
        prim = self.prims[id(stmt)]
        if prim.target not in self.active:
            return []
        if prim.kind == "copy":
            source = prim.sources[0]
            if source not in self.active:
                return []
            return [self.accumulate(source, name(self.adjoint[prim.target]))]
        if prim.kind == "template" and self.sequence_array(prim):
            return self.sequence_array_adjoint(prim)
        if prim.kind in ("template", "setitem"):
            return self.expand(stmt, prim)
        if prim.kind == "element":
            source = prim.sources[0]
            if source not in self.active:
                return []
            adj = self.element_adjoint(source, prim.key)
            return [assign(adj, gast.BinOp(left=name(adj), op=gast.Add(),
                                           right=name(self.adjoint[prim.target])))]
        if prim.kind == "call":
            return self.call_adjoint(stmt, prim)
        if prim.kind in ("tuple", "none", "item"):
            return []
        refuse_in_vjp_rule(self.fn, stmt, prim.key)
        refuse_parameter_call(self.fn, stmt, prim.key)
        if isinstance(prim.key, gast.Attribute) and isinstance(stmt.value, gast.Call):
            # a method of a local value: its receiver may be a name secant made
            raise self.fn.origin.error(stmt, f"no adjoint rule for the method .{prim.key.attr}"
                                       "() of an array being differentiated",
                                       "call the NumPy function instead (`np.repeat(v, 2)` "
                                       "for `v.repeat(2)`) where secant has a rule for it, "
                                       "wrap the call in a function with custom_vjp, or "
                                       "apply stop_gradient to the array")
        what = describe(prim.key) if not isinstance(prim.key, gast.AST) else \
            emit.expression_source(prim.key)
        if getattr(prim.key, "__secant_rebuild__", None) is not None:
            # a runtime helper of vmap applied example by example: a vmap inside a vmap
            raise self.fn.origin.error(stmt, f"no adjoint rule for {what}, which a vmap "
                                       "inside a vmap makes of this line",
                                       "give the outer vmap method='loop' (vmap(vmap(f, "
                                       "...), ..., method='loop')), or write the inner map "
                                       "with broadcasting (x[:, None] - x[None, :])")
        if is_runtime_helper(prim.key):
            raise helper_gradient_error(self.fn, stmt, prim.key)
        if isinstance(prim.key, (gast.Dict, gast.List)):
            kind = "dict" if isinstance(prim.key, gast.Dict) else "list"
            raise self.fn.origin.error(stmt, f"a {kind} built in a differentiated function "
                                       f"({what}) cannot be differentiated through",
                                       "read it where the function that builds it is "
                                       "called, by constant keys (`r = f(x)`, then "
                                       "`r['loss']`) or by unpacking, instead of handing it on "
                                       f"whole; a {kind} passed in as an argument (a pytree) "
                                       "is differentiated")
        raise self.fn.origin.error(stmt, f"no adjoint rule for {what}",
                                   builtin_hint(prim.key) or
                                   "register one with @transformer.defadjoint, wrap it with "
                                   "custom_vjp, or apply stop_gradient")

    @staticmethod
    def sequence_array(prim) -> bool:
        """Whether `prim` is `np.array([a, b, ...])` of a literal sequence."""
        return any(prim.key is f for f in (np.array, np.asarray)) and bool(prim.args) and \
            isinstance(prim.args[0], gast.Tuple)

    def sequence_array_adjoint(self, prim) -> list:
        """Each active item of the literal gets its slice of the array's adjoint: the
        generic rule would assign to the whole literal, constants included. With a dtype,
        the slice goes back as the asarray rule's does (none through an integer dtype)."""
        out = []
        dtype = prim.keywords.get("dtype", prim.args[1] if len(prim.args) > 1 else None)

        def visit(node, index):
            if isinstance(node, gast.Tuple):
                for k, elt in enumerate(node.elts):
                    visit(elt, index + (k,))
            elif isinstance(node, gast.Name) and node.id in self.active:
                key = const(index[0]) if len(index) == 1 else \
                    gast.Tuple(elts=[const(k) for k in index], ctx=gast.Load())
                value = subscript(name(self.adjoint[prim.target]), key)
                if dtype is not None:
                    cast = self.helper("cast_cotangent", runtime.cast_cotangent)
                    value = call(name(cast), value, name(node.id), copy_tree(dtype))
                out.append(self.accumulate(node.id, value))
        visit(prim.args[0], ())
        return out

    def element_adjoint(self, var: str, k: int) -> str:
        """The adjoint of element `k` of the tuple a user function returned into `var`."""
        elements = self.elements.setdefault(var, {})
        if k not in elements:
            elements[k] = self.namer.fresh(f"{self.adjoint[var]}_{k}")
        return elements[k]

    def zero_adjoints(self, var: str, by_items: bool = False) -> list:
        """`bv = zeros_like(v)`, one per element for a tuple-valued call result (shaped
        like the names its items are read into, with `by_items`)."""
        zeros = self.helper("zeros_like", runtime.zeros_like)
        elements = self.elements.get(var)
        if elements is None:
            return [assign(self.adjoint[var], call(name(zeros), name(var)))]
        items = self.element_items(var) if by_items and self.shaped_by_items(var) else {}
        return [assign(adj, call(name(zeros), name(items[k]) if k in items else
                                 subscript(name(var), const(k))))
                for k, adj in sorted(elements.items())]

    def element_items(self, var: str) -> dict:
        """k -> the name `t = var[k]` binds, each once and beside the call, for a
        tuple-valued call result `var` assigned once."""
        found = {}
        defs = self.defs.get(var, [])
        if len(defs) != 1 or var in self.fn.params:
            return found
        for stmt in self.simple:
            prim = self.prims[id(stmt)]
            if prim.kind == "element" and prim.sources == (var,) and \
                    len(self.defs.get(prim.target, [])) == 1 and \
                    self.block_of[id(stmt)] == self.block_of[id(defs[0])]:
                found.setdefault(prim.key, prim.target)
        return found

    def shaped_by_items(self, var: str) -> bool:
        """Whether only the names its items are read into give `var`'s adjoints their
        shapes (a tuple of gradients from a callee's vjp need not be recorded)."""
        elements = self.elements.get(var)
        if elements is None or var in self.fn.params or len(self.defs.get(var, [])) != 1:
            return False                # a container parameter: its gradient is returned
        return set(elements) <= set(self.element_items(var)) and \
            var not in self.branch_defined() and not self.reset(var, self.defs[var][0])

    def accumulate(self, source: str, value) -> gast.Assign:
        adj = self.adjoint[source]
        return assign(adj, gast.BinOp(left=name(adj), op=gast.Add(), right=value))

    def expand(self, stmt, prim) -> list:
        target = prim.target
        items = self.rule_result(name(target)) if prim.kind == "template" else None
        key = prim.key
        if prim.kind == "setitem" and self.may_repeat(prim.args[1]):
            key = "setitem:gathered"
        elif key == "getitem" and len(prim.args) == 2 and not self.may_repeat(prim.args[1]):
            key = "getitem:static"      # one position per item: `bx[i] += bz`, plain
        try:
            stmts, env = expand_adjoint(
                key, copy_tree(prim.args), copy_tree(prim.keywords),
                items if items is not None else name(target), self.adjoint.get,
                fresh_name=lambda tmp: self.namer.fresh(f"{target}_{tmp}"))
        except MissingRule as exc:
            raise self.fn.origin.error(stmt, str(exc), exc.hint or "register a rule with "
                                       "@transformer.defadjoint") from None
        return self.bind_env(stmts, env)

    def may_repeat(self, index) -> bool:
        """Whether the index of `x[index] = v` or `x[index]` may hold an index array, which
        can name a position twice: an item that is neither a literal, a slice, nor a name
        that holds an int wherever read (`IntNames`: a `range` loop's variable, int
        arithmetic). A write that may repeat keeps only NumPy's winner's derivative
        ("setitem:gathered"); a read that cannot is accumulated by plain indexing
        ("getitem:static"), as a literal index is (`templates.expand_adjoint`)."""
        if self._int_names is None:
            self._int_names = IntNames(self.fn, self.fn.node)
        items = index.elts if isinstance(index, gast.Tuple) else [index]
        for item in items:
            if isinstance(item, gast.Slice) or \
                    (isinstance(item, gast.Constant) and not isinstance(item.value, bool)):
                continue
            if not self._int_names.holds_int(item):
                return True
        return False

    def bind_env(self, stmts, env) -> list:
        renames = {}
        for key, obj in env.items():
            bound = self.helper(key, obj)
            if bound != key:
                renames[key] = bound
        if renames:
            for stmt in stmts:
                for sub in walk(stmt):
                    if isinstance(sub, gast.Name) and sub.id in renames:
                        sub.id = renames[sub.id]
        return stmts

    def call_adjoint(self, stmt, prim) -> list:
        positions = tuple(i for i, a in enumerate(prim.args)
                          if isinstance(a, gast.Name) and a.id in self.active)
        if not positions:
            return []
        vjp_name, outputs = self.callee_vjp(prim.key, positions, stmt)
        grads = self.namer.fresh(prim.target + "_grads")
        elements = self.elements.get(prim.target)
        if outputs == 1 and elements is None:
            cotangents = [name(self.adjoint[prim.target])]
        elif elements is None:
            raise self.fn.origin.error(stmt, "the tuple this call returns must be unpacked "
                                       "to be differentiated", "write `a, b = f(x)`, with f "
                                       "returning a tuple literal (`return a, b`) at every "
                                       "return")
        else:
            cotangents = [name(elements[k]) if k in elements else self.zero_item(prim, k)
                          for k in range(outputs)]
        if self.runs_fwd(stmt):       # the forward sweep kept fwd's residuals
            bwd = self.helper(vjp_name + "_bwd", prim.key.bwd_function(positions))
            stacks = self.residual_stacks(prim.target, prim.key)
            if self.loops_of.get(id(stmt)):        # one per trip, the last trip's first
                kept = [call(gast.Attribute(value=name(stack), attr="pop", ctx=gast.Load()))
                        for stack in stacks]
            else:              # `(value, *kept)` from the forward sweep's fwd call
                kept = [subscript(name(self.fwd_result(prim.target)), const(k + 1))
                        for k in range(len(stacks))]
            # a custom_vjp's bwd takes its residuals; a checkpoint saving named values
            # gives the vjp of its body, which reads the arguments and the saved values
            args = [] if _is_custom_vjp(prim.key) else [copy_tree(a) for a in prim.args]
            out = [assign(grads, call(name(bwd), *args, *kept, *cotangents))]
        else:
            args = [copy_tree(a) for a in prim.args] + cotangents
            out = [assign(grads, call(name(vjp_name), *args))]
        for k, position in enumerate(positions):
            out.append(self.accumulate(prim.args[position].id,
                                       subscript(name(grads), const(k))))
        return out

    def zero_item(self, prim, k: int):
        """The cotangent of item `k` of a call's tuple result that has no adjoint here. An
        integer item (`i, x = step(i, x)`) gets 0.0 without reading the result: reading it
        would put the tuple on a tape in a loop, which holds no tuples; another item that
        is unpacked to a name gets zeros shaped like that name."""
        items = {use.targets[0].id for use in self.loads.get(prim.target, [])
                 if isinstance(use, gast.Assign) and isinstance(use.value, gast.Subscript)
                 and isinstance(use.value.slice, gast.Constant) and use.value.slice.value == k}
        if items and items <= self.integers:
            return const(0.0)
        if k in none_items(prim.key):       # `return carry, None`: None has no zeros
            return const(None)
        zeros = self.helper("zeros_like", runtime.zeros_like)
        # zeros shaped like the item's own name, which zeros_like reads only for its shape:
        # a name assigned once has that shape wherever the reverse reads it
        single = sorted(item for item in items if len(self.defs.get(item, [])) == 1)
        if single:
            return call(name(zeros), name(single[0]))
        return call(name(zeros), subscript(name(prim.target), const(k)))

    def runs_fwd(self, stmt) -> bool:
        """Whether `stmt` calls a custom_vjp function outside any loop: the forward sweep
        then runs its `fwd` once and the reverse sweep hands the residuals to `bwd`, as JAX
        does (its body - a host callback, say - runs once per evaluation, not twice). In a
        loop each trip's residuals go on a stack (`residual_stacks`) the reverse sweep pops,
        when the rule reaches a host callback (elsewhere its vjp runs `fwd` again, which
        any backend compiles: a CUDA kernel holds no list)."""
        if not (isinstance(stmt, gast.Assign) and isinstance(stmt.targets[0], gast.Name)):
            return False
        prim = self.prims.get(id(stmt))
        if prim is None or prim.kind != "call":
            return False
        if stmt.value.keywords or \
                not all(isinstance(a, (gast.Name, gast.Constant)) for a in prim.args):
            if _saves_names(prim.key):
                raise self.fn.origin.error(stmt, f"{prim.key.__name__}, checkpointed with "
                                           "a policy that saves named values, is called "
                                           "with a keyword argument: its vjp takes the "
                                           "arguments and saved values by position",
                                           "pass every argument positionally")
            return False
        if _is_custom_vjp(prim.key):
            return prim.key.fwd is not None and \
                (not self.loops_of.get(id(stmt)) or reaches_host(prim.key))
        return _saves_names(prim.key)

    def residual_stacks(self, target: str, obj) -> list:
        """The lists holding, trip by trip, what the looped fwd call that assigns `target`
        keeps: a custom_vjp's residuals (one list; a list, not a typed tape: residuals may
        be any tuple), or each saved value of a named-value checkpoint (one list each)."""
        found = self.__dict__.setdefault("_residual_stacks", {})
        if target not in found:
            count = obj.saved_count() if hasattr(obj, "saved_count") else 1
            base = f"{target}_residuals" if _is_custom_vjp(obj) else \
                saved_stack_name(target, obj.__name__)
            found[target] = [self.namer.fresh(base) for _ in range(count)]
        return found[target]

    def fwd_result(self, target: str) -> str:
        """The name holding `(value, residuals)` of the fwd call that assigns `target`."""
        found = self.__dict__.setdefault("_fwd_results", {})
        if target not in found:
            found[target] = self.namer.fresh(target + "_fwd")
        return found[target]

    def callee_vjp(self, obj, positions, stmt) -> str:
        from ..frontend import parse_callee
        cache = self.callees
        key = (id(obj), positions)
        if key not in cache:
            custom = getattr(obj, "__secant_vjp__", None)      # custom_vjp, custom_jvp
            if custom is not None:
                generated = custom(positions)
            else:
                callee = parse_callee(obj)
                _refuse_argument_writes(callee, stmt, self.fn)
                # the callee's vjp recomputes its forward values in the reverse sweep;
                # its prints and host effects already ran in the forward sweep
                generated = self.differentiate_callee(_without_effects(callee), positions)
            base = re.sub(r"\W", "", getattr(obj, "__name__", "")) or "callee"
            outputs = len(generated.params) - len(_primal_params(obj))
            cache[key] = (self.helper(base + "_vjp", generated), outputs)
        return cache[key]

    # ------------------------------------------------------------ adjoint initialisation
    def home_blocks(self) -> dict:
        """Active name -> the innermost block holding all its assignments and reads, and
        the loops whose trips pass its value on to the next (`_carried`)."""
        if self._homes is not None:
            return self._homes
        homes = {}
        for var in self.active:
            stmts = [s for s in self.defs.get(var, []) + self.loads.get(var, [])
                     if id(s) in self.chain_of]
            chains = [self.chain_of[id(s)] for s in stmts]
            if var in self.carried:
                chains.append(self.chain_of[id(self.carried[var])])
            if var in self.fn.params or not chains or var in self.diff_outputs:
                homes[var] = id(self.body)
                continue
            common = chains[0]
            for chain in chains[1:]:
                n = 0
                while n < min(len(common), len(chain)) and common[n] == chain[n]:
                    n += 1
                common = common[:n]
            homes[var] = common[-1] if common else id(self.body)
        self._homes = homes
        return homes

    def branch_defined(self) -> set:
        """Active names assigned only inside compound statements nested in the adjoint's
        home block (the function, or a loop body): their value may be unbound where the
        home block's reverse begins (the branch not taken, a loop left by `return` before
        its first assignment), so the adjoint is zeroed where the value is assigned, not
        at the top of the home block, and reset after every assignment consumes it."""
        if self._branch_defined is None:
            self._branch_defined = {
                var for var, home in self.home_blocks().items()
                if var not in self.fn.params and
                var not in self.diff_outputs and self.rule_result(name(var)) is None and
                self.defs.get(var) and all(
                    isinstance(d, gast.Assign) and isinstance(d.targets[0], gast.Name) and
                    id(d) in self.block_of and self.block_of[id(d)] != home
                    for d in self.defs[var])}
        return self._branch_defined

    def reset(self, var: str, stmt) -> list:
        """Zero the adjoint after its value's assignment consumed it, if anything may add
        to it afterwards: another assignment (a parameter's entry value counts as one) or
        this one again in a loop outside the adjoint's home block."""
        if var not in self.active or self.rule_result(name(var)) is not None:
            return []
        defs = self.defs[var]
        home = self.home_blocks()[var]
        home_loops = self._loops_of_block(home)
        if len(defs) > 1 or var in self.fn.params or \
                len(self.loops_of[id(stmt)]) > len(home_loops) or \
                (home != id(self.body) and var in self.branch_defined()):
            return self.zero_adjoints(var)
        return []

    def _loops_of_block(self, block_id):
        if block_id == id(self.body):
            return ()
        for stmt_id, bid in self.block_of.items():
            if bid == block_id:
                return self.loops_of[stmt_id]
        return ()


def fwd_rule(obj):
    """What the forward sweep calls for a call that `runs_fwd`: a custom_vjp's `fwd`, or
    a named-value checkpoint's generated one (`(value, saved)` both)."""
    return obj.fwd if _is_custom_vjp(obj) else obj.fwd_function()


def _is_custom_vjp(obj) -> bool:
    from ..api_reverse import CustomVJP
    return isinstance(obj, CustomVJP)


def _saves_names(obj) -> bool:
    """Whether `obj` is a checkpointed function whose policy saves some of its named
    values (kept by the forward sweep, one set per trip in a loop): its `saved_count`,
    `fwd_function` and `bwd_function` say how."""
    count = getattr(obj, "saved_count", None)
    return callable(count) and count() > 0


def _without_effects(fn: Function) -> Function:
    """`fn` without its statements made only for a host effect (`debug.print`,
    `debug.callback`, an `io_callback` whose result is dropped)."""
    def effect(stmt) -> bool:
        if not (isinstance(stmt, gast.Expr) and isinstance(stmt.value, gast.Call)):
            return False
        found = registry.lookup(resolve(fn, stmt.value.func, None))
        return found is not None and found.kind in ("effect", "callback")

    node = copy_tree(fn.node)
    for sub in walk(node):
        for field in ("body", "orelse"):
            block = getattr(sub, field, None)
            if isinstance(block, list) and any(effect(s) for s in block):
                kept = [s for s in block if not effect(s)]
                setattr(sub, field, kept or [gast.Pass()])
    return fn.replace(node=node)


def _refuse_argument_writes(callee: Function, call_stmt, caller: Function) -> None:
    """A callee's vjp runs its forward code again: writing into an argument would then
    write twice, so it is refused; so is `p *= k` on an argument the caller reads again
    (`aliases.writes_read_by_caller`): the write's derivative would not reach those reads."""
    params = set(callee.params)
    written = [sub.value.id for sub in walk(callee.node)
               if isinstance(sub, gast.Subscript) and isinstance(sub.ctx, gast.Store) and
               isinstance(sub.value, gast.Name) and sub.value.id in params]
    if written:                     # on some path, not after `p = p.copy()`
        on_some_path = written_params_of_source(callee)
        written = [p for p in written if p in on_some_path]
    call = next((n for n in walk(call_stmt) if isinstance(n, gast.Call)), None)
    read_after = not written and call is not None
    if read_after:
        written = writes_read_by_caller(callee, call, call_stmt, caller)
    if written:
        raise caller.origin.error(call_stmt, f"{callee.name} writes into its argument "
                                  f"{written[0]!r}; reverse mode cannot differentiate a call "
                                  "that changes its arguments",
                                  argument_write_hint(callee, written[0], read_after))


def _primal_params(obj) -> list:
    from ..frontend import parse_callee
    return parse_callee(obj).params          # a custom rule's object parses to its primal

