"""Classification: how each simple statement passes derivatives, and which names are active.

Input: the `BodyFacts` of a prepared function. Output (on the stage object): `prims`, one
`Prim` per simple statement (template rule, copy, user call, tuple, element of a call's
tuple result, setitem, opaque, none); the differentiated outputs (`out_atom`,
`out_elements`, `aux`, `diff_outputs`); `active`, the names on a path from a
differentiated parameter to an output (`activity.py`); and `adjoint`, each active name's
adjoint variable (`bx` for `x`). A call made for its effect on a varied value, a returned
value that is not a name or constant, or a mode/output mismatch raise a located error.
"""
from __future__ import annotations

import dataclasses

import gast
import numba

from codegen.backends import is_user_function

from .. import activity, tape
from ..checkpoint_names import refuse_saved_stack
from ..errors import effect_hint
from ..function import resolve
from ..nodes import walk
from ..primitives import registry
from ..specialize import is_literal
from ..spelling import spelled, user_names
from ..syntax import const, name, subscript
from ..templates import ADJOINTS, _lookup, has_adjoint, is_nondifferentiable
from . import int_calls
from .facts import BodyFacts, _names
from .prepare import bind_helper

GRAD, VALUE_AND_GRAD, VJP = "grad", "value_and_grad", "vjp"
# attributes that describe an array's structure, not its values: never differentiable
_STRUCTURE_ATTRIBUTES = {"shape", "ndim", "dtype", "size", "itemsize", "nbytes", "strides"}


def is_runtime_helper(key) -> bool:
    """A function of secant's runtime (`einsum_grad`), called by the gradient secant made
    of a line: differentiating it again is grad of grad."""
    return getattr(key, "__module__", "").startswith("transformer.runtime") and \
        getattr(key, "__secant_rebuild__", None) is None   # vmap's, refused in its words


def helper_gradient_error(fn, stmt, key):
    """Reverse mode over a gradient line calling a runtime helper with no adjoint rule."""
    what = f"{key.__module__}.{key.__name__}"
    return fn.origin.error(stmt, f"no adjoint rule for {what}, which the gradient of this "
                           "line calls: reverse mode cannot differentiate this line's "
                           "gradient again", "take the second derivative with forward mode "
                           "over reverse mode (`hessian(f)`, `jacfwd(grad(f))`)")

@dataclasses.dataclass
class Prim:
    """How one simple statement passes derivatives."""

    kind: str                 # template, copy, call, tuple, none, opaque, setitem
    target: str
    sources: tuple = ()
    key: object = None
    args: list = dataclasses.field(default_factory=list)
    keywords: dict = dataclasses.field(default_factory=dict)


def _kind(callee) -> str:
    """The registry's kind of `callee` ("effect" for `debug.print`), or ''."""
    found = registry.lookup(callee)
    return found.kind if found is not None else ""


def _rule_reads_result_items(obj) -> bool:
    """Whether the adjoint rule of `obj` takes its result as a tuple (`d[z][1]`, `z[0]`):
    an array result read with constant indices (`a = np.array(...); a[0]`) is not one."""
    return _result_items_read(obj) > 0


def _result_items_read(obj) -> int:
    """How many items of its tuple result the adjoint rule of `obj` reads (the highest
    constant index of `z[k]` / `d[z][k]` plus one; 0 when it reads none)."""
    template = _lookup(ADJOINTS, obj)
    if template is None or not template.has_result:
        return 0
    result = template.params[0]

    def is_result(node):
        return isinstance(node, gast.Name) and node.id == result or \
            isinstance(node, gast.Subscript) and isinstance(node.value, gast.Name) and \
            node.value.id == "d" and is_result(node.slice)
    return max([node.slice.value + 1 for stmt in template.body for node in walk(stmt)
                if isinstance(node, gast.Subscript) and is_result(node.value) and
                isinstance(node.slice, gast.Constant) and isinstance(node.slice.value, int)],
               default=0)


