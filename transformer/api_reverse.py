"""Public reverse-mode API with JAX's semantics: grad, value_and_grad, vjp, custom_vjp.

Each returns (or, for `vjp`, uses) a generated Function from `reverse.py`. `grad(f)` is a
`Transformed`: calling it runs the generated code as plain Python, `jit(grad(f))`
compiles the same code with Numba, and other transformations take it as input.

Pytree arguments (dicts, tuples, lists of arrays) are flattened at the boundary: the
gradient is computed for a version of `f` whose container parameters are replaced by
their leaves, and the leaves' gradients are put back into the container's structure.
"""
from __future__ import annotations

import copy
import functools
from typing import Any, Callable, Sequence, TypeVar

import gast

from . import materialize, templates, tree_util
from .errors import TransformError
from .frontend import parse
from .function import Function, binder, signature
from .input_dtypes import check_inputs, float0_zeros
from .pytrees import LEAF, layout_of
from .reverse import GRAD, VALUE_AND_GRAD, VJP, reverse_function
from .syntax import call, const, name, subscript
from .transformed import PYTHON, Transformed
from .typing import Argnums

_T = TypeVar("_T")

# ---------------------------------------------------------------- stop_gradient


def stop_gradient(x: _T) -> _T:
    """`x` itself; no derivative flows through it."""
    return x


templates.nondifferentiable(stop_gradient)


def _register_stop_gradient_for_numba():
    from numba.extending import overload

    @overload(stop_gradient)
    def _stop_gradient_nb(x):
        return lambda x: x


_register_stop_gradient_for_numba()


# ---------------------------------------------------------------- grad / value_and_grad


def _argnums(argnums) -> tuple[tuple[int, ...], bool]:
    if isinstance(argnums, int):
        return (argnums,), False
    argnums = tuple(argnums)
    if not argnums or not all(isinstance(a, int) for a in argnums):
        raise TypeError(f"argnums must be an int or a non-empty tuple of ints, got {argnums!r}")
    return argnums, True


