"""Augmented assignment (`+=`, `-=`, `*=`, `/=`) per thread in CUDA kernels.

A number is updated per thread, a thread-local array element by element, whether or not
another name may hold the same value (`remaining = qty; remaining -= take`, the case
that desugars to `update_in_place`). What a kernel cannot do is refused at the user's
statement with a hint that works.

The cases named `test_kernel_*` run kernels on Numba's CUDA simulator, which must be
switched on before numba is imported: `test_augmented_assignment_kernels_on_the_simulator`
(slow) runs this file again, with NUMBA_ENABLE_CUDASIM=1, selecting only them. They
compare with the CPU backend (`jit(vmap(f))`), with the plain per-element Python run and,
for derivatives, with finite differences. The other tests build kernel source, which
needs numba-cuda but no GPU, or compile to PTX where NVVM is installed.
"""
from pathlib import Path

import numpy as np
import pytest

from cuda_support import (launches_simulator, needs_cuda_target, on_simulator,
                          ptx_missing, run_on_simulator)
from transformer import TransformError, grad, jit, jvp, vmap
from transformer.primitives import registry
from transformer.runtime.tapes import own_value
from transformer.test_util import numerical_grad, numerical_jvp

needs_ptx = pytest.mark.skipif(ptx_missing() is not None, reason=ptx_missing() or "")


@pytest.mark.slow
@launches_simulator
def test_augmented_assignment_kernels_on_the_simulator(tmp_path):
    run_on_simulator(tmp_path, "--runslow", "-k", "test_kernel_", str(Path(__file__)))


# ---------------------------------------------------------------- the functions

def accumulate(x, take):
    """Scalar updates in a loop and its branches; `out` and `scale` start as other names."""
    out = x
    scale = take
    for i in range(4):
        if i % 2 == 0:
            out += take * (i + 1.0)
            scale *= 1.5
        else:
            out -= 0.5 * take
            scale /= 1.25
    total = out
    total += scale * x
    return total


def local_updates(x, take):
    """Thread-local arrays: whole-array, element and slice updates, through an alias too."""
    acc = np.zeros(3)
    view = acc
    acc += x
    for i in range(3):
        acc[i] += take * i
        if acc[i] > 1.0:
            acc[i] *= 0.5
    acc[:] *= 2.0
    view -= take
    view /= 2.0
    grid = np.ones((2, 3))
    same = grid
    same *= x
    grid[1, :] += acc
    grid[:, 0] -= take
    return np.sum(acc * acc) + np.sum(grid * grid) + grid[1, 2]


def order_book_step(ask, bid, buy, sell):
    """One market step on one book: a buy order walks the asks, a sell order the bids;
    each fill is taken out of the book in place."""
    cash = 0.0
    volume = 0.0
    remaining = buy
    for level in range(ask.shape[0]):
        take = min(remaining, ask[level])
        ask[level] -= take
        remaining -= take
        cash -= take * (level + 1.0)
        volume += take
    remaining = sell
    for level in range(bid.shape[0]):
        if remaining > 0.0:
            take = min(remaining, bid[level])
            bid[level] -= take
            remaining -= take
            cash += take * (2.0 - 0.25 * level)
            volume += take
    return cash, volume


def best_after_fill(book, qty):
    """A number read from an array, the array then written, the number updated."""
    best = book[0]
    for level in range(book.shape[0]):
        take = min(qty, book[level])
        book[level] -= take
        best += take * (level + 1.0)
    return best


def signed_steps(x, take):
    out = 0.0
    for i in range(3):
        out += np.sign(x - 0.5 * i) * take
    return out


def signed_steps_as_the_hint_says(x, take):
    out = 0.0
    for i in range(3):
        d = x - 0.5 * i
        out += (1.0 if d > 0 else -1.0 if d < 0 else 0.0) * take
    return out


def int_counts(x, take):
    counts = np.zeros(3, dtype=np.int64)
    alias = counts
    if x > 0.5:
        alias += x
    return np.sum(counts) + take


def shared_gradient(x, t):
    a = np.full(3, x)
    b = a
    if t > 1.5:
        b += t
    return np.sum(a * b)


def copied_helper(x, take):
    y = x * 2.0
    z = own_value(y)
    z += take
    return z


def histogram_step(x, hist):
    """Writes an array argument: shared by every thread under in_axes None."""
    bin_ = int(x * 2.0)
    hist[bin_] += x
    return hist[bin_] * 2.0


