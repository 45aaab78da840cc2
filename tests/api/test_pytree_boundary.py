"""One pytree boundary: programs x containers x transformations, against finite differences.

Each case is a loss written the way JAX users write it (a dict read by constant keys,
`W, b = params`, `for W, b in layers:`, attribute reads on a namedtuple or a registered
dataclass, a list of layer dicts), called with parameters in that container. Every
transformation must give the value finite differences (plain NumPy over the raveled tree)
give, in JAX's structure; with JAX installed, the structure and values are also compared
with JAX's on the same program. The full sweep is `slow`; a representative subset runs by
default. Compiled functions are shared: each jitted transformation of a case is built once.
"""
from __future__ import annotations

import collections
import dataclasses
import functools

import numpy as np
import pytest

from gradcheck import central_differences
from tree_checks import (assert_tree_close, hessian_matrix, stacked, tree_fd_grad,
                         tree_fd_hessian)
from transformer import (TransformError, grad, hessian, jacfwd, jacrev, jit, jvp, tree_util,
                         value_and_grad, vjp, vmap)

# ---------------------------------------------------------------- programs


def loss_dict(p, x):
    h = np.tanh(x @ p["W"] + p["b"])
    return np.sum(h * h)


def loss_unpack(params, x):
    W, b = params
    h = np.tanh(x @ W + b)
    return np.sum(h * h)


def loss_layers(layers, x):
    h = x
    for W, b in layers:
        h = np.tanh(h @ W + b)
    return np.sum(h * h)


def loss_attrs(p, x):
    h = np.tanh(x @ p.W + p.b)
    return np.sum(h * h)


def loss_layer_dicts(layers, x):
    h = x
    for layer in layers:
        h = np.tanh(h @ layer["W"] + layer["b"])
    return np.sum(h * h)


def loss_nested(p, x):
    h = np.tanh(x @ p["dense"]["W"] + p["dense"]["b"])
    return np.sum(h * h) * p["scale"]


Params = collections.namedtuple("Params", "W b")


@tree_util.register_dataclass
@dataclasses.dataclass
class Dense:
    W: np.ndarray
    b: np.ndarray


# ---------------------------------------------------------------- containers

RNG = np.random.default_rng(7)
W1, B1 = RNG.standard_normal((3, 2)) * 0.5, RNG.standard_normal(2) * 0.5
W2, B2 = RNG.standard_normal((2, 2)) * 0.5, RNG.standard_normal(2) * 0.5
X = RNG.standard_normal(3)
XS = RNG.standard_normal((4, 3))

CASES = {
    "dict": (loss_dict, {"W": W1, "b": B1}),
    "tuple": (loss_unpack, (W1, B1)),
    "list": (loss_unpack, [W1, B1]),
    "layers": (loss_layers, [(W1, B1), (W2, B2)]),
    "namedtuple": (loss_attrs, Params(W1, B1)),
    "dataclass": (loss_attrs, Dense(W1, B1)),
    "layer_dicts": (loss_layer_dicts, [{"W": W1, "b": B1}, {"W": W2, "b": B2}]),
    "nested": (loss_nested, {"dense": {"W": W1, "b": B1}, "scale": 1.5}),
}
QUICK = ("dict", "tuple", "layers", "namedtuple")


# ---------------------------------------------------------------- the oracle


def fd_grad(f, params, x):
    return tree_fd_grad(f, (params, x))


def fd_grad_x(f, params, x):
    return central_differences(lambda v: f(params, v), [x], 0)


def fd_hessian(f, params, x, eps=1e-3) -> np.ndarray:
    return tree_fd_hessian(f, (params, x), eps)


# ---------------------------------------------------------------- transformations

def _grad(f, p):
    assert_tree_close(grad(f)(p, X), fd_grad(f, p, X))


def _value_and_grad(f, p):
    value, g = value_and_grad(f)(p, X)
    assert value == pytest.approx(f(p, X), rel=1e-12)
    assert_tree_close(g, fd_grad(f, p, X))


