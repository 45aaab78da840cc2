"""Parameters passed on: a container handed to the user's own helper inside a loss.

`def loss(params, x, y): return np.sum((predict(params, x) - y) ** 2)` with
`def predict(params, x): ... params["W"] ...` is how JAX users write a model. Each form
below (a dict, a list of layer dicts walked by a helper that calls another helper, a
tuple unpacked in the helper, a namedtuple passed by keyword, a nested dict whose inner
dict is passed on, a dict passed to the cell of a recurrence, or read in the recurrence
itself) goes through grad, value_and_grad, vmap(grad), jacfwd, hessian and jit
of each, against central differences over the raveled parameters (plain NumPy), and
against JAX on the same source where JAX is installed. The quick set compiles one function
(jit(grad) of the dict form); the jit sweep is `slow`.
"""
from __future__ import annotations

import collections
import functools
import types

import numpy as np
import pytest

from gradcheck import central_differences
from tree_checks import (assert_tree_close, hessian_matrix, stacked, tree_fd_grad,
                         tree_fd_hessian)
from transformer import (TransformError, grad, hessian, jacfwd, jit, lax, value_and_grad, vmap)

# ---------------------------------------------------------------- programs

Affine = collections.namedtuple("Affine", "W b")


def predict(params, x):
    return np.tanh(x @ params["W"] + params["b"])


def loss_dict(params, x, y):
    return np.sum((predict(params, x) - y) ** 2)


def dense(layer, h):
    return np.tanh(h @ layer["W"] + layer["b"])


def mlp(layers, h):
    for layer in layers:
        h = dense(layer, h)
    return h


def loss_layer_dicts(layers, x, y):
    return np.sum((mlp(layers, x) - y) ** 2)


def affine(p, x):
    W, b = p
    return x @ W + b


def loss_tuple(p, x, y):
    out = affine(p, x)
    return np.sum((np.sin(out) - y) ** 2) + 0.1 * np.sum(affine(p, y[:1] * x) ** 2)


def predict_attrs(x, *, p, scale=1.0):
    return scale * np.tanh(x @ p.W + p.b)


def loss_namedtuple(p, x, y):
    return np.sum((predict_attrs(x, p=p, scale=0.5) - y) ** 2)


def encode(p, x):
    return np.tanh(x @ p["W"] + p["b"])


def loss_nested(params, x, y):
    z = encode(params["enc"], x)
    return params["scale"] * np.sum((z - y) ** 2)


def cell(params, h, u):
    return np.tanh(params["W"] @ h + params["U"] * u + params["b"])


def loss_recurrence(params, x, y):
    h = np.zeros(2)
    for t in range(x.shape[0]):
        h = cell(params, h, x[t])
    return np.sum((h - y) ** 2)


def loss_recurrence_inline(params, x, y):
    h = np.zeros(2)
    for t in range(x.shape[0]):
        h = np.tanh(params["W"] @ h + params["U"] * x[t] + params["b"])
    return np.sum((h - y) ** 2)


RNG = np.random.default_rng(13)
W1, B1 = RNG.standard_normal((3, 2)) * 0.5, RNG.standard_normal(2) * 0.5
W0, B0 = RNG.standard_normal((3, 3)) * 0.5, RNG.standard_normal(3) * 0.5
X, Y = RNG.standard_normal(3), RNG.standard_normal(2)
XS, YS = RNG.standard_normal((4, 3)), RNG.standard_normal((4, 2))

CASES = {
    "dict": (loss_dict, {"W": W1, "b": B1}),
    "layer_dicts": (loss_layer_dicts, [{"W": W0, "b": B0}, {"W": W1, "b": B1}]),
    "tuple": (loss_tuple, (W1, B1)),
    "namedtuple": (loss_namedtuple, Affine(W1, B1)),
    "nested": (loss_nested, {"enc": {"W": W1, "b": B1}, "scale": 1.5}),
    "recurrence": (loss_recurrence, {"W": W0[:2, :2], "U": B0[:2], "b": B1}),
    "recurrence_inline": (loss_recurrence_inline, {"W": W0[:2, :2], "U": B0[:2], "b": B1}),
}

# ---------------------------------------------------------------- the oracle


def fd_grad(f, params, x, y):
    return tree_fd_grad(f, (params, x, y))


def fd_hessian(f, params, x, y, eps=1e-3) -> np.ndarray:
    return tree_fd_hessian(f, (params, x, y), eps)


# ---------------------------------------------------------------- transformations