def spread_step(x, hist):
    """An augmented assignment to an array argument writes the caller's array in place."""
    hist += x
    return np.sum(hist)


def fill_first(levels, qty):
    take = min(qty, levels[0])
    levels[0] -= take
    return take


def fill_through_a_helper(book, qty):
    """The book is written by the helper it is passed to."""
    filled = fill_first(book, qty)
    filled += book[1]
    return filled


def _inputs(n=8, dtype=np.float64):
    rng = np.random.default_rng(3)
    return (rng.uniform(0.2, 1.5, n).astype(dtype), rng.uniform(0.5, 2.0, n).astype(dtype))


def _books(n=12):
    rng = np.random.default_rng(5)
    return (rng.uniform(0.0, 2.0, (n, 4)), rng.uniform(0.0, 2.0, (n, 4)),
            rng.uniform(0.0, 5.0, n), rng.uniform(0.0, 5.0, n))


def _per_element(f, *args):
    """`f` run on each element in plain Python: the independent oracle."""
    return np.array([f(*items) for items in zip(*args)])


def _statement_line(f, text: str) -> int:
    """The file line number of the first line of `f` containing `text`."""
    import inspect
    lines, start = inspect.getsourcelines(f)
    return start + next(k for k, line in enumerate(lines) if text in line)


# ---------------------------------------------------------------- simulator: numbers

@on_simulator
@pytest.mark.slow
@pytest.mark.parametrize("dtype, rtol", [(np.float64, 1e-12), (np.float32, 1e-5)])
def test_kernel_scalar_updates_in_loops_and_branches_match_cpu_jit(dtype, rtol):
    x, take = _inputs(dtype=dtype)
    got = jit(vmap(accumulate), backend="cuda")(x, take)
    assert got.dtype == dtype
    np.testing.assert_allclose(got, _per_element(accumulate, x, take), rtol=rtol)
    if dtype == np.float64:     # the cpu backend's vmap fails to type float32 `scale *= 1.5`
        np.testing.assert_allclose(got, jit(vmap(accumulate))(x, take), rtol=rtol)


@on_simulator
@pytest.mark.slow
def test_kernel_gradient_and_tangent_of_scalar_updates_match_finite_differences():
    x, take = _inputs()
    expected = [numerical_grad(accumulate, (a, b)) for a, b in zip(x, take)]
    got = jit(vmap(grad(accumulate)), backend="cuda")(x, take)
    np.testing.assert_allclose(got, expected, rtol=1e-6)
    np.testing.assert_allclose(got, jit(vmap(grad(accumulate)))(x, take), rtol=1e-12)
    primal, tangent = jit(vmap(jvp(accumulate)), backend="cuda")(
        x, take, np.ones_like(x), np.zeros_like(take))
    np.testing.assert_allclose(primal, _per_element(accumulate, x, take), rtol=1e-12)
    np.testing.assert_allclose(tangent, expected, rtol=1e-6)


@on_simulator
@pytest.mark.slow
def test_kernel_thread_local_array_updates_match_cpu_jit():
    x, take = _inputs()
    got = jit(vmap(local_updates), backend="cuda")(x, take)
    np.testing.assert_allclose(got, jit(vmap(local_updates))(x, take), rtol=1e-12)
    np.testing.assert_allclose(got, _per_element(local_updates, x, take), rtol=1e-12)
    primal, tangent = jit(vmap(jvp(local_updates)), backend="cuda")(
        x, take, np.zeros_like(x), np.ones_like(take))
    expected = [numerical_jvp(local_updates, (a, b), (0.0, 1.0)) for a, b in zip(x, take)]
    np.testing.assert_allclose(primal, got, rtol=1e-12)
    np.testing.assert_allclose(tangent, expected, rtol=1e-6)


@on_simulator
@pytest.mark.slow
def test_kernel_order_book_step_fills_and_books_match_cpu_jit():
    ask, bid, buy, sell = _books()
    cuda_books, cpu_books, python_books = (ask.copy(), bid.copy()), (ask.copy(), bid.copy()), \
        (ask.copy(), bid.copy())
    cash, volume = jit(vmap(order_book_step), backend="cuda")(*cuda_books, buy, sell)
    cpu_cash, cpu_volume = jit(vmap(order_book_step))(*cpu_books, buy, sell)
    expected = _per_element(order_book_step, *python_books, buy, sell)
    np.testing.assert_allclose(cash, cpu_cash, rtol=1e-12)
    np.testing.assert_allclose(volume, cpu_volume, rtol=1e-12)
    np.testing.assert_allclose(np.stack([cash, volume], axis=1), expected, rtol=1e-12)
    for got, cpu, python in zip(cuda_books, cpu_books, python_books):
        np.testing.assert_array_equal(got, cpu)
        np.testing.assert_array_equal(got, python)
    assert (cuda_books[0] != ask).any() and (cuda_books[1] != bid).any()