def _argnums(f, p):
    gp, gx = grad(f, argnums=(0, 1))(p, X)
    assert_tree_close(gp, fd_grad(f, p, X))
    np.testing.assert_allclose(gx, fd_grad_x(f, p, X), rtol=1e-5, atol=1e-6)


def _vjp(f, p):
    out, pullback = vjp(f, p, X)
    assert out == pytest.approx(f(p, X), rel=1e-12)
    gp, gx = pullback(2.0)
    assert_tree_close(gp, tree_util.tree_map(lambda g: 2.0 * g, fd_grad(f, p, X)))
    np.testing.assert_allclose(gx, 2.0 * fd_grad_x(f, p, X), rtol=1e-5, atol=1e-6)


def _jvp(f, p):
    tangent = tree_util.tree_map(lambda leaf: np.full(np.shape(leaf), 0.3), p)
    tx = np.linspace(-1.0, 1.0, X.size)
    out, dout = jvp(f, (p, X), (tangent, tx))
    assert out == pytest.approx(f(p, X), rel=1e-12)
    flat_g = tree_util.ravel_pytree(fd_grad(f, p, X))[0]
    want = 0.3 * np.sum(flat_g) + fd_grad_x(f, p, X) @ tx
    assert dout == pytest.approx(want, rel=1e-5, abs=1e-6)


def _jacfwd(f, p):
    assert_tree_close(jacfwd(f)(p, X), fd_grad(f, p, X))


def _jacrev(f, p):
    assert_tree_close(jacrev(f)(p, X), fd_grad(f, p, X))


def _hessian(f, p):
    got = hessian(f)(p, X)
    np.testing.assert_allclose(hessian_matrix(got, p), fd_hessian(f, p, X), rtol=1e-4,
                               atol=1e-5)


def _vmap(f, p):
    got = vmap(f, in_axes=(None, 0))(p, XS)
    np.testing.assert_allclose(got, [f(p, x) for x in XS], rtol=1e-12)


def _vmap_grad(f, p):
    got = vmap(grad(f), in_axes=(None, 0))(p, XS)
    assert_tree_close(got, stacked([fd_grad(f, p, x) for x in XS]))


@functools.lru_cache(maxsize=None)
def _jitted(f, how):
    return jit(f) if how == "jit" else jit(grad(f))


def _jit(f, p):
    assert _jitted(f, "jit")(p, X) == pytest.approx(f(p, X), rel=1e-12)


def _jit_grad(f, p):
    assert_tree_close(_jitted(f, "jit_grad")(p, X), fd_grad(f, p, X))


TRANSFORMS = {"grad": _grad, "value_and_grad": _value_and_grad, "argnums": _argnums,
              "vjp": _vjp, "jvp": _jvp, "jacfwd": _jacfwd, "jacrev": _jacrev,
              "hessian": _hessian, "vmap": _vmap, "vmap_grad": _vmap_grad, "jit": _jit,
              "jit_grad": _jit_grad}
UNCOMPILED = [t for t in TRANSFORMS if not t.startswith("jit")]


def _cells(cases, transforms, slow):
    marks = (pytest.mark.slow,) if slow else ()
    return [pytest.param(c, t, marks=marks, id=f"{c}-{t}") for c in cases for t in transforms]


QUICK_CELLS = _cells(QUICK, UNCOMPILED, False) + _cells(("dict", "tuple"), ("jit", "jit_grad"),
                                                        False)
SLOW_CELLS = [cell for cell in _cells(CASES, TRANSFORMS, True)
              if cell.id not in {q.id for q in QUICK_CELLS}]


@pytest.mark.parametrize("case, transform", QUICK_CELLS + SLOW_CELLS)
def test_transformation_of_container_program_matches_finite_differences(case, transform):
    f, params = CASES[case]
    TRANSFORMS[transform](f, params)


# ---------------------------------------------------------------- has_aux


def loss_with_aux(p, x):
    h = np.tanh(x @ p["W"] + p["b"])
    return np.sum(h * h), {"h": h, "mean": np.mean(h)}


