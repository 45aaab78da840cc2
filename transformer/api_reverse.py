"""Public reverse-mode API with JAX's semantics: grad, value_and_grad, vjp, custom_vjp.

Each returns (or, for `vjp`, uses) a generated Function from `reverse.py`. `grad(f)` is a
`Transformed`: calling it runs the generated code as plain Python, `jit(grad(f))`
compiles the same code with Numba, and other transformations take it as input.

Pytree arguments are flattened at the one boundary in `pytrees`: the gradient is taken of
`f`'s flat form (`__secant_flat__`) in the leaves, and put back into the trees.
"""
from __future__ import annotations

import functools
from typing import Any, Callable, Sequence, TypeVar

import gast

from . import materialize, templates
from .aliases import refuse_env_array_writes
from .callbacks import note_vjp_rules
from .errors import TransformError
from .frontend import parse
from .function import Function, binder, signature
from .input_dtypes import check_inputs, float0_zeros
from .jacobian_outputs import (flat_returns, holds_list, list_returns_as_tuples, nested,
                               output_tree)
from .nodes import walk
from .pytree_returns import returned_containers
from .pytrees import (LEAF, Flat, all_leaves, flat_function, flatten_parameters, leaf_groups,
                      layout_of, leaves, unflatten)
from .reverse import GRAD, VALUE_AND_GRAD, VJP, reverse_function
from .syntax import call, const, name, subscript
from .transformed import PYTHON, Transformed
from . import tree_util
from .tree_util import arrays_copied
from .typing import Argnums

_T = TypeVar("_T")

# ---------------------------------------------------------------- stop_gradient


def stop_gradient(x: _T) -> _T:
    """`x` itself; no derivative flows through it."""
    return x


templates.nondifferentiable(stop_gradient)


def _register_stop_gradient_for_numba():
    from transformer.runtime.numba_api import overload

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

    def __secant_signature_function__(self) -> Function:
        return _base_function(self.fun)

    @property
    def __secant_rebuilds_outputs__(self) -> bool:
        """An aux dict is rebuilt from a tuple: jit runs the flat form even on leaves."""
        return self.has_aux

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
        if all_leaves(layouts):
            return self._python(*args, **kwargs)      # the generated def binds as f does
        return self._call_flat(bound, layouts)

    def __secant_flat__(self, layouts) -> Flat:
        """The gradient of `fun`'s flat form in the leaves of the `argnums` arguments,
        rebuilt into their trees."""
        inner = flat_function(self.fun, layouts, _base_function)
        groups = leaf_groups(layouts)
        argnums = tuple(a % len(layouts) for a in self.argnums)
        wrt = tuple(i for a in argnums for i in groups[a])
        primal, aux = inner.function, None
        if self.has_aux:        # a returned aux dict literal travels as a tuple (Numba)
            primal, aux = returned_containers(primal)
        fn = reverse_function(primal, wrt, self.mode, self.has_aux, self.label, True)
        return Flat(fn, functools.partial(self._rebuild, tuple(layouts[a] for a in argnums),
                                          aux))

    def _rebuild(self, layouts, aux_keys, result):
        def trees(flat_grads):
            grads, k = [], 0
            for layout in layouts:
                grads.append(unflatten(layout, flat_grads[k:k + layout.leaf_count]))
                k += layout.leaf_count
            return tuple(grads) if self.tuple_grads else grads[0]
        def aux(value):
            return value if aux_keys is None else aux_keys((None, value))[1]
        if self.mode == GRAD:
            return (trees(result[0]), aux(result[1])) if self.has_aux else trees(result)
        value = (result[0][0], aux(result[0][1])) if self.has_aux else result[0]
        return value, trees(result[1])

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
    refuse_env_array_writes(base, "vjp", "it runs now and again at each pull of the vjp",
                            "take grad (or value_and_grad), which runs it once")
    values = binder(base)(*primals)     # the parameters left out take their defaults
    layouts = tuple(layout_of(v) for v in values)
    groups = leaf_groups(layouts)
    leaf_wrt = tuple(i for a in wrt for i in groups[a])
    outputs = output_tree(base, has_aux, "rev")
    # a nested output, or a list or dict: pulled back as one flat tuple of its leaves
    container = outputs is not None and (nested(outputs) or holds_list(outputs))
    if container:
        base = flat_returns(list_returns_as_tuples(base, has_aux), has_aux)
    fn = reverse_function(flatten_parameters(base, layouts), leaf_wrt, VJP, has_aux,
                          f"vjp(argnums={wrt})")
    compiled = materialize.compile_function(fn, PYTHON).function
    # the arguments as they are now: `fun` may write into them, and every pull runs it again
    # from a copy of them (a run writes into the arrays it is given, as `fun` does)
    at_call = arrays_copied(values)
    result = fun(*primals)
    out, aux = result if has_aux else (result, None)

    def vjp_fn(cotangent):
        if container:
            if tree_util.tree_structure(cotangent) != tree_util.tree_structure(out):
                raise ValueError(f"the cotangent is structured as "
                                 f"{tree_util.tree_structure(cotangent)} but the output as "
                                 f"{tree_util.tree_structure(out)}")
            cts = tuple(tree_util.tree_leaves(cotangent))
        else:
            cts = cotangent if isinstance(out, tuple) else (cotangent,)
            if isinstance(out, tuple) and len(cts) != len(out):
                raise ValueError(f"the cotangent has {len(cts)} parts but the output has "
                                 f"{len(out)}")
        flat = tuple(compiled(*leaves(arrays_copied(at_call)), *cts))
        found, k = [], 0
        for a in wrt:
            found.append(unflatten(layouts[a], flat[k:k + layouts[a].leaf_count]))
            k += layouts[a].leaf_count
        return tuple(found)

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
        note_vjp_rules(self.__name__, fwd, bwd)      # named when a 2nd derivative meets them

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

    def bwd_function(self, positions: Sequence[int]) -> Function:
        """`f_bwd(residuals, g)`: the cotangents at `positions` from `fwd`'s residuals,
        for a gradient whose forward sweep ran `fwd` itself (`reverse.adjoints`)."""
        primal = parse(self.fun)
        g = _fresh(["residuals"], "g")
        body = [
            _assign("cotangents", call(name("bwd"), name("residuals"), name(g))),
            gast.Return(value=gast.Tuple(elts=[subscript(name("cotangents"), const(p))
                                               for p in positions], ctx=gast.Load())),
        ]
        node = _function_node(primal, f"{primal.name}_bwd", ["residuals", g], body)
        return Function(node, {"bwd": self.bwd}, primal.origin,
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
    for sub in walk(node):
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
