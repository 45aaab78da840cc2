"""In-place writes under vmap give the numbers of a Python loop over the examples.

The oracle of every case is `loop_oracle`: the function called on each example in turn
(arguments copied first, so the oracle and secant start from the same values), the
results stacked, and the arguments as the loop leaves them - writes into a mapped
argument reach the caller's batch, writes into an argument every example shares
(in_axes None) reach the caller and the later examples. A case that vmap cannot give
those numbers must raise a located TransformError instead.
"""
import inspect
import pathlib

import numpy as np
import pytest
from gradcheck import write_module

from transformer import TransformError, grad, jit, vmap

rng = np.random.default_rng(7)


def loop_oracle(f, args, in_axes):
    """(stacked results, arguments afterwards) of `f` over the examples, in order."""
    args = [np.array(a, copy=True) if isinstance(a, np.ndarray) else a for a in args]
    size = next(a.shape[0] for a, ax in zip(args, in_axes) if ax is not None)
    out = [f(*[a[k] if ax is not None else a for a, ax in zip(args, in_axes)])
           for k in range(size)]
    return np.stack(out), args


def batched_run(batched, args):
    """(results, arguments afterwards) of a batched function called on copies."""
    args = [np.array(a, copy=True) if isinstance(a, np.ndarray) else a for a in args]
    return batched(*args), args


def assert_like_loop(batched, f, args, in_axes, rtol=1e-12):
    want, want_args = loop_oracle(f, args, in_axes)
    got, got_args = batched_run(batched, args)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=1e-12)
    for g, w in zip(got_args, want_args):
        np.testing.assert_allclose(g, w, rtol=rtol, atol=1e-12)
    return got


# ---------------------------------------------------------------- the functions

def read_then_write(a):
    s = a[0]
    a[0] = 5.0
    return s


def row_read_sees_write(m):
    r = m[0]                        # a view per example: the write shows through
    m[0, 1] = 7.0
    t = m[1, 0]                     # a number per example: the write does not
    m[1, 0] = -1.0
    return r * 2.0 + t


def local_buffer(x):
    w = x * 1.5
    first = w[1]
    tail = w[1:]
    w[1] += 2.0
    tail *= 0.5
    alias = w
    alias[0] = first
    return w + first


def shared_histogram(x, hist):
    hist[0] += x
    return hist[0] * 2.0


def shared_alias(x, hist):
    h = hist
    h += x
    return np.sum(hist) + x


def bump(h, v):
    h[1] = h[1] + v


def shared_through_helper(x, hist):
    bump(hist, x)
    return hist[1] - x


def shared_scalar(x, c):
    c += x                          # a number: rebound per example, the caller keeps it
    return c * 2.0


def scale_accumulate(x, take):
    out = x
    scale = take
    for i in range(3):
        if i % 2 == 0:
            out += take * (i + 1.0)
            scale *= 1.5
        else:
            scale /= 1.25
    total = out
    total += scale * x
    return total


COUNTER = np.zeros(1)


def global_counter(x):
    COUNTER[0] += 1.0
    return x * COUNTER[0]


MAPPED_CASES = {
    "element_read": (read_then_write, lambda: (np.arange(6.0).reshape(3, 2),)),
    "row_view_and_element": (row_read_sees_write, lambda: (rng.normal(size=(4, 2, 3)),)),
    "local_buffer_aliases": (local_buffer, lambda: (rng.normal(size=(3, 4)),)),
}
SHARED_CASES = {
    "element_write": shared_histogram,
    "through_alias": shared_alias,
    "through_helper": shared_through_helper,
}


# ---------------------------------------------------------------- mapped arguments

@pytest.mark.every_case
@pytest.mark.parametrize("case", sorted(MAPPED_CASES))
def test_reads_before_writes_match_the_loop(case):
    f, args = MAPPED_CASES[case]
    assert_like_loop(vmap(f), f, args(), (0,))


def test_an_element_read_is_the_example_number_not_a_view():
    got = vmap(read_then_write)(np.arange(6.0).reshape(3, 2))
    np.testing.assert_array_equal(got, [0.0, 2.0, 4.0])


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(MAPPED_CASES))
def test_reads_before_writes_match_the_loop_under_jit(case):
    f, args = MAPPED_CASES[case]
    assert_like_loop(jit(vmap(f)), f, args(), (0,))


