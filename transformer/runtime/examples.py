"""Runtime helpers of batched code that work example by example or across the batch:
collectives over the batch (`psum` ...), `over_examples` (any helper applied to each
example, compiled as a loop under Numba), the per-example forms of the reverse-mode
helpers (`unbroadcast`, `matmul_grad_*`, in-place updates), and the helpers the
adjoints of batched code call. Imports only NumPy, Numba and the runtime package.
"""
from __future__ import annotations

import numpy as np
from numba import types
from numba.np.numpy_support import as_dtype
from transformer.runtime.allocation import empty_array, zeros_array
from transformer.runtime.numba_api import overload, register_jitable

from .linalg import _mixed_floats
from .views import contiguous
from .batching import (_ndim, _numpy_product, align_batched, batch_empty,
                       broadcast_batch, identity_batch, outer_both, outer_left)

# ---------------------------------------------------------------- collectives over the batch

def _over_batch_nb(x, combine, finish):
    if x.ndim == 1:
        def scalars(x):
            out = x[0]
            for b in range(1, x.shape[0]):
                out = combine(out, x[b])
            return finish(out, x.shape[0])
        return scalars

    def impl(x):
        out = x[0].copy()
        for b in range(1, x.shape[0]):
            out = combine(out, x[b])
        return finish(out, x.shape[0])
    return impl


@register_jitable
def _plus(a, b):
    return a + b


@register_jitable
def _larger(a, b):
    return np.maximum(a, b)


@register_jitable
def _smaller(a, b):
    return np.minimum(a, b)


@register_jitable
def _total(a, n):
    return a


@register_jitable
def _average(a, n):
    return a / n


def _over_batch(np_fn, combine, finish, name_: str, doc: str):
    """A collective of batched `x`, `np_fn` over the batch axis; compiled, a fold of the
    examples with `combine`, then `finish(folded, size)`."""
    def python(x):
        return np_fn(x, axis=0)
    python.__name__ = python.__qualname__ = name_
    python.__doc__ = doc

    @overload(python)
    def _nb(x):
        return _over_batch_nb(x, combine, finish)
    return python


sum_batch = _over_batch(np.sum, _plus, _total, "sum_batch",
                        "`psum` of batched `x`: the sum over the batch axis.")
mean_batch = _over_batch(np.mean, _plus, _average, "mean_batch",
                         "`pmean` of batched `x`: the mean over the batch axis.")
max_batch = _over_batch(np.max, _larger, _total, "max_batch",
                        "`pmax` of batched `x`: the maximum over the batch axis.")
min_batch = _over_batch(np.min, _smaller, _total, "min_batch",
                        "`pmin` of batched `x`: the minimum over the batch axis.")


def gather_batch(x):
    """`all_gather` of batched `x`: the whole stack, the same for every example."""
    return np.array(x)


@overload(gather_batch)
def _gather_batch_nb(x):
    return lambda x: x.copy()


def times_size(x, size):
    """`psum` of an unbatched value: every example contributes the same `x`."""
    return x * size


def unchanged(x, size):
    """`pmean`/`pmax`/`pmin` of an unbatched value: the value itself."""
    return x


@overload(unchanged)
def _unchanged_nb(x, size):
    return lambda x, size: x


# ---------------------------------------------------------------- helpers of generated code