class GradTransformed(Transformed):
    """`grad(f)` / `value_and_grad(f)`: generated lazily, flattened for pytrees."""

    def __init__(self, fun, argnums, mode, has_aux, allow_int=False):
        self.argnums, self.tuple_grads = _argnums(argnums)
        self.mode, self.has_aux, self.allow_int = mode, has_aux, allow_int
        label = f"{mode}(argnums={argnums!r}{', has_aux=True' if has_aux else ''})"
        super().__init__(fun, lambda: self._generate(_base_function(fun)), label)
        self._without: dict = {}

    def _generate(self, fn: Function) -> Function:
        return reverse_function(fn, self.argnums, self.mode, self.has_aux, self.label,
                                self.tuple_grads)

    @functools.cached_property
    def _params(self) -> list[str]:
        return _base_function(self.fun).params

    def __secant_check_inputs__(self, args, kwargs=None, compiled: bool = False) -> tuple:
        """Refuse (TypeError naming it) a differentiated argument that is not real
        floating; with allow_int, the positions of integer ones (not under jit)."""
        if kwargs:
            args = tuple(signature(_base_function(self.fun)).bind(*args, **kwargs).args)
        integers = check_inputs(self.mode, self._params, args, self.argnums, self.allow_int)
        if integers and compiled:
            name = self._params[integers[0]]
            raise TypeError(f"{self.mode}(allow_int=True) cannot run under jit with the "
                            f"integer argument {name!r}: compiled code has no float0 arrays; "
                            f"call it without jit, or pass a float such as {name}=float(...)")
        return integers

    def __call__(self, *args, **kwargs):
        self._refresh()
        bound = args
        if kwargs or not all(layout_of(a) is LEAF for a in args):
            bound = self._built("binder", lambda: binder(_base_function(self.fun)))(
                *args, **kwargs)
        integers = self.__secant_check_inputs__(bound)
        if integers:
            return self._call_with_integers(bound, integers)
        layouts = tuple(layout_of(a) for a in bound)
        if all(lay is LEAF for lay in layouts):
            return self._python(*args, **kwargs)      # the generated def binds as f does
        return self._call_flattened(bound, layouts)

    def _call_with_integers(self, args, integers):
        """allow_int: the gradient in the other arguments, float0 zeros for the integers."""
        rest = tuple(a for a in self.argnums if a not in integers)
        if rest:
            inner = self._without.get(rest)
            if inner is None:
                inner = self._without[rest] = GradTransformed(self.fun, rest, self.mode,
                                                              self.has_aux)
            result = inner(*args)
        else:                               # nothing to differentiate: just the value
            out = self.fun(*args)
            result = (((), out[1]) if self.has_aux else ()) if self.mode == GRAD else (out, ())
        if self.mode == GRAD:
            found, aux = result if self.has_aux else (result, None)
        else:
            aux, (value, found) = None, result
        found = dict(zip(rest, found))
        grads = tuple(found[a] if a in found else float0_zeros(args[a]) for a in self.argnums)
        grads = grads if self.tuple_grads else grads[0]
        if self.mode == GRAD:
            return (grads, aux) if self.has_aux else grads
        return value, grads

    def _call_flattened(self, args, layouts):
        def build():
            base, groups = flatten_parameters(_base_function(self.fun), layouts)
            wrt = tuple(i for a in self.argnums for i in groups[a])
            fn = reverse_function(base, wrt, self.mode, self.has_aux, self.label, True)
            return materialize.compile_function(fn, PYTHON).function, groups
        function, groups = self._built(("layouts", layouts), build)
        leaves = [leaf for a in args for leaf in tree_util.tree_leaves(a)]
        result = function(*leaves)
        return self._unflatten(result, args, groups)

    def _unflatten(self, result, args, groups):
        def rebuild(flat_grads):
            grads, k = [], 0
            for a in self.argnums:
                count = len(groups[a])
                structure = tree_util.tree_structure(args[a])
                grads.append(tree_util.tree_unflatten(structure, flat_grads[k:k + count]))
                k += count
            return tuple(grads) if self.tuple_grads else grads[0]
        if self.mode == GRAD:
            return (rebuild(result[0]), result[1]) if self.has_aux else rebuild(result)
        return result[0], rebuild(result[1])


def _base_function(fun) -> Function:
    """The Function reverse mode differentiates for `fun`: for a function with a custom
    rule (custom_vjp, custom_jvp), a one-line caller, so that the rule is used."""
    if hasattr(fun, "__secant_vjp__"):
        return calling_function(fun)
    return parse(fun)


def grad(fun: Callable, argnums: Argnums = 0, has_aux: bool = False,
         allow_int: bool = False) -> GradTransformed:
    """The gradient of scalar-valued `fun` with respect to the arguments `argnums`.

    The differentiated arguments must be real floating (a TypeError naming the argument
    otherwise, as JAX); `allow_int=True` gives integer and boolean ones float0 zeros as
    their gradient (not under jit, which refuses them)."""
    return GradTransformed(fun, argnums, GRAD, has_aux, allow_int)


def value_and_grad(fun: Callable, argnums: Argnums = 0, has_aux: bool = False,
                   allow_int: bool = False) -> GradTransformed:
    """`(fun(*args), grad(fun)(*args))` from one forward and one reverse sweep."""
    return GradTransformed(fun, argnums, VALUE_AND_GRAD, has_aux, allow_int)


def show_grad(fun: Callable, argnums=0) -> str:
    """The generated module text of `grad(fun, argnums)` (what `secant show --grad` prints),
    followed by the modules of the vjp functions generated for the functions it calls."""
    transformed = grad(fun, argnums)
    texts = [transformed.source()]
    for helper in _generated_helpers(transformed.function):
        texts.append(materialize.module_text(helper, PYTHON)[0])
    return "\n\n".join(texts)


def _generated_helpers(fn: Function, seen=None) -> list[Function]:
    seen = set() if seen is None else seen
    found = []
    for value in fn.env.values():
        if isinstance(value, Function) and id(value) not in seen:
            seen.add(id(value))
            found.append(value)
            found.extend(_generated_helpers(value, seen))
    return found


