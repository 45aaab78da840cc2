"""The forward-mode and higher-order API: jvp, linearize, jacfwd, jacrev, hessian, custom_jvp.

Each transformation returns a `Transformed` whose Function is generated source, so it
runs with the python backend when called and compiles under `jit`. jacfwd and jacrev
generate *one* function holding the loop over basis vectors (pushed through the jvp
Function, or pulled through the vjp Function), so `jit(hessian(f))` is a single
compiled function, not n Python-level calls.
"""
from __future__ import annotations

import functools
from typing import Any, Callable, Sequence, overload

import gast

from codegen.backends import Options

from . import basis, runtime, tape
from .aliases import refuse_env_array_writes, written_params_of_source
from .errors import TransformError
from .forward import (FORWARD_OF_CUSTOM_VJP, FORWARD_OF_CUSTOM_VJP_HINT, jvp_function,
                      refuses_forward_mode)
from .frontend import parse
from .function import Function, binder, same_parameters, signature
from .input_dtypes import check_inputs
from .materialize import compile_function, module_text
from .jacobian_loops import (batched_rows, block_names, forward_loops, jacobian_blocks,
                             results, reverse_loops)
from .jacobian_outputs import (LEAF_OUT, children, container_returned as _container_returned,
                               first_entry, flat_returns, leaf_paths, nested,
                               returned as _returned_outputs,
                               holds_list, list_returns_as_tuples, output_tree, rebuilt,
                               unreadable_returns,
                               unknown_outputs as _unknown_outputs)
from .names import Namer
from .nodes import copy_tree, walk
from .pytrees import (LEAF, Flat, all_leaves, flat_function, flatten_parameters, leaf_groups,
                      layout_of, leaves, unflatten)
from .transformed import Transformed
from .tree_util import arrays_copied
from .typing import Argnums

PYTHON = Options(backend="python")


# ---------------------------------------------------------------- building wrappers


def generated(base: Function, text: str, env: dict, label: str) -> Function:
    """A Function from the source `text` of one `def`, located at `base`'s definition."""
    node = gast.parse(text).body[0]
    for sub in walk(node):
        if "lineno" in getattr(sub, "_attributes", ()):
            sub.lineno, sub.col_offset = base.node.lineno, base.node.col_offset
            sub.end_lineno, sub.end_col_offset = base.node.lineno, base.node.col_offset
    return Function(node, dict(env), base.origin, base.chain + (label,))


def _argnums(fn: Function, argnums) -> tuple[int, ...]:
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    for i in nums:
        if not -len(fn.params) <= i < len(fn.params):
            raise TransformError(f"argnums {i} is out of range for {fn.name} with parameters "
                                 f"{fn.params}", filename=fn.origin.filename,
                                 lineno=fn.node.lineno, col=fn.node.col_offset,
                                 line=fn.origin.source_line(fn.node.lineno))
    return tuple(i % len(fn.params) for i in nums)


def tangent_function(fun, active: Sequence[str] | None = None) -> Function:
    """The jvp Function of `fun` (its custom rule for a custom_jvp function)."""
    fn = parse(fun)
    active = tuple(fn.params if active is None else active)
    if active and refuses_forward_mode(fun):
        raise fn.origin.error(fn.node, FORWARD_OF_CUSTOM_VJP, FORWARD_OF_CUSTOM_VJP_HINT)
    custom = getattr(fun, "__secant_jvp__", None)
    return custom(active) if custom is not None else jvp_function(fn, active)


# ---------------------------------------------------------------- jvp, linearize


@overload
def jvp(fun: Callable, primals: None = None, tangents: None = None,
        has_aux: bool = False) -> Transformed: ...
@overload
def jvp(fun: Callable, primals: Sequence, tangents: Sequence,
        has_aux: bool = False) -> tuple[Any, ...]: ...
