"""Functions the reverse-mode tests differentiate: one language feature each.

Each entry of CORPUS is (function, argument maker); the makers take a numpy Generator.
"""
import math

import numba
import numpy as np


def arith(x, y):
    z = x * y - x / (y * y + 1.0) + 3.0 * x ** 2 - y ** 3.0
    return -z + x ** y


def matmul_chain(A, x):
    y = A @ x
    z = A.T @ y
    return z @ z + np.sum(A @ A)


def absolute_and_extremes(x, y):
    return abs(x - y) + max(x, y) * min(x * x, y) + np.abs(x)


def math_functions(x, y):
    return math.sin(x) * math.exp(y) + math.log(x * x + 1.0) + math.sqrt(y * y + 2.0) + \
        math.tanh(x * y) + math.atan2(x, y)


def numpy_elementwise(x):
    y = np.exp(np.sin(x)) + np.log1p(x * x) + np.sqrt(np.cosh(x))
    return np.sum(np.tanh(y) * x)


def swap_and_unpack(x, y):
    a, b = x, y
    for _ in range(3):
        a, b = b, a * b + 1.0
    p, q = (a + b, a - b)
    return p * q


def helper_square_plus(u, v):
    return u * u + v


def calls_helper(x, y):
    s = helper_square_plus(x, y)
    t = helper_square_plus(s, x)
    return t * y


@numba.njit
def njit_helper(u):
    return np.sin(u) * u


def calls_njit(x):
    return np.sum(njit_helper(x) * x)


def branches(x, y):
    if x > y:
        z = x * y
    elif x > 0.0:
        z = x + y * y
    else:
        z = -x * 3.0
    return z * z


def loop_range_variants(x, n):
    acc = 0.0
    for i in range(n):
        acc += x[i] * x[i]
    for i in range(1, n, 2):
        acc += acc * x[i]
    for i in range(n - 1, 0, -3):
        acc = acc * 0.5 + np.sin(x[i])
    for v in x:
        acc += v * acc * 0.01
    return acc


def data_dependent_stop(x):
    n = int(x[0] * 3.0) + 2
    total = 0.0
    for i in range(n):
        total += x[i % x.shape[0]] * total + x[1]
    return total


def while_loop(x):
    s = x
    k = 0
    while s < 50.0:
        s = s * 1.7 + math.sin(s)
        k += 1
    return s * k


def break_continue(x):
    acc = 0.0
    for i in range(x.shape[0]):
        if i % 3 == 1:
            continue
        acc += x[i] * acc + x[i]
        if acc > 4.0:
            break
    return acc


def early_return(x):
    s = np.sum(x * x)
    if s > 10.0:
        return s * 0.5
    for i in range(x.shape[0]):
        if x[i] > 1.5:
            return s + x[i] ** 3
    return s * s


def overwritten_in_loop(x):
    h = x
    for _ in range(4):
        h = np.tanh(h * 1.3 + 0.1)
        h = h * h + x
    return np.sum(h)


def inplace_writes(x):
    y = np.zeros(x.shape[0])
    for i in range(x.shape[0]):
        y[i] = x[i] * x[i]
    for i in range(1, x.shape[0]):
        y[i] += y[i - 1] * x[i]
    return np.sum(y * y)


def inplace_overwrite_needed(x):
    y = x.copy()
    s = 0.0
    for i in range(x.shape[0]):
        s += y[i] * y[i]
        y[i] = np.sin(y[i]) * s
    return s + np.sum(y)


def inplace_2d_and_slices(x):
    m = np.ones((3, x.shape[0]))
    for j in range(x.shape[0]):
        m[0, j] = x[j] * 2.0
        m[2, j] = m[0, j] * x[j]
    m[1, 1:3] = x[0:2] * x[1:3]
    return np.sum(m * m)


def constructors(x):
    a = np.zeros_like(x) + x
    b = np.ones(x.shape[0]) * x
    c = np.full(x.shape[0], 2.0) * a
    r = np.arange(x.shape[0]) * 1.0
    e = np.empty(x.shape[0])
    for i in range(len(x)):
        e[i] = x[i] + r[i]
    return np.sum(a * b * c) + np.sum(e * e)