# ---------------------------------------------------------------- vjp


def vjp(fun: Callable, *primals: Any, has_aux: bool = False) -> tuple[Any, ...]:
    """`(fun(*primals), vjp_fn)` (and `aux` with `has_aux`): `vjp_fn(ct)` maps an output
    cotangent to a tuple with one cotangent per primal."""
    return vjp_wrt(fun, primals, tuple(range(len(primals))), has_aux)


def vjp_wrt(fun: Callable, primals, wrt: tuple[int, ...], has_aux: bool = False):
    """`vjp` for the primals at positions `wrt` only (the others are held constant)."""
    base = _base_function(fun)
    check_inputs("vjp", base.params, primals, wrt, allow_int_hint=False)
    fn = reverse_function(base, wrt, VJP, has_aux, f"vjp(argnums={wrt})")
    compiled = materialize.compile_function(fn, PYTHON).function
    result = fun(*primals)
    values = binder(base)(*primals)     # the parameters left out take their defaults
    out, aux = result if has_aux else (result, None)

    def vjp_fn(cotangent):
        cts = cotangent if isinstance(out, tuple) else (cotangent,)
        if isinstance(out, tuple) and len(cts) != len(out):
            raise ValueError(f"the cotangent has {len(cts)} parts but the output has "
                             f"{len(out)}")
        return tuple(compiled(*values, *cts))

    return (out, vjp_fn, aux) if has_aux else (out, vjp_fn)


# ---------------------------------------------------------------- custom_vjp


class CustomVJP:
    """A function with a user-supplied vjp, as `jax.custom_vjp`.

        @custom_vjp
        def f(x, y): ...
        def f_fwd(x, y): return f(x, y), residuals
        def f_bwd(residuals, g): return (g_x, g_y)
        f.defvjp(f_fwd, f_bwd)
    """

    def __init__(self, fun: Callable) -> None:
        self.fun = fun
        self.fwd = self.bwd = None
        functools.update_wrapper(self, fun, updated=())

    def defvjp(self, fwd: Callable, bwd: Callable) -> None:
        self.fwd, self.bwd = fwd, bwd

    def __call__(self, *args, **kwargs):
        return self.fun(*args, **kwargs)

    def __secant_function__(self) -> Function:
        return parse(self.fun)

    def __secant_vjp__(self, positions: Sequence[int]) -> Function:
        return self.vjp_function(positions)

    def vjp_function(self, positions: Sequence[int]) -> Function:
        """`f_vjp(*args, g)` returning the cotangents of the arguments at `positions`."""
        if self.fwd is None:
            raise TransformError(f"custom_vjp function {self.__name__} has no vjp rule",
                                 hint=f"call {self.__name__}.defvjp(fwd, bwd) first")
        primal = parse(self.fun)
        params = primal.params
        g = _fresh(params, "g")
        body = [
            _assign("fwd_out", call(name("fwd"), *[name(p) for p in params])),
            _assign("residuals", subscript(name("fwd_out"), const(1))),
            _assign("cotangents", call(name("bwd"), name("residuals"), name(g))),
            gast.Return(value=gast.Tuple(elts=[subscript(name("cotangents"), const(p))
                                               for p in positions], ctx=gast.Load())),
        ]
        node = _function_node(primal, f"{primal.name}_vjp", params + [g], body)
        return Function(node, {"fwd": self.fwd, "bwd": self.bwd}, primal.origin,
                        primal.chain + ("custom_vjp",))

    def calling_function(self) -> Function:
        return calling_function(self)


def calling_function(custom) -> Function:
    """`def f(*args): return <custom>(*args)` for a function with a custom rule: a body
    every transformation can enter, reaching the rule through the call."""
    primal = parse(custom.fun)
    params = primal.params
    body = [_assign("result", call(name("custom"), *[name(p) for p in params])),
            gast.Return(value=name("result"))]
    node = _function_node(primal, primal.name, params, body)
    return Function(node, {"custom": custom}, primal.origin, primal.chain)