class Classify(BodyFacts):
    """Gives every simple statement its `Prim` and finds the active names."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.prims = {id(s): self.classify(s) for s in self.simple}
        self.outputs()
        flows = [(p.target, p.sources) for p in self.prims.values() if p.sources]
        # integers carry no derivative, also when a helper call hands them back
        self.integers = int_calls.integer_names(self.facts, self.env)
        self.active = activity.active(flows, self.wrt, [o for o in self.diff_outputs
                                                        if isinstance(o, str)]) - self.integers
        self.refuse_effects(activity.varied(flows, self.wrt))
        self.refuse_tuples_passed_on(flows)
        self.adjoint = {v: self.namer.fresh("b" + v) for v in sorted(self.active)}

    def helper(self, key: str, obj) -> str:
        return bind_helper(self.env, self.namer, key, obj)

    def refuse_effects(self, varied: set) -> None:
        """A call made for its effect passes no derivative through the analysis: refuse
        it rather than return zeros (`prepare.py` turns in-place accumulations,
        `scatter_add(bx, i, v)` and `np.add.at`, into assignments first)."""
        for stmt in walk(gast.Module(body=self.body, type_ignores=[])):
            if not (isinstance(stmt, gast.Expr) and isinstance(stmt.value, gast.Call)):
                continue
            refuse_saved_stack(self.fn, stmt)
            callee = resolve(self.fn, stmt.value.func, None)
            if callee in (print, tape.check_shape, tape.check_not_view,
                          tape.check_not_shared) or _kind(callee) == "effect":
                continue
            if _kind(callee) == "callback":           # JAX's words (io_callback)
                values = stmt.value.args + [k.value for k in stmt.value.keywords]
                if set(_names(values)) & varied:
                    raise self.fn.origin.error(stmt, registry.reason(callee, "grad"))
            receiver = [stmt.value.func] if callee is None else []    # `w.fill(0.0)`
            if set(_names(receiver + stmt.value.args)) & varied:
                raise self.fn.origin.error(
                    stmt, "reverse mode cannot differentiate a call made for its effect on "
                    "a differentiated value", effect_hint(stmt.value, "assign its result, "
                                                          "or use forward mode over it "
                                                          "(jacfwd)"))

    def refuse_tuples_passed_on(self, flows) -> None:
        """A tuple built here (`t = (a, b)`) carries no derivative through the analysis: its
        items' adjoints are found where a rule reads it item by item, or where it is
        returned. Handed whole to a user function (`helper(t)`, `body(i, (a, b))`) or to
        anything else that is not a rule, its varied items would get a zero gradient:
        refuse it, located. A helper that a gradient secant made calls (grad of grad through
        `np.einsum` hands the operands' tuple to `einsum_grad`) is refused for its cause."""
        tuples = {p.target: p for p in self.prims.values() if p.kind == "tuple"}
        if not tuples:
            return
        carried = flows + [(t, _names(p.args)) for t, p in tuples.items()]
        varied = activity.varied(carried, self.wrt)
        tuplish = {t for t in tuples if t in varied}
        changed = True
        while changed:          # copies of such a tuple are such tuples too
            changed = False
            for p in self.prims.values():
                if p.kind == "copy" and p.target not in tuplish and \
                        set(p.sources) & tuplish:
                    tuplish.add(p.target)
                    changed = True
        for stmt in self.simple:
            prim = self.prims[id(stmt)]
            passed = set(prim.sources) & tuplish
            if passed and prim.kind == "opaque" and is_runtime_helper(prim.key):
                raise helper_gradient_error(self.fn, stmt, prim.key)
            if passed and prim.kind == "template" and prim.key == "getitem":
                raise self.fn.origin.error(
                    stmt, "a list or tuple of differentiated values is read at a run-time "
                    "index here; reverse mode follows its items only where they are read "
                    "with constant indices or returned",
                    "a `for` loop over a list or tuple the function builds is written out "
                    "when its body has no `break`, `continue` or `return`; else read the "
                    "items with constant indices (`ws[0]`), or stack them into one array "
                    "(`np.stack(ws)`) and index that")
            if passed and prim.kind not in ("copy", "tuple"):
                raise self.fn.origin.error(
                    stmt, "a tuple of differentiated values is passed on whole "
                    "here; reverse mode follows a tuple's items only where they are read "
                    "with constant indices or returned",
                    "pass the items as separate arguments (`helper(a, b)` for "
                    "`helper((a, b))`) and return them as a tuple")

    # ------------------------------------------------------------ classification
    def classify(self, stmt) -> Prim:
        target, value = stmt.targets[0], stmt.value
        if isinstance(target, gast.Subscript):
            return Prim("setitem", target.value.id, _names([value]), "setitem",
                        [target.value, target.slice, value])
        t = target.id
        if isinstance(value, gast.Constant) or not _names([value]):
            return Prim("none", t)
        if isinstance(value, gast.Name):
            return Prim("copy", t, (value.id,))
        if isinstance(value, (gast.BinOp, gast.UnaryOp)):
            key = type(value.op)
            if isinstance(value.op, gast.UAdd):
                return Prim("copy", t, _names([value.operand]))
            operands = [value.left, value.right] if isinstance(value, gast.BinOp) \
                else [value.operand]
            return self.rule(t, key, operands, {})
        if isinstance(value, (gast.Tuple, gast.List)):
            return Prim("tuple", t, (), args=value.elts)
        if isinstance(value, gast.Subscript):
            if self.call_result(value.value) and isinstance(value.slice, gast.Constant):
                return Prim("element", t, (value.value.id,), value.slice.value)
            if self.rule_result(value.value) is not None:
                # the rule of the call reads this item's adjoint itself (see `expand`)
                return Prim("item", t, (value.value.id,), value.slice.value)
            element = self.tuple_element(value)
            if isinstance(element, gast.Tuple):
                # an item that is itself a tuple (`p = pairs[0]` of `pairs = [(a, b), ...]`):
                # a tuple of the same items, read item by item through `literal_tuple`
                return Prim("tuple", t, (), args=element.elts)
            if isinstance(element, gast.Name):
                self._refuse_stale_item(stmt, value, element.id)
                return Prim("copy", t, (element.id,))
            if element is not None:
                return Prim("none", t)
            return Prim("template", t, _names([value.value]), "getitem",
                        [value.value, value.slice])
        if isinstance(value, gast.Call):
            return self.classify_call(t, value)
        if isinstance(value, gast.Compare) or (isinstance(value, gast.Attribute) and
                                               value.attr in _STRUCTURE_ATTRIBUTES):
            return Prim("none", t)
        return Prim("opaque", t, _names([value]), value)   # x.real, dict literals

    def _refuse_stale_item(self, read, value, name: str) -> None:
        """Refuse `item = lst[k]` read as the name `name` the list was built from when
        `name` may be assigned again between the list's building and this read (`lst =
        [x, h]`, then `h = np.tanh(h)` in a loop): the item holds the old value, and its
        adjoint would go to the new one (a wrong gradient)."""
        built = self.defs.get(getattr(value.value, "id", None), [])
        if len(built) != 1 or id(built[0]) not in self.order:
            return
        start, at = self.order[id(built[0])], self.order.get(id(read))
        if at is None:
            return
        read_loops = set(map(id, self.loops_of.get(id(read), ())))
        built_loops = set(map(id, self.loops_of.get(id(built[0]), ())))
        for other in self.defs.get(name, []):
            when = self.order.get(id(other))
            if when is None:
                continue
            other_loops = set(map(id, self.loops_of.get(id(other), ())))
            if start < when < at or (read_loops & other_loops) - built_loops:
                shown = spelled(self.fn, name, user_names(self.fn))
                raise self.fn.origin.error(
                    read, f"this item is {shown} as the container was built from it, and "
                    f"{shown} is assigned again before it is read here: reverse mode would "
                    f"give the item's gradient to the new value of {shown}",
                    f"give the value a name of its own where the container is built "
                    f"(`{name}0 = {name}`, then build it from `{name}0`)")

    def call_result(self, atom) -> bool:
        """Whether `atom` holds a tuple returned by a differentiated user function, or is a
        container parameter (`params["W"]`): only read item by item, with constant keys,
        so each item gets its own adjoint."""
        if not isinstance(atom, gast.Name) or not self.itemwise(atom.id):
            return False
        if atom.id in self.fn.params:
            # integer keys may index an array parameter, whose gradient is an array: only
            # string keys (a dict of parameters) are taken item by item
            return not self.defs.get(atom.id) and \
                all(isinstance(k, str) for k in self.container_keys(atom.id))
        defs = self.defs.get(atom.id, [])
        if not (len(defs) == 1 and isinstance(defs[0], gast.Assign) and
                isinstance(defs[0].value, gast.Call)):
            return False
        prim = self.classify_call(atom.id, defs[0].value)
        # a helper returning an array (`y = h(x); y[0]`) is indexed like any array
        return prim.kind == "call" and int_calls.returns_tuple(prim.key) is not False

    def tuple_results(self) -> set:
        """Names holding a tuple a user function returned, read item by item here."""
        return {p.sources[0] for p in self.prims.values() if p.kind == "element"} - \
            set(self.fn.params)

    def rule_result(self, atom):
        """For `a, b = np.linalg.slogdet(x)` (a rule's tuple result read item by item):
        the result as the tuple the rule's template expects, `(a, b)`; else None."""
        if not isinstance(atom, gast.Name) or not self.itemwise(atom.id):
            return None
        defs = self.defs.get(atom.id, [])
        if len(defs) != 1 or not isinstance(defs[0], gast.Assign) or \
                not isinstance(defs[0].value, gast.Call):
            return None
        obj = resolve(self.fn, defs[0].value.func, None)
        if obj is None or not has_adjoint(obj) or not _rule_reads_result_items(obj):
            return None
        items: dict = {}
        for use in self.loads[atom.id]:
            k, target = use.value.slice.value, use.targets[0].id
            if not isinstance(k, int) or len(self.defs.get(target, [])) != 1:
                return None
            items.setdefault(k, target)
        return gast.Tuple(elts=[name(items[k]) if k in items else
                                subscript(name(atom.id), const(k))
                                for k in range(max(max(items) + 1, _result_items_read(obj)))],
                         ctx=gast.Load())

    def itemwise(self, var: str) -> bool:
        uses = self.loads.get(var, [])
        return bool(uses) and all(
            isinstance(use, gast.Assign) and isinstance(use.value, gast.Subscript) and
            isinstance(use.value.value, gast.Name) and use.value.value.id == var and
            isinstance(use.value.slice, gast.Constant) for use in uses)

    def container_keys(self, var: str) -> list:
        return list(dict.fromkeys(use.value.slice.value for use in self.loads[var]))

    def rule(self, t, key, args, keywords) -> Prim:
        if is_nondifferentiable(key):
            return Prim("none", t)
        args = [self.literal_tuple(a) for a in args]
        keywords = {k: self.literal_tuple(v) for k, v in keywords.items()}
        sources = _names(args + list(keywords.values()))
        kind = "template" if has_adjoint(key) else "opaque"
        return Prim(kind, t, sources, key, args, keywords)

    def literal_tuple(self, atom, seen=frozenset()):
        """A name bound once to a tuple literal, as that literal (templates want it so);
        also a name bound once to an item of one that is itself a tuple (`p = pairs[0]`)."""
        if isinstance(atom, gast.Name) and atom.id not in seen:
            defs = self.defs.get(atom.id, [])
            if len(defs) == 1 and isinstance(defs[0], gast.Assign) and \
                    isinstance(defs[0].value, gast.Subscript):
                element = self.tuple_element(defs[0].value, seen | {atom.id})
                if isinstance(element, gast.Tuple):
                    return element
            if len(defs) == 1 and isinstance(defs[0], gast.Assign) and \
                    isinstance(defs[0].value, (gast.Tuple, gast.List)):
                return gast.Tuple(elts=[self.literal_tuple(e, seen | {atom.id})
                                        for e in defs[0].value.elts], ctx=gast.Load())
            if len(defs) == 1 and isinstance(defs[0], gast.Assign) and \
                    isinstance(defs[0].value, gast.Name) and defs[0].value.id != atom.id:
                # `retval = pair` (an early-return lowering) aliases the tuple literal
                literal = self.literal_tuple(defs[0].value, seen | {atom.id})
                if isinstance(literal, gast.Tuple):
                    return literal
        return atom

    def tuple_element(self, value, seen=frozenset()):
        literal = self.literal_tuple(value.value, seen)
        index = value.slice
        if isinstance(literal, gast.Tuple) and isinstance(index, gast.Constant) and \
                isinstance(index.value, int) and -len(literal.elts) <= index.value < \
                len(literal.elts):
            return literal.elts[index.value]
        return None

    def classify_call(self, t, value) -> Prim:
        obj = resolve(self.fn, value.func, None)
        keywords = {k.arg: k.value for k in value.keywords}
        if obj is None:
            # a method of a local value (`v.take(i)`) reads its receiver: a varied one
            # makes the result varied, refused for want of a rule rather than taken as a
            # constant (it gave zeros)
            return Prim("opaque", t, _names([value.func, *value.args, *keywords.values()]),
                        value.func)
        if has_adjoint(obj) or is_nondifferentiable(obj):
            return self.rule(t, obj, list(value.args), keywords)
        if hasattr(obj, "__secant_vjp__") or hasattr(obj, "__secant_function__") or \
                isinstance(obj, numba.core.dispatcher.Dispatcher) or is_user_function(obj):
            args = self.bind_call(obj, value)
            return Prim("call", t, _names(args), obj, args)
        return Prim("opaque", t, _names(value.args + list(keywords.values())), obj)

    def bind_call(self, obj, value) -> list:
        """The call's arguments, one per parameter of the callee, defaults filled in: the
        callee's vjp takes every primal parameter before the cotangents."""
        from ..frontend import parse_callee
        from ..function import signature
        parameters = signature(parse_callee(obj)).parameters
        if not value.keywords and len(value.args) == len(parameters):
            return list(value.args)
        bound = signature(parse_callee(obj)).bind(*value.args,
                                          **{k.arg: k.value for k in value.keywords})
        bound.apply_defaults()
        return [v if isinstance(v, gast.AST) else self.default_atom(name_, v)
                for name_, v in bound.arguments.items()]

    def default_atom(self, parameter: str, value):
        """A default value as an atom: a literal, or a name bound to it in the env."""
        if is_literal(value):
            return const(value)
        return name(self.helper(f"default_{parameter}", value))

    # ------------------------------------------------------------ outputs
    def outputs(self) -> None:
        ret = self.ret.value
        literal = self.literal_tuple(ret)
        elements = literal.elts if isinstance(literal, gast.Tuple) else None
        self.aux = None
        if self.has_aux:
            if elements is None or len(elements) != 2:
                raise self.fn.origin.error(self.ret, "with has_aux=True the function must "
                                           "return a pair (output, aux)",
                                           "return out, aux")
            self.out_atom, self.aux = elements
            elements = None
        else:
            self.out_atom = ret
        if elements is not None and self.mode != VJP:
            raise self.fn.origin.error(self.ret, f"{self.mode} needs a scalar output, but "
                                       f"{self.fn.name} returns a tuple",
                                       "use vjp for several outputs, or has_aux=True")
        self.out_elements = elements
        atoms = elements if elements is not None else [self.out_atom]
        self.diff_outputs = [a.id if isinstance(a, gast.Name) else None for a in atoms]
        for atom in atoms:
            if isinstance(atom, gast.Name) and atom.id in self.defs:
                continue
            if isinstance(atom, (gast.Tuple, gast.List, gast.Dict)):
                raise self.fn.origin.error(self.ret, "a container nested in the returned "
                                           "tuple cannot be differentiated through",
                                           "read it where the function is called, by "
                                           "unpacking (`l, (a, b) = f(x)`) or constant "
                                           "indices, instead of handing it on whole")
            if not isinstance(atom, gast.Constant):
                raise self.fn.origin.error(self.ret, "this returned value cannot be "
                                           "differentiated", "return a variable")