def over_examples(helper, flags: tuple, in_place: bool = False):
    """`helper` applied example by example: batched arguments (per `flags`) are indexed,
    the others passed whole, and the results stacked (`in_place`: results dropped, for
    helpers called for their writes, like `scatter_add`). The batching rule of last resort
    for the runtime helpers other transformations emit (`unbroadcast`, ...): under Numba
    it is a compiled loop.

    A flag is a bool, or a tuple of flags for an argument that is a tuple (or list) of
    that many items: each example gets a tuple of its own items, a batched item indexed,
    the others whole (`concatenate_part(g, (h, w), k)` with `h` batched, `w` shared)."""
    key = (helper, flags, in_place)
    if key in _OVER_EXAMPLES:
        return _OVER_EXAMPLES[key]
    label = f"{helper.__name__}_each"
    source = _over_examples_source(label, flags, in_place)
    scope = {"helper": helper, "batch_empty": batch_empty, "store_example": store_example,
             "direct": _no_direct_form if in_place else _direct_form(helper, flags)}
    exec(compile(source, f"<batched {helper.__name__}>", "exec"), scope)
    python = scope[label]
    python.__doc__ = f"`{helper.__name__}` of each example (batched arguments: {flags})."
    python.__module__ = __name__
    # another process (a Dask worker) makes it again from this recipe: pickling the
    # function by value would drop its overload
    python.__secant_rebuild__ = (over_examples, (helper, flags, in_place))
    overload(python)(scope["typer"])
    _OVER_EXAMPLES[key] = python
    for hook in ON_MADE if not in_place else ():
        hook(helper, flags, python)
    return python


_OVER_EXAMPLES: dict = {}
DIRECT_FORMS: dict = {}     # (helper, flags) -> chooser of a loop-free form (example_forms)


def _no_direct_form(*types_):
    return None


def _direct_form(helper, flags):
    """The typer's first choice: a loop-free form (`example_forms`) where the argument
    types allow one, looked up when typing (forms register after the loops are made)."""
    def choose(*types_):
        chooser = DIRECT_FORMS.get((helper, flags))
        return chooser(*types_) if chooser is not None else None
    return choose


def store_example(out, k, value):
    """`out[k] = value`: example `k` of a batch made by `batch_empty` from an example
    shaped like `value`."""
    out[k] = value


@overload(store_example)
def _store_example_nb(out, k, value):
    if not isinstance(value, types.Array):
        def scalar(out, k, value):
            out[k] = value
        return scalar
    if value.ndim == 0:
        return lambda out, k, value: store_example(out, k, value[()])

    def impl(out, k, value):
        # element by element: an array assigned to a slice makes Numba compile its
        # shape-mismatch message (str, repr, concatenation: ~20 functions) on first use
        row = out[k]
        if row.shape != value.shape:
            raise ValueError("an example's result is shaped unlike the first example's")
        for index in np.ndindex(value.shape):
            row[index] = value[index]
    return impl
# called as hook(helper, flags, made) for each value-returning helper over_examples makes:
# transformer.primitives registers the derivative rules of `made` there
ON_MADE: list = []


def _over_examples_source(label: str, flags: tuple, in_place: bool) -> str:
    """The source of `over_examples`' function, and of the typer its overload needs."""
    params = ", ".join(f"a{i}" for i in range(len(flags)))
    first = _first_batched([f"a{i}" for i in range(len(flags))], flags)

    def args_at(index):
        return ", ".join(_example_of(f"a{i}", f, index) for i, f in enumerate(flags))

    if in_place:
        body = (f"    for k in range({first}.shape[0]):\n"
                f"        helper({args_at('k')})\n")
    else:
        body = (f"    first = helper({args_at(0)})\n"
                f"    out = batch_empty({first}.shape[0], first)\n"
                f"    store_example(out, 0, first)\n"
                f"    for k in range(1, {first}.shape[0]):\n"
                f"        store_example(out, k, helper({args_at('k')}))\n"
                f"    return out\n")
    return (f"def {label}({params}):\n{body}"
            f"def typer({params}):\n    return direct({params}) or {label}\n")


def _example_of(value: str, flag, index) -> str:
    """The text of example `index` of the argument `value` flagged `flag`."""
    if isinstance(flag, tuple):
        items = [_example_of(f"{value}[{i}]", f, index) for i, f in enumerate(flag)]
        return "(" + "".join(f"{item}, " for item in items) + ")"
    return f"{value}[{index}]" if flag else value