def jvp(fun: Callable, primals: Sequence | None = None, tangents: Sequence | None = None,
        has_aux: bool = False) -> Transformed | tuple[Any, ...]:
    """JAX's `jvp`: `(primals_out, tangents_out)` (and `aux` with has_aux).

    `jvp(fun)` without primals returns the generated function itself:
    `jvp(f)(*primals, *tangents) -> (primals_out, tangents_out)`, which composes
    with every other transformation (`grad(lambda x: jvp(f)(x, v)[1])`, `jit(jvp(f))`).
    """
    transformed = _jvp_transformed(fun, has_aux)
    if primals is None and tangents is None:
        return transformed
    primals, tangents = tuple(primals), tuple(tangents)
    if len(primals) != len(tangents):
        raise TypeError(f"jvp: {len(primals)} primals but {len(tangents)} tangents")
    # `fun(*primals)`, as Python binds it: the parameters left out take their defaults,
    # with a zero tangent
    values = _binder(transformed, fun)(*primals)
    zeros = tuple(_zeros_tree(v) for v in values[len(primals):])
    layouts = tuple(layout_of(v) for v in values)
    if all_leaves(layouts):
        return transformed(*values, *tangents, *zeros)
    for k, tangent in enumerate(tangents):
        if layout_of(tangent) != layouts[k]:
            raise TypeError(f"jvp: the tangent of argument {k} must have the structure of "
                            f"its primal, {layouts[k].structure or 'a leaf'}")

    def build():
        flat = _FunctionRef(fun, flatten_parameters(parse(fun), layouts))
        return backends_compile(_jvp_function(flat, has_aux))
    compiled = transformed._built(("flat", layouts), build)
    return compiled(*leaves(values), *leaves(tangents + zeros))


@functools.lru_cache(maxsize=256)
def _jvp_transformed(fun, has_aux: bool) -> Transformed:
    return Transformed(fun, lambda: _jvp_function(fun, has_aux), "jvp")


def _jvp_function(fun, has_aux: bool) -> Function:
    """`(*primals, *tangents) -> (out, dout)` (and aux after them, with has_aux)."""
    inner = tangent_function(fun)
    if not has_aux:
        return inner
    fn = parse(fun)
    namer = Namer(set(inner.params) | {"jvp"})
    args = ", ".join(inner.params)
    pair = namer.fresh("pair")
    text = (f"def {fn.name}_jvp_aux({args}):\n"
            f"    {pair} = jvp({args})\n"
            f"    return {pair}[0][0], {pair}[1][0], {pair}[0][1]\n")
    return generated(fn, text, {"jvp": inner}, "jvp(has_aux=True)")


def _binder(transformed: Transformed, fun):
    """`fun`'s binding (`function.binder`), made once while `fun`'s bindings hold."""
    transformed._refresh()
    return transformed._built("binder", lambda: binder(parse(fun)))


def linearize(fun: Callable, *primals: Any) -> tuple[Any, Callable[..., Any]]:
    """JAX's `linearize`: `(fun(*primals), f_jvp)` with `f_jvp(*tangents)` the tangent map."""
    transformed = _jvp_transformed(fun, False)
    values = _binder(transformed, fun)(*primals)     # defaults for the parameters left out
    zeros = tuple(_zeros_tree(v) for v in values)
    # the jvp writes into the arrays it is given as `fun` does: each later call starts from
    # a copy of the arguments as they were at this call
    at_call = arrays_copied(values)
    out, _ = transformed(*values, *zeros)

    def f_jvp(*tangents):
        if len(tangents) != len(primals):
            raise TypeError(f"f_jvp takes {len(primals)} tangents, got {len(tangents)}")
        return transformed(*arrays_copied(at_call), *tangents, *zeros[len(primals):])[1]
    return out, f_jvp


def _zeros_tree(value):
    from .tree_util import tree_map
    return tree_map(runtime.zeros_like, value)


# ---------------------------------------------------------------- jacobians


def jacfwd(fun: Callable, argnums: Argnums = 0, has_aux: bool = False) -> "Jacobian":
    """The Jacobian by forward mode: every basis vector pushed through the jvp at once."""
    return Jacobian(fun, argnums, has_aux, "fwd")


def jacrev(fun: Callable, argnums: Argnums = 0, has_aux: bool = False) -> "Jacobian":
    """The Jacobian by reverse mode: every output basis vector pulled through the vjp."""
    return Jacobian(fun, argnums, has_aux, "rev")


