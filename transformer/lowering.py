"""Lowering for Numba: NumPy forms that Numba's nopython mode lacks are rewritten into
forms it compiles, as the last step before the cpu backend emits a module.

Invariant of the output:
- every Call whose function has an entry in the lowering table calls the runtime
  equivalent instead (e.g. `np.mean(x, axis=0)`), bound in the environment under a fresh
  name; `a @ b` is a call to `runtime.matmul` (Numba's `@` stops at rank 2);
- `np.einsum` with constant subscripts, and the `einsum_grad` / `einsum_tangent` /
  `einsum_grad_tangent` calls its derivatives make, call loop functions generated from the
  subscripts (`transformer.einsum`);
- `np.squeeze(a)` without an axis names the axes `a` was given by `np.expand_dims`
  (the result's rank must be static), checked at run time to be its only length-1 axes;
- `x[m]` where `m` may be a boolean mask (a comparison, a logical combination of masks,
  a parameter, or a name only ever bound to one of those) reads through
  `runtime.getitem_mask`, which handles masks of any rank, and `x[m] = v` (also
  `x[m] += v`) is a call to `runtime.setitem_mask`;
- an elementwise chain with a `np.where` or a call of one of the functions below, in one
  expression, is a call of a `runtime.fused` kernel: one loop (`transformer.fusion`);
- `np.exp(x)`, `np.expm1`, `np.log`, `np.log1p`, `np.tanh`, their `math` forms and
  `scipy.special.expit`, called with one argument, call the vectorizable kernels of
  `runtime.vector_math` (accuracy stated there) instead of the C library;
- `enumerate(seq, start=k)` passes `k` positionally;
- `t op= v` where `v` may view memory `t` writes (`a[1:] += a[:-1]`, `a += a.T`) computes
  `t op v` into a fresh array first, then writes it (Numba's in-place loop would read
  elements it had already updated);
- `a ** b` (also `a **= b`, `pow(a, b)`) whose exponent may be a negative int calls
  `runtime.power`: an int to a negative int power is Python's float (NumPy's error for
  integer arrays), not Numba's 0;
- `str(x)` and `repr(x)` call `runtime.as_text` / `as_repr`, which compile them for ints, bools and
  strings only (Numba gives a float the text '<object type:float64>');
- `x += matmul_grad_left(g, a, b)` (or `_right`) on a name is `x = matmul_grad_left_add(x,
  g, a, b)`, which adds an outer product in place rather than allocating it (the reverse
  sweep accumulates a matrix parameter's adjoint this way on every loop trip);
- a list only read at constant indices, unpacked or measured is a tuple
  (`transformer.const_lists`).
Anything else is left as it was.
"""
from __future__ import annotations

import math
import sys

import gast
import numpy as np

from codegen import emit

from . import einsum, generated_lines, random_sites, runtime
from .const_lists import lists_as_tuples
from .desugar import view_sources
from .errors import TransformError
from .nodes import copy_tree, walk
from .runtime import batch_products, examples
from .function import Function, hashable, resolve
from .fusion import fuse_elementwise
from .names import Namer
from .primitives import registry
from .runtime import special as runtime_special
from .runtime import vector_math
from .syntax import as_load, int_constant, is_mask

# calls whose result is a boolean array when their arguments are (primitive registry)
_MASK_CALLS = registry.Members(lambda r: r.role == "mask")
_IN_PLACE_ADDERS = {runtime.matmul_grad_left: runtime.matmul_grad_left_add,
                    runtime.matmul_grad_right: runtime.matmul_grad_right_add}
_VECTOR_FORMS = {
    np.exp: vector_math.vector_exp, math.exp: vector_math.vector_exp,
    np.expm1: vector_math.vector_expm1, math.expm1: vector_math.vector_expm1,
    np.log: vector_math.vector_log, math.log: vector_math.vector_log,
    np.log1p: vector_math.vector_log1p, math.log1p: vector_math.vector_log1p,
    np.tanh: vector_math.vector_tanh, math.tanh: vector_math.vector_tanh,
    runtime_special.expit: vector_math.vector_expit}
