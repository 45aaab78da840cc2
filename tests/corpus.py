"""A corpus of small user-style functions for semantic and gradient checks.

Every function here is ordinary module-level Python with real source, the way a user
writes NumPy code: loops, branches, early returns, in-place writes, calls to helpers.
Each is registered with `@case(make, argnums=..., tags=...)`:

- `make(rng)` builds the inputs from a generator seeded by the function's name, so the
  inputs are fixed across runs. Inputs stay away from points where the function is not
  differentiable (branch thresholds, `abs` at 0, ties in `max`), so central finite
  differences are a valid oracle.
- `argnums` are the differentiable arguments; `()` marks a control-flow case whose
  outputs are integers (only checked by the normalization test).
- `tags` say what the case exercises ("loops", "inplace", "numpy", ...). Cases tagged
  "control" are the control-flow-heavy ones the normalization test requires.

Functions never modify their arguments: a function that writes in place works on a copy
or on an array it allocated, so repeated evaluation (finite differences) is sound.
"""
from __future__ import annotations

import dataclasses
import math
import zlib
from typing import Callable

import numba
import numpy as np


@dataclasses.dataclass(frozen=True)
class Case:
    fn: Callable
    make: Callable[[np.random.Generator], tuple]
    argnums: tuple[int, ...]
    tags: frozenset

    @property
    def name(self) -> str:
        return self.fn.__name__

    def args(self) -> tuple:
        """Fresh inputs (a new copy every call), seeded by the case name."""
        rng = np.random.default_rng(zlib.crc32(self.name.encode()))
        return tuple(self.make(rng))

    @property
    def differentiable(self) -> bool:
        return bool(self.argnums)


CASES: list[Case] = []


def case(make, argnums=(0,), tags=()):
    """Register the decorated function as a corpus case."""
    argnums = (argnums,) if isinstance(argnums, int) else tuple(argnums)

    def register(fn):
        CASES.append(Case(fn, make, argnums, frozenset(tags)))
        return fn
    return register


def by_name(name: str) -> Case:
    return next(c for c in CASES if c.name == name)


# ------------------------------------------------------------------ input makers
def uniform(lo, hi, *shape):
    """A maker component: uniform floats in (lo, hi) of `shape` (a float if no shape)."""
    def draw(rng):
        if not shape:
            return float(rng.uniform(lo, hi))
        return rng.uniform(lo, hi, size=shape)
    return draw


def inputs(*parts):
    """A maker from components: callables draw from the generator, others are constants."""
    def make(rng):
        return tuple(p(rng) if callable(p) else p for p in parts)
    return make


def spread(lo, hi, n, gap=0.05):
    """A maker component: `n` shuffled floats in (lo, hi) at least `gap` apart (no ties)."""
    def draw(rng):
        grid = np.linspace(lo, hi, n)
        jitter = rng.uniform(-gap / 4, gap / 4, size=n) if n > 1 else np.zeros(n)
        return rng.permutation(grid + jitter)
    return draw


def away_from_zero(n, lo=0.2, hi=1.5):
    """A maker component: values with |v| in (lo, hi) and random signs."""
    def draw(rng):
        return rng.uniform(lo, hi, size=n) * rng.choice([-1.0, 1.0], size=n)
    return draw


# ------------------------------------------------------------------ user helpers
def square(v):
    return v * v


def scale_shift(v, a, b=1.0):
    return a * v + b


def normsq(v):
    return np.sum(v * v)


def poly_and_slope(x, c):
    return c * x * x + x, 2.0 * c * x + 1.0


def soft_clip(v, limit):
    if v > limit:
        return limit + 0.1 * (v - limit)
    if v < -limit:
        return -limit + 0.1 * (v + limit)
    return v


def cube_of_square(v):
    return square(v) * square(v) * square(v)


def scaled_copy(v, a):
    w = np.zeros_like(v)
    for i in range(v.shape[0]):
        w[i] = a * v[i]
    return w


def first_above(x, t):
    for i in range(len(x)):
        if x[i] > t:
            return x[i]
    return t


@numba.njit
def numba_smooth(v, w):
    return v * v * w + np.sin(v)


# ================================================================== arithmetic
@case(inputs(uniform(0.5, 1.5), uniform(-1, 1)), argnums=(0, 1), tags=("arith",))
def arith_polynomial(x, y):
    return x ** 3 - 2.0 * x * y + y / (1.0 + x * x)


@case(inputs(uniform(0.5, 2.0)), tags=("arith",))
def arith_float_powers(x):
    return x ** 2.5 + 3.0 ** x + x ** -1 + x ** 0.5


@case(inputs(uniform(0.5, 2.0), uniform(-1, 1)), argnums=(0, 1), tags=("arith",))
def arith_variable_power(x, y):
    return x ** y + y ** 2


@case(inputs(uniform(0.5, 1.5)), tags=("arith",))
def arith_negative_base_power(x):
    return (-2.0) ** 2 * x + (-x) ** 2 + (-1) ** 3 * x ** 3 - 2.0 ** 2


@case(inputs(uniform(-1, 1)), tags=("arith",))
def arith_unary_minus(x):
    y = -x
    return -y * -(x + 1.0) + (+x) - (-(-y))  # noqa: B002


@case(inputs(uniform(0.3, 1.0), uniform(-1.0, -0.3)), argnums=(0, 1), tags=("arith",))
def arith_abs(x, y):
    return abs(x - y) + abs(x) * y + abs(y) ** 2


@case(inputs(uniform(0.2, 0.4), uniform(0.6, 0.9)), argnums=(0, 1), tags=("arith",))
def arith_min_max(x, y):
    return max(x, y) * min(x, 2.0 * y) + max(x * x, 0.5) - min(y, 0.1)


@case(inputs(uniform(0.5, 1.5), 3), tags=("arith",))
def arith_with_integer(x, n):
    k = n * 2 + 1
    return x * k + x / n - n // 2 + x ** n


@case(inputs(uniform(-1, 1, 3, 4), uniform(-1, 1, 4)), argnums=(0, 1), tags=("arith", "numpy"))
def arith_matmul_vector(A, x):
    v = A @ x
    return v @ v


@case(inputs(uniform(-1, 1, 3, 4), uniform(-1, 1, 4, 2)), argnums=(0, 1),
      tags=("arith", "numpy"))
def arith_matmul_matrix(A, B):
    C = A @ B
    return np.sum(C * C)


@case(inputs(uniform(0.5, 1.5)), tags=("arith", "math"))
def math_exp_log(x):
    return math.sin(x) * math.exp(x) + math.log(x) + math.sqrt(x) + math.tanh(x) \
        + math.cos(x) ** 2


@case(inputs(uniform(0.2, 0.8)), tags=("arith", "math"))
def math_trig_inverse(x):
    return math.tan(x) + math.asin(0.5 * x) + math.acos(0.3 * x) + math.atan(x) \
        + math.sinh(x) + math.cosh(x)


@case(inputs(uniform(0.2, 0.8), uniform(0.5, 1.5)), argnums=(0, 1), tags=("arith", "math"))
def math_two_argument(x, y):
    return math.atan2(x, y) + math.hypot(x, y) + math.pow(y, x) + math.log1p(x) \
        + math.expm1(y) + math.log10(y) + math.log2(y + x)


