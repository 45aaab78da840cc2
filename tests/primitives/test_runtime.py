"""Runtime helpers as NumPy and under Numba, and emitted rule code compiled in nopython mode.

Numba compiles are few and shared: one function exercises many helpers, and each compiled
program covers many rules; float32 inputs check that gradients stay float32.
"""

from __future__ import annotations

import os

import gast
import numba
import numpy as np
import pytest
from test_adjoint_rules import check_vjp, make_vjp
from test_tangent_rules import check_jvp, make_jvp

from transformer import runtime
from transformer.rules.lowering import needs_lowering, numba_equivalent
from transformer.runtime import (
    axis_count,
    broadcast_like,
    broadcast_reduced,
    cast_like,
    cumprod,
    cumsum,
    cumsum_adjoint,
    matmul_grad_left,
    matmul_grad_left_add,
    matmul_grad_right,
    matmul_grad_right_add,
    moveaxis,
    norm,
    reduce_max,
    reduce_mean,
    reduce_min,
    reduce_prod,
    reduce_std,
    reduce_sum,
    reduce_var,
    scatter_add,
    squeeze,
    unbroadcast,
    untranspose,
    zeros_like,
)

os.environ.setdefault("NUMBA_OPT", "0")
numba.core.config.reload_config()

RNG = np.random.default_rng(7)

# ---------------------------------------------------------------- NumPy behaviour


@pytest.mark.parametrize("axis", [None, 0, -1, (0, 2), (2, 1)])
@pytest.mark.parametrize("keepdims", [False, True])
def test_reductions_match_numpy(axis, keepdims):
    x = RNG.standard_normal((3, 4, 5))
    for ours, theirs in [(reduce_sum, np.sum), (reduce_mean, np.mean), (reduce_max, np.max),
                         (reduce_min, np.min), (reduce_prod, np.prod), (reduce_var, np.var),
                         (reduce_std, np.std)]:
        np.testing.assert_allclose(ours(x, axis, keepdims=keepdims),
                                   theirs(x, axis=axis, keepdims=keepdims))
    count = int(np.prod([x.shape[a] for a in np.atleast_1d(
        np.arange(3) if axis is None else axis)]))
    assert axis_count(x, axis) == count


def test_broadcast_reduced_inverts_the_reduced_shape():
    x = RNG.standard_normal((3, 4, 5))
    g = np.sum(x, axis=(0, 2))
    spread = broadcast_reduced(g, x, (0, 2), False)
    assert spread.shape == x.shape
    np.testing.assert_array_equal(spread[1, :, 2], g)
    assert broadcast_reduced(2.0, 3.0) == 2.0


def test_unbroadcast_sums_to_the_shape_of_the_argument():
    g = np.ones((2, 3, 4))
    assert unbroadcast(g, np.zeros((3, 1))).tolist() == [[8.0]] * 3
    assert unbroadcast(g, 1.5) == 24.0 and isinstance(unbroadcast(g, 1.5), float)
    assert unbroadcast(g, np.float32(1.0)).dtype == np.float32


def test_zeros_and_casts_keep_float32():
    x32 = np.ones(3, np.float32)
    assert zeros_like(x32).dtype == np.float32
    assert zeros_like(np.float32(2.0)).dtype == np.float32
    assert zeros_like(3.0) == 0.0 and isinstance(zeros_like(3.0), float)
    assert zeros_like(np.arange(3)).dtype == np.float64
    assert cast_like(0.5, x32).dtype == np.float32
    assert cast_like(np.array([True, False]), x32).dtype == np.float32


def test_scatter_add_accumulates_repeated_indices():
    target = np.zeros(4)
    scatter_add(target, np.array([1, 1, 3]), np.array([1.0, 2.0, 3.0]))
    assert target.tolist() == [0.0, 3.0, 0.0, 3.0]


def test_lowering_table_maps_unsupported_forms_only():
    assert numba_equivalent(np.max) is runtime.reduce_max
    assert numba_equivalent(np.add.at) is runtime.scatter_add
    assert numba_equivalent(np.sin) is None
    assert needs_lowering(np.max, {"axis": None})
    assert not needs_lowering(np.max, {})
    assert not needs_lowering(np.sum, {"axis": None}, 1)
    assert needs_lowering(np.sum, {"keepdims": None})
    assert needs_lowering(np.squeeze, {})
    assert numba_equivalent(gast.MatMult) is runtime.matmul
    assert not needs_lowering(np.sin, {"out": None})