# one-argument calls Numba compiles with wrappers around the work (np.sum(x): axis checks),
# and whose sums of a float32 array are added in float64 (Numba's add in float32)
_PLAIN_FORMS = {np.sum: runtime.sum_all, np.mean: runtime.mean_all, np.var: runtime.var_all,
                np.std: runtime.std_all}
_EINSUM_FORMS = {np.einsum: "forward", runtime.einsum: "forward",
                 runtime.einsum_grad: "adjoint", runtime.einsum_tangent: "tangent",
                 runtime.einsum_grad_tangent: "adjoint tangent"}


def lower_for_numba(fn: Function) -> Function:
    fn = fuse_elementwise(lists_as_tuples(fn), _vector_form)
    lowering = _Lowering(fn)
    node = lowering.visit(copy_tree(fn.node))
    return fn.replace(node=node, env=lowering.env) if lowering.changed else fn


def _name(id_: str) -> gast.Name:
    return gast.Name(id=id_, ctx=gast.Load(), annotation=None, type_comment=None)


class _Lowering(gast.NodeTransformer):
    def __init__(self, fn: Function):
        self.fn, self.env = fn, dict(fn.env)
        self.namer = Namer.for_function(fn)
        self.bound: dict[int, str] = {}
        self.changed = False
        self.definitions = _single_definitions(fn.node)
        self.masks = _mask_names(fn)
        self.bindings = _bindings(fn.node)

    def bind(self, obj, base: str) -> gast.Name:
        if id(obj) not in self.bound:
            self.bound[id(obj)] = self.namer.fresh(base)
            self.env[self.bound[id(obj)]] = obj
        self.changed = True
        return _name(self.bound[id(obj)])

    def call(self, obj, base: str, args, origin) -> gast.Call:
        new = gast.Call(func=self.bind(obj, base), args=list(args), keywords=[])
        return gast.copy_location(new, origin)

    def summed_product(self, node):
        """`sum_batch(left_of_right(g, a, b))` (or `right_of_left`) -> one product
        (`runtime.batch_products`); None for any other call."""
        inner = node.args[0] if len(node.args) == 1 and not node.keywords else None
        if not isinstance(inner, gast.Call) or inner.keywords or len(inner.args) != 3 or \
                resolve(self.fn, node.func, None) is not examples.sum_batch:
            return None
        each = resolve(self.fn, inner.func, None)
        for make, summed in ((batch_products.left_of_right, batch_products.sum_left_of_right),
                             (batch_products.right_of_left, batch_products.sum_right_of_left)):
            if each is make():
                return self.call(summed, summed.__name__, inner.args, node)
        return None

    def visit_BinOp(self, node):
        self.generic_visit(node)
        if isinstance(node.op, gast.MatMult):
            return self.call(runtime.matmul, "matmul", [node.left, node.right], node)
        if isinstance(node.op, gast.Pow) and _may_be_negative_int_power(node.left, node.right):
            return self.power(node.left, node.right, node)
        return node

    def power(self, base, exponent, origin) -> gast.Call:
        """`runtime.power(base, exponent, 'file:line:col')`: an int to a negative int
        power as Python gives it (Numba's is 0), or refused at the user's line."""
        return self.call(runtime.power, "power", [base, exponent, self.site(origin)], origin)

    def site(self, node) -> gast.Constant:
        """The user's `file:line:col` of `node` as a constant argument, which an error of
        the runtime form is reported at (`generated_lines` reads it); '' if unplaced."""
        where = self.fn.origin.where(node) if getattr(node, "lineno", None) else ""
        return gast.Constant(value=where, kind=None)

    def visit_Subscript(self, node):
        self.generic_visit(node)
        if isinstance(node.ctx, gast.Load) and _is_mask(self.fn, node.slice, self.masks):
            return self.call(runtime.getitem_mask, "getitem_mask", [node.value, node.slice],
                             node)
        return node

    def visit_Assign(self, node):
        self.generic_visit(node)
        target = node.targets[0]
        if len(node.targets) == 1 and isinstance(target, gast.Subscript) \
                and _is_mask(self.fn, target.slice, self.masks):
            write = self.call(runtime.setitem_mask, "setitem_mask",
                              [as_load(target.value), target.slice, node.value], node)
            return gast.copy_location(gast.Expr(value=write), node)
        return node

    def visit_AugAssign(self, node):
        target = node.target
        if self.may_overlap(target, node.value):
            return self.overlapping_update(node)
        if isinstance(node.op, gast.Pow) and isinstance(target, gast.Name) and \
                _may_be_negative_int_power(target, node.value):
            self.generic_visit(node)
            value = self.power(as_load(target), node.value, node)
            return gast.copy_location(gast.Assign(targets=[target], value=value,
                                                  type_comment=None), node)
        if isinstance(target, gast.Subscript) and _is_mask(self.fn, target.slice, self.masks):
            value = gast.BinOp(left=as_load(target), op=node.op, right=node.value)
            assign = gast.Assign(targets=[target], value=value, type_comment=None)
            return self.visit_Assign(gast.copy_location(assign, node))
        self.generic_visit(node)
        return self.in_place_add(node)

    def may_overlap(self, target, value) -> bool:
        """Whether `target op= value` may read, through `value`, memory it writes at other
        positions (`a[1:] += a[:-1]`, `a += a.T`, `b = a.T; a += b`): names followed
        through the views they are assigned. The same expression on both sides reads each
        element where it writes it."""
        read = self.views_of(value)       # empty for a fresh value: most updates stop here
        if not read or not isinstance(target, (gast.Name, gast.Subscript)) or \
                emit.expression_source(target) == emit.expression_source(value):
            return False
        written = {target.id} if isinstance(target, gast.Name) else \
            self.views_of(target.value)
        return bool(self.shared(written) & self.shared(read))

    def views_of(self, value) -> set:
        """`desugar.view_sources`, also of the method forms a helper compiled as written
        keeps (`a.T`, `a.reshape(...)`, `a.transpose()`)."""
        if isinstance(value, gast.Attribute) and value.attr in ("T", "mT"):
            return self.views_of(value.value)
        if isinstance(value, gast.Call) and isinstance(value.func, gast.Attribute) and \
                value.func.attr in _VIEW_METHOD_NAMES and \
                resolve(self.fn, value.func, None) is None:
            return self.views_of(value.func.value)
        return view_sources(self.fn, value)

    def shared(self, names) -> set:
        """`names` and every name whose array they may view, through their assignments."""
        found, frontier = set(names), list(names)
        while frontier:
            for value in self.bindings.get(frontier.pop(), []):
                for source in self.views_of(value) if value is not None else ():
                    if source not in found:
                        found.add(source)
                        frontier.append(source)
        return found

    def overlapping_update(self, node):
        """`t op= v` whose `v` may overlap `t`: the new value computed into a fresh array
        first, as NumPy buffers overlapping operands (Numba's in-place loop reads elements
        it already wrote). A name is updated in place (`update_in_place`: every name
        holding the array sees it), an item or slice assigned."""
        self.generic_visit(node)
        self.changed = True
        target = node.target
        fresh = gast.copy_location(gast.BinOp(left=as_load(copy_tree(target)), op=node.op,
                                              right=node.value), node)
        if isinstance(target, gast.Name):
            fresh = self.call(runtime.update_in_place, "update_in_place",
                              [as_load(copy_tree(target)), fresh], node)
        return gast.copy_location(gast.Assign(targets=[target], value=fresh,
                                              type_comment=None), node)

    def in_place_add(self, node):
        """`x += matmul_grad_left(g, a, b)` -> `x = matmul_grad_left_add(x, g, a, b)`."""
        call = node.value
        if not (isinstance(node.op, gast.Add) and isinstance(node.target, gast.Name) and
                isinstance(call, gast.Call) and not call.keywords and len(call.args) == 3 and
                not any(isinstance(a, gast.Starred) for a in call.args)):
            return node
        helper = resolve(self.fn, call.func, None)
        adder = _IN_PLACE_ADDERS.get(helper) if hashable(helper) else None
        if adder is None:
            return node
        value = self.call(adder, adder.__name__, [_name(node.target.id)] + call.args, call)
        new = gast.copy_location(gast.Assign(targets=[node.target], value=value,
                                             type_comment=None), node)
        if emit.comment_of(node):
            emit.annotate(new, emit.comment_of(node))
        return new

    def visit_Call(self, node):
        self.generic_visit(node)
        summed = self.summed_product(node)
        if summed is not None:
            return summed
        target = resolve(self.fn, node.func, None)
        if target is None:
            return node
        if target is enumerate:
            return self.enumerate_start(node)
        if hashable(target) and target in _EINSUM_FORMS:
            return self.einsum(node, _EINSUM_FORMS[target])
        each = self.einsum_of_each(node, target)
        if each is not None:
            return self.einsum(node, *each)
        if (target is np.squeeze or target is runtime.squeeze) and _axis(node) is None:
            return self.squeeze(node)
        if target is np.array and len(node.args) == 1 and not node.keywords and \
                isinstance(node.args[0], gast.Name):
            # Numba's np.array takes an array only as a sequence of numbers (rank 1)
            return self.call(runtime.array_copy, "array_copy", node.args, node)
        vector = _vector_form(target, node)
        if vector is not None:
            return self.call(vector, vector.__name__, node.args, node)
        if target is pow and len(node.args) == 2 and not node.keywords and \
                not any(isinstance(a, gast.Starred) for a in node.args) and \
                _may_be_negative_int_power(*node.args):
            return self.power(node.args[0], node.args[1], node)
        if (target is str or target is repr) and len(node.args) == 1 and not node.keywords \
                and not isinstance(node.args[0], gast.Starred):
            # Numba's own gives '<object type:float64>' for a float: refused at typing
            text = runtime.as_text if target is str else runtime.as_repr
            return self.call(text, text.__name__, [node.args[0], self.site(node)], node)
        return self.table(node, target)

    def table(self, node, target):
        from .rules.lowering import PYTHON_ONLY, needs_lowering, numba_equivalent
        keywords = {k.arg: k.value for k in node.keywords}
        self.refuse_keywords(node, target, keywords)
        # only the call forms Numba lacks (plain np.sum(x) is the one loop, `_PLAIN_FORMS`)
        if hashable(target) and target in _PLAIN_FORMS and len(node.args) == 1 and not keywords \
                and not isinstance(node.args[0], gast.Starred):
            plain = _PLAIN_FORMS[target]
            node.func = self.bind(plain, plain.__name__)
            return node
        if not needs_lowering(target, keywords, len(node.args)) or target in PYTHON_ONLY:
            return node     # no compiled equivalent: let Numba name the NumPy call
        replacement = numba_equivalent(target)
        node.func = self.bind(replacement, replacement.__name__)
        if registry.lookup(target).kind == "random":     # a key's length: checked at run time
            random_sites.check_key(self.fn, node, target, self.bind)
        return node

    def refuse_keywords(self, node, target, keywords):
        """A keyword the registry says no compiled form takes: a located error."""
        from .primitives import registry
        found = registry.lookup(target) if hashable(target) else None
        for keyword in keywords:
            if found is not None and keyword in found.refused_keywords:
                raise self.fn.origin.error(node, f"{found.name}(..., {keyword}=...) cannot "
                                           "be compiled", hint=found.refused_keywords[keyword])

    def enumerate_start(self, node):
        start = [k for k in node.keywords if k.arg == "start"]
        if start and len(node.args) == 1:     # Numba takes the start only positionally
            node.args.append(start[0].value)
            node.keywords = [k for k in node.keywords if k.arg != "start"]
            self.changed = True
        return node

    # ------------------------------------------------------------ squeeze
    def squeeze(self, node):
        source = node.args[0] if node.args else None
        definition = self.definitions.get(source.id) if isinstance(source, gast.Name) \
            else source
        axis = None
        if isinstance(definition, gast.Call) and \
                resolve(self.fn, definition.func, None) is np.expand_dims:
            axis = _axis(definition)
        if not _constant_axis(axis):
            raise self.fn.origin.error(node, "np.squeeze without an axis cannot be compiled "
                                       "here: the rank of its result must be known before "
                                       "the array's shape is", hint="pass axis=... naming "
                                       "the length-1 axes to remove")
        return self.call(runtime.squeeze_known, "squeeze_known",
                         [source, copy_tree(axis)], node)

    # ------------------------------------------------------------ einsum
    def einsum_of_each(self, node, target):
        """(kind, example axes) of a vmapped einsum derivative, `over_examples(einsum_grad,
        flags)` (nested once per vmap) with only the cotangent (tangent) batched; None for
        a call of anything else. Other flags: a located error (the helper is plain Python)."""
        depth = 0
        while hashable(target) and target not in _EINSUM_FORMS:
            rebuild = getattr(target, "__secant_rebuild__", None)
            if not (isinstance(rebuild, tuple) and rebuild[0] is examples.over_examples):
                return None
            target, flags, in_place = rebuild[1]
            depth += 1
            if in_place or tuple(flags[:3]) != (False, False, True) or any(flags[3:]):
                depth = -1
        if depth == 0 or not hashable(target) or _EINSUM_FORMS.get(target, "forward") \
                == "forward":
            return None
        if depth < 0:
            raise self.einsum_error(node, "this np.einsum's derivative, batched (vmap, or "
                                       "the rows of jacrev), cannot be compiled when its "
                                       "operands differ between examples",
                                       hint=_EINSUM_EACH_HINT)
        return _EINSUM_FORMS[target], depth

    def einsum_error(self, node, message: str, hint: str):
        """A refusal of an einsum derivative `node`: at its location, or, where transformed
        code gave it none, at the user's one einsum call with the same subscripts (else the
        function's `def`)."""
        origin, subscripts = self.fn.origin, node.args[0] if node.args else None
        if getattr(node, "lineno", None) is None and isinstance(subscripts, gast.Constant):
            site = generated_lines.einsum_site(origin.filename, origin.lineno, origin.name,
                                               subscripts.value)
            lineno, col = site if site is not None else (origin.lineno, 0)
            return TransformError(message, filename=origin.filename, lineno=lineno, col=col,
                                  line=origin.source_line(lineno), hint=hint)
        return origin.error(node, message, hint)

    def einsum(self, node, kind: str, depth: int = 0):
        subscripts = node.args[0] if node.args else None
        if not (isinstance(subscripts, gast.Constant) and isinstance(subscripts.value, str)):
            raise self.fn.origin.error(node, "np.einsum needs its subscripts as a string "
                                       "literal to be compiled", hint="write the subscripts "
                                       "in the call, e.g. np.einsum('ij,jk->ik', A, B)")
        if [k.arg for k in node.keywords if k.arg != "optimize"]:
            raise self.fn.origin.error(node, "np.einsum under jit takes only the subscripts "
                                       "and the operands", hint="drop out=/dtype=")
        operands = node.args[1:] if kind == "forward" else _elements(node.args[3], None)
        try:
            spec = einsum.parse(subscripts.value, None if operands is None else len(operands))
        except ValueError as exc:
            raise self.fn.origin.error(node, f"np.einsum cannot be compiled: {exc}",
                                       hint="write the contraction as loops") from None
        if kind != "forward":
            k = node.args[1].value
            operands = _elements(node.args[3], len(spec.inputs))
        try:
            lead = einsum.fresh_letters(spec, depth) if depth else ""
        except ValueError as exc:
            raise self.einsum_error(node, f"np.einsum's batched derivative cannot be "
                                       f"compiled: {exc}", hint=_EINSUM_EACH_HINT) from None
        if kind == "adjoint tangent":
            return self.adjoint_tangent(node, spec, k, operands, lead)
        if kind == "adjoint":
            loops = einsum.adjoint_function(spec, k, lead)
            operands = [node.args[2]] + operands
        elif lead:      # a batched tangent: operand k and the output have example axes
            loops = einsum.forward_function(einsum.with_examples(spec, k, lead))
        else:
            loops = einsum.forward_function(spec)
        if kind == "tangent":
            operands[k] = node.args[2]
        return self.call(loops, loops.name, operands, node)

    def adjoint_tangent(self, node, spec, k, operands, lead: str = ""):
        """`einsum_grad_tangent(s, k, g, operands, tangents)`: the sum over j != k of the
        adjoint loops of operand k with operand j replaced by its tangent (`lead`: the
        example axes of a batched `g`)."""
        tangents = _elements(node.args[4], len(operands))
        g, loops, total = node.args[2], einsum.adjoint_function(spec, k, lead), None
        for j in range(len(operands)):
            if j != k:
                varied = [copy_tree(a) for a in operands]
                varied[j] = copy_tree(tangents[j])
                part = self.call(loops, loops.name, [copy_tree(g)] + varied, node)
                total = part if total is None else gast.BinOp(left=total, op=gast.Add(),
                                                              right=part)
        if total is None:   # one operand: the adjoint reads only its shape
            shape = gast.Attribute(value=copy_tree(operands[k]), attr="shape", ctx=gast.Load())
            if lead:        # g's example axes first
                examples_of_g = gast.Subscript(
                    value=gast.Attribute(value=copy_tree(g), attr="shape", ctx=gast.Load()),
                    slice=gast.Slice(lower=None, upper=gast.Constant(value=len(lead),
                                                                     kind=None), step=None),
                    ctx=gast.Load())
                shape = gast.BinOp(left=examples_of_g, op=gast.Add(), right=shape)
            return self.call(runtime.einsum_zeros, "einsum_zeros",
                             [shape, gast.Tuple(elts=[copy_tree(g)], ctx=gast.Load())], node)
        return gast.copy_location(total, node)