def test_gradient_through_a_vmapped_read_before_write():
    def per_example(x):
        w = x * 2.0
        s = w[0]
        w[0] = 5.0
        return s * w[1] + w[0]
    batched = vmap(per_example)

    def loss(xs):
        return np.sum(batched(xs))
    xs = rng.normal(size=(3, 2))
    np.testing.assert_allclose(grad(loss)(xs), 4.0 * xs[:, ::-1], rtol=1e-12)


# ---------------------------------------------------------------- shared arguments

@pytest.mark.every_case
@pytest.mark.parametrize("method", ["auto", "loop"])
@pytest.mark.parametrize("case", sorted(SHARED_CASES))
def test_writes_into_an_unmapped_argument_run_the_examples_in_order(case, method):
    f = SHARED_CASES[case]
    args = (rng.normal(size=4), rng.normal(size=3))
    assert_like_loop(vmap(f, in_axes=(0, None), method=method), f, args, (0, None))


@pytest.mark.slow
@pytest.mark.parametrize("parallel", [False, True])
@pytest.mark.parametrize("case", sorted(SHARED_CASES))
def test_writes_into_an_unmapped_argument_run_in_order_under_jit(case, parallel):
    f = SHARED_CASES[case]
    args = (rng.normal(size=5), rng.normal(size=3))
    batched = jit(vmap(f, in_axes=(0, None)), parallel=parallel)
    assert_like_loop(batched, f, args, (0, None))


def test_an_unmapped_number_updated_in_place_is_rebound_per_example():
    assert_like_loop(vmap(shared_scalar, in_axes=(0, None)), shared_scalar,
                     (np.arange(3.0), 1.0), (0, None))