# ---------------------------------------------------------------- helpers under Numba


def helpers(x, m2, idx):
    """Many runtime helpers in one function, compiled once per dtype."""
    acc = zeros_like(x)
    scatter_add(acc, m2, x.ravel()[m2.ravel()])  # Numba lacks x[m2] for a 3-D mask
    rows = zeros_like(x[:, 0, 0])
    scatter_add(rows, idx, cast_like(1.0, x))
    return (
        reduce_sum(x, (0, 2), None, None, True), reduce_max(x, axis=-1),
        reduce_min(x, 1, None, None, True), reduce_mean(x), reduce_prod(x, 0),
        reduce_var(x, 1, None, None, 1, False), reduce_std(x, (1, 2)),
        unbroadcast(x, x[0, :, :1]), unbroadcast(x, x[0, 0, 0]),
        broadcast_like(x[0, 0], x), broadcast_reduced(reduce_sum(x, 1), x, 1, False),
        acc, rows, cumsum(x, 1), cumprod(x[0], -1), cumsum_adjoint(x, x, None),
        moveaxis(x, 0, -1), squeeze(x[:, :1], 1), untranspose(np.transpose(x, (1, 2, 0)),
                                                                (1, 2, 0)),
        norm(x, None, -1, True), axis_count(x, (0, 1)), zeros_like(x[0, 0, 0]),
    )


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.slow
def test_helpers_compile_in_nopython_mode_and_agree_with_numpy(dtype):
    x = RNG.uniform(0.5, 1.5, (3, 4, 5)).astype(dtype)
    m2 = RNG.random((3, 4, 5)) > 0.5
    idx = np.array([0, 2, 2])
    expected = helpers(x.copy(), m2, idx)
    got = numba.njit(helpers)(x.copy(), m2, idx)
    tol = 1e-4 if dtype == np.float32 else 1e-10
    for k, (g, e) in enumerate(zip(got, expected)):
        np.testing.assert_allclose(g, e, rtol=tol, err_msg=f"result {k}")
        if isinstance(e, np.ndarray) and e.dtype.kind == "f":
            assert np.asarray(g).dtype == dtype, f"result {k} is {np.asarray(g).dtype}"


# ---------------------------------------------------------------- emitted code under Numba

ELEMENTWISE_PROGRAM = """
a = np.sin(x)
b = a * y
c = np.sum(b, axis=1)
m = np.max(b, axis=0)
v = np.var(x, axis=0)
s = np.sqrt(v)
w = m + s
p = c[idx]
t = np.exp(p)
e = np.mean(b, axis=-1, keepdims=True)
f = b - e
r = np.tanh(f)
h = r[1:, ::2]
k = np.cumsum(h, axis=1)
y0 = y[0]
q = np.maximum(k, y0)
o1 = np.sum(w)
o2 = np.sum(t)
o3 = np.sum(q)
o4 = o1 + o2
out = o4 + o3
"""

LINALG_PROGRAM = """
at = np.transpose(a)
mm = np.dot(at, a)
u = np.linalg.solve(mm, v)
dt = np.linalg.det(mm)
im = np.linalg.inv(mm)
tr = np.trace(im)
r = np.reshape(im, (9,))
cs = np.cumsum(r)
h = np.concatenate((u, cs))
w = h * h
hs = np.sum(w)
nu = np.linalg.norm(u)
o1 = hs + dt
o2 = tr + nu
pr = a @ u
sp = np.sum(pr)
o3 = o1 + o2
fl = np.flip(a, 1)
tl = np.tile(v, (2, 1))
sw = np.swapaxes(tl, 0, 1)
ex = np.expand_dims(v, 0)
st = np.stack((v, u), 1)
mv = np.moveaxis(st, 0, -1)
tp = np.transpose(fl, (1, 0))
sq = np.squeeze(ex, axis=0)
bt = np.broadcast_to(sq, (2, 3))
wh = np.where(c, mv, bt)
cl = np.clip(wh, -0.5, 0.5)
mn = np.min(cl, axis=0)
pd = np.prod(sw, axis=1)
tq = tp * tp
s1 = np.sum(mn)
s2 = np.sum(pd)
s3 = np.sum(tq)
s4 = s1 + s2
s5 = s4 + s3
rp = np.repeat(a, 2, axis=1)
rf = np.repeat(v, 3)
rs = np.sum(rp)
rt = np.sum(rf)
hv = np.vstack((v, u))
hh = np.hstack((v, u))
hw = np.sum(hv)
hx = np.sum(hh)
hy = hw * hx
bm = np.matmul(t3, a)
bs = np.sum(bm)
s6 = s5 + bs
s7 = rs * rt
s8 = s7 + hy
o4 = o3 + sp
o5 = o4 + s6
out = o5 + s8
"""