@case(inputs(uniform(-1, 1, 5), uniform(0.5, 1.5)), argnums=(0, 1), tags=("arith", "numpy"))
def arith_scalar_array_mix(x, s):
    return np.sum(s * x + x / s - s) + np.sum(x ** 2) * s


@case(inputs(uniform(-1, 1, 3, 4), uniform(-1, 1, 4), uniform(-1, 1, 3, 1)),
      argnums=(0, 1, 2), tags=("arith", "numpy", "broadcast"))
def arith_broadcasting(A, b, c):
    B = (A + b) * c - b / (2.0 + c)
    return np.sum(B * B)


@case(inputs(uniform(0.5, 1.5, 4)), tags=("arith", "numpy"))
def arith_array_powers(x):
    return np.sum(2.0 ** x + x ** 3 + x ** x - 1.0 / x)


# ================================================================== tuples
@case(inputs(uniform(0.5, 0.9), uniform(0.5, 0.9)), argnums=(0, 1), tags=("tuples", "loops"))
def tuple_swap_in_loop(x, y):
    for _ in range(4):
        x, y = y, x * y + 0.5
    return x + 2.0 * y


@case(inputs(uniform(0.5, 1.5)), tags=("tuples", "calls"))
def tuple_from_helper(x):
    value, slope = poly_and_slope(x, 0.7)
    return value * slope


@case(inputs(uniform(-1, 1), uniform(-1, 1), uniform(-1, 1)), argnums=(0, 1, 2),
      tags=("tuples",))
def tuple_rotate(a, b, c):
    a, b, c = b, c, a
    a, b, c = b * 2.0, a + c, c * a
    return a * b + c


@case(inputs(uniform(-1, 1, 3)), tags=("tuples", "numpy"))
def tuple_unpack_array(v):
    a, b, c = v
    return a * b + b * c * c


@case(inputs(uniform(0.3, 0.6)), tags=("tuples", "loops"))
def tuple_fibonacci(x):
    a, b = x, 1.0
    for _ in range(6):
        a, b = b, a + b * x
    return b


@case(inputs(uniform(-1, 1), uniform(-1, 1)), argnums=(0, 1), tags=("tuples",))
def tuple_nested_unpack(x, y):
    (a, b), c = (x, y), x * y
    return a * c - b * b


@case(inputs(uniform(-1, 1, 3, 2)), tags=("tuples", "shape"))
def tuple_shape_unpack(A):
    n, m = A.shape
    s = 0.0
    for i in range(n):
        for j in range(m):
            s += A[i, j] * (i + 1) * (m - j)
    return s


# ================================================================== calls
@case(inputs(uniform(-1, 1)), tags=("calls",))
def call_helpers(x):
    return square(x) + scale_shift(x, 3.0) + cube_of_square(x)


@case(inputs(uniform(-1, 1, 5)), tags=("calls", "numpy"))
def call_helper_on_array(x):
    return normsq(x) * normsq(x * 2.0 - 1.0)


@case(inputs(uniform(-0.5, 0.5, 6)), tags=("calls", "loops"))
def call_in_loop(x):
    s = 0.1
    for i in range(len(x)):
        s = s + scale_shift(x[i], s)
    return s