_EINSUM_EACH_HINT = ("jit(..., backend='python') runs it without Numba; or write the "
                     "contraction as loops")


# ---------------------------------------------------------------- analysis helpers


def _vector_form(target, call: gast.Call):
    """The `runtime.vector_math` form of a one-argument call of an elementwise function it
    has (math.log with a base, out=, dtype= keep the original)."""
    if call.keywords or len(call.args) != 1 or isinstance(call.args[0], gast.Starred) \
            or not hashable(target):
        return None
    special = sys.modules.get("scipy.special")
    if special is not None and target is getattr(special, "expit", None):
        return vector_math.vector_expit
    return _VECTOR_FORMS.get(target)


# array methods whose result may be a view of the array
_VIEW_METHOD_NAMES = ("reshape", "transpose", "ravel", "swapaxes", "squeeze", "view",
                      "diagonal")


def _may_be_negative_int_power(base, exponent) -> bool:
    """Whether `base ** exponent` may be an int to a negative int power: not for a float
    base or exponent written as a literal, nor a non-negative int literal exponent (the
    common `x ** 2`, left to Numba as it is)."""
    if isinstance(base, gast.Constant) and type(base.value) is float:
        return False
    if isinstance(exponent, gast.Constant) and type(exponent.value) is float:
        return False
    if isinstance(exponent, gast.UnaryOp) and isinstance(exponent.op, gast.USub) and \
            isinstance(exponent.operand, gast.Constant) and \
            type(exponent.operand.value) is float:
        return False
    power = int_constant(exponent)
    return power is None or power < 0