class Jacobian(Transformed):
    """jacfwd / jacrev: arrays go straight to the generated function; pytree arguments
    (dicts, tuples, dataclasses) are flattened to their leaves first, and the result has
    JAX's structure: the output's tree, each leaf holding the argument's tree."""

    def __init__(self, fun, argnums, has_aux: bool, mode: str):
        self.argnums, self.has_aux, self.mode = argnums, has_aux, mode
        label = f"jac{mode}(argnums={argnums})"
        super().__init__(fun, lambda: _jacobian(fun, argnums, has_aux, mode), label)

    def __secant_check_inputs__(self, args, kwargs=None, compiled: bool = False) -> tuple:
        """A TypeError naming a differentiated argument that is not real floating."""
        fn = parse(self.fun)
        if kwargs:
            args = tuple(signature(fn).bind(*args, **kwargs).args)
        return check_inputs(f"jac{self.mode}", fn.params, args, _argnums(fn, self.argnums),
                            allow_int_hint=False)

    def __secant_signature_function__(self) -> Function:
        return parse(self.fun)

    def __call__(self, *args, **kwargs):
        self._refresh()
        self.__secant_check_inputs__(args, kwargs)
        if all(layout_of(a) is LEAF for a in args) and \
                all(layout_of(v) is LEAF for v in kwargs.values()):
            return self._python(*args, **kwargs)
        args = self._built("binder", lambda: binder(parse(self.fun)))(*args, **kwargs)
        return self._call_flat(args, tuple(layout_of(a) for a in args))

    def __secant_flat__(self, layouts) -> Flat:
        """The Jacobian of `fun`'s flat form in the leaves of the `argnums` arguments;
        rebuilt, each output leaf holds the argument's tree (JAX's layout)."""
        inner = flat_function(self.fun, layouts)
        nums = _argnums(parse(self.fun), self.argnums)
        groups = leaf_groups(layouts)
        wrt = tuple(i for a in nums for i in groups[a])
        fn = _jacobian(_FunctionRef(self.fun, inner.function), wrt, self.has_aux, self.mode)
        outputs = output_tree(inner.function, self.has_aux, self.mode)
        return Flat(fn, functools.partial(_rebuild_jacobian, tuple(layouts[a] for a in nums),
                                          isinstance(self.argnums, int), self.has_aux,
                                          inner.rebuild, outputs))


def _rebuild_jacobian(layouts, single: bool, has_aux: bool, inner, outputs, result):
    """Per-leaf Jacobians -> per argument, the output tree of argument trees. With a tuple
    output (`outputs`), the result comes output-major: each output leaf holds the tuple
    of its Jacobians per argument leaf."""
    jacs, aux = (result[0], result[1]) if has_aux else (result, None)
    if outputs is not None:
        count = len(_first_leaf(outputs, jacs))
        jacs = [_leaf_of(outputs, jacs, k) for k in range(count)]
    jacs, trees, k = tuple(jacs), [], 0
    for layout in layouts:
        tree = _tree_product(jacs[k:k + layout.leaf_count], layout)
        trees.append(tree if inner is None else inner(tree))
        k += layout.leaf_count
    value = trees[0] if single else tuple(trees)
    return (value, aux) if has_aux else value


def _leaf_of(tree, value, k):
    """The output-major `value` shaped like `tree` with each leaf's `k`-th entry."""
    if tree is LEAF_OUT:
        return value[k]
    return rebuilt(tree, tuple(_leaf_of(child, v, k)
                               for child, v in zip(tree, children(tree, value))))


def _first_leaf(tree, value):
    while tree is not LEAF_OUT:
        tree, value = tree[0], children(tree, value)[0]
    return value


class _FunctionRef:
    """An already generated Function where a callable is expected."""

    def __init__(self, fun, fn: Function):
        self.fun, self.fn = fun, fn
        self.__name__ = fn.name

    def __secant_function__(self) -> Function:
        return self.fn


def backends_compile(fn: Function):
    return compile_function(fn, PYTHON).function


def _tree_product(per_leaf, layout):
    """Per argument leaf, a Jacobian shaped like the output tree -> the output tree whose
    leaves are argument trees (JAX's layout)."""
    from . import tree_util
    out_leaves, out_structure = tree_util.tree_flatten(per_leaf[0])
    columns = [tree_util.tree_leaves(j) for j in per_leaf]
    rebuilt = [unflatten(layout, [c[i] for c in columns]) for i in range(len(out_leaves))]
    return tree_util.tree_unflatten(out_structure, rebuilt)