@case(inputs(spread(-2.0, 2.0, 6)), tags=("calls", "branches"))
def call_helper_with_branches(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += soft_clip(x[i], 1.0) * x[i]
    return s


@case(inputs(uniform(0.5, 1.5)), tags=("calls",))
def call_keyword_argument(x):
    return scale_shift(x, a=2.0, b=x) + scale_shift(x, 0.5, b=3.0)


@case(inputs(uniform(-1, 1, 4)), tags=("calls", "inplace"))
def call_helper_returning_array(x):
    y = scaled_copy(x, 3.0)
    return np.sum(y * x)


@case(inputs(spread(-1.0, 1.0, 8)), tags=("calls", "return"))
def call_helper_with_early_return(x):
    return first_above(x, 0.3) * first_above(x * x, 0.5)


@case(inputs(uniform(-1, 1, 4), uniform(0.5, 1.5, 4)), argnums=(0, 1), tags=("calls",))
def call_numba_function(x, w):
    return np.sum(numba_smooth(x, w))


# ================================================================== branches
@case(inputs(uniform(0.5, 1.0)), tags=("branches", "control"))
def branch_if_else(x):
    if x > 0.3:
        y = x * x
    else:
        y = -x
    return y * 2.0


@case(inputs(spread(-2.0, 2.0, 7)), tags=("branches", "loops", "control"))
def branch_elif_chain(x):
    s = 0.0
    for i in range(x.shape[0]):
        v = x[i]
        if v < -1.0:
            s += v * v
        elif v < 0.0:
            s += 2.0 * v
        elif v < 1.0:
            s += np.sin(v)
        else:
            s += v ** 3
    return s


@case(inputs(spread(-1.0, 1.0, 6), uniform(0.5, 1.0)), argnums=(0, 1),
      tags=("branches", "loops", "control"))
def branch_nested(x, w):
    s = 0.0
    for i in range(len(x)):
        if x[i] > 0.0:
            if x[i] > 0.5:
                s += w * x[i]
            else:
                s += w * w * x[i]
        else:
            if i % 2 == 0:
                s -= x[i] * x[i]
    return s


@case(inputs(uniform(0.2, 0.8), uniform(0.2, 0.8)), argnums=(0, 1), tags=("branches",))
def branch_boolean_operators(x, y):
    if x > 0.1 and y < 0.9 or x > 5.0:
        r = x * y
    else:
        r = x + y
    if not (x > 0.95) and (y > 0.1 or x < 0.0):
        r = r * 2.0
    return r


@case(inputs(spread(-1.0, 1.0, 5)), tags=("branches", "loops"))
def branch_conditional_expression(x):
    s = 0.0
    for i in range(5):
        s += x[i] * x[i] if x[i] > 0.0 else -x[i]
    return s


@case(inputs(uniform(0.3, 0.7)), tags=("branches",))
def branch_chained_comparison(x):
    r = x
    if 0.0 < x < 1.0:
        r = r * r
    if 0.5 < x * x < 2.0:
        r = r + 100.0
    return r


@case(inputs(uniform(0.5, 1.5), 2), tags=("branches", "static"))
def branch_on_integer(x, mode):
    if mode == 1:
        return np.sin(x)
    elif mode == 2:
        return np.cos(x) * x
    return x


@case(inputs(spread(0.1, 2.0, 6)), tags=("branches", "loops", "control"))
def branch_overwrites_variable(x):
    best = x[0]
    for i in range(1, len(x)):
        if x[i] > best:
            best = x[i]
    return best * np.sum(x)


# ================================================================== for loops
@case(inputs(uniform(-1, 1, 6)), tags=("loops",))
def loop_range_stop(x):
    s = 0.0
    for i in range(len(x)):
        s += x[i] * x[i]
    return s


@case(inputs(uniform(-1, 1, 6)), tags=("loops",))
def loop_range_start_stop(x):
    s = 0.0
    for i in range(1, x.shape[0]):
        s += x[i] * x[i - 1]
    return s


@case(inputs(uniform(-1, 1, 9)), tags=("loops",))
def loop_range_step(x):
    s = 0.0
    for i in range(1, len(x), 3):
        s += np.exp(x[i]) * x[i - 1]
    return s


@case(inputs(uniform(-1, 1, 6)), tags=("loops",))
def loop_range_negative_step(x):
    s = 0.0
    for i in range(len(x) - 1, -1, -1):
        s = 0.5 * s + x[i] * (i + 1)
    return s * s


@case(inputs(spread(-1.0, 1.0, 8)), tags=("loops", "control"))
def loop_data_dependent_stop(x):
    stop = int(np.sum(x > 0.0))
    s = 0.0
    for i in range(stop):
        s += x[i] * x[i + 1]
    return s


@case(inputs(uniform(-1, 1, 5)), tags=("loops",))
def loop_over_array(x):
    s = 0.0
    for v in x:
        s += v * v * v
    return s


@case(inputs(uniform(-1, 1, 3, 4)), tags=("loops",))
def loop_over_rows(A):
    s = 0.0
    for row in A:
        s += np.sum(row) ** 2
    return s


@case(inputs(uniform(-1, 1, 5)), tags=("loops",))
def loop_enumerate(x):
    s = 0.0
    for i, v in enumerate(x):
        s += (i + 1) * np.sin(v)
    return s


@case(inputs(uniform(-1, 1, 5)), tags=("loops", "control"))
def loop_enumerate_with_start(x):
    s = 0.0
    for k, v in enumerate(x, 2):
        s += k * v * v
    for k, v in enumerate(x, start=-1):
        s += k * v
    return s


@case(inputs(uniform(-1, 1, 4)), tags=("loops", "control"))
def loop_rebinds_its_sequence(x):
    s = 0.0
    for v in x:
        x = x * 2.0
        s += v * x[0]
    return s


@case(inputs(uniform(-1, 1, 5), uniform(-1, 1, 5)), argnums=(0, 1), tags=("loops",))
def loop_zip(x, y):
    s = 0.0
    for a, b in zip(x, y):
        s += a * b * b
    return s


@case(inputs(uniform(-1, 1, 4, 3)), tags=("loops",))
def loop_nested(A):
    s = 0.0
    for i in range(A.shape[0]):
        for j in range(A.shape[1]):
            s += A[i, j] * A[i, j] * (i - j)
    return s


@case(inputs(uniform(-1, 1, 5)), tags=("loops",))
def loop_triangular(x):
    n = x.shape[0]
    s = 0.0
    for i in range(n):
        for j in range(i + 1, n):
            s += np.cos(x[i] - x[j])
    return s


@case(inputs(uniform(-1, 1, 8), uniform(0.5, 1.0)), argnums=(0, 1), tags=("loops",))
def loop_recurrence(x, w):
    h = 0.0
    for t in range(len(x)):
        h = np.tanh(w * h + x[t])
    return h


@case(inputs(uniform(0.5, 1.5, 6)), tags=("loops",))
def loop_product(x):
    p = 1.0
    for i in range(len(x)):
        p *= x[i]
    return p


@case(inputs(uniform(-1, 1, 4)), tags=("loops", "numpy"))
def loop_array_overwrite(x):
    v = x.copy()
    for k in range(3):
        v = np.sin(v) + x * k
    return np.sum(v * v)


@case(inputs(uniform(0.5, 0.9), uniform(0.1, 0.3)), argnums=(0, 1), tags=("loops",))
def loop_coupled_update(a, b):
    for _ in range(5):
        a = a * 0.9 + b
        b = b * a - 0.1
    return a + b


@case(inputs(uniform(-1, 1, 4), 3), tags=("loops", "static"))
def loop_integer_argument_stop(x, n):
    s = 0.0
    for i in range(n):
        s += x[i + 1] * x[i] * (n - i)
    return s


# ================================================================== while loops
@case(inputs(uniform(1.2, 1.4)), tags=("while", "loops", "control"))
def while_data_dependent(x):
    s = x
    while s < 10.0:
        s = s * 1.5 + 0.1
    return s


@case(inputs(uniform(-1, 1, 7)), tags=("while", "loops", "control"))
def while_counter(x):
    i = 0
    s = 0.0
    while i < len(x):
        s += x[i] ** 2
        i += 2
    return s


@case(inputs(uniform(0.6, 0.8)), tags=("while", "break", "control"))
def while_true_break(x):
    k = 0
    y = x
    while True:
        y = y * y + 0.5
        k += 1
        if k >= 3:
            break
    return y


@case(inputs(uniform(-1, 1, 8)), tags=("while", "continue", "control"))
def while_with_continue(x):
    i = 0
    s = 0.0
    while i < x.shape[0]:
        i += 1
        if i % 3 == 0:
            continue
        s += x[i - 1] * i
    return s


@case(inputs(uniform(2.0, 5.0)), tags=("while", "control"))
def while_newton_sqrt(a):
    y = a
    it = 0
    while abs(y * y - a) > 1e-12 and it < 50:
        y = 0.5 * (y + a / y)
        it += 1
    return y


@case(inputs(uniform(0.6, 0.9, 5)), tags=("while", "loops", "control"))
def while_nested_in_for(x):
    s = 0.0
    for i in range(len(x)):
        v = x[i]
        while v < 4.0:
            v = v * 2.0 + x[i]
        s += v
    return s


# ================================================================== break / continue
@case(inputs(spread(-1.0, 1.0, 8)), tags=("break", "loops", "control"))
def break_at_first_negative(x):
    s = 0.0
    for i in range(len(x)):
        if x[i] < 0.0:
            break
        s += np.exp(x[i])
    return s + x[0]


@case(inputs(spread(-1.0, 1.0, 8)), tags=("continue", "loops", "control"))
def continue_skip_negative(x):
    s = 0.0
    for i in range(len(x)):
        if x[i] < 0.0:
            continue
        s += x[i] * x[i]
    return s


@case(inputs(spread(-1.0, 1.0, 12)), tags=("break", "loops", "control"))
def break_inner_loop(x):
    s = 0.0
    for i in range(3):
        for j in range(4):
            v = x[4 * i + j]
            if v > 0.6:
                break
            s += v * (i + 1)
    return s


@case(inputs(spread(-1.0, 1.0, 12)), tags=("continue", "loops", "control"))
def continue_nested(x):
    s = 0.0
    for i in range(4):
        if i == 2:
            continue
        for j in range(3):
            if x[3 * i + j] < -0.5:
                continue
            s += x[3 * i + j] ** 2 * (j + 1)
    return s


@case(inputs(spread(-1.0, 1.0, 10)), tags=("break", "continue", "loops", "control"))
def break_and_continue(x):
    s = 0.0
    count = 0
    for i in range(len(x)):
        if x[i] < -0.3:
            continue
        count += 1
        s += np.sin(x[i]) * count
        if count == 5:
            break
    return s


@case(inputs(uniform(0.2, 0.5, 10)), tags=("break", "loops", "control"))
def break_on_accumulated_value(x):
    s = 0.0
    for i in range(len(x)):
        s += x[i] * x[i] + 0.31
        if s > 1.5:
            break
    return s


@case(inputs(spread(-1.0, 1.0, 9)), tags=("break", "while", "control"))
def while_break_on_element(x):
    i = 0
    s = 1.0
    while i < len(x):
        if x[i] > 0.8:
            break
        s = s * 0.5 + x[i]
        i += 1
    return s


# ================================================================== returns
@case(inputs(uniform(0.5, 1.0)), tags=("return", "control"))
def return_early(x):
    if x > 0.3:
        return x * x
    y = x + 1.0
    return y * y


@case(inputs(uniform(-1, 1)), tags=("return", "control"))
def return_multiple_branches(x):
    if x < -0.5:
        return -x
    elif x < 0.0:
        return x * x
    elif x < 0.5:
        return np.sin(x)
    return np.exp(x)


@case(inputs(spread(-1.0, 1.0, 8)), tags=("return", "loops", "control"))
def return_from_loop(x):
    s = 0.0
    for i in range(len(x)):
        s += x[i]
        if s > 0.7:
            return s * x[i]
    return s


@case(inputs(uniform(0.1, 0.3, 10)), tags=("return", "while", "control"))
def return_from_while(x):
    i = 0
    p = 1.0
    while i < 10:
        p = p * (1.0 + x[i])
        if p > 2.05:
            return p * i
        i += 1
    return -p


@case(inputs(spread(-1.0, 1.0, 12)), tags=("return", "loops", "control"))
def return_from_nested_loop(x):
    s = 0.0
    for i in range(3):
        for j in range(4):
            s += x[4 * i + j] ** 2
            if x[4 * i + j] > 0.85:
                return s
    return -s


@case(inputs(uniform(-1, 1, 4)), tags=("return",))
def return_without_control_flow(x):
    y = np.sum(x ** 2)
    return y


# ================================================================== in-place writes
@case(inputs(uniform(-1, 1, 5)), tags=("inplace", "loops", "alloc"))
def inplace_set_element(x):
    y = np.zeros(x.shape[0])
    for i in range(x.shape[0]):
        y[i] = x[i] ** 2
    return np.sum(y * x)


@case(inputs(uniform(-1, 1, 5)), tags=("inplace", "loops", "alloc"))
def inplace_add_element(x):
    y = np.zeros_like(x)
    for i in range(len(x)):
        for j in range(len(x)):
            y[i] += x[i] * x[j] * (j + 1)
    return np.sum(y * y)


@case(inputs(uniform(-1, 1, 4)), tags=("inplace", "loops", "alloc"))
def inplace_two_dimensional(x):
    n = len(x)
    M = np.empty((n, n))
    for i in range(n):
        for j in range(n):
            M[i, j] = x[i] * np.cos(x[j])
    return np.sum(M @ x)


@case(inputs(uniform(-1, 1, 6)), tags=("inplace", "slices", "alloc"))
def inplace_slice_assign(x):
    y = np.ones(8)
    y[1:4] = x[0:3] * 2.0
    y[5:] = x[3:] ** 2
    return np.sum(y * y)


@case(inputs(uniform(0.5, 1.2, 5)), tags=("inplace", "loops", "overwrite"))
def inplace_overwrite_needed_value(x):
    y = x.copy()
    for i in range(len(y)):
        y[i] = y[i] * y[i]
    for i in range(len(y)):
        y[i] = np.sin(y[i]) * y[i]
    return np.sum(y)


@case(inputs(uniform(-1, 1, 6)), tags=("inplace", "loops", "overwrite"))
def inplace_recurrence(x):
    y = x.copy()
    for i in range(1, len(y)):
        y[i] = np.sin(y[i - 1]) + y[i]
    return y[-1] * y[2]


@case(inputs(uniform(-1, 1, 6), uniform(-1, 1, 3)), argnums=(0, 1),
      tags=("inplace", "slices"))
def inplace_slice_add(x, v):
    y = x.copy()
    y[2:5] += v * y[0:3]
    y[0:3] -= v
    return np.sum(y ** 2)


@case(inputs(uniform(-1, 1, 3)), tags=("inplace", "loops", "alloc"))
def inplace_row_write(x):
    M = np.zeros((4, 3))
    for i in range(4):
        M[i] = x * (i + 1) + M[i - 1]
    return np.sum(M * M)


@case(inputs(uniform(-1, 1, 4)), tags=("inplace", "tuples"))
def inplace_swap_elements(x):
    y = x.copy()
    y[0], y[1] = y[1], y[0]
    y[2], y[3] = y[3] * y[0], y[2]
    return y[0] * 3.0 + y[1] ** 2 + y[2] * y[3]


@case(inputs(uniform(-1, 1, 5)), tags=("inplace", "indexing"))
def inplace_negative_index(x):
    y = np.zeros(5)
    y[-1] = x[0] * x[1]
    y[-2] = y[-1] * x[-1]
    return np.sum(y) + y[4] * x[2]


@case(inputs(uniform(-1, 1, 3)), tags=("inplace", "overwrite"))
def inplace_overwrite_twice(x):
    y = np.zeros(2)
    y[0] = x[0]
    y[0] = y[0] * x[1]
    y[0] = np.exp(y[0]) + y[0]
    y[1] = y[0] * x[2]
    return y[0] + y[1]


@case(inputs(uniform(-1, 1, 3, 4), uniform(-1, 1, 4, 2)), argnums=(0, 1),
      tags=("inplace", "loops", "alloc"))
def inplace_hand_matmul(A, B):
    C = np.zeros((A.shape[0], B.shape[1]))
    for i in range(A.shape[0]):
        for j in range(B.shape[1]):
            for k in range(A.shape[1]):
                C[i, j] += A[i, k] * B[k, j]
    return np.sum(np.tanh(C))


@case(inputs(uniform(-1, 1, 6)), tags=("inplace", "loops"))
def inplace_cumulative(x):
    c = np.zeros(len(x))
    c[0] = x[0]
    for i in range(1, len(x)):
        c[i] = c[i - 1] * 0.9 + x[i] * x[i]
    return np.sum(c)


@case(inputs(uniform(-1, 1, 4, 3)), tags=("inplace", "loops", "overwrite"))
def inplace_matrix_rows_normalized(A):
    B = A.copy()
    for i in range(B.shape[0]):
        B[i, :] = B[i, :] / (1.0 + np.sum(B[i, :] ** 2))
    return np.sum(B * A)


@case(inputs(uniform(0.2, 0.8, 5)), tags=("inplace", "while", "overwrite"))
def inplace_in_while(x):
    y = x.copy()
    k = 0
    while k < 3:
        for i in range(len(y)):
            y[i] = y[i] * (1.0 - y[i]) * 3.5
        k += 1
    return np.sum(y)


# ================================================================== allocation and methods
@case(inputs(uniform(-1, 1, 3)), tags=("alloc", "inplace"))
def alloc_constructors(x):
    z = np.zeros(3)
    o = np.ones(3)
    f = np.full(3, 2.0)
    e = np.empty(3)
    e[:] = x * 2.0
    z[1] = x[0]
    return np.sum((z + o) * x + f * x * x + e * x)


@case(inputs(uniform(-1, 1, 5)), tags=("alloc", "numpy"))
def alloc_arange(x):
    k = np.arange(len(x))
    r = np.arange(1, 6, 1)
    return np.sum(x * k) + np.sum(x * x / r)


@case(inputs(uniform(-1, 1, 2, 3)), tags=("alloc", "numpy"))
def alloc_like_constructors(A):
    Z = np.zeros_like(A) + A
    twos = np.ones_like(A) * 2.0
    F = np.full_like(A, 3.0)
    return np.sum(Z * twos * F * A)


@case(inputs(uniform(-1, 1, 3, 4)), tags=("methods",))
def methods_sum_transpose_reshape(A):
    G = A.T @ A
    R = A.reshape(2, 6)
    S = A.reshape((4, 3))
    return G.sum() + R.sum(axis=0) @ R.sum(axis=0) + S.T.sum() * A.mean()


@case(inputs(uniform(-1, 1, 5)), tags=("methods", "inplace"))
def methods_copy(x):
    y = x.copy()
    y[0] = 10.0
    z = y.copy()
    z[1] = z[1] * z[2]
    return np.sum(x * y * z)


@case(inputs(uniform(0.5, 1.5, 3, 4)), tags=("methods",))
def methods_reductions(A):
    return A.max() * A.min() + A.prod() + A.var() + A.std() + A.mean(axis=1).sum() \
        + A.ravel().sum() + A.cumsum().sum() + A.max(axis=0).sum()


@case(inputs(uniform(-1, 1, 4, 5)), tags=("shape", "loops"))
def shape_len_index_arithmetic(A):
    n, m = A.shape
    s = 0.0
    for i in range(n):
        s += A[i, m - 1 - i] * A[n - 1 - i, i]
    half = len(A) // 2
    s += np.sum(A[half]) * A.size + A.ndim
    return s


@case(inputs(uniform(-1, 1, 7)), tags=("shape", "loops"))
def shape_integer_index_arithmetic(x):
    n = len(x)
    mid = n // 2
    s = 0.0
    for k in range(mid):
        s += x[mid + k] * x[mid - k - 1] + x[(k * 3) % n]
    return s


# ================================================================== NumPy elementwise
@case(inputs(uniform(0.5, 1.5, 4)), tags=("numpy", "elementwise"))
def np_exp_log_family(x):
    return np.sum(np.sqrt(x) + np.cbrt(x) + np.exp(x) + np.exp2(x) + np.expm1(x)
                  + np.log(x) + np.log2(x) + np.log10(x) + np.log1p(x))


@case(inputs(uniform(-0.8, 0.8, 4)), tags=("numpy", "elementwise"))
def np_trigonometric(x):
    return np.sum(np.sin(x) * np.cos(x) + np.tan(x) + np.arcsin(x) + np.arccos(x)
                  + np.arctan(x))


@case(inputs(uniform(-0.8, 0.8, 4)), tags=("numpy", "elementwise"))
def np_hyperbolic(x):
    return np.sum(np.sinh(x) + np.cosh(x) + np.tanh(x) + np.arcsinh(x)
                  + np.arccosh(x * x + 1.5) + np.arctanh(x))


@case(inputs(away_from_zero(5)), tags=("numpy", "elementwise"))
def np_misc_unary(x):
    return np.sum(np.square(x) + np.reciprocal(x) + np.sign(x) * x + np.abs(x)
                  + np.negative(x) * np.positive(x) + np.absolute(x) * x)


@case(inputs(spread(-1.0, 1.0, 5), spread(-1.1, 0.9, 5)), argnums=(0, 1),
      tags=("numpy", "elementwise"))
def np_binary_functions(x, y):
    return np.sum(np.maximum(x, y) + np.minimum(x, y) * x + np.fmax(x, 0.33) + np.fmin(y, -0.33)
                  + np.arctan2(x, y + 2.0) + np.logaddexp(x, y) + np.hypot(x, y))


@case(inputs(spread(-1.0, 1.0, 6)), tags=("numpy", "elementwise"))
def np_clip_where(x):
    return np.sum(np.clip(x, -0.55, 0.55) * x + np.where(x > 0.0, x * x, -x)
                  + np.where(x < 0.3, np.sin(x), 1.0))


@case(inputs(uniform(0.5, 1.5, 4), uniform(-1, 1, 4)), argnums=(0, 1),
      tags=("numpy", "elementwise"))
def np_power_functions(x, y):
    return np.sum(np.power(x, 3) + np.power(x, y) + np.sqrt(x) * np.exp(y) + np.divide(y, x)
                  + np.multiply(x, y) + np.add(x, y) * np.subtract(x, y))


# ================================================================== reductions
@case(inputs(uniform(-1, 1, 3, 4)), tags=("numpy", "reduction"))
def red_sum_axes(A):
    a = np.sum(A, axis=0)
    b = np.sum(A, axis=1)
    c = np.sum(A, axis=-1, keepdims=True)
    return np.sum(a * a) + np.sum(b ** 3) + np.sum(c * A)


@case(inputs(uniform(0.5, 1.5, 3, 4)), tags=("numpy", "reduction"))
def red_mean_prod(A):
    m = np.mean(A, axis=0)
    p = np.prod(A, axis=1)
    k = np.mean(A, axis=1, keepdims=True)
    return np.sum(m * m) + np.sum(p) + np.prod(A) + np.sum(A - k) ** 2 + np.mean(A)


@case(inputs(uniform(-1, 1, 3, 4)), tags=("numpy", "reduction"))
def red_max_min(A):
    return np.sum(np.max(A, axis=1)) + np.sum(np.min(A, axis=0) ** 2) + np.max(A) * np.min(A) \
        + np.sum(np.max(A, axis=-1, keepdims=True) * A) + np.amax(A) + np.amin(A)


@case(inputs(uniform(-1, 1, 3, 5)), tags=("numpy", "reduction"))
def red_var_std(A):
    return np.sum(np.var(A, axis=1)) + np.sum(np.std(A, axis=0)) + np.var(A) + np.std(A) \
        + np.sum(np.std(A, axis=1, keepdims=True) * A)


@case(inputs(uniform(-1, 1, 2, 3, 4)), tags=("numpy", "reduction"))
def red_tuple_axis(T):
    a = np.sum(T, axis=(0, 2))
    b = np.mean(T, axis=(1, 2), keepdims=True)
    c = np.max(T, axis=(0, 1))
    return np.sum(a * a) + np.sum(T * b) + np.sum(c ** 2)


@case(inputs(uniform(0.5, 1.5, 5), uniform(0.5, 1.5, 2, 3)), argnums=(0, 1),
      tags=("numpy", "reduction"))
def red_cumulative(x, A):
    return np.sum(np.cumsum(x) * x) + np.sum(np.cumprod(x)) + np.sum(np.cumsum(A, axis=1) ** 2) \
        + np.sum(np.cumprod(A, axis=0))


@case(inputs(uniform(-1, 1, 5), uniform(-1, 1, 3, 3)), argnums=(0, 1),
      tags=("numpy", "reduction", "linalg"))
def red_norms(x, A):
    return np.linalg.norm(x) + np.linalg.norm(A) * np.linalg.norm(x * 2.0) \
        + np.sum(np.linalg.norm(A, axis=1))


@case(inputs(uniform(-1, 1, 3, 4)), tags=("numpy", "reduction", "broadcast"))
def red_keepdims_normalize(A):
    mu = A.mean(axis=1, keepdims=True)
    sd = A.std(axis=1, keepdims=True)
    Z = (A - mu) / sd
    return np.sum(Z * A)


@case(inputs(uniform(-2, 2, 6)), tags=("numpy", "reduction"))
def red_logsumexp(x):
    m = np.max(x)
    return m + np.log(np.sum(np.exp(x - m)))


@case(inputs(uniform(-1, 1, 3, 4), uniform(-1, 1, 3, 4)), argnums=(0, 1),
      tags=("numpy", "reduction"))
def red_softmax_cross_entropy(logits, target):
    z = logits - np.max(logits, axis=1, keepdims=True)
    p = np.exp(z) / np.sum(np.exp(z), axis=1, keepdims=True)
    return -np.sum(target * np.log(p))


# ================================================================== linear algebra
@case(inputs(uniform(-1, 1, 4), uniform(-1, 1, 4)), argnums=(0, 1), tags=("numpy", "linalg"))
def la_products(x, y):
    return np.dot(x, y) * np.inner(x, y) + np.sum(np.outer(x, y) ** 2) + np.vdot(x, x * y)


@case(inputs(uniform(-1, 1, 3, 3), uniform(-1, 1, 3, 3)), argnums=(0, 1),
      tags=("numpy", "linalg"))
def la_trace_einsum(A, B):
    return np.trace(A @ B) + np.einsum("ij,jk->", A, B) + np.einsum("ii", A * B) \
        + np.sum(np.einsum("ij,ij->i", A, B) ** 2)


def _well_conditioned(n):
    def draw(rng):
        return np.eye(n) * 2.0 + rng.uniform(-0.3, 0.3, size=(n, n))
    return draw


@case(inputs(_well_conditioned(3), uniform(-1, 1, 3)), argnums=(0, 1), tags=("numpy", "linalg"))
def la_inverse(A, b):
    Ainv = np.linalg.inv(A)
    return np.sum(Ainv @ b) + np.sum(Ainv * Ainv)


@case(inputs(_well_conditioned(3), uniform(-1, 1, 3), uniform(-1, 1, 3, 2)), argnums=(0, 1, 2),
      tags=("numpy", "linalg"))
def la_solve(A, b, B):
    x = np.linalg.solve(A, b)
    X = np.linalg.solve(A, B)
    return np.sum(x * x) + np.sum(X)


@case(inputs(_well_conditioned(3)), tags=("numpy", "linalg"))
def la_determinants(A):
    sign, logdet = np.linalg.slogdet(A)
    return np.linalg.det(A) + sign * logdet + np.linalg.det(A @ A.T)


@case(inputs(uniform(-1, 1, 2, 3, 4), uniform(-1, 1, 2, 4, 3)), argnums=(0, 1),
      tags=("numpy", "linalg"))
def la_batched_matmul(A, B):
    C = A @ B
    D = np.matmul(B, A)
    return np.sum(C ** 2) + np.sum(np.tanh(D))


@case(inputs(uniform(-1, 1, 3, 4), uniform(-1, 1, 4), uniform(-1, 1, 3)), argnums=(0, 1, 2),
      tags=("numpy", "linalg"))
def la_matrix_vector_forms(A, x, y):
    return np.sum(A @ x) * (y @ A @ x) + np.dot(A, x) @ y + np.sum(np.dot(y, A) ** 2)


# ================================================================== shape operations
@case(inputs(uniform(-1, 1, 2, 3, 4)), tags=("numpy", "shapeops"))
def sh_reshape_ravel_transpose(T):
    a = np.reshape(T, (6, 4))
    b = np.ravel(T)
    c = np.transpose(T, (2, 0, 1))
    d = np.transpose(a)
    return np.sum(a @ d) + np.sum(b * np.arange(24)) + np.sum(c[0] * c[1]) \
        + np.sum(np.reshape(T, (4, -1)) ** 2)


@case(inputs(uniform(-1, 1, 2, 3, 4)), tags=("numpy", "shapeops"))
def sh_swapaxes_moveaxis(T):
    a = np.swapaxes(T, 0, 2)
    b = np.moveaxis(T, 0, -1)
    return np.sum(a[0] * b[:, 0, :]) + np.sum(a[:, 1, :].T @ b[1])


@case(inputs(uniform(-1, 1, 3)), tags=("numpy", "shapeops"))
def sh_expand_squeeze(x):
    a = np.expand_dims(x, 0)
    b = np.expand_dims(x, axis=1)
    c = np.squeeze(a)
    d = np.squeeze(b, axis=1)
    return np.sum(a * b) + np.sum(c * d * x)


@case(inputs(uniform(-1, 1, 3), uniform(-1, 1, 3)), argnums=(0, 1), tags=("numpy", "shapeops"))
def sh_concatenate_stack(x, y):
    c = np.concatenate((x, y * 2.0, x * y))
    s = np.stack((x, y))
    t = np.stack([x, y], axis=1)
    return np.sum(c * c) + np.sum(s[0] * s[1]) + np.sum(t @ s)


@case(inputs(uniform(-1, 1, 2, 3), uniform(-1, 1, 2, 3)), argnums=(0, 1),
      tags=("numpy", "shapeops"))
def sh_hstack_vstack(A, B):
    H = np.hstack((A, B))
    V = np.vstack((A, B * B))
    C = np.concatenate((A, B), axis=1)
    return np.sum(H ** 2) + np.sum(V @ A.T) + np.sum(C * H)


@case(inputs(uniform(-1, 1, 3), uniform(-1, 1, 2, 1)), argnums=(0, 1),
      tags=("numpy", "shapeops", "broadcast"))
def sh_broadcast_tile_repeat(x, c):
    b = np.broadcast_to(x, (4, 3))
    d = np.broadcast_to(c, (2, 3))
    t = np.tile(x, 2)
    r = np.repeat(x, 3)
    return np.sum(b * b * np.arange(3)) + np.sum(d * x) + np.sum(t * np.arange(6)) + np.sum(r ** 3)


@case(inputs(uniform(-1, 1, 5), uniform(-1, 1, 2, 3)), argnums=(0, 1), tags=("numpy", "shapeops"))
def sh_flip(x, A):
    return np.sum(np.flip(x) * x * np.arange(5)) + np.sum(np.flip(A, axis=1) * A) \
        + np.sum(np.flip(A) ** 3 * A)


# ================================================================== indexing
@case(inputs(uniform(-1, 1, 8)), tags=("numpy", "indexing"))
def idx_ints_slices(x):
    return x[0] * x[-1] + np.sum(x[1:4] ** 2) + np.sum(x[::2] * x[1::2]) \
        + np.sum(x[::-1] * x) + np.sum(x[-3:]) * x[-2]


@case(inputs(uniform(-1, 1, 4, 5)), tags=("numpy", "indexing"))
def idx_two_dimensional(A):
    return np.sum(A[1, :] * A[2]) + np.sum(A[:, 2] ** 2) + np.sum(A[1:3, 0:2] @ A[0:2, 3:5]) \
        + A[-1, -2] * A[0, 0] + np.sum(A[::2, 1::2])


@case(inputs(uniform(-1, 1, 6)), tags=("numpy", "indexing"))
def idx_integer_array(x):
    idx = np.array([0, 2, 2, 5, 1])
    g = x[idx]
    return np.sum(g * g * np.arange(5)) + x[idx[3]]


@case(inputs(uniform(-1, 1, 6), np.array([4, 0, 4, 3])), tags=("numpy", "indexing"))
def idx_integer_array_argument(x, idx):
    return np.sum(np.sin(x[idx]) * x[idx])


@case(inputs(spread(-1.0, 1.0, 8)), tags=("numpy", "indexing"))
def idx_boolean_mask(x):
    pos = x[x > 0.0]
    neg = x[x < 0.0]
    return np.sum(pos ** 2) - np.sum(neg ** 3)


@case(inputs(uniform(-1, 1, 3, 4)), tags=("numpy", "indexing"))
def idx_boolean_mask_2d(A):
    mask = A > 0.05
    return np.sum(A[mask] ** 2) + np.sum(A[~mask])


@case(inputs(uniform(-1, 1, 5, 3)), tags=("numpy", "indexing"))
def idx_fancy_rows(A):
    rows = A[np.array([4, 0, 4])]
    return np.sum(rows @ A.T)


@case(inputs(uniform(-1, 1, 6)), tags=("numpy", "indexing", "inplace"))
def idx_write_through_mask(x):
    y = x.copy()
    y[y < 0.0] = 0.0
    return np.sum(y * x)


@case(inputs(uniform(-1, 1, 6)), tags=("numpy", "indexing", "inplace"))
def idx_write_integer_array(x):
    y = np.zeros(6)
    y[np.array([1, 3, 5])] = x[0:3] * 2.0
    return np.sum(y * x)


# ================================================================== larger programs
def _positions(n, box):
    def draw(rng):
        g = np.array([[i, j, k] for i in range(2) for j in range(2) for k in range(2)], float)
        return (g[:n] + 0.5) * (box / 2.0) + rng.uniform(-0.15, 0.15, size=(n, 3))
    return draw


@case(inputs(_positions(6, 3.0), 1.0, 1.0, 3.0), argnums=(0, 1, 2),
      tags=("program", "loops", "branches", "control"))
def lj_energy_cutoff(pos, eps, sigma, box):
    n = pos.shape[0]
    e = 0.0
    for i in range(n):
        for j in range(i + 1, n):
            d = pos[i] - pos[j]
            d = d - box * np.round(d / box)
            r2 = np.sum(d * d)
            if r2 < 2.4 ** 2:
                s6 = (sigma * sigma / r2) ** 3
                e += 4.0 * eps * (s6 * s6 - s6)
    return e


@case(inputs(uniform(-0.5, 0.5, 4, 4), uniform(-1, 1, 6, 4), uniform(-0.1, 0.1, 4)),
      argnums=(0, 2), tags=("program", "loops"))
def rnn_loss(W, xs, b):
    h = np.zeros(W.shape[0])
    loss = 0.0
    for t in range(xs.shape[0]):
        h = np.tanh(W @ h + xs[t] + b)
        loss += np.sum(h * h)
    return loss


@case(inputs(uniform(-1, 1, 3, 5), uniform(-1, 1, 5), uniform(-1, 1, 4, 3), uniform(-1, 1, 4)),
      argnums=(0, 1), tags=("program",))
def mlp_loss(W1, b1, X, y):
    H = np.tanh(X @ W1 + b1)
    out = np.sum(H, axis=1)
    r = out - y
    return np.mean(r * r)


@case(inputs(uniform(-1, 1, 3), uniform(-1, 1, 5, 3), spread(0.0, 1.0, 5)),
      tags=("program",))
def logistic_loss(w, X, y):
    z = X @ w
    p = 1.0 / (1.0 + np.exp(-z))
    return -np.mean(y * np.log(p) + (1.0 - y) * np.log(1.0 - p))


@case(inputs(uniform(-1, 1, 5), uniform(-1, 1)), argnums=(0, 1), tags=("program", "loops"))
def horner_polynomial(c, x):
    r = 0.0
    for k in range(len(c) - 1, -1, -1):
        r = r * x + c[k]
    return r


@case(inputs(uniform(0.5, 1.5), 20), tags=("program", "loops"))
def trapezoid_integral(a, n):
    h = 1.0 / n
    s = 0.5 * (np.exp(-a * 0.0) + np.exp(-a * 1.0))
    for k in range(1, n):
        t = k * h
        s += np.exp(-a * t * t)
    return s * h


@case(inputs(uniform(0.5, 1.0, 3), uniform(0.5, 1.5)), argnums=(0, 1),
      tags=("program", "loops"))
def euler_ode(x0, k):
    x = x0.copy()
    dt = 0.05
    for _step in range(30):
        x = x + dt * (-k * x + np.sin(x))
    return np.sum(x * x)


@case(inputs(uniform(-1, 1, 5, 2), uniform(0.5, 1.5)), argnums=(0, 1),
      tags=("program", "loops"))
def gaussian_kernel_sum(X, ell):
    s = 0.0
    for i in range(X.shape[0]):
        for j in range(X.shape[0]):
            d = X[i] - X[j]
            s += np.exp(-np.dot(d, d) / (2.0 * ell * ell))
    return s


@case(inputs(uniform(-1, 1, 6)), tags=("program", "loops"))
def rosenbrock(x):
    s = 0.0
    for i in range(len(x) - 1):
        s += 100.0 * (x[i + 1] - x[i] ** 2) ** 2 + (1.0 - x[i]) ** 2
    return s


@case(inputs(spread(-1.0, 1.0, 6)), tags=("program", "loops", "inplace", "control"))
def bubble_sort_weighted(x):
    y = x.copy()
    n = len(y)
    for i in range(n):
        swapped = False
        for j in range(n - 1 - i):
            if y[j] > y[j + 1]:
                y[j], y[j + 1] = y[j + 1], y[j]
                swapped = True
        if not swapped:
            break
    return np.sum(y * np.arange(1, n + 1)) + y[0] * y[-1]


@case(inputs(uniform(0.1, 0.3, 6)), tags=("program", "while", "inplace", "control"))
def explicit_heat_equation(u0):
    u = u0.copy()
    t = 0.0
    while t < 0.1:
        un = u.copy()
        for i in range(1, len(u) - 1):
            u[i] = un[i] + 0.2 * (un[i + 1] - 2.0 * un[i] + un[i - 1])
        t += 0.03
    return np.sum(u * u)


@case(inputs(uniform(0.5, 1.5), uniform(0.2, 0.5)), argnums=(0, 1),
      tags=("program", "loops", "tuples"))
def harmonic_oscillator_verlet(k, x0):
    x, v = x0, 0.0
    dt = 0.1
    for _step in range(20):
        a = -k * x
        x, v = x + dt * v + 0.5 * dt * dt * a, v + 0.5 * dt * (a - k * (x + dt * v))
    return x * x + v * v


@case(inputs(uniform(-1, 1, 4, 4), uniform(-1, 1, 4)), argnums=(0, 1),
      tags=("program", "loops", "inplace"))
def power_iteration(A, v0):
    M = A @ A.T + np.eye(4)
    v = v0.copy()
    for _ in range(8):
        w = M @ v
        v = w / np.linalg.norm(w)
    return v @ M @ v


@case(inputs(uniform(0.5, 1.5, 5), uniform(0.1, 0.9, 5)), argnums=(0, 1),
      tags=("program", "loops", "branches", "control"))
def piecewise_spline(knots, x):
    s = 0.0
    for i in range(len(x)):
        t = x[i] * 4.0
        k = int(t)
        frac = t - k
        if k >= 4:
            k = 3
            frac = 1.0
        s += (1.0 - frac) * knots[k] + frac * knots[k + 1]
    return s


@case(inputs(uniform(-1, 1, 3, 3)), tags=("program", "loops", "inplace"))
def gram_schmidt(A):
    Q = np.zeros_like(A)
    for j in range(A.shape[1]):
        v = A[:, j].copy()
        for i in range(j):
            v = v - np.dot(Q[:, i], A[:, j]) * Q[:, i]
        Q[:, j] = v / np.linalg.norm(v)
    return np.sum(Q * np.arange(9).reshape(3, 3))


@case(inputs(uniform(-1, 1, 6), uniform(0.1, 0.5)), argnums=(0, 1),
      tags=("program", "loops", "while", "control"))
def gradient_descent_inner(x0, lr):
    x = x0.copy()
    it = 0
    while it < 5:
        g = 2.0 * x + np.cos(x)
        x = x - lr * g
        it += 1
    return np.sum(x * x)


@case(inputs(uniform(-1, 1, 8)), tags=("program", "loops", "inplace"))
def moving_average(x):
    y = np.zeros(len(x) - 2)
    for i in range(len(y)):
        y[i] = (x[i] + x[i + 1] + x[i + 2]) / 3.0
    return np.sum(y ** 2) + np.max(y)


@case(inputs(uniform(-1, 1, 4), uniform(-1, 1, 4)), argnums=(0, 1),
      tags=("program", "loops", "calls"))
def spring_chain_energy(x, rest):
    e = 0.0
    for i in range(len(x) - 1):
        e += 0.5 * square(x[i + 1] - x[i] - rest[i])
    e += scale_shift(x[0], 0.1, 0.0) ** 2
    return e


@case(inputs(spread(-1.0, 1.0, 8), 0.25), tags=("program", "loops", "branches", "control"))
def huber_loss(r, delta):
    s = 0.0
    for i in range(len(r)):
        a = abs(r[i])
        if a <= delta:
            s += 0.5 * r[i] * r[i]
        else:
            s += delta * (a - 0.5 * delta)
    return s


# ================================================================== integer control flow
# Not differentiable (integer results): normalization only.
@case(inputs(27), argnums=(), tags=("control", "while", "break"))
def collatz_steps(n):
    steps = 0
    while True:
        if n == 1:
            break
        if n % 2 == 0:
            n = n // 2
        else:
            n = 3 * n + 1
        steps += 1
    return steps


@case(inputs(1071, 462), argnums=(), tags=("control", "while", "tuples"))
def gcd(a, b):
    while b != 0:
        a, b = b, a % b
    return a


@case(inputs(40), argnums=(), tags=("control", "loops", "inplace", "continue"))
def prime_sieve_count(n):
    is_prime = np.ones(n, dtype=np.bool_)
    is_prime[0] = False
    is_prime[1] = False
    for i in range(2, n):
        if not is_prime[i]:
            continue
        for j in range(i * i, n, i):
            is_prime[j] = False
    count = 0
    for i in range(n):
        if is_prime[i]:
            count += 1
    return count


@case(inputs(np.arange(0, 40, 3), 21), argnums=(), tags=("control", "while", "return"))
def binary_search(a, target):
    lo = 0
    hi = len(a) - 1
    while lo <= hi:
        mid = (lo + hi) // 2
        if a[mid] == target:
            return mid
        elif a[mid] < target:
            lo = mid + 1
        else:
            hi = mid - 1
    return -1


@case(inputs(np.array([3, 8, 1, 9, 4, 7])), argnums=(), tags=("control", "loops", "return"))
def index_of_max(a):
    best = 0
    for i in range(1, len(a)):
        if a[i] > a[best]:
            best = i
    return best


@case(inputs(np.array([[1, 2, 3], [4, 5, 6], [7, 8, 9]]), 6), argnums=(),
      tags=("control", "loops", "break"))
def find_in_matrix(M, v):
    found_i = -1
    found_j = -1
    for i in range(M.shape[0]):
        for j in range(M.shape[1]):
            if M[i, j] == v:
                found_i = i
                found_j = j
                break
        if found_i >= 0:
            break
    return found_i * 10 + found_j


@case(inputs(30), argnums=(), tags=("control", "loops", "continue", "break"))
def fizz_count(n):
    total = 0
    for i in range(1, n):
        if i % 15 == 0:
            total += 100
            continue
        if i % 5 == 0:
            total += 10
            continue
        if i % 3 == 0:
            total += 1
        if total > 150:
            break
    return total


@case(inputs(np.array([5, 3, 8, 1, 9, 2])), argnums=(), tags=("control", "loops", "inplace"))
def insertion_sort(a):
    b = a.copy()
    for i in range(1, len(b)):
        key = b[i]
        j = i - 1
        while j >= 0 and b[j] > key:
            b[j + 1] = b[j]
            j -= 1
        b[j + 1] = key
    return b


@case(inputs(12), argnums=(), tags=("control", "loops", "inplace"))
def pascal_row(n):
    row = np.zeros(n + 1, dtype=np.int64)
    row[0] = 1
    for k in range(1, n + 1):
        for j in range(k, 0, -1):
            row[j] += row[j - 1]
    return row


@case(inputs(100), argnums=(), tags=("control", "while", "return"))
def integer_sqrt(n):
    if n < 2:
        return n
    x = n
    y = (x + 1) // 2
    while y < x:
        x = y
        y = (x + n // x) // 2
    return x


@case(inputs(np.array([1, -2, 3, 10, -4, 7, 2, -5])), argnums=(), tags=("control", "loops"))
def max_subarray(a):
    best = a[0]
    current = a[0]
    for i in range(1, len(a)):
        current = max(a[i], current + a[i])
        best = max(best, current)
    return best


@case(inputs(7, 3), argnums=(), tags=("control", "return", "calls"))
def binomial(n, k):
    if k < 0 or k > n:
        return 0
    if k == 0 or k == n:
        return 1
    r = 1
    for i in range(min(k, n - k)):
        r = r * (n - i) // (i + 1)
    return r