def test_grad_with_dict_aux_returns_the_aux_tree():
    p = {"W": W1, "b": B1}
    g, aux = grad(loss_with_aux, has_aux=True)(p, X)
    assert_tree_close(g, fd_grad(lambda q, x: loss_with_aux(q, x)[0], p, X))
    assert_tree_close(aux, loss_with_aux(p, X)[1], rtol=1e-12)


@pytest.mark.slow
def test_jit_grad_with_dict_aux_returns_the_aux_tree():
    p = {"W": W1, "b": B1}
    g, aux = jit(grad(loss_with_aux, has_aux=True))(p, X)
    assert_tree_close(g, fd_grad(lambda q, x: loss_with_aux(q, x)[0], p, X))
    assert_tree_close(aux, loss_with_aux(p, X)[1], rtol=1e-12)


# ---------------------------------------------------------------- container outputs


def dict_output(p, x):
    h = np.tanh(x @ p["W"] + p["b"])
    return {"h": h, "total": np.sum(h)}


def test_dict_output_under_jit_vmap_and_jacfwd():
    p = {"W": W1, "b": B1}
    assert_tree_close(jit(dict_output, backend="python")(p, X), dict_output(p, X), rtol=1e-12)
    assert_tree_close(vmap(dict_output, in_axes=(None, 0))(p, XS),
                      stacked([dict_output(p, x) for x in XS]), rtol=1e-12)
    jac = jacfwd(dict_output, argnums=1)(p, X)
    eps, want = 1e-6, []
    for e in np.eye(X.size):
        up, down = dict_output(p, X + eps * e), dict_output(p, X - eps * e)
        want.append(tree_util.tree_map(lambda u, d: (u - d) / (2 * eps), up, down))
    assert_tree_close(jac, tree_util.tree_map(lambda *cols: np.stack(cols, -1), *want))


# ---------------------------------------------------------------- against JAX


_JAX_REGISTERED: set = set()


@pytest.mark.slow
@pytest.mark.parametrize("case", list(CASES))
def test_gradient_and_hessian_structure_match_jax(case):
    jax = pytest.importorskip("jax")
    jnp = pytest.importorskip("jax.numpy")
    jax.config.update("jax_enable_x64", True)
    f, params = CASES[case]
    if case == "dataclass" and Dense not in _JAX_REGISTERED:
        jax.tree_util.register_dataclass(Dense, data_fields=["W", "b"], meta_fields=[])
        _JAX_REGISTERED.add(Dense)
    jax_f = _as_jax(f)
    assert_tree_close(grad(f)(params, X), jax.grad(jax_f)(params, X))
    ours, theirs = hessian(f)(params, X), jax.hessian(jax_f)(params, X)
    assert tree_util.tree_structure(ours) == tree_util.tree_structure(
        jax.tree_util.tree_map(np.asarray, theirs))
    assert_tree_close(ours, theirs, rtol=1e-9, atol=1e-12)
    del jnp


def _as_jax(f):
    """`f` with `np` bound to jax.numpy (the same source, run by JAX)."""
    import types

    import jax.numpy as jnp
    return types.FunctionType(f.__code__, {**f.__globals__, "np": jnp}, f.__name__)


# ---------------------------------------------------------------- what stays refused


def reads_variable_key(p, x, key):
    return np.sum(x @ p[key])


def test_variable_key_read_of_a_dict_is_a_located_error_under_grad():
    with pytest.raises(TransformError, match="constant key") as info:
        grad(reads_variable_key)({"W": W1}, X, "W")
    assert info.value.line.strip() == "return np.sum(x @ p[key])"


def test_value_and_grad_with_aux_rebuilds_value_aux_and_gradient():
    p = {"W": W1, "b": B1}
    (value, aux), g = value_and_grad(loss_with_aux, has_aux=True)(p, X)
    want_value, want_aux = loss_with_aux(p, X)
    assert value == pytest.approx(want_value, rel=1e-12)
    assert_tree_close(aux, want_aux, rtol=1e-12)
    assert_tree_close(g, fd_grad(lambda q, x: loss_with_aux(q, x)[0], p, X))


# ---------------------------------------------------------------- layers indexed at run time


