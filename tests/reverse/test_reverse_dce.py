"""Dead code in generated gradients: a grad whose forward loop only feeds its output's
shape runs the loop once (in reverse), and what nobody reads is not computed."""
import ast

import gast
import numpy as np
import pytest

from benchmarks import workloads
from gradcheck import assert_gradient_close, central_differences
from codegen.backends import Options
from transformer import grad, jit, source, value_and_grad, vjp
from transformer.frontend import parse
from transformer.materialize import module_text
from transformer.reverse import VJP, reverse_function
from transformer.reverse.dce import eliminate_dead_code, pure_calls, weak_reads_bound


def loops_over(text: str, index: str) -> int:
    return sum(isinstance(n, gast.For) and isinstance(n.target, gast.Name) and
               n.target.id == index for n in gast.walk(gast.parse(text)))


@pytest.fixture(scope="module")
def lj_args():
    pos, eps, sigma, box, _ = workloads.lj_inputs(27, seed=3)
    return pos, eps, sigma, box, 1.6


def test_lj_gradient_runs_the_pair_loop_once(lj_args):
    text = source(grad(workloads.lj_energy))
    assert loops_over(text, "j") == 1
    assert "check_shape(energy_checked, energy_shape," in text
    got = grad(workloads.lj_energy)(*lj_args)
    expected = central_differences(workloads.lj_energy, lj_args, 0)
    assert_gradient_close(got, expected, "lj_energy")


def test_compiled_lj_gradient_matches_finite_differences(lj_args):
    got = jit(grad(workloads.lj_energy))(*lj_args)
    assert_gradient_close(got, central_differences(workloads.lj_energy, lj_args, 0), "jit")


def test_value_and_grad_keeps_the_forward_loop_for_the_value(lj_args):
    text = source(value_and_grad(workloads.lj_energy))
    assert loops_over(text, "j") == 2
    value, g = value_and_grad(workloads.lj_energy)(*lj_args)
    assert value == pytest.approx(workloads.lj_energy(*lj_args), rel=1e-12)
    assert_gradient_close(g, grad(workloads.lj_energy)(*lj_args))


def accumulate_then_scale(x):
    e = 0.0
    for i in range(x.shape[0]):
        e += np.sin(x[i]) * x[i]
    return 0.5 * e


def accumulate(x):
    e = 0.0
    for i in range(x.shape[0]):
        e += np.sin(x[i]) * x[i]
    return e


def grows_returned(s, v):
    acc = s
    for _ in range(v.shape[0]):   # range(3) would be unrolled
        acc = acc + v * s
    return acc


def grows_summed(s, v):
    acc = s
    for _ in range(v.shape[0]):   # range(3) would be unrolled
        acc = acc + v * s
    return np.sum(acc)


@pytest.mark.parametrize("f", [accumulate, accumulate_then_scale])
def test_accumulator_gradients_match_finite_differences(f):
    x = np.linspace(0.1, 1.3, 6)
    assert_gradient_close(grad(f)(x), central_differences(f, (x,), 0), f.__name__)


@pytest.mark.parametrize("f", [accumulate, accumulate_then_scale])
def test_accumulator_read_only_for_the_seed_is_reversed_without_its_forward_loop(f):
    assert loops_over(source(grad(f)), "i") == 1


def test_accumulator_read_by_value_keeps_the_forward_loop():
    def root_of_sum(x):
        e = 0.0
        for i in range(x.shape[0]):
            e += x[i] * x[i]
        return np.sqrt(e)               # its adjoint reads the value of e

    x = np.linspace(0.1, 1.3, 6)
    assert loops_over(source(grad(root_of_sum)), "i") == 2
    assert_gradient_close(grad(root_of_sum)(x), x / np.sqrt(np.sum(x * x)))


@pytest.mark.parametrize("f", [grows_returned, grows_summed])
def test_accumulator_that_changes_shape_is_still_an_error(f):
    with pytest.raises(ValueError, match="changed shape"):
        grad(f)(2.0, np.ones(3))