def _inputs(dtype):
    x = RNG.uniform(0.5, 1.5, (3, 4)).astype(dtype)
    y = RNG.uniform(0.5, 1.5, 4).astype(dtype)
    return {"x": x, "y": y}, {"idx": np.array([0, 2, 2])}


def test_elementwise_program_gradient_is_right_in_python():
    inputs, consts = _inputs(np.float64)
    check_vjp(ELEMENTWISE_PROGRAM, inputs, consts)
    check_jvp(ELEMENTWISE_PROGRAM, inputs, consts)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.slow
def test_emitted_adjoints_compile_in_nopython_mode(dtype, tmp_path):
    inputs, consts = _inputs(dtype)
    fn, source, _ = make_vjp(ELEMENTWISE_PROGRAM, ["x", "y"], ["idx"], lower=True,
                             filename=str(tmp_path / "vjp.py"))
    seed = dtype(1.0)
    expected = fn(inputs["x"], inputs["y"], consts["idx"], seed)
    got = numba.njit(fn)(inputs["x"], inputs["y"], consts["idx"], seed)
    for g, e in zip(got, expected):
        assert g.dtype == dtype, source
        np.testing.assert_allclose(g, e, rtol=1e-4 if dtype == np.float32 else 1e-10)


@pytest.mark.slow
def test_emitted_tangents_compile_in_nopython_mode(tmp_path):
    inputs, consts = _inputs(np.float64)
    fn, source = make_jvp(ELEMENTWISE_PROGRAM, ["x", "y"], ["idx"], lower=True,
                          filename=str(tmp_path / "jvp.py"))
    dx, dy = RNG.standard_normal((3, 4)), RNG.standard_normal(4)
    expected = fn(inputs["x"], inputs["y"], consts["idx"], dx, dy)
    got = numba.njit(fn)(inputs["x"], inputs["y"], consts["idx"], dx, dy)
    np.testing.assert_allclose(got, expected, rtol=1e-10, err_msg=source)


@pytest.mark.slow
def test_linear_algebra_and_shape_adjoints_compile_in_nopython_mode(tmp_path):
    a = RNG.standard_normal((3, 3)) + 3 * np.eye(3)
    v = RNG.standard_normal(3)
    c = np.array([[True, False, True], [False, True, True]])
    t3 = RNG.standard_normal((2, 3, 3))
    check_vjp(LINALG_PROGRAM, {"a": a, "v": v, "t3": t3}, {"c": c})
    fn, source, _ = make_vjp(LINALG_PROGRAM, ["a", "v", "t3"], ["c"], lower=True,
                             filename=str(tmp_path / "vjp_linalg.py"))
    expected = fn(a, v, t3, c, 1.0)
    got = numba.njit(fn)(a, v, t3, c, 1.0)
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e, rtol=1e-9, err_msg=source)


# ---------------------------------------------------------------- fast paths chosen by type


def unbroadcast_cases(g1, g2, g3, strided, s):
    """Every implementation unbroadcast picks, one call each (compiled once)."""
    return (
        unbroadcast(g1, np.zeros(g1.shape)),                    # same shape: g itself
        unbroadcast(strided, np.zeros(strided.shape)),          # same shape, not contiguous
        unbroadcast(g1, np.zeros(1)),                           # same rank 1, folded
        unbroadcast(g2, np.zeros((1, g2.shape[1]))),            # same rank 2, rows folded
        unbroadcast(g2, np.zeros((g2.shape[0], 1))),            # same rank 2, columns
        unbroadcast(g2, np.zeros((1, 1))),
        unbroadcast(g3, np.zeros((g3.shape[0], 1, g3.shape[2]))),  # same rank 3
        unbroadcast(g3, np.zeros(g3.shape[2])),                 # leading axes summed
        unbroadcast(g3, np.zeros((g3.shape[1], 1))),
        unbroadcast(g1, np.zeros((2, g1.shape[0]))),            # g of lower rank: spread
        unbroadcast(g2, 1.5), unbroadcast(s, 1.5),              # scalar targets
    )