def hessian(fun: Callable, argnums: Argnums = 0) -> Transformed:
    """The Hessian of scalar-valued `fun`: forward mode over the reverse-mode gradient.

    `jacfwd(jacrev(fun))` with the one cotangent a scalar output has, i.e. jacfwd of
    `grad(fun)`; for a non-scalar output use `jacfwd(jacrev(fun))` itself. With a tuple
    `argnums` the result is JAX's nested tuple of blocks: `H[i][j]`, shaped
    `x_i.shape + x_j.shape`, differentiates the gradient in `x_i` with respect to `x_j`.
    """
    from .api_reverse import grad
    inner = grad(fun, argnums)
    outputs = None if isinstance(argnums, int) else len(tuple(argnums))
    return Hessian(fun, lambda: _jacobian(inner, argnums, False, "fwd", "hessian", outputs),
                   f"hessian(argnums={argnums})", argnums)


class Hessian(Transformed):
    """hessian(f): refuses inputs that are not real floating, as jacfwd does."""

    def __init__(self, fun, build, label: str, argnums):
        super().__init__(fun, build, label)
        self.argnums = argnums

    def __secant_check_inputs__(self, args, kwargs=None, compiled: bool = False) -> tuple:
        """A TypeError naming a differentiated argument that is not real floating."""
        fn = parse(self.fun)
        if kwargs:
            args = tuple(signature(fn).bind(*args, **kwargs).args)
        return check_inputs("hessian", fn.params, args, _argnums(fn, self.argnums),
                            allow_int_hint=False)

    def __secant_signature_function__(self) -> Function:
        return parse(self.fun)

    def __call__(self, *args, **kwargs):
        self.__secant_check_inputs__(args, kwargs)
        if all(layout_of(a) is LEAF for a in args) and \
                all(layout_of(v) is LEAF for v in kwargs.values()):
            return super().__call__(*args, **kwargs)
        self._refresh()
        args = self._built("binder", lambda: binder(parse(self.fun)))(*args, **kwargs)
        return self._call_flat(args, tuple(layout_of(a) for a in args))

    def __secant_flat__(self, layouts) -> Flat:
        """jacfwd of the flat gradient (one output per leaf), rebuilt into JAX's nesting:
        per pair of arguments, the first's tree of the second's trees."""
        from .api_reverse import grad
        nums = _argnums(parse(self.fun), self.argnums)
        inner = grad(self.fun, nums).__secant_flat__(layouts)
        groups = leaf_groups(layouts)
        wrt = tuple(i for a in nums for i in groups[a])
        fn = _jacobian(_FunctionRef(self.fun, inner.function), wrt, False, "fwd", "hessian",
                       len(wrt))
        return Flat(fn, functools.partial(_rebuild_hessian, tuple(layouts[a] for a in nums),
                                          isinstance(self.argnums, int)))


def _rebuild_hessian(layouts, single: bool, blocks):
    """`blocks[i][j]` per pair of leaves -> JAX's nested Hessian of the arguments."""
    starts = [sum(lay.leaf_count for lay in layouts[:a]) for a in range(len(layouts))]

    def block(a, b):
        rows = range(starts[a], starts[a] + layouts[a].leaf_count)
        cols = range(starts[b], starts[b] + layouts[b].leaf_count)
        return unflatten(layouts[a], [unflatten(layouts[b], [blocks[i][j] for j in cols])
                                      for i in rows])
    if single:
        return block(0, 0)
    return tuple(tuple(block(a, b) for b in range(len(layouts))) for a in range(len(layouts)))


_HELPERS = {name: getattr(basis, name) for name in basis.__all__}