def _axis(call: gast.Call):
    """The axis argument of a `squeeze`/`expand_dims` call (second positional or axis=)."""
    for k in call.keywords:
        if k.arg == "axis":
            return None if _is_none(k.value) else k.value
    if len(call.args) > 1:
        return None if _is_none(call.args[1]) else call.args[1]
    return None


def _is_none(node) -> bool:
    return isinstance(node, gast.Constant) and node.value is None


def _constant_axis(node) -> bool:
    if isinstance(node, gast.Tuple):
        return bool(node.elts) and all(_constant_axis(e) for e in node.elts)
    if isinstance(node, gast.UnaryOp) and isinstance(node.op, gast.USub):
        return _constant_axis(node.operand)
    return isinstance(node, gast.Constant) and type(node.value) is int


def _elements(node, count):
    """The element expressions of a tuple operand, or subscripts of it when it is a name."""
    if isinstance(node, (gast.Tuple, gast.List)):
        return list(node.elts)
    if count is None:
        return None
    return [gast.Subscript(value=copy_tree(node), slice=gast.Constant(value=j, kind=None),
                           ctx=gast.Load()) for j in range(count)]


def _assignments(node):
    """(name, value) for every binding of a name; value None where it is not a whole
    expression (a tuple element, a loop target, an augmented assignment)."""
    for sub in walk(node):
        if isinstance(sub, gast.Assign):
            for target in sub.targets:
                whole = isinstance(target, gast.Name)
                for bound in _bound(target):
                    yield bound, sub.value if whole else None
        elif isinstance(sub, (gast.For, gast.AugAssign, gast.AnnAssign)):
            for bound in _bound(sub.target):
                yield bound, None


