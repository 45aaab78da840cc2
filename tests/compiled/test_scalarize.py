"""jit scalarizes short vectors: values equal the array code, the pass fires only where
it is safe, and a new trailing length is a new specialization."""
import math

import numba
import numpy as np
import pytest

from benchmarks import workloads
from gradcheck import assert_gradient_close, central_differences
from transformer import grad, jit
from transformer.frontend import parse
from transformer.vector_shapes import UNKNOWN, Array, Scalar, Shapes, describe_argument


def lj_2d(pos, eps, sigma, box, rcut):
    """The Lennard-Jones pair loop for positions of any dimension (a row per particle)."""
    n = pos.shape[0]
    energy = 0.0
    for i in range(n):
        for j in range(i + 1, n):
            d = pos[i] - pos[j]
            d = d - box * np.round(d / box)
            r2 = np.dot(d, d)
            if r2 < rcut * rcut:
                s6 = (sigma * sigma / r2) ** 3
                energy += 4.0 * eps * (s6 * s6 - s6)
    return energy


def soft_pairs(pos):
    e = 0.0
    for i in range(pos.shape[0]):
        for j in range(i + 1, pos.shape[0]):
            d = pos[i] - pos[j]
            r = np.linalg.norm(d)
            e += math.sqrt(r) * r + abs(d[0]) * 0.5
    return e


def spring_forces(pos, k):
    f = np.zeros_like(pos)
    for i in range(pos.shape[0]):
        for j in range(i + 1, pos.shape[0]):
            d = pos[i] - pos[j]
            u = d / np.sqrt(np.sum(d * d))              # a unit vector: the norm is hoisted
            f[i] += k * u * np.sum(d * d)
            f[j] -= f[i, 0] * u                         # reads the row it updates
    return f


def mixed(pos, w):
    total = 0.0
    for i in range(pos.shape[0]):
        d = pos[i] - pos[0]
        v = pos[i] * w                     # np.max of it is not understood: stays an array
        total += np.sum(d * d) + np.max(v) + v[0] * d[1]
    return total


def sometimes(pos, flag):
    s = 0.0
    for i in range(pos.shape[0]):
        if flag > 0:
            e = pos[i] * 2.0
        else:
            e = pos[:, 0] * 1.0            # a column: not a 3-vector
        s += np.sum(e)
    return s


def view_then_write(x):
    v = x[0]                               # a view: sees the write below
    x[0] = x[0] * 2.0
    return np.sum(v)


def returns_vector(pos):
    d = pos[0] - pos[1]
    return d


def divides(pos, s):
    d = pos[0] / s
    return np.sum(d)


def pair_forces(pos):
    f = np.zeros_like(pos)
    for i in range(pos.shape[0]):
        for j in range(i + 1, pos.shape[0]):
            d = pos[i] - pos[j]
            f[i] += d
            f[j] -= 2.0 * d
    return f


def lj_args(n, dim=3, dtype=np.float64, seed=0):
    pos, eps, sigma, box, rcut = workloads.lj_inputs(n, seed)
    pos = np.concatenate([pos, pos[::-1]], axis=1)[:, :dim]     # dim up to 6
    return pos.astype(dtype), eps, sigma, box, rcut


# ---------------------------------------------------------------------------- analysis


def test_shapes_follow_rows_arithmetic_and_reductions():
    shapes = Shapes(parse(workloads.lj_energy),
                    {"pos": Array(2, 3, "f64"), "eps": Scalar("f64"), "sigma": Scalar("f64"),
                     "box": Scalar("f64"), "rcut": Scalar("f64")})
    assert shapes.of["d"] == Array(1, 3, "f64")
    assert shapes.of["r2"] == Scalar("f64")
    assert shapes.of["i"] == Scalar("int")


def test_arguments_record_short_trailing_axes_only():
    assert describe_argument(np.zeros((7, 3))) == Array(2, 3, "f64")
    assert describe_argument(np.zeros((7, 9), np.float32)) == Array(2, None, "other")
    assert describe_argument(np.zeros(3, np.int32)) == Array(1, 3, "int")
    assert describe_argument(2.5) == Scalar("f64")
    assert describe_argument(np.float64(0.0)) == Scalar("f64")
    assert describe_argument((1, 2)) == UNKNOWN
    assert describe_argument(np.array(1.0)) == UNKNOWN