@on_simulator
@pytest.mark.slow
def test_kernel_number_read_from_a_written_array_keeps_its_value():
    book, _, qty, _ = _books()
    cuda_book, python_book = book.copy(), book.copy()
    got = jit(vmap(best_after_fill), backend="cuda")(cuda_book, qty)
    np.testing.assert_allclose(got, _per_element(best_after_fill, python_book, qty),
                               rtol=1e-12)
    np.testing.assert_array_equal(cuda_book, python_book)


@on_simulator
@pytest.mark.slow
def test_kernel_sign_written_as_the_refusal_hint_says_matches_numpy():
    x = np.linspace(-0.5, 1.5, 9)          # hits d == 0 exactly (x = 0, 0.5, 1.0)
    take = np.linspace(0.5, 1.5, 9)
    got = jit(vmap(signed_steps_as_the_hint_says), backend="cuda")(x, take)
    np.testing.assert_allclose(got, _per_element(signed_steps, x, take), rtol=1e-12)


@on_simulator
@pytest.mark.slow
def test_kernel_shared_array_given_one_copy_per_element_as_the_hint_says_matches_python():
    x = np.linspace(0.0, 1.4, 10)
    hist = np.arange(3.0)
    copies = np.repeat(hist[None], x.size, axis=0)
    python_copies = copies.copy()
    got = jit(vmap(histogram_step), backend="cuda")(x, copies)
    np.testing.assert_allclose(got, _per_element(histogram_step, x, python_copies), rtol=1e-12)
    np.testing.assert_allclose(copies, python_copies, rtol=1e-12)


@on_simulator
@pytest.mark.slow
def test_kernel_array_argument_written_by_a_called_helper_reaches_the_caller():
    book, _, qty, _ = _books()
    cuda_book, cpu_book, python_book = book.copy(), book.copy(), book.copy()
    got = jit(vmap(fill_through_a_helper), backend="cuda")(cuda_book, qty)
    np.testing.assert_allclose(got, jit(vmap(fill_through_a_helper))(cpu_book, qty),
                               rtol=1e-12)
    np.testing.assert_allclose(got, _per_element(fill_through_a_helper, python_book, qty),
                               rtol=1e-12)
    np.testing.assert_array_equal(cuda_book, python_book)
    np.testing.assert_array_equal(cuda_book, cpu_book)
    assert (cuda_book != book).any()


@on_simulator
@pytest.mark.slow
def test_kernel_update_of_a_batched_array_argument_reaches_the_caller():
    rows = np.arange(12.0).reshape(4, 3)
    x = np.linspace(0.5, 2.0, 4)
    cuda_rows, cpu_rows, python_rows = rows.copy(), rows.copy(), rows.copy()
    got = jit(vmap(spread_step), backend="cuda")(x, cuda_rows)
    np.testing.assert_allclose(got, _per_element(spread_step, x, python_rows), rtol=1e-12)
    np.testing.assert_allclose(got, jit(vmap(spread_step))(x, cpu_rows), rtol=1e-12)
    np.testing.assert_array_equal(cuda_rows, python_rows)
    np.testing.assert_array_equal(cuda_rows, cpu_rows)


# ---------------------------------------------------------------- source and PTX

@needs_cuda_target
def test_update_of_a_number_another_name_held_is_plain_arithmetic_in_the_kernel():
    ask, bid, buy, sell = _books(4)
    source = jit(vmap(order_book_step), backend="cuda").source(ask, bid, buy, sell)
    assert "update_in_place" not in source
    assert "remaining = buy" in source and "remaining = sell" in source


@pytest.mark.slow
@needs_ptx
def test_float32_scalar_and_local_array_updates_compile_to_ptx_without_float64():
    x, take = _inputs(dtype=np.float32)
    for f in (accumulate, local_updates):
        ptx = jit(vmap(f), backend="cuda").ptx(x, take)
        assert ".entry" in ptx
        assert ".f64" not in ptx