def methods_and_shapes(A):
    n = A.shape[0]
    m = len(A)
    B = A.reshape(A.size)
    return A.sum() * n + (A.T * A).sum() + np.sum(B * B) * m


def uses_stop_gradient(x):
    from_outside = x * 2.0
    return np.sum(x * x) * stop(np.sum(from_outside))


def stop(v):
    return v


def integer_index_arithmetic(x):
    n = x.shape[0]
    mid = n // 2
    total = 0.0
    for i in range(mid):
        j = n - 1 - i
        total += x[i] * x[j] + x[2 * i % n]
    return total


def lj_energy(pos, eps, sigma):
    e = 0.0
    for i in range(pos.shape[0]):
        for j in range(i + 1, pos.shape[0]):
            d = pos[i] - pos[j]
            r2 = np.sum(d * d)
            if r2 < 9.0:
                s6 = (sigma * sigma / r2) ** 3
                e += 4.0 * eps * (s6 * s6 - s6)
    return e


def rnn_loss(W, U, b, xs, h0):
    h = h0
    for t in range(xs.shape[0]):
        h = np.tanh(W @ h + U @ xs[t] + b)
    return np.sum(h * h)


def defined_in_loop(x):
    for i in range(x.shape[0]):
        last = x[i] * 2.0
    return last * last

def inner_helper(v, k):
    s = 0.0
    for i in range(k):
        s = s + v[i] * v[i]
    return s, s * 2.0

def calls_loop_helper(x):
    total = 0.0
    for j in range(2):
        a, b = inner_helper(x * (j + 1.0), x.shape[0])
        total += a * b
    return total

def while_in_for(x):
    acc = 0.0
    for i in range(x.shape[0]):
        t = x[i]
        while t < 3.0:
            t = t * 1.5 + 0.3
        acc += t * x[i]
    return acc

def nested_break_return(x):
    acc = 1.0
    for i in range(x.shape[0]):
        for j in range(x.shape[0]):
            acc = acc * (1.0 + 0.1 * x[j])
            if acc > 5.0:
                break
            if acc < -5.0:
                return acc * x[i]
        acc = acc * 0.9 + x[i]
    return acc

def reuse_index(x):
    s = 0.0
    for i in range(3):
        s += x[i] * s + x[i]
    for i in range(1, 4):
        s = s * x[i]
    return s

def branch_defines_values(x):
    """Each branch defines `y`: grad of grad must not read the branch not taken."""
    if x > 0.5:
        y = np.sin(x) * x
    else:
        y = x * x
    return y


def branch_only_def(x):
    y = x * 2.0
    if x > 0.5:
        y = y * y
    return y + x

def matrices(A, B):
    C = A @ B
    D = C.T @ A
    return np.sum(D * D) + np.trace(C)

def pow_variants(x, y):
    return x ** 3 + y ** x + 2.0 ** y + x ** 0.5

def cond_on_param(x, flag):
    if flag > 0:
        r = np.sin(x)
    else:
        r = np.cos(x)
    return np.sum(r * x)

def accumulate_array(xs):
    acc = np.zeros(xs.shape[1])
    for t in range(xs.shape[0]):
        acc = acc * 0.5 + xs[t] * xs[t]
    return np.sum(acc)


def vec(k):
    return lambda rng: (rng.standard_normal(k),)


def lj_args(rng):
    return rng.uniform(0.0, 3.0, (6, 3)), 1.2, 0.9


def rnn_args(rng):
    return (rng.standard_normal((4, 4)) * 0.4, rng.standard_normal((4, 3)) * 0.4,
            rng.standard_normal(4) * 0.1, rng.standard_normal((6, 3)), np.zeros(4))