# ---------------------------------------------------------------------------- Lennard-Jones


@pytest.fixture(scope="module")
def lj_jit():
    return jit(workloads.lj_energy)


@pytest.fixture(scope="module")
def lj_grad_jit():
    return jit(grad(workloads.lj_energy))


def test_lj_energy_is_scalarized_and_equal(lj_jit):
    args = lj_args(20)
    text = lj_jit.source(*args)
    assert "np.sum" not in text and "d_0 = pos[i, 0] - pos[j, 0]" in text
    assert "scalarize(pos[..., 3])" in text
    assert lj_jit(*args) == pytest.approx(workloads.lj_energy(*args), rel=1e-13)


def test_lj_gradient_is_scalarized_and_matches_finite_differences(lj_grad_jit):
    args = lj_args(8)
    text = lj_grad_jit.source(*args)
    assert "scatter_add" not in text and "broadcast_reduced" not in text
    assert "bpos[i, 2] = bpos[i, 2] + " in text      # accumulated in place, no helper
    assert "# grad of: r2 = np.sum(d * d)\n" in text      # the source comments stay
    expected = central_differences(workloads.lj_energy, args, 0)
    assert_gradient_close(lj_grad_jit(*args), expected, "jit(grad(lj_energy))")


@pytest.mark.slow
def test_float32_positions_give_the_array_code_result(lj_jit, lj_grad_jit):
    args = lj_args(20, dtype=np.float32)
    unscalarized = numba.njit(workloads.lj_energy)(*args)
    assert lj_jit(*args) == pytest.approx(unscalarized, rel=1e-6)
    forces = lj_grad_jit(*args)
    assert forces.dtype == np.float32
    expected = central_differences(workloads.lj_energy, lj_args(20), 0)
    np.testing.assert_allclose(forces, expected, rtol=2e-3, atol=2e-3 * np.abs(expected).max())


# ---------------------------------------------------------------------------- specializations


@pytest.fixture(scope="module")
def lj_any_dim_grad():
    return jit(grad(lj_2d))


def test_two_dimensional_positions_use_two_scalars(lj_any_dim_grad):
    args = lj_args(8, dim=2)
    text = lj_any_dim_grad.source(*args)
    code = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))
    assert "r2 = d0 * d0 + d1 * d1\n" in code and "np.dot" not in code
    expected = central_differences(lj_2d, args, 0)
    assert_gradient_close(lj_any_dim_grad(*args), expected, "2-D positions")


@pytest.mark.slow
def test_a_new_trailing_length_compiles_a_new_specialization(lj_any_dim_grad):
    for dim in (2, 3, 6):        # 6 is longer than any scalarized vector: array code
        args = lj_args(8, dim=dim)
        expected = central_differences(lj_2d, args, 0)
        assert_gradient_close(lj_any_dim_grad(*args), expected, f"dim {dim}")
    info = lj_any_dim_grad.cache_info()
    assert info.specializations == 3 and info.last_reason == "new argument structure"
    assert "np.dot(d, d)" in lj_any_dim_grad.source(*lj_args(8, dim=6))
    lj_any_dim_grad(*lj_args(9, dim=3))        # same trailing length, another n: a hit
    assert lj_any_dim_grad.cache_info().specializations == 3


# ---------------------------------------------------------------------------- what stays


def test_vector_and_array_uses_mix():
    pos, w = np.random.default_rng(1).random((6, 3)), 0.7
    f = jit(mixed)
    text = jit(mixed, boundscheck=False).source(pos, w)    # the text without index checks
    assert "d_0 = pos[i, 0] - pos[0, 0]" in text and "v[0] * d_1" in text
    assert "np.max(v)" in text and "v_0" not in text
    assert f(pos, w) == pytest.approx(mixed(pos, w), rel=1e-13)


def test_a_variable_not_always_a_vector_is_left_alone():
    pos = np.random.default_rng(2).random((5, 3))
    f = jit(sometimes)
    assert "e_0" not in f.source(pos, 1.0)
    for flag in (1.0, -1.0):
        assert f(pos, flag) == pytest.approx(sometimes(pos, flag), rel=1e-13)


def test_a_view_of_a_written_array_stays_a_view():
    x = np.random.default_rng(3).random((4, 3))
    f = jit(view_then_write)
    assert "v_0" not in f.source(x.copy())
    assert f(x.copy()) == pytest.approx(view_then_write(x.copy()), rel=1e-13)