def loss_indexed_layers(layers, x):
    h = x
    for i in range(len(layers)):
        h = np.tanh(h @ layers[i][0])
    return np.sum(h * h)


def test_layers_indexed_at_run_time_run_under_jit_and_are_refused_by_grad():
    layers = [(W2,), (np.eye(2) * 0.7,)]
    x = X[:2]
    got = jit(loss_indexed_layers, backend="python")(layers, x)
    assert got == pytest.approx(loss_indexed_layers(layers, x), rel=1e-12)
    with pytest.raises(TransformError, match="constant index") as info:
        grad(loss_indexed_layers)(layers, x)
    assert info.value.line.strip() == "h = np.tanh(h @ layers[i][0])"
    assert "for W, b in layers" in info.value.hint


def test_jvp_tangent_must_have_the_primal_structure():
    with pytest.raises(TypeError, match="structure of its primal"):
        jvp(loss_dict, ({"W": W1, "b": B1}, X), ({"W": W1}, X))


# ---------------------------------------------------------------- what stays refused


def passes_params_to_numpy(p, x):
    return np.sum(x) + np.sum(p)


def unpacks_a_dict(p, x):
    W, b = p
    return np.sum(x @ W + b)


def unpacks_too_few(params, x):
    W, b, c = params
    return np.sum(x @ W + b)


def breaks_in_layer_loop(layers, x):
    h = x
    for W, b in layers:
        h = np.tanh(h @ W + b)
        if np.sum(h) > 100.0:
            break
    return np.sum(h)


def writes_an_entry(p, x):
    p["W"] = p["W"] * 2.0
    return np.sum(x @ p["W"])


REFUSED = [
    (passes_params_to_numpy, {"W": W1, "b": B1}, "used whole", "return np.sum(x) + np.sum(p)"),
    (unpacks_a_dict, {"W": W1, "b": B1}, "cannot unpack a dict", "W, b = p"),
    (unpacks_too_few, (W1, B1), "cannot unpack 2 entries into 3", "W, b, c = params"),
    (breaks_in_layer_loop, [(W1, B1)], "break and continue", "break"),
    (writes_an_entry, {"W": W1}, "cannot be assigned", 'p["W"] = p["W"] * 2.0'),
]


@pytest.mark.parametrize("how", ["grad", "vmap", "jit"])
@pytest.mark.parametrize("f, params, message, line", REFUSED,
                         ids=[case[0].__name__ for case in REFUSED])
def test_unsupported_container_use_is_a_located_error_under_every_transformation(
        how, f, params, message, line):
    transform = {"grad": grad, "vmap": lambda g: vmap(g, in_axes=(None, 0)),
                 "jit": lambda g: jit(g, backend="python")}[how]
    x = XS if how == "vmap" else X
    with pytest.raises(TransformError, match=message) as info:
        transform(f)(params, x)
    assert info.value.line.strip() == line
    assert info.value.hint


# ---------------------------------------------------------------- mapped containers


@pytest.mark.parametrize("case, in_axes", [
    ("namedtuple", (Params(0, None), None)),
    ("dataclass", (0, None)),
    ("dict", ({"W": 0, "b": None}, None)),
    ("layers", ([(0, None), (None, None)], None)),
])
def test_vmap_over_a_batch_of_parameters_matches_a_loop(case, in_axes):
    f, params = CASES[case]
    axes = tree_util.tree_leaves(in_axes[0], is_leaf=lambda a: a is None) \
        if not isinstance(in_axes[0], int) else [0] * len(tree_util.tree_leaves(params))
    leaves, structure = tree_util.tree_flatten(params)
    batched = [np.stack([leaf * (1.0 + 0.1 * k) for k in range(3)]) if axis == 0 else leaf
               for leaf, axis in zip(leaves, axes)]
    per_example = [tree_util.tree_unflatten(structure, [b[k] if axis == 0 else b
                                                        for b, axis in zip(batched, axes)])
                   for k in range(3)]
    got = vmap(f, in_axes=in_axes)(tree_util.tree_unflatten(structure, batched), X)
    np.testing.assert_allclose(got, [f(p, X) for p in per_example], rtol=1e-12)