CORPUS = [
    (defined_in_loop, vec(4)),
    (calls_loop_helper, vec(3)),
    (while_in_for, lambda rng: (np.array([0.5, 1.2, 2.8, 4.0]),)),
    (nested_break_return, lambda rng: (np.array([0.5, 1.2, 2.8, 4.0]),)),
    (nested_break_return, lambda rng: (np.array([-20.0, -1.2, 2.8, 4.0]),)),
    (reuse_index, vec(5)),
    (branch_only_def, lambda rng: (0.7,)),
    (branch_only_def, lambda rng: (0.2,)),
    (matrices, lambda rng: (rng.standard_normal((3, 3)), rng.standard_normal((3, 3)))),
    (pow_variants, lambda rng: (1.3, 0.7)),
    (cond_on_param, lambda rng: (rng.standard_normal(3), 1)),
    (cond_on_param, lambda rng: (rng.standard_normal(3), -1)),
    (accumulate_array, lambda rng: (rng.standard_normal((4, 3)),)),
    (lj_energy, lj_args),
    (rnn_loss, rnn_args),
    (arith, lambda rng: (1.3, 0.7)),
    (matmul_chain, lambda rng: (rng.standard_normal((3, 3)), rng.standard_normal(3))),
    (absolute_and_extremes, lambda rng: (1.3, -0.4)),
    (math_functions, lambda rng: (0.8, 0.3)),
    (numpy_elementwise, vec(5)),
    (swap_and_unpack, lambda rng: (0.4, 0.6)),
    (calls_helper, lambda rng: (0.9, 1.2)),
    (calls_njit, vec(4)),
    (branches, lambda rng: (1.5, 0.5)),
    (branches, lambda rng: (0.5, 1.5)),
    (branches, lambda rng: (-0.5, 1.5)),
    (loop_range_variants, lambda rng: (rng.standard_normal(7), 7)),
    (data_dependent_stop, lambda rng: (np.array([1.1, 0.3, -0.4, 0.8]),)),
    (while_loop, lambda rng: (1.3,)),
    (break_continue, lambda rng: (np.linspace(0.2, 1.6, 9),)),
    (early_return, lambda rng: (np.array([0.1, 0.2, 1.7, 0.3]),)),
    (early_return, lambda rng: (np.array([0.1, 0.2, 0.7, 0.3]),)),
    (early_return, lambda rng: (np.array([2.1, 3.2, 0.7, 0.3]),)),
    (overwritten_in_loop, vec(3)),
    (inplace_writes, vec(5)),
    (inplace_overwrite_needed, vec(5)),
    (inplace_2d_and_slices, vec(4)),
    (constructors, vec(4)),
    (methods_and_shapes, lambda rng: (rng.standard_normal((3, 3)),)),
    (integer_index_arithmetic, vec(6)),
]


def identity(x):
    return x


def constant_output(x):
    return 1.0


def while_continue(x):
    s = 0.0
    k = 0
    while k < 6:
        k += 1
        if k % 2 == 0:
            continue
        s += x * k + s * 0.1
    return s


def scaled(x, scale=2.0):
    return x * scale


def calls_with_keyword(x):
    return scaled(x, scale=3.0) + scaled(x)


CORPUS += [
    (identity, lambda rng: (1.7,)),
    (while_continue, lambda rng: (0.7,)),
    (calls_with_keyword, lambda rng: (0.4,)),
]


def sliding_slice_writes(x):
    y = np.zeros(x.shape[0] + 2)
    for i in range(x.shape[0]):
        y[i:i + 3] += x[i] * np.array([0.25, 0.5, 0.25])
        y[i + 1:i + 2] = y[i + 1:i + 2] * x[i]
    return np.sum(y * y)


CORPUS += [(sliding_slice_writes, vec(5))]


def product(x):
    p = 1
    for i in range(x.shape[0]):
        p = p * x[i]
    return p


CORPUS += [(product, vec(4))]


def row_views_of_other_rows(X0):
    X = X0.copy()
    total = 0.0
    for i in range(X.shape[0] - 1):
        row = X[i]
        X[i + 1] = X[i + 1] + row * 0.5
        total += np.sum(row * row)
    return total + np.sum(X)


def element_read_then_overwritten(x0):
    x = x0.copy()
    s = 0.0
    for i in range(x.shape[0]):
        a = x[i]
        x[i] = a * a
        s += a * x[i]
    return s


CORPUS += [(row_views_of_other_rows, lambda rng: (rng.standard_normal((4, 3)),)),
           (element_read_then_overwritten, vec(4))]


def unpacks_a_rule_result(A):
    sign, logdet = np.linalg.slogdet(A)
    return logdet * sign + np.sum(A * A)


CORPUS += [(unpacks_a_rule_result,
            lambda rng: (np.eye(3) * 2.0 + rng.standard_normal((3, 3)) * 0.2,))]