def _jacobian(fun, argnums, has_aux, mode, label=None, outputs=None) -> Function:
    """The generated Jacobian Function of `fun` in `argnums`. `outputs`: `fun` returns a
    tuple of that many arrays (hessian's gradient in several arguments); each gets its own
    Jacobian per argument, nested output-major like JAX."""
    fn = parse(fun)
    nums = _argnums(fn, argnums)
    active = tuple(fn.params[i] for i in nums)
    outputs = output_tree(fn, has_aux, mode) if outputs is None else \
        (LEAF_OUT,) * outputs if isinstance(outputs, int) else outputs
    as_written, body_outputs = fn, outputs
    if holds_list(outputs):
        fn = list_returns_as_tuples(fn, has_aux)
        fun = _FunctionRef(fun, fn)
    if mode == "rev" and not has_aux and nested(outputs):
        # one flat tuple to pull back; `results` nests the Jacobians as the output was
        fn = flat_returns(fn)
        fun = _FunctionRef(fun, fn)
        body_outputs = (LEAF_OUT,) * len(leaf_paths(outputs))
    namer = Namer(set(fn.params) | set(_HELPERS) |
                  {"zeros_like", "derivative", "range", "own_value"})
    if outputs is None and (mode == "rev" and _container_returned(fn, has_aux) or
                            unreadable_returns(fn, has_aux)):
        raise _unknown_outputs(fn, mode)
    if mode == "rev":
        refuse_env_array_writes(fn, "jacrev", "the Jacobian runs it for its output and "
                                "again for the rows", "use jacfwd, which runs it once")
    if mode == "fwd":
        inner = tangent_function(fun, active)
    elif has_aux and outputs is not None:
        params = ", ".join(fn.params)
        call = f"{fn.name}({params})"
        first = first_entry(next(iter(_returned_outputs(as_written, has_aux)), None))
        raise fn.origin.error(
            fn.node, f"jacrev(has_aux=True) of {fn.name}: its output is a container, which "
            "reverse mode cannot pull back beside an aux",
            f"take each output's Jacobian: jacrev(lambda {params}: ({call}[0][{first}], "
            f"{call}[1]), has_aux=True), or use jacfwd")
    else:
        inner = cotangent_function(fun, nums, has_aux)
    env = dict(_HELPERS, zeros_like=runtime.zeros_like, derivative=inner, range=range,
               primal=fun, own_value=tape.own_value)
    try:
        if written_params_of_source(fn):
            # each basis vector runs the function again: vmap would run them in order on
            # the one written array (loop semantics), each at another point
            raise TransformError("a Jacobian of a function writing into its argument")
        body = _batched_body(fn, active, namer, has_aux, mode, inner, env, body_outputs)
    except TransformError:
        # some statement has no batching rule: one derivative call per basis vector
        if outputs is None and _container_returned(fn, has_aux):
            raise _unknown_outputs(fn, mode) from None
        body = forward_loops(fn, active, Namer(set(namer.taken)), has_aux, body_outputs) \
            if mode == "fwd" else \
            reverse_loops(fn, active, Namer(set(namer.taken)), has_aux, body_outputs)
    single = isinstance(argnums, int)
    body[-1] = results(body[-1], single, outputs, has_aux)
    name = f"{fn.name}_{label or 'jac' + mode}"
    text = f"def {name}({', '.join(fn.params)}):\n" + "".join("    " + line + "\n"
                                                              for line in body)
    label = label or (f"jacfwd(argnums={argnums})" if mode == "fwd"
                      else f"jacrev(argnums={argnums})")
    jac = generated(fn, text, env, label)
    # called as `fun` is: the same keyword-only parameters and defaults
    return jac.replace(env={**jac.env, **same_parameters(jac.node, fn)})


def _batched_body(fn, active, namer, has_aux, mode, inner, env, outputs) -> list[str]:
    """Lines of a Jacobian body that push (pull) all basis vectors at once through vmap.

    Batched, a matrix-vector product in the derivative becomes one matrix-matrix product.
    A basis is pushed as an identity batch (`batching.Spec.identity`) where vmap can
    vectorize it: linear elementwise steps then cost one tangent's work, and the columns
    come back with the basis axis last, already in the Jacobian's layout. Raises
    TransformError when vmap cannot vectorize the derivative.
    """
    from .api_batching import vmap
    derivative = Transformed(fn, lambda: inner, "derivative")
    if mode == "rev":
        return batched_rows(fn, active, namer, has_aux, outputs, vmap(
            derivative, in_axes=(None,) * len(fn.params) +
            (0,) * (len(inner.params) - len(fn.params)), out_axes=0), env)
    params = ", ".join(fn.params)
    out, aux = namer.fresh("out"), namer.fresh("aux")
    lines, jacs = [], []
    for p in active:
        mapped, pair = (namer.fresh(n + "_" + p) for n in ("mapped", "pair"))
        in_axes = (None,) * len(fn.params) + tuple(0 if q == p else None for q in active)
        batched, basis, assemble = _identity_push(fn, inner, in_axes, has_aux, p)
        if batched is None:
            out_axes = ((None, None), (0, 0)) if has_aux else (None, 0)
            batched = vmap(derivative, in_axes=in_axes, out_axes=out_axes)
            batched.__secant_function__()              # fails here if vmap cannot batch
            basis, assemble = "basis_matrix", "jacobian_from_columns"
        env[mapped] = batched
        extra = [f"{basis}({p})" if q == p else f"zeros_like({q})" for q in active]
        lines.append(f"{pair} = {mapped}({params}, {', '.join(extra)})")
        primal, columns = (f"{pair}[0][0]", f"{pair}[1][0]") if has_aux else \
            (f"{pair}[0]", f"{pair}[1]")
        if p == active[0]:
            lines.append(f"{out} = {primal}")
            if has_aux:
                lines.append(f"{aux} = {pair}[0][1]")
        blocks = jacobian_blocks(namer, p, outputs, columns, out)
        lines += [f"{j} = {assemble}({c}, {o}, {p})" for j, c, o in blocks]
        jacs.append(block_names(blocks, outputs))
    lines.append((jacs, aux))
    return lines