def test_a_global_array_written_in_place_is_written_once_per_example():
    COUNTER[:] = 0.0
    got = vmap(global_counter)(np.ones(3))
    np.testing.assert_array_equal(got, [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(COUNTER, [3.0])


def count():
    COUNTER[0] += 1.0


def counter_in_a_helper(x):
    count()                             # the helper writes the global, not the function
    return x * COUNTER[0]


def counter_in_a_helper_not_read(x):
    count()
    return x * 2.0


@pytest.mark.parametrize("f", [counter_in_a_helper, counter_in_a_helper_not_read],
                         ids=lambda f: f.__name__)
def test_a_global_array_a_helper_writes_is_written_once_per_example(f):
    COUNTER[:] = 0.0
    want, _ = loop_oracle(f, (np.ones(3),), (0,))
    want_counter = COUNTER.copy()
    COUNTER[:] = 0.0
    np.testing.assert_array_equal(vmap(f)(np.ones(3)), want)
    np.testing.assert_array_equal(COUNTER, want_counter)


def test_vectorize_refuses_a_write_into_an_unmapped_argument_at_the_write():
    batched = vmap(shared_histogram, in_axes=(0, None), method="vectorize")
    with pytest.raises(TransformError) as info:
        batched(np.ones(3), np.zeros(2))
    message = str(info.value)
    line = inspect.getsourcelines(shared_histogram)[1] + 1
    assert f"test_vmap_writes.py:{line}:" in message
    assert "hist[0] += x" in message and "method='loop'" in message
    assert ".sum(0)" in message


def test_the_refusal_hint_works():
    # the hint's first remedy: method='loop' gives the loop's numbers
    f = shared_histogram
    args = (np.arange(3.0), np.zeros(2))
    assert_like_loop(vmap(f, in_axes=(0, None), method="loop"), f, args, (0, None))

    # its second: return each example's update and combine them after the call
    def update(x, hist):
        step = np.zeros_like(hist)
        step[0] = x
        return step
    hist = np.zeros(2)
    hist += vmap(update, in_axes=(0, None), method="vectorize")(np.arange(3.0), hist).sum(0)
    np.testing.assert_array_equal(hist, [3.0, 0.0])


# ---------------------------------------------------------------- dtypes

def test_float32_numbers_updated_in_a_loop_compile_and_stay_float32():
    x = rng.uniform(0.2, 1.5, 6).astype(np.float32)
    take = rng.uniform(0.5, 2.0, 6).astype(np.float32)
    got = assert_like_loop(jit(vmap(scale_accumulate)), scale_accumulate, (x, take), (0, 0),
                           rtol=1e-5)
    assert got.dtype == np.float32
    assert vmap(scale_accumulate)(x, take).dtype == np.float32


# ---------------------------------------------------------------- generated programs
# Programs over one mapped vector `a` (4 numbers per example), one mapped matrix `m`
# (2 x 3 per example) and one shared vector `h` (in_axes None): element, row and slice
# reads into temporaries, aliases, element/slice/whole writes and augmented updates, in
# a random order; the result sums every temporary, so a read that a later write wrongly
# changes (or a write lost) shows in the numbers.

_READS = ("a[{i}]", "m[{r}, {j}]", "m[{r}]", "a[{i}:{k}]", "a", "m[{r}, {j}:]")
_WRITES = ("a[{i}] = {v}", "m[{r}, {j}] = {v}", "m[{r}] *= {c}", "a[{i}:{k}] += {v}",
           "a += {c}", "{t} += {v}", "{t} *= {c}")
_SHARED = ("h[{i3}] += {v}", "h *= {c}", "alias", "{th} += {v}", "read h[{i3}]", "read h[1:]")


def random_program(seed: int, shared: bool) -> str:
    """The source of `program(a, m[, h])`; some seeds put a run of its statements in a
    `for i in range(3)` loop, indexing with `i`."""
    r = np.random.default_rng(seed)
    temps: list = []
    shared_temps: list = []
    count = int(r.integers(4, 9))
    loop = range(*sorted(r.integers(0, count + 1, 2))) if r.random() < 0.4 else range(0)

    def pick(options):
        return options[r.integers(len(options))]

    def value() -> str:
        if temps and r.random() < 0.6:
            return f"{r.uniform(0.25, 0.75):.2f} * np.sum({pick(temps)})"
        return f"{r.uniform(-1.0, 1.0):.2f}"

    def fill(template: str, looped: bool) -> str:
        i = int(r.integers(4))
        at = {"i": "i", "k": "i + 1", "j": "i", "i3": "i"} if looped else \
            {"i": i, "k": int(r.integers(i + 1, 5)), "j": int(r.integers(3)),
             "i3": int(r.integers(3))}
        return template.format(**at, r=int(r.integers(2)), v=value(),
                               c=f"{r.uniform(0.5, 1.5):.2f}",
                               t=pick(temps) if temps else "a",
                               th=pick(shared_temps) if shared_temps else "h")

    def statement(looped: bool) -> str:
        roll = r.random()
        if shared and roll < 0.25:
            line = pick(_SHARED)
            if line == "alias":
                shared_temps.append(f"s{len(shared_temps)}")
                line = f"{shared_temps[-1]} = h"
            elif line.startswith("read "):
                temps.append(f"t{len(temps)}")
                line = f"{temps[-1]} = {line[5:]}"
            return fill(line, looped)
        if roll < 0.6 or not temps:
            name = f"t{len(temps)}"
            line = f"{name} = {fill(pick(_READS), looped)}"
            temps.append(name)
            return line
        return fill(pick(_WRITES), looped)
    lines = []
    for n in range(count):
        if loop and n == loop.start:
            lines.append("    for i in range(3):")
        lines.append(("        " if n in loop else "    ") + statement(n in loop))
    parts = [f"np.sum({t})" for t in temps] + ["np.sum(a)", "np.sum(m)"]
    if shared:
        parts.append("np.sum(h)")
    params = "a, m, h" if shared else "a, m"
    body = "\n".join(lines)
    return f"import numpy as np\n\n\ndef program({params}):\n{body}\n" \
           f"    return {' + '.join(parts)}\n"


def program_inputs(shared: bool, size: int = 3):
    a, m = rng.normal(size=(size, 4)), rng.normal(size=(size, 2, 3))
    return ((a, m, rng.normal(size=3)), (0, 0, None)) if shared else ((a, m), (0, 0))


def check_program(tmp_path: pathlib.Path, seed: int, shared: bool, compiled: bool) -> None:
    source = random_program(seed, shared)
    f = write_module(tmp_path, source, {}).program
    args, in_axes = program_inputs(shared)
    runs = [vmap(f, in_axes=in_axes), vmap(f, in_axes=in_axes, method="loop")]
    if compiled:
        runs.append(jit(vmap(f, in_axes=in_axes)))
    for batched in runs:
        try:
            assert_like_loop(batched, f, args, in_axes, rtol=1e-10)
        except AssertionError as failure:
            raise AssertionError(f"seed {seed}:\n{source}") from failure


@pytest.mark.every_case
@pytest.mark.parametrize("seed, shared", [(0, False), (1, True), (2, False), (3, True)])
def test_generated_programs_match_the_loop(tmp_path, seed, shared):
    check_program(tmp_path, seed, shared, compiled=False)


@pytest.mark.slow
def test_many_generated_programs_match_the_loop(tmp_path):
    for seed in range(75):
        check_program(tmp_path, seed, shared=bool(seed % 2), compiled=False)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(100, 108))
def test_generated_programs_match_the_loop_under_jit(tmp_path, seed):
    check_program(tmp_path, seed, shared=bool(seed % 2), compiled=True)


# ---------------------------------------------------------------- writes read path by path
# Whether a write reaches the caller's array is read along every path: a name rebound to a
# new array on every path before the write (`h = h.copy()` in one branch, `h = h * 2.0` in
# the other; `a = h`, then `a = a * 2.0`) writes a new array, so the examples need not run
# in order (and `method='vectorize'` batches them); a write that reaches the caller's array
# on some path (one branch, a later iteration of a loop, a helper's `p[i] += v`) keeps the
# loop's numbers.

def rebound_in_both_branches(x, h, flag):
    if flag > 0.0:
        h = h.copy()
    else:
        h = h * 2.0
    h[0] = x
    return np.sum(h)


def rebound_through_an_alias(x, h):
    a = h
    a = a * 2.0
    a[0] = x
    return a[0] + a[1]


def rebinding_helper(h, v):
    if v > 100.0:
        h = h.copy()
    else:
        h = h + 0.0
    h[1] = v
    return np.sum(h)


def calls_a_rebinding_helper(x, h):
    return rebinding_helper(h, x) + h[1]


def copied_on_one_path(x, h, flag):
    if flag > 0.0:
        h = h.copy()
    h[0] = h[0] + x
    return np.sum(h)


def written_in_a_later_iteration(x, h):
    a = np.zeros(3)
    for _ in range(2):
        a[0] = a[0] + x                 # the second iteration writes into h
        a = h
    return a[0] * 2.0


def add_in_place(h, v):
    h[1] += v


def local_buffer_through_a_helper(x):
    buf = np.zeros(3)
    add_in_place(buf, x)
    add_in_place(buf, x)
    return buf * 2.0


def _rebound_inputs(shared: bool):
    x = rng.normal(size=4)
    h = rng.normal(size=3) if shared else rng.normal(size=(4, 3))
    return x, h


REBOUND_CASES = {
    "both_branches": (rebound_in_both_branches, (None,), (1.0,)),
    "both_branches_else": (rebound_in_both_branches, (None,), (-1.0,)),
    "alias_rebound": (rebound_through_an_alias, (), ()),
    "helper_rebinds": (calls_a_rebinding_helper, (), ()),
}


def _rebound_case(case: str, shared: bool):
    f, extra_axes, extra = REBOUND_CASES[case]
    x, h = _rebound_inputs(shared)
    return f, (x, h, *extra), (0, None if shared else 0, *extra_axes)


@pytest.mark.every_case
@pytest.mark.parametrize("shared", [True, False])
@pytest.mark.parametrize("case", sorted(REBOUND_CASES))
def test_a_name_rebound_on_every_path_before_the_write_is_vectorized(case, shared):
    f, args, in_axes = _rebound_case(case, shared)
    assert_like_loop(vmap(f, in_axes=in_axes, method="vectorize"), f, args, in_axes)
    strategy = next(line for line in vmap(f, in_axes=in_axes).source().splitlines()
                    if "# vmap:" in line)
    assert "vectorize strategy" in strategy, strategy


@pytest.mark.slow
@pytest.mark.parametrize("case", ["both_branches", "helper_rebinds"])
def test_a_name_rebound_on_every_path_before_the_write_under_jit(case):
    f, args, in_axes = _rebound_case(case, shared=True)
    assert_like_loop(jit(vmap(f, in_axes=in_axes)), f, args, in_axes)


@pytest.mark.every_case
@pytest.mark.parametrize("flag", [1.0, -1.0])
def test_a_write_into_the_callers_array_on_one_path_runs_in_order(flag):
    f = copied_on_one_path
    x, h = _rebound_inputs(shared=True)
    assert_like_loop(vmap(f, in_axes=(0, None, None)), f, (x, h, flag), (0, None, None))
    with pytest.raises(TransformError, match="written in place"):
        vmap(f, in_axes=(0, None, None), method="vectorize")(x, h, flag)
    flags = np.array([1.0, -1.0, -1.0, 1.0])        # the write reaches `h` on some examples
    assert_like_loop(vmap(f, in_axes=(0, None, 0)), f, (x, h, flags), (0, None, 0))
    x, rows = _rebound_inputs(shared=False)
    assert_like_loop(vmap(f, in_axes=(0, 0, 0)), f, (x, rows, flags), (0, 0, 0))


def test_a_write_on_one_path_under_jit_keeps_the_loops_numbers():
    x, h = _rebound_inputs(shared=True)
    flags = np.array([1.0, -1.0, -1.0, 1.0])
    batched = jit(vmap(copied_on_one_path, in_axes=(0, None, 0)))
    assert_like_loop(batched, copied_on_one_path, (x, h, flags), (0, None, 0))


@pytest.mark.parametrize("shared", [True, False])
def test_a_write_in_a_later_iteration_of_a_loop_reaches_the_caller(shared):
    f = written_in_a_later_iteration
    x, h = _rebound_inputs(shared)
    in_axes = (0, None if shared else 0)
    assert_like_loop(vmap(f, in_axes=in_axes), f, (x, h), in_axes)
    if shared:
        with pytest.raises(TransformError, match="written in place"):
            vmap(f, in_axes=in_axes, method="vectorize")(x, h)


@pytest.mark.parametrize("compiled", [False, True])
def test_a_helpers_augmented_element_write_into_a_local_buffer_is_per_example(compiled):
    # each example has its own buffer: the helper's `h[1] += v` must not add every
    # example's value into one row
    batched = vmap(local_buffer_through_a_helper)
    x = np.arange(1.0, 5.0)
    got = assert_like_loop(jit(batched) if compiled else batched,
                           local_buffer_through_a_helper, (x,), (0,))
    np.testing.assert_array_equal(got[:, 1], 4.0 * x)


def written_by_a_local_function(x, h):
    def put(v):
        h[0] = h[0] + v
        return v
    put(x)
    return h[0] * 1.0


def test_a_local_functions_write_into_an_unmapped_argument_runs_in_order():
    # the local function is inlined where it is called: its write reaches the caller's `h`
    f = written_by_a_local_function
    x, h = _rebound_inputs(shared=True)
    assert_like_loop(vmap(f, in_axes=(0, None)), f, (x, h), (0, None))


def _halve(arr):
    arr *= -0.5


def view_then_helper_write(x, a):
    g = a * 0.5
    M = (np.zeros(6) + x)[::-1]
    for _ in range(1):
        M = g[::-1]                 # batched by the join with the line above
    _halve(g)                       # a user function writing into g: M must see it
    return M[1]


@pytest.mark.parametrize("compiled", [False, True], ids=["python", "jit"])
def test_a_batched_view_sees_a_write_made_by_a_user_function(compiled):
    X, A = np.array([0.1, 0.2, 0.3]), np.linspace(-1.0, 1.0, 6)
    mapped = vmap(view_then_helper_write, in_axes=(0, None))
    got = (jit(mapped) if compiled else mapped)(X, A.copy())
    want, _ = loop_oracle(view_then_helper_write, [X, A], (0, None))
    np.testing.assert_allclose(got, want)