def _first_batched(values: list, flags) -> str:
    """The text of the first batched array among `values` (items of tuples included)."""
    for value, flag in zip(values, flags):
        if isinstance(flag, tuple):
            if _any_batched(flag):
                return _first_batched([f"{value}[{i}]" for i in range(len(flag))], flag)
        elif flag:
            return value
    raise ValueError("over_examples needs a batched argument")


def _any_batched(flag) -> bool:
    return any(map(_any_batched, flag)) if isinstance(flag, tuple) else bool(flag)


def _grad_left(g, a, b):
    """Per example `matmul_grad_left(g[k], a, b[k])`: for a matrix times a vector, the
    outer product of each example's `g` and `b`, written once into the batch."""
    if np.ndim(a) == 2 and np.ndim(b) == 2:
        return outer_both(g, b)
    return over_examples(_runtime().matmul_grad_left, (True, False, True))(g, a, b)


def _grad_left_fixed(g, a, b):
    """Per example `matmul_grad_left(g[k], a, b)` with `b` shared."""
    if np.ndim(a) == 2 and np.ndim(b) == 1:
        return outer_left(g, b)
    return over_examples(_runtime().matmul_grad_left, (True, False, False))(g, a, b)


def _grad_right(g, a, b):
    """Per example `matmul_grad_right(g[k], a, b[k])`: `a.T @ g[k]` for every example is
    one matrix product `g @ a`."""
    if np.ndim(a) == 2 and np.ndim(g) == 2:
        return g @ a
    return over_examples(_runtime().matmul_grad_right, (True, False, True))(g, a, b)


@overload(_grad_left)
def _grad_left_nb(g, a, b):
    if _ndim(a) == 2 and _ndim(b) == 2:
        return lambda g, a, b: outer_both(g, b)
    fallback = over_examples(_runtime().matmul_grad_left, (True, False, True))
    return lambda g, a, b: fallback(g, a, b)


@overload(_grad_left_fixed)
def _grad_left_fixed_nb(g, a, b):
    if _ndim(a) == 2 and _ndim(b) == 1:
        return lambda g, a, b: outer_left(g, b)
    fallback = over_examples(_runtime().matmul_grad_left, (True, False, False))
    return lambda g, a, b: fallback(g, a, b)


@overload(_grad_right)
def _grad_right_nb(g, a, b):
    common = _mixed_floats(g, a)          # np.dot refuses mixed float types
    if common is not None:
        return lambda g, a, b: _grad_right(g.astype(common), a.astype(common), b)
    if _ndim(a) == 2 and _ndim(g) == 2 and _numpy_product(g, a) is not None:
        product = _numpy_product(g, a)
        return lambda g, a, b: product(contiguous(g), contiguous(a), np.bool_(False))
    if _ndim(a) == 2 and _ndim(g) == 2:
        return lambda g, a, b: np.dot(contiguous(g), contiguous(a))
    fallback = over_examples(_runtime().matmul_grad_right, (True, False, True))
    return lambda g, a, b: fallback(g, a, b)


def _runtime():
    from transformer import runtime
    return runtime


def unbroadcast_examples(g, x):
    """Per example `unbroadcast(g[k], x[k])`; `g` itself when the shapes already agree."""
    if np.shape(g) == np.shape(x):
        return g
    return over_examples(_runtime().unbroadcast, (True, True))(g, x)


def unbroadcast_to_shared(g, x):
    """Per example `unbroadcast(g[k], x)` for an unbatched `x`."""
    if np.shape(g)[1:] == np.shape(x):
        return g
    return over_examples(_runtime().unbroadcast, (True, False))(g, x)