def test_array_accumulator_of_fixed_shape_is_fine_without_forward_loop():
    def rows(m):
        acc = np.zeros(m.shape[1])
        for i in range(m.shape[0]):
            acc = acc + np.sin(m[i]) * m[i]
        return acc

    m = np.linspace(-1.0, 1.0, 12).reshape(4, 3)
    cot = np.array([1.0, -2.0, 0.5])
    generated = reverse_function(parse(rows), (0,), VJP)
    assert loops_over(module_text(generated, Options(backend="python"))[0], "i") == 1
    out, pullback = vjp(rows, m)
    np.testing.assert_allclose(out, rows(m))
    expected = central_differences(lambda m: rows(m) @ cot, (m,), 0)
    assert_gradient_close(pullback(cot)[0], expected, "vjp")


def test_float32_gradient_stays_float32():
    x = np.linspace(0.1, 1.3, 6).astype(np.float32)
    assert grad(accumulate)(x).dtype == np.float32


# ---------------------------------------------------------------- the pass itself


def body_after_dce(text: str, env: dict):
    fn = gast.parse(text).body[0]
    eliminate_dead_code(fn.body, pure_calls(env))
    return fn


def test_dead_loop_carried_accumulation_goes_with_its_loop():
    fn = body_after_dce(
        "def f(x, n):\n"
        "    e = 0.0\n"
        "    for i in range(n):\n"
        "        t = np.sin(x[i])\n"
        "        e = e + t\n"
        "    y = x * 2.0\n"
        "    return y\n", {"np": np, "range": range})
    assert [type(s).__name__ for s in fn.body] == ["Assign", "Return"]


def test_effects_and_what_they_read_stay():
    fn = body_after_dce(
        "def f(x, b, n):\n"
        "    for i in range(n):\n"
        "        t = user(x[i])\n"              # a user function may have effects
        "        u = np.cos(x[i])\n"
        "        b[i] = u\n"
        "        w = np.exp(x[i])\n"            # dead
        "    for k in range(n):\n"
        "        pass\n"
        "    return k\n", {"np": np, "range": range, "user": print})
    text = ast.unparse(gast.gast_to_ast(fn))
    loops = [s for s in fn.body if isinstance(s, gast.For)]
    assert len(loops) == 2                      # the second defines k, which is returned
    kept = [s.targets[0] for s in loops[0].body]
    assert [type(t).__name__ for t in kept] == ["Name", "Name", "Subscript"], text


def test_weak_reads_must_find_their_name_bound():
    fn = gast.parse("def f(x, n):\n"
                    "    for i in range(n):\n"
                    "        e = x\n"
                    "    return zeros_like(e)\n").body[0]
    weak = [n for n in gast.walk(fn.body[-1]) if isinstance(n, gast.Name) and n.id == "e"]
    weak[0].secant_weak = True
    assert not weak_reads_bound(fn.body, ["x", "n"])
    assert weak_reads_bound(fn.body, ["x", "n", "e"])


# ---------------------------------------------------------------- a called helper per pair


def wrapped(d, box):
    if d > 0.5 * box:
        return d - box
    if d < -0.5 * box:
        return d + box
    return d


def particle_energy(xi, pos, box):
    e = 0.0
    for j in range(pos.shape[0]):
        d = xi - pos[j]
        dx = wrapped(d[0], box)
        dy = wrapped(d[1], box)
        r2 = dx * dx + dy * dy
        if r2 < 1.0:
            e += (1.0 - r2) ** 2
    return e


def test_pure_helper_is_recomputed_and_pair_adjoints_stay_inside_the_cutoff():
    tree = gast.parse(source(grad(particle_energy)))
    outer = tree.body[0]
    assert "push(" not in ast.unparse(gast.gast_to_ast(outer))   # dx, dy recomputed
    assert sum(isinstance(n, gast.For) for n in gast.walk(outer)) == 1
    [cutoff] = [n for n in gast.walk(outer) if isinstance(n, gast.If)]
    inside = {n.targets[0].id for n in gast.walk(cutoff) if isinstance(n, gast.Assign)
              and isinstance(n.targets[0], gast.Name)}
    assert {"bd", "dx_grads", "dy_grads"} <= inside


def test_pair_energy_with_helper_matches_finite_differences():
    rng = np.random.default_rng(1)
    pos = rng.uniform(0.0, 2.0, size=(9, 2))
    xi = np.array([0.9, 1.1])
    got = grad(particle_energy)(xi, pos, 2.0)
    assert_gradient_close(got, central_differences(particle_energy, (xi, pos, 2.0), 0))