def _identity_push(fn, inner, in_axes, has_aux, p):
    """(the vmap of `inner` pushing `p`'s basis as an identity batch, the helper giving
    its argument, the helper assembling Jacobians), or Nones where vmap cannot."""
    from .batching import Spec, batch
    out_axes = ((None, None), (-1, -1)) if has_aux else (None, -1)
    spec = Spec(in_axes, out_axes, method="vectorize", identity=in_axes.index(0))
    pushed = Transformed(fn, lambda: batch(inner, spec), "vmap(identity basis)")
    try:
        pushed.__secant_function__()
    except TransformError:
        return None, None, None
    return pushed, "basis_ones", "jacobian_from_last"


def cotangent_function(fun, argnums: tuple[int, ...], has_aux: bool) -> Function:
    """The vjp Function of `fun`: `(*params, cotangent) -> (bar_p for p in argnums)`."""
    from .api_reverse import _base_function
    from .reverse import VJP, reverse_function
    return reverse_function(_base_function(fun), argnums, VJP, has_aux,
                            f"vjp(argnums={argnums})")


# ---------------------------------------------------------------- custom_jvp


class custom_jvp:
    """JAX's `custom_jvp`: a function with a hand-written forward-mode rule.

        @custom_jvp
        def f(x): ...
        @f.defjvp
        def f_jvp(primals, tangents):
            x, = primals; t, = tangents
            return f(x), 2.0 * t

    Forward-mode transformations (jvp, jacfwd, hessian's outer loop) call the rule;
    reverse mode (grad, vjp, jacrev) transposes it, as JAX does: the rule's tangent output
    is linear in the tangents, so its vjp with respect to them is the function's vjp.
    Calling the function (and jit, vmap of it) runs the function itself.
    """

    def __init__(self, fun: Callable):
        self.fun = fun
        self.rule: Callable | None = None
        functools.update_wrapper(self, fun)

    def defjvp(self, rule: Callable) -> Callable:
        self.rule = rule
        return rule

    def __call__(self, *args, **kwargs):
        return self.fun(*args, **kwargs)

    def __secant_function__(self) -> Function:
        return parse(self.fun)

    def __secant_jvp__(self, active: Sequence[str]) -> Function:
        """A Function `(params..., d_active...) -> (out, dout)` calling the rule."""
        fn = parse(self.fun)
        if self.rule is None:
            raise fn.origin.error(fn.node, f"custom_jvp function {fn.name} has no rule",
                                  f"define one with @{fn.name}.defjvp")
        namer = Namer(set(fn.params) | {"rule", "zeros_like"})
        tangents = {p: namer.fresh("d" + p) for p in active}
        args = ", ".join(fn.params + [tangents[p] for p in active])
        primal_tuple = "(" + "".join(f"{p}, " for p in fn.params) + ")"
        tangent_tuple = "(" + "".join(
            f"{tangents[p]}, " if p in tangents else f"zeros_like({p}), "
            for p in fn.params) + ")"
        text = (f"def {fn.name}_custom_jvp({args}):\n"
                f"    return rule({primal_tuple}, {tangent_tuple})\n")
        env = {"rule": self.rule, "zeros_like": runtime.zeros_like}
        return generated(fn, text, env, "custom_jvp")

    def __secant_vjp__(self, positions: Sequence[int]) -> Function:
        """`f_vjp(*params, g)` -> the cotangents of the parameters at `positions`: reverse
        mode through the rule with respect to its tangents (at zero tangents: the tangent
        output is linear in them, so any point gives the same transpose)."""
        from .reverse import VJP, reverse_function
        fn, rule = parse(self.fun), self._flat_rule()
        n = len(fn.params)
        namer = Namer(set(fn.params) | {"rule", "transposed", "zeros_like"})
        tangents = [namer.fresh("d" + p) for p in fn.params]
        out, dout, g = namer.fresh("out"), namer.fresh("dout"), namer.fresh("g")
        params = ", ".join(fn.params)
        linear = generated(fn, f"def {fn.name}_tangent({params}, {', '.join(tangents)}):\n"
                               f"    {out}, {dout} = rule({params}, {', '.join(tangents)})\n"
                               f"    return {dout}\n", {"rule": rule}, "custom_jvp tangent")
        transposed = reverse_function(linear, tuple(n + i for i in positions), VJP,
                                      label=f"transpose(custom_jvp, argnums={tuple(positions)})")
        zeros = ", ".join(f"zeros_like({p})" for p in fn.params)
        grads = [namer.fresh("b" + fn.params[i]) for i in positions]
        # unpacked, then returned as a tuple literal: vmap batches each cotangent
        text = (f"def {fn.name}_vjp({params}, {g}):\n"
                f"    {', '.join(grads)}, = transposed({params}, {zeros}, {g})\n"
                f"    return {', '.join(grads)},\n")
        return generated(fn, text, {"transposed": transposed, "zeros_like": runtime.zeros_like},
                         "custom_jvp transposed")

    def _flat_rule(self) -> Function:
        """The rule as `rule(p_0.., t_0..)`: its `primals` and `tangents` parameters become
        tuples of flat parameters, built first thing in its body, so that reverse mode can
        enter it."""
        fn = parse(self.fun)
        if self.rule is None:
            raise fn.origin.error(fn.node, f"custom_jvp function {fn.name} has no rule",
                                  f"define one with @{fn.name}.defjvp")
        rule = parse(self.rule)
        if len(rule.params) != 2:
            raise rule.origin.error(rule.node, f"the custom_jvp rule {rule.name} must take "
                                    "two parameters, (primals, tangents)")
        namer = Namer.for_function(rule)
        primals = [namer.fresh(f"primal_{p}") for p in fn.params]
        tangents = [namer.fresh(f"tangent_{p}") for p in fn.params]
        node = copy_tree(rule.node)
        pack = gast.parse("".join(f"{packed} = ({', '.join(flat)},)\n" for packed, flat in
                                  zip(rule.params, (primals, tangents)))).body
        for stmt in pack:
            for sub in walk(stmt):
                if "lineno" in getattr(sub, "_attributes", ()):
                    gast.copy_location(sub, rule.node)
        node.body = pack + node.body
        node.args = gast.arguments(args=[gast.Name(p, gast.Param(), None, None)
                                         for p in primals + tangents], posonlyargs=[],
                                   vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None,
                                   defaults=[])
        return rule.replace(node=node, chain=rule.chain + ("custom_jvp rule",))


# ---------------------------------------------------------------- showing the code


def show_jvp(fun: Callable) -> str:
    """The generated module text of `jvp(fun)`: `(*primals, *tangents) -> (out, dout)`."""
    return module_text(tangent_function(fun), PYTHON)[0]


def show_hessian(fun: Callable, argnums=0) -> str:
    """The generated module text of `hessian(fun)`, then of the generated functions it
    calls: the basis push (vmap of the jvp of the gradient) and what that calls."""
    from .names import free_names
    outer = hessian(fun, argnums).function
    texts, seen, pending = [], set(), [outer]
    while pending:
        fn = pending.pop(0)
        texts.append(module_text(fn, PYTHON)[0])
        for key in sorted(free_names(fn.node)):
            value = fn.env.get(key)
            if hasattr(value, "__secant_function__") and id(value) not in seen:
                seen.add(id(value))
                pending.append(value.__secant_function__())
    return "\n\n".join(texts)


__all__ = ["custom_jvp", "hessian", "jacfwd", "jacrev", "jvp", "linearize", "show_hessian",
           "show_jvp"]