def _wrap(how, transform):
    return jit(transform) if how == "jit" else transform


@functools.lru_cache(maxsize=None)
def _transformed(case, transform, how):
    """Each transformation of a case is built (and, under jit, compiled) once."""
    f = CASES[case][0]
    made = {"grad": lambda: grad(f), "value_and_grad": lambda: value_and_grad(f),
            "vmap_grad": lambda: vmap(grad(f), in_axes=(None, 0, 0)),
            "jacfwd": lambda: jacfwd(f), "hessian": lambda: hessian(f), "plain": lambda: f}
    return _wrap(how, made[transform]())


def check(case, transform, how):
    f, p = CASES[case]
    g = _transformed(case, transform, how)
    if transform in ("grad", "jacfwd"):
        assert_tree_close(g(p, X, Y), fd_grad(f, p, X, Y))
    elif transform == "value_and_grad":
        value, gradient = g(p, X, Y)
        assert value == pytest.approx(f(p, X, Y), rel=1e-12)
        assert_tree_close(gradient, fd_grad(f, p, X, Y))
    elif transform == "vmap_grad":
        assert_tree_close(g(p, XS, YS), stacked([fd_grad(f, p, x, y) for x, y in zip(XS, YS)]))
    elif transform == "hessian":
        np.testing.assert_allclose(hessian_matrix(g(p, X, Y), p), fd_hessian(f, p, X, Y),
                                   rtol=1e-4, atol=1e-5)
    else:
        assert g(p, X, Y) == pytest.approx(f(p, X, Y), rel=1e-12)


TRANSFORMS = ("grad", "value_and_grad", "vmap_grad", "jacfwd", "hessian")


@pytest.mark.parametrize("transform", TRANSFORMS)
@pytest.mark.parametrize("case", list(CASES))
def test_container_passed_to_helper_matches_finite_differences(case, transform):
    check(case, transform, "python")


@pytest.mark.slow
def test_jit_grad_of_dict_passed_to_helper_matches_finite_differences():
    check("dict", "grad", "jit")


# Under jit, a checkerboard of the grid (each container under three of the six, each
# transformation over every other container; a hessian compile is up to a minute on CI's
# machine); the Python-mode tests above run every cell.
JIT_CELLS = [(c, t) for i, c in enumerate(CASES)
             for j, t in enumerate(TRANSFORMS + ("plain",))
             if (i + j) % 2 == 0 and (c, t) != ("dict", "grad")]


@pytest.mark.slow
@pytest.mark.parametrize("case, transform", JIT_CELLS, ids=[f"{c}-{t}" for c, t in JIT_CELLS])
def test_jit_of_container_passed_to_helper_matches_finite_differences(case, transform):
    check(case, transform, "jit")


# ---------------------------------------------------------------- against JAX


def _as_jax(jnp):
    """This module's programs with `np` bound to jax.numpy: the same source, run by JAX
    (helpers resolve to their JAX twins through the shared globals)."""
    space = dict(globals(), np=jnp)
    for value in list(space.values()):
        if isinstance(value, types.FunctionType) and value.__module__ == __name__:
            space[value.__name__] = types.FunctionType(value.__code__, space, value.__name__,
                                                       value.__defaults__)
            space[value.__name__].__kwdefaults__ = value.__kwdefaults__
    return space


@pytest.mark.slow
@pytest.mark.parametrize("case", [pytest.param(c, marks=() if c == "dict" else pytest.mark.slow)
                                  for c in CASES])
def test_gradient_hessian_and_per_example_gradient_match_jax(case):
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    f, p = CASES[case]
    jax_f = _as_jax(jax.numpy)[f.__name__]
    assert_tree_close(grad(f)(p, X, Y), jax.grad(jax_f)(p, X, Y), rtol=1e-10, atol=1e-12)
    assert_tree_close(hessian(f)(p, X, Y), jax.hessian(jax_f)(p, X, Y), rtol=1e-9,
                      atol=1e-12)
    per_example = jax.vmap(jax.grad(jax_f), in_axes=(None, 0, 0))(p, XS, YS)
    assert_tree_close(vmap(grad(f), in_axes=(None, 0, 0))(p, XS, YS), per_example,
                      rtol=1e-10, atol=1e-12)


# ---------------------------------------------------------------- what stays refused


def reads_by_variable_key(p, key, x):
    return np.sum(x @ p[key])


def loss_reading_by_variable_key(p, x, y):
    return reads_by_variable_key(p, "W", x) * np.sum(y)