@needs_ptx
@pytest.mark.slow
def test_order_book_step_and_derivatives_of_updates_compile_to_ptx():
    ask, bid, buy, sell = _books(4)
    assert ".entry" in jit(vmap(order_book_step), backend="cuda").ptx(ask, bid, buy, sell)
    x, take = _inputs()
    assert ".entry" in jit(vmap(grad(accumulate)), backend="cuda").ptx(x, take)
    assert ".entry" in jit(vmap(jvp(local_updates)), backend="cuda").ptx(x, take, x, take)
    assert ".entry" in jit(vmap(signed_steps_as_the_hint_says), backend="cuda").ptx(x, take)


# ---------------------------------------------------------------- refusals, located

@needs_cuda_target
def test_primitive_without_cuda_form_is_refused_at_its_statement_with_the_registry_reason():
    x, take = _inputs()
    with pytest.raises(TransformError) as caught:
        jit(vmap(signed_steps), backend="cuda").source(x, take)
    err = caught.value
    assert err.lineno == _statement_line(signed_steps, "out += np.sign")
    assert err.col == 8
    assert "np.sign has no CUDA form" in str(err)
    assert registry.reason(np.sign, "cuda") in err.hint
    assert "1.0 if x > 0 else -1.0 if x < 0 else 0.0" in err.hint
    source = jit(vmap(signed_steps_as_the_hint_says), backend="cuda").source(x, take)
    assert "np.sign" not in source                # the hint's form is accepted


@needs_cuda_target
def test_in_place_update_of_an_int_array_with_floats_is_refused_at_its_line():
    x = np.array([0.25, 0.75])                    # the first element skips the update
    take = np.ones(2)
    with pytest.raises(TypeError):                # NumPy refuses the update too
        int_counts(0.75, 1.0)
    with pytest.raises(TransformError, match="cannot update the int64 array 'alias'") as caught:
        jit(vmap(int_counts), backend="cuda").source(x, take)
    assert caught.value.lineno == _statement_line(int_counts, "alias += x")
    assert "alias = alias + ..." in caught.value.hint


@needs_cuda_target
def test_gradient_of_an_update_to_a_shared_local_array_is_refused_at_its_line():
    x = np.array([0.5, 0.75])
    t = np.array([1.0, 2.0])                      # the first element skips the update
    with pytest.raises(ValueError, match="shared"):     # the cpu backend raises too
        jit(grad(shared_gradient))(0.75, 2.0)
    with pytest.raises(TransformError, match="may hold the array") as caught:
        jit(vmap(grad(shared_gradient)), backend="cuda").source(x, t)
    assert caught.value.lineno == _statement_line(shared_gradient, "b += t")
    assert ".copy()" in caught.value.hint


@needs_cuda_target
def test_helper_without_cuda_form_is_refused_at_its_first_use_not_the_def():
    x, take = _inputs()
    with pytest.raises(TransformError, match="own_value, which has no CUDA form") as caught:
        jit(vmap(copied_helper), backend="cuda").source(x, take)
    assert caught.value.lineno == _statement_line(copied_helper, "own_value(y)")
    assert caught.value.col == 4
    assert "backend='cpu'" in caught.value.hint


@needs_cuda_target
def test_update_of_an_array_every_thread_shares_is_refused_at_its_line():
    x = np.linspace(0.0, 1.4, 10)
    with pytest.raises(TransformError, match="every CUDA thread writes 'hist'") as caught:
        jit(vmap(histogram_step, in_axes=(0, None)), backend="cuda").source(x, np.zeros(3))
    assert caught.value.lineno == _statement_line(histogram_step, "hist[bin_] += x")
    assert "np.repeat(hist[None], n, axis=0)" in caught.value.hint


@needs_cuda_target
def test_whole_array_update_of_an_array_every_thread_shares_is_refused_at_its_line():
    # `hist += x` on an argument writes the caller's array (it is not a rebinding)
    x = np.linspace(0.0, 1.4, 10)
    with pytest.raises(TransformError, match="every CUDA thread writes 'hist'") as caught:
        jit(vmap(spread_step, in_axes=(0, None)), backend="cuda").source(x, np.zeros(3))
    assert caught.value.lineno == _statement_line(spread_step, "hist += x")


@needs_cuda_target
def test_array_every_thread_shares_written_by_a_called_helper_is_refused_at_the_call():
    book, _, qty, _ = _books(4)
    with pytest.raises(TransformError, match="every CUDA thread writes 'book'") as caught:
        jit(vmap(fill_through_a_helper, in_axes=(None, 0)), backend="cuda").source(book[0],
                                                                                    qty)
    assert caught.value.lineno == _statement_line(fill_through_a_helper, "fill_first(")