def _unbroadcast_nb(g, x, batched_x: bool):
    fallback = over_examples(_runtime().unbroadcast, (True, batched_x))
    rank = _ndim(x) if batched_x else _ndim(x) + 1
    same_dtype = isinstance(g, types.Array) and isinstance(x, types.Array) and \
        g.dtype == x.dtype
    if not (isinstance(g, types.Array) and g.ndim == rank and same_dtype and g.layout == "C"):
        return lambda g, x: fallback(g, x)
    skip = 0 if batched_x else 1
    dtype = as_dtype(g.dtype).type
    # examples of rank 1 or 2 fold by direct loops, as `unbroadcast` folds one example: the
    # per-example loop (never run when the shapes agree) costs ~0.5 s of compile per call
    if rank == 2:
        def vectors(g, x):
            if g.shape[skip:] == x.shape:
                return g
            n = x.shape[-1]
            out = zeros_array((g.shape[0], n), dtype)
            for k in range(g.shape[0]):
                for i in range(g.shape[1]):
                    out[k, i % n] += g[k, i]
            return out
        return vectors
    if rank == 3:
        def matrices(g, x):
            if g.shape[skip:] == x.shape:
                return g
            n0, n1 = x.shape[-2], x.shape[-1]
            out = zeros_array((g.shape[0], n0, n1), dtype)
            for k in range(g.shape[0]):
                for i in range(g.shape[1]):
                    for j in range(g.shape[2]):
                        out[k, i % n0, j % n1] += g[k, i, j]
            return out
        return matrices

    def impl(g, x):
        if g.shape[skip:] == x.shape:
            return g
        return fallback(g, x)
    return impl


@overload(unbroadcast_examples)
def _unbroadcast_examples_nb(g, x):
    return _unbroadcast_nb(g, x, True)


@overload(unbroadcast_to_shared)
def _unbroadcast_to_shared_nb(g, x):
    return _unbroadcast_nb(g, x, False)


def update_examples_in_place(target, value):
    """`update_in_place` of every example: an example that is an array (the batched
    `target` has more than the batch axis) is written in place, a number is rebound.

    Compiled, rebound numbers keep `target`'s dtype when `value`'s is of the same kind
    (float32 `s *= 1.5` stays float32, as NumPy keeps it for a Python number; Numba would
    make it float64, and a loop rebinding `s` could then not be typed)."""
    if np.ndim(target) <= 1:
        return value
    target[...] = value
    return target


@overload(update_examples_in_place)
def _update_examples_in_place_nb(target, value):
    if target.ndim <= 1:
        if isinstance(value, types.Array) and value.dtype != target.dtype and \
                np.can_cast(as_dtype(value.dtype), as_dtype(target.dtype), "same_kind"):
            return lambda target, value: value.astype(target.dtype)
        return lambda target, value: value

    def impl(target, value):
        target[...] = value
        return target
    return impl


def example_values(x):
    """A batched read `a[:, i]` as each example's `a[i]` is: a number when the examples'
    values are numbers (`x` has only the batch axis), so a copy that a later write into
    `a` does not change; a view when they are arrays, as NumPy's `a[i]` is a view."""
    if isinstance(x, np.ndarray) and x.ndim <= 1:
        return x.copy()
    return x


@overload(example_values)
def _example_values_nb(x):
    if isinstance(x, types.Array) and x.ndim <= 1:
        return lambda x: x.copy()
    return lambda x: x


# ====================================================================== derivatives
# Adjoint and tangent templates for the helpers above, so that generated batched code can
# itself be differentiated: grad of a function that calls a vmapped function, jvp of a
# vmap. (Template language: `transformer.templates`.)

def spread_examples(g, x):
    """Each example's scalar `g[k]` repeated over the shape of example `x[k]`."""
    return np.broadcast_to(align_batched(g, x), np.shape(x)).copy()


@overload(spread_examples)
def _spread_examples_nb(g, x):
    def impl(g, x):
        out = empty_array(x.shape, g.dtype)
        for k in range(x.shape[0]):
            out[k] = g[k]
        return out
    return impl