def depth(p, x, n):
    if n == 0:
        return np.sum(x @ p["W"])
    return depth(p, x, n - 1)


def loss_recursing(p, x, y):
    return depth(p, x, 2) * np.sum(y)


@pytest.mark.parametrize("how", ["grad", "vmap_grad", "jit"])
@pytest.mark.parametrize("f, message, line", [
    (loss_reading_by_variable_key, "constant key", "return np.sum(x @ p[key])"),
    (loss_recursing, "passes a container argument on to itself",
     "return depth(p, x, n - 1)"),
])
def test_unsupported_use_inside_a_helper_is_located_in_the_helper(how, f, message, line):
    transform = {"grad": grad, "vmap_grad": lambda g: vmap(grad(g), in_axes=(None, 0, 0)),
                 "jit": lambda g: jit(g, backend="python")}[how]
    x, y = (XS, YS) if how == "vmap_grad" else (X, Y)
    with pytest.raises(TransformError, match=message) as info:
        transform(f)({"W": W1}, x, y)
    assert info.value.line.strip() == line
    assert info.value.hint


# ---------------------------------------------------------------- shapes that change in a loop


def accumulates_from_a_number(p, x, y):
    e = 0.0
    for t in range(x.shape[0]):
        d = p["W"] @ x[:2] * x[t] - y
        e = e + d * d
    return np.sum(e)


def accumulates_from_zeros(p, x, y):
    e = np.zeros(2)
    for t in range(x.shape[0]):
        d = p["W"] @ x[:2] * x[t] - y
        e = e + d * d
    return np.sum(e)


@pytest.mark.parametrize("how", ["grad", "vmap_grad"])
def test_accumulator_changing_shape_in_a_loop_is_located_and_its_hint_works(how):
    p = {"W": W1[:2]}
    transform = grad if how == "grad" else (lambda g: vmap(grad(g), in_axes=(None, 0, 0)))
    x, y = (XS, YS) if how == "vmap_grad" else (X, Y)
    with pytest.raises(ValueError, match="changed shape") as info:
        transform(accumulates_from_a_number)(p, x, y)
    text = str(info.value)
    assert f"{__file__}:" in text and "e = e + d * d" in text and "np.zeros" in text
    got = transform(accumulates_from_zeros)(p, x, y)
    want = fd_grad(accumulates_from_zeros, p, X, Y) if how == "grad" else \
        stacked([fd_grad(accumulates_from_zeros, p, a, b) for a, b in zip(XS, YS)])
    assert_tree_close(got, want)


# ---------------------------------------------------------------- a helper's returned tuple


def decay(c, u):
    return c * 0.8 + u * u, c * u


def unpacks_helper_tuples(p, x, y):
    c = p["c0"]
    s = 0.0
    for t in range(x.shape[0]):
        c, z = decay(c, x[t] * p["a"])
        s = s + z
    return s + c * np.sum(y)


def test_grad_through_a_loop_unpacking_a_helper_tuple_matches_finite_differences():
    p = {"c0": 0.4, "a": 1.3}
    assert_tree_close(grad(unpacks_helper_tuples)(p, X, Y),
                      fd_grad(unpacks_helper_tuples, p, X, Y))


@pytest.mark.slow
def test_jit_grad_through_a_loop_unpacking_a_helper_tuple_matches_finite_differences():
    # the item read from the tuple is recorded, not the tuple (Numba tapes no tuples)
    p = {"c0": 0.4, "a": 1.3}
    assert_tree_close(jit(grad(unpacks_helper_tuples))(p, X, Y),
                      fd_grad(unpacks_helper_tuples, p, X, Y))


# ---------------------------------------------------------------- lax.scan outputs


def doubled_carry(c, u):
    return c + u, 2 * c


def scan_ys(x):
    _, ys = lax.scan(doubled_carry, 0, x)      # the first y is the integer 0
    return ys


def scan_loss(x):
    return np.sum(scan_ys(x) * x)


@pytest.mark.parametrize("how", ["python", pytest.param("jit", marks=pytest.mark.slow)])
def test_scan_ys_keep_float64_when_the_first_y_is_an_integer(how):
    run = jit(scan_ys) if how == "jit" else jit(scan_ys, backend="python")
    got = run(X)
    want = 2 * np.concatenate([[0.0], np.cumsum(X)[:-1]])
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, want, rtol=1e-12)
    np.testing.assert_allclose(grad(scan_loss)(X), central_differences(scan_loss, [X], 0),
                               rtol=1e-6, atol=1e-8)