def unbroadcast_expected(g1, g2, g3, strided, s):
    return (g1, strided, g1.sum(keepdims=True), g2.sum(0, keepdims=True),
            g2.sum(1, keepdims=True), g2.sum(keepdims=True), g3.sum(1, keepdims=True),
            g3.sum((0, 1)), g3.sum(0).sum(1, keepdims=True), np.stack([g1, g1]),
            g2.sum(), s)


@pytest.fixture(scope="module")
def unbroadcast_inputs():
    m = RNG.standard_normal((4, 10))
    return (RNG.standard_normal(5), RNG.standard_normal((3, 4)),
            RNG.standard_normal((2, 3, 4)), m[1, ::2], 0.25)


@pytest.mark.parametrize("compiled", [False, pytest.param(True, marks=pytest.mark.slow)])
def test_unbroadcast_fast_paths_agree_with_numpy(unbroadcast_inputs, compiled):
    run = numba.njit(unbroadcast_cases) if compiled else unbroadcast_cases
    got = run(*unbroadcast_inputs)
    for k, (g, e) in enumerate(zip(got, unbroadcast_expected(*unbroadcast_inputs))):
        np.testing.assert_allclose(g, e, rtol=1e-12, err_msg=f"case {k}")
        assert np.shape(g) == np.shape(e), f"case {k}"
    g1, strided = unbroadcast_inputs[0], unbroadcast_inputs[3]
    assert np.shares_memory(got[0], g1)          # same shape: g itself, nothing allocated
    # a strided g: Python returns it, Numba's typed result is a C-contiguous copy
    assert got[1].flags.c_contiguous if compiled else got[1] is strided
    assert isinstance(got[10], float) and isinstance(got[11], float)


def matmul_adjoints(g, m, v, acc_m, acc_v, acc_mm, mm):
    """Outer-product adjoints, plain and added in place, and the generic adders."""
    return (matmul_grad_left(g, m, v), matmul_grad_right(g, v, m.T),
            matmul_grad_left_add(acc_m, g, m, v), matmul_grad_right_add(acc_m.T, g, v, m.T),
            matmul_grad_left_add(acc_v, v[0], v, v),               # vector . vector: g * b
            matmul_grad_left_add(acc_mm, mm, mm, mm), matmul_grad_right_add(acc_mm, mm, mm, mm))


@pytest.mark.parametrize("compiled", [False, True])
def test_matmul_adjoints_add_outer_products_in_place(compiled):
    g, v = RNG.standard_normal(3), RNG.standard_normal(4)
    m, mm = RNG.standard_normal((3, 4)), RNG.standard_normal((2, 2))
    acc_m, acc_v, acc_mm = RNG.standard_normal((3, 4)), RNG.standard_normal(4), np.ones((2, 2))
    start_m, start_v = acc_m.copy(), acc_v.copy()
    run = numba.njit(matmul_adjoints) if compiled else matmul_adjoints
    got = run(g, m, v, acc_m, acc_v, acc_mm, mm)
    outer = np.outer(g, v)
    np.testing.assert_allclose(got[0], outer, rtol=1e-12)
    np.testing.assert_allclose(got[1], outer.T, rtol=1e-12)
    np.testing.assert_allclose(acc_m, start_m + 2 * outer, rtol=1e-12)   # both adds
    assert got[2] is acc_m or np.shares_memory(got[2], acc_m)
    np.testing.assert_allclose(got[4], start_v + v[0] * v, rtol=1e-12)
    np.testing.assert_allclose(acc_mm, 1.0 + mm @ mm.T + mm.T @ mm, rtol=1e-12)
    with pytest.raises(ValueError):
        run(g, m, v, np.zeros((4, 3)), acc_v, acc_mm, mm)


def test_outer_product_adjoints_keep_float32():
    g, v = np.ones(3, np.float32), np.ones(4, np.float32)
    left = numba.njit(lambda g, m, v: matmul_grad_left(g, m, v))(g, np.ones((3, 4)), v)
    assert left.dtype == np.float32