# ---------------------------------------------------------------- what may be recomputed


def sines_of_a_changing_array(x):
    a = x * 1.0
    s = 0.0
    for i in range(3):
        v = np.sum(np.sin(a))           # reads `a`, written just after: not recomputable
        a[i] = a[i] * 3.0
        s += v * v
    return s


def total_square(a):
    return np.sum(a * a)


def squares_of_a_changing_array(x):
    a = x * 1.0
    s = 0.0
    for i in range(3):
        v = total_square(a)             # a pure helper reading `a`: the same
        a[i] = a[i] * 3.0
        s += v * v
    return s


@pytest.mark.parametrize("f", [sines_of_a_changing_array, squares_of_a_changing_array])
def test_values_read_from_an_array_written_later_are_recorded_not_recomputed(f):
    x = np.array([0.3, 0.5, 0.7])
    assert_gradient_close(grad(f)(x), central_differences(f, (x,), 0), f.__name__)


def pair_components(pos, box):
    e = 0.0
    for i in range(pos.shape[0]):
        for j in range(i + 1, pos.shape[0]):
            r2 = 0.0
            for k in range(pos.shape[1]):
                dk = pos[i, k] - pos[j, k]
                dk = dk - box * np.round(dk / box)
                r2 += dk * dk
            if r2 < 1.5:
                s6 = (0.8 / r2) ** 3
                e += s6 * s6 - s6
    return e


def reassigned_after_read(x):
    s = 0.0
    r = 0.0
    for i in range(x.shape[0]):
        r = r + x[i]
        w = np.sin(r)                   # reads r before it may change again below
        if w > 0.3:
            r = r * 0.5
        s += w * r
    return s


def test_value_of_a_finished_accumulation_is_recomputed_from_its_record():
    text = source(grad(pair_components))
    assert "r2_tape = push(" in text
    assert not any(f"{v}_tape" in text for v in ("cond", "s6", "sigma2_over_r2"))
    pos = np.random.default_rng(2).uniform(0.0, 2.0, size=(6, 3))
    got = grad(pair_components)(pos, 2.0)
    assert_gradient_close(got, central_differences(pair_components, (pos, 2.0), 0))


def test_value_reassigned_after_its_read_is_not_taken_from_its_record():
    x = np.linspace(0.2, 1.1, 4)
    expected = central_differences(reassigned_after_read, (x,), 0)
    assert_gradient_close(grad(reassigned_after_read)(x), expected)


# ---------------------------------------------------------------- reads nobody needs
def reads_past_the_start(w):
    t = w[-5]          # noqa: F841  (read, never used)
    return np.sum(w * w)


def reads_past_the_end_in_a_loop(w):
    s = 0.0
    for i in range(6):
        u = w[i] * 2.0          # noqa: F841  (read, never used)
        s = s + w[0]
    return s


def reads_inside_and_slices(w):
    t = w[-4]          # noqa: F841  (read, never used)
    u = w[1:10]          # noqa: F841  (read, never used)
    return np.sum(w * w)


@pytest.mark.parametrize("f", [reads_past_the_start, reads_past_the_end_in_a_loop])
def test_an_unneeded_read_out_of_bounds_raises_under_grad_as_the_function_does(f):
    w = np.arange(4.0)
    with pytest.raises(IndexError) as in_python:
        f(w)
    with pytest.raises(IndexError) as in_grad:
        grad(f)(w)
    assert str(in_grad.value) == str(in_python.value)
    with pytest.raises(IndexError) as in_vjp:
        vjp(f, w)[1](1.0)
    assert str(in_vjp.value) == str(in_python.value)


def test_an_unneeded_read_out_of_bounds_raises_under_jit_grad_at_the_users_line():
    with pytest.raises(IndexError, match=r"test_reverse_dce.py:\d+:\d+: index -5 is out of"):
        jit(grad(reads_past_the_start))(np.arange(4.0))


def test_an_unneeded_read_in_bounds_is_kept_and_an_unneeded_slice_is_dropped():
    text = source(grad(reads_inside_and_slices))
    assert "w[-4]" in text and "w[1:10]" not in text
    w = np.arange(4.0)
    np.testing.assert_allclose(grad(reads_inside_and_slices)(w), 2 * w)