def aux_of_arrays(x):
    h = np.tanh(x)
    return np.sum(h * h), {"h": h, "mean": np.mean(h)}


@pytest.mark.slow
def test_jit_grad_with_dict_aux_of_array_arguments():
    x = np.linspace(-1.0, 1.0, 3)
    g, aux = jit(grad(aux_of_arrays, has_aux=True))(x)
    np.testing.assert_allclose(g, central_differences(lambda v: aux_of_arrays(v)[0], [x], 0),
                               rtol=1e-6, atol=1e-8)
    assert_tree_close(aux, aux_of_arrays(x)[1], rtol=1e-12)


def shadows_with_a_loop_variable(p, x):
    total = 0.0
    for p in range(2):
        total = total + p * np.sum(x)
    return total


def test_a_loop_variable_named_like_a_container_argument_is_refused():
    with pytest.raises(TransformError, match="bound again here") as info:
        grad(shadows_with_a_loop_variable, argnums=1)({"W": W1}, X)
    assert info.value.line.strip() == "for p in range(2):"


# ---------------------------------------------------------------- loops over dicts, enumerate


def loss_items(p, x):
    total = 0.0
    for key, W in p.items():
        total = total + np.sum(np.tanh(x @ W)) * len(key)
    return total


def loss_enumerate(layers, x):
    h = x
    for i, (W, b) in enumerate(layers):
        h = np.tanh(h @ W + b) * (i + 1.0)
    return np.sum(h * h)


def loss_values(p, x):
    total = 0.0
    for W in p.values():
        total = total + np.sum(np.sin(x @ W))
    return total


LOOPS = [(loss_items, {"a": W1, "bb": W1 * 0.5}), (loss_enumerate, [(W1, B1), (W2, B2)]),
         (loss_values, {"u": W1, "v": -W1})]


@pytest.mark.parametrize("f, params", LOOPS, ids=[f.__name__ for f, _ in LOOPS])
def test_loops_over_items_values_and_enumerate_unroll_under_grad_and_vmap(f, params):
    assert_tree_close(grad(f)(params, X), fd_grad(f, params, X))
    np.testing.assert_allclose(vmap(f, in_axes=(None, 0))(params, XS),
                               [f(params, x) for x in XS], rtol=1e-12)


# ---------------------------------------------------------------- returning new containers


@tree_util.register_dataclass
@dataclasses.dataclass
class State:
    x: np.ndarray
    v: np.ndarray


def step(state, dt):
    a = -np.sin(state.x)
    return State(state.x + dt * state.v, state.v + dt * a)


def step_pair(p, dt):
    return np.sum(p.W), Params(p.W * dt, b=p.b + dt)


def test_jit_of_a_step_returning_a_new_dataclass_and_a_namedtuple():
    state = State(np.array([0.1, 0.2]), np.array([1.0, -1.0]))
    got = jit(step)(state, 0.1)
    assert isinstance(got, State)
    assert_tree_close(got, step(state, 0.1), rtol=1e-12)
    total, params = jit(step_pair, backend="python")(Params(W1, B1), 0.5)
    assert total == pytest.approx(np.sum(W1))
    assert_tree_close(params, Params(W1 * 0.5, B1 + 0.5), rtol=1e-12)


# ---------------------------------------------------------------- tree_map inside


def halved(a):
    return 0.5 * a


def loss_tree_map(p, x):
    q = tree_util.tree_map(halved, p)
    h = np.tanh(x @ q["W"] + q["b"])
    return np.sum(h * h)


def test_tree_map_inside_a_loss_maps_each_leaf_under_grad_and_vmap():
    p = {"W": W1, "b": B1}
    assert_tree_close(grad(loss_tree_map)(p, X), fd_grad(loss_tree_map, p, X))
    np.testing.assert_allclose(vmap(loss_tree_map, in_axes=(None, 0))(p, XS),
                               [loss_tree_map(p, x) for x in XS], rtol=1e-12)