def spread_mean(g, x):
    """The adjoint of `mean_examples`: `g[k]` spread over example `k`, divided by its size."""
    count = np.size(x) // np.shape(x)[0]
    return spread_examples(g, x) / np.asarray(count, dtype=np.asarray(g).dtype)


@overload(spread_mean)
def _spread_mean_nb(g, x):
    def impl(g, x):
        return spread_examples(g, x) / (x.size // x.shape[0])
    return impl


def spread_batch_mean(g, x):
    """The adjoint of `pmean` (`mean_batch`): `g / size` for every example."""
    return broadcast_batch(g, np.shape(x)[0]) / np.shape(x)[0]


@overload(spread_batch_mean)
def _spread_batch_mean_nb(g, x):
    return lambda g, x: broadcast_batch(g, x.shape[0]) / x.shape[0]


def identity_batch_grad(g, d, basis):
    """The adjoint of `identity_batch(d, basis)` (the batch `e_k * d`): the sum over `k` of
    `e_k * g[k]`, summed down to the shape of `d`."""
    g = np.asarray(g)
    n = int(np.size(basis))
    pad = (1,) * (g.ndim - 1 - np.ndim(basis))
    units = np.eye(n, dtype=g.dtype).reshape((n,) + pad + np.shape(basis))
    return _runtime().unbroadcast(np.sum(units * g, axis=0), d)


@overload(identity_batch_grad)
def _identity_batch_grad_nb(g, d, basis):
    unbroadcast = _runtime().unbroadcast
    if not isinstance(basis, types.Array):           # one basis vector: g[0] is all of it
        return lambda g, d, basis: unbroadcast(g[0], d)

    def impl(g, d, basis):
        total = zeros_array(g.shape[1:], g.dtype)
        unit = zeros_array(basis.size, g.dtype)
        for k in range(basis.size):
            unit[k] = 1.0
            total += unit.reshape(basis.shape) * g[k]
            unit[k] = 0.0
        return unbroadcast(total, d)
    return impl


def identity_batch_spread(t, g, basis):
    """The adjoint of `identity_batch_grad(g, v, basis)`: the batch `e_k * t` for every
    unit vector `e_k`, with `t` broadcast to each example of `g` (shaped like `g`)."""
    example = np.broadcast_to(np.asarray(t), np.shape(g)[1:])
    return np.broadcast_to(identity_batch(example, basis), np.shape(g)).copy()


@overload(identity_batch_spread)
def _identity_batch_spread_nb(t, g, basis):
    broadcast_like = _runtime().broadcast_like
    return lambda t, g, basis: identity_batch(broadcast_like(t, g[0]), basis)


@register_jitable
def _shared_index(index, k):
    return index


@register_jitable
def _own_index(index, k):
    return index[k]


def _scatter_examples(index_of, name_: str, doc: str):
    """`g[k]` added into zeros shaped like `x` at `index_of(index, k)`, for each example
    `k`: the adjoint of a gather from each example."""
    def python(g, x, index):
        out = np.zeros(np.shape(x), np.asarray(g).dtype)
        for k in range(np.shape(x)[0]):
            np.add.at(out[k], index_of(index, k), g[k])
        return out
    python.__name__ = python.__qualname__ = name_
    python.__doc__ = doc

    @overload(python)
    def _nb(g, x, index):
        scatter = _runtime().scatter_add

        def impl(g, x, index):
            out = zeros_array(x.shape, g.dtype)
            for k in range(x.shape[0]):
                scatter(out[k], index_of(index, k), g[k])
            return out
        return impl
    return python


index_examples_grad = _scatter_examples(
    _shared_index, "index_examples_grad",
    "The adjoint of `index_examples(x, index)`: `g` added into zeros shaped like `x`.")
take_batched_grad = _scatter_examples(
    _own_index, "take_batched_grad",
    "The adjoint of `take_batched(x, index)`: each example's `g` added at its index.")