def _bound(target) -> list[str]:
    """The names a target binds (`x[i] = v` binds none)."""
    if isinstance(target, gast.Name):
        return [target.id]
    if isinstance(target, (gast.Tuple, gast.List)):
        return [n for elt in target.elts for n in _bound(elt)]
    if isinstance(target, gast.Starred):
        return _bound(target.value)
    return []


def _bindings(node) -> dict[str, list]:
    found: dict[str, list] = {}
    for bound, value in _assignments(node):
        found.setdefault(bound, []).append(value)
    return found


def _single_definitions(node) -> dict[str, gast.expr]:
    """Name -> the value of its only assignment (names assigned more than once omitted)."""
    return {k: v[0] for k, v in _bindings(node).items() if len(v) == 1 and v[0] is not None}


def _mask_names(fn: Function) -> set[str]:
    """Names that may hold a boolean mask: parameters, and names every assignment of which
    is a comparison or a logical combination of masks (never a loop counter)."""
    values = _bindings(fn.node)
    masks = {p for p in fn.params if p not in values}
    changed = True
    while changed:
        changed = False
        for key, assigned in values.items():
            if key not in masks and all(_is_mask(fn, v, masks) for v in assigned):
                masks.add(key)
                changed = True
    return masks


def _is_mask(fn, value, masks) -> bool:
    """A possible boolean mask (`syntax.is_mask`): a name of `masks` (`_mask_names`, which
    counts parameters), or a call of one of `_MASK_CALLS`."""
    def mask_call(call) -> bool:
        target = resolve(fn, call.func, None)
        return hashable(target) and target in _MASK_CALLS
    return value is not None and is_mask(value, lambda node: node.id in masks, mask_call)
    if isinstance(value, gast.Compare):
        return True
    if isinstance(value, gast.Name):
        return value.id in masks
    if isinstance(value, gast.UnaryOp) and isinstance(value.op, (gast.Invert, gast.Not)):
        return _is_mask(fn, value.operand, masks)
    if isinstance(value, gast.BinOp) and isinstance(value.op, (gast.BitAnd, gast.BitOr,
                                                               gast.BitXor)):
        return _is_mask(fn, value.left, masks) and _is_mask(fn, value.right, masks)
    if isinstance(value, gast.Call):
        target = resolve(fn, value.func, None)
        return hashable(target) and target in _MASK_CALLS
    return False