def test_a_returned_vector_stays_an_array():
    pos = np.random.default_rng(4).random((4, 3))
    f = jit(returns_vector)
    assert "d_0" not in f.source(pos)
    np.testing.assert_array_equal(f(pos), returns_vector(pos))


def test_division_by_zero_keeps_array_semantics():
    pos = np.ones((2, 3))
    f = jit(divides)
    assert "np.divide(pos[0, 0], s)" in jit(divides, boundscheck=False).source(pos, 0.0)
    assert f(pos, 0.0) == np.inf
    assert f(pos, 2.0) == pytest.approx(1.5)


def test_row_updates_become_element_updates():
    pos = np.random.default_rng(5).random((6, 3))
    f = jit(pair_forces)
    text = f.source(pos)
    assert "f[i, 0] += d_0" in text and "f[j, 2] -= 2.0 * d_2" in text
    np.testing.assert_allclose(f(pos), pair_forces(pos), rtol=1e-13)


def test_a_boolean_never_indexes_a_row():
    def masked(pos, a, b):
        keep = a < b
        return pos[keep]
    shapes = Shapes(parse(masked), {"pos": Array(2, 3, "f64"), "a": Scalar("f64"),
                                    "b": Scalar("f64")})
    assert shapes.of["keep"] == Scalar("bool")
    assert shapes.expr(parse(masked).node.body[1].value) == UNKNOWN


def test_show_compiles_for_example_arguments(capsys):
    from codegen import cli
    target = f"{workloads.__file__}:lj_energy"
    code = cli.run(["show", target, "--jit", "--color", "never",
                    "--arg", "pos=float64[n,3]", "--arg", "box=10.0", "--arg", "eps=1.0",
                    "--arg", "sigma=1.0", "--arg", "rcut=2.5"])
    out = capsys.readouterr().out
    assert code == 0
    assert "r2 = d_0 * d_0 + d_1 * d_1 + d_2 * d_2" in out
    assert cli.run(["show", target, "--jit",
                    "--arg", "pos=float64[n"]) == cli.USAGE_ERROR


def write_through_tuple(x, y):
    v = x[0]                               # a view of x ...
    pair = (x, y)
    pair[0][0, 0] = 5.0                    # ... written through a tuple
    return np.sum(v * 1.0)


def write_through_other_parameter(x, y):
    v = x[0] * 1.0                         # a copy: safe to scalarize
    w = x[1]                               # a view: y may be the same array as x
    y[1, 0] = 7.0
    return np.sum(v) + np.sum(w * 1.0)


@pytest.mark.slow
def test_views_written_through_aliases_stay_views():
    x = np.random.default_rng(6).random((3, 3))
    f = jit(write_through_tuple)
    assert "v_0" not in f.source(x.copy(), x.copy())
    assert f(x.copy(), x.copy()) == pytest.approx(write_through_tuple(x.copy(), x.copy()))
    g = jit(write_through_other_parameter)
    text = g.source(x.copy(), x.copy())
    assert "v_0" in text and "w_0" not in text
    shared, expected = x.copy(), x.copy()
    assert g(shared, shared) == pytest.approx(write_through_other_parameter(expected, expected))


def test_norms_and_math_functions_of_pairs():
    pos = np.random.default_rng(7).random((6, 3))
    f = jit(grad(soft_pairs))
    code = "\n".join(line for line in f.source(pos).splitlines() if "#" not in line)
    assert "np.linalg.norm" not in code and "np.sqrt(d_0 * d_0 + d_1 * d_1 + d_2 * d_2)" in code
    assert_gradient_close(f(pos), central_differences(soft_pairs, (pos,), 0), "soft_pairs")
    assert jit(soft_pairs)(pos) == pytest.approx(soft_pairs(pos), rel=1e-13)


def test_scalar_factors_are_computed_once_before_the_statement():
    pos = np.random.default_rng(8).random((5, 3))
    f = jit(spring_forces)
    text = f.source(pos, 2.0)
    assert "u_0 = np.divide(d_0, sqrt_" in text and "f[j, 2] -= " in text
    np.testing.assert_allclose(f(pos, 2.0), spring_forces(pos, 2.0), rtol=1e-13)