def custom_vjp(fun: Callable) -> CustomVJP:
    return CustomVJP(fun)


def _fresh(taken, base):
    candidate, k = base, 0
    while candidate in taken:
        k += 1
        candidate = f"{base}_{k}"
    return candidate


def _assign(target, value):
    return gast.Assign(targets=[name(target, gast.Store())], value=value, type_comment=None)


def _function_node(primal: Function, fname: str, params, body) -> gast.FunctionDef:
    args = gast.arguments(args=[name(p, gast.Param()) for p in params], posonlyargs=[],
                          vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[])
    node = gast.FunctionDef(name=fname, args=args, body=body, decorator_list=[], returns=None,
                            type_comment=None, type_params=[])
    for sub in gast.walk(node):
        if "lineno" in getattr(sub, "_attributes", ()):
            gast.copy_location(sub, primal.node)
    return node


# ---------------------------------------------------------------- defadjoint


def defadjoint(primitive: Callable):
    """Register the decorated template as the adjoint of `primitive` (any callable).

        @defadjoint(softplus)
        def softplus_adjoint(z, x):
            d[x] += d[z] / (1.0 + np.exp(-x))

    The first parameter is the result, the others bind to the call's arguments; `d[v]`
    is the adjoint of `v`. The body is code to emit, never run.
    """
    def decorate(template):
        templates.adjoint(primitive)(template)
        return template
    return decorate


# ---------------------------------------------------------------- pytree parameters


def flatten_parameters(fn: Function, layouts) -> tuple[Function, list[list[int]]]:
    """`fn` with each container parameter replaced by one parameter per leaf.

    Reads `p["W"]` / `p[0]` (constant keys, nested) become the leaf's parameter; any other
    use of a container parameter is refused. Returns the Function and, per original
    parameter, the positions of its leaves in the new parameter list.
    """
    node = copy.deepcopy(fn.node)
    params = fn.params
    new_params, groups, leaves_of = [], [], {}
    for p, layout in zip(params, layouts):
        if layout is LEAF:
            groups.append([len(new_params)])
            new_params.append(p)
            continue
        names = {}
        start = len(new_params)
        for path in _leaf_paths(layout):
            leaf = _fresh(set(params) | set(new_params), p + "_" + "_".join(map(str, path)))
            names[path] = leaf
            new_params.append(leaf)
        groups.append(list(range(start, len(new_params))))
        leaves_of[p] = (layout, names)
    _LeafAccess(fn, leaves_of).visit(node)
    node.args = gast.arguments(args=[name(p, gast.Param()) for p in new_params],
                               posonlyargs=[], vararg=None, kwonlyargs=[], kw_defaults=[],
                               kwarg=None, defaults=[])
    return fn.replace(node=node), groups


def _leaf_paths(layout, prefix=()):
    if layout is LEAF or layout.kind == "leaf":
        yield prefix
        return
    for key, child in zip(layout.keys, layout.children):
        yield from _leaf_paths(child, prefix + (key,))


class _LeafAccess(gast.NodeTransformer):
    def __init__(self, fn, leaves_of):
        self.fn, self.leaves_of = fn, leaves_of

    def visit_Subscript(self, node):
        path, root = [], node
        while isinstance(root, gast.Subscript) and isinstance(root.slice, gast.Constant):
            path.insert(0, root.slice.value)
            root = root.value
        if isinstance(root, gast.Name) and root.id in self.leaves_of:
            layout, names = self.leaves_of[root.id]
            if tuple(path) in names:
                return gast.copy_location(name(names[tuple(path)]), node)
        return self.generic_visit(node)

    def visit_Name(self, node):
        if node.id in self.leaves_of and not isinstance(node.ctx, gast.Param):
            raise self.fn.origin.error(node, f"container argument {node.id!r} is used "
                                       "whole here; grad can only read its entries "
                                       "with constant keys", f"read {node.id}[\"key\"] instead")
        return node

