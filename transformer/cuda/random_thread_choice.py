"""The element forms of `random.categorical`, `permutation` and `choice` in CUDA threads:
scalar code over `cuda.local.array`s of static size, one function per call form, for
`random_forms.device_function` to build. Imports numba.cuda, so only code that builds a
CUDA kernel imports it (`random_choice_forms`).

Every element `element(k0, k1, i, a, b)` gives element `i` (flat, row-major) of the draw
the CPU makes (`transformer.runtime.random_samplers.categorical`,
`transformer.runtime.random_choice`), from the same counters:

* categorical with replacement: the first maximum (a NaN counts as the maximum, as
  `np.argmax`) of `logits + gumbel` over the categories, the noise drawn for the result's
  shape with the category axis inserted;
* a shuffle (permutation, choice without replacement and without `p`): each element redoes
  the thread's shuffle (JAX's rounds of a stable sort by fresh 32-bit keys), as an
  insertion sort in local arrays: O(n^2) work per element, meant for the small `n` a
  thread holds;
* a Gumbel top-k (categorical and choice without replacement, with `p`): the index of
  rank `t` in a stable ascending order of the negated scores (NaN last, as
  `np.argsort`), by counting: O(n^2) per element;
* choice with `p` and replacement: `searchsorted(cumsum(p), total * (1 - u))` (left side,
  by bisection) with the cumulative sum taken in p's dtype, in order.
"""
from __future__ import annotations

import numpy as np
from numba import cuda, from_dtype, int64, uint32

from transformer.runtime.random import _bits32, _randint64, block
from transformer.runtime.random_choice import (_gumbel32, _gumbel64, _log64, _rounds,
                                               _unit32, _unit64)
from transformer.runtime.xla_math import log32

_BUILT: dict = {}
_F64 = np.dtype(np.float64)


@cuda.jit(device=True)
def _of_vector(logits, c, row):
    return logits[c]


@cuda.jit(device=True)
def _of_column(logits, c, row):
    return logits[c, row]


@cuda.jit(device=True)
def _of_row(logits, c, row):
    return logits[row, c]


# (logits.ndim, category axis) -> logit `c` of batch row `row`
_LOGIT = {(1, 0): _of_vector, (2, 0): _of_column, (2, 1): _of_row}


def _once(key, build):
    if key not in _BUILT:
        _BUILT[key] = build()
    return _BUILT[key]

# ---------------------------------------------------------------- categorical


def categorical_element(logits_shape: tuple, axis: int, dims: tuple, gumbel):
    """Categorical with replacement: `element(k0, k1, i, logits, n_noise)` for logits of
    shape `logits_shape` (1-D or 2-D), category axis `axis` (>= 0), result dimensions
    `dims` and the Gumbel element `gumbel(k0, k1, i, n_noise, 0)` of logits' dtype."""
    def build():
        n_cat = logits_shape[axis]
        last = dims[-1] if dims else 1
        two_d = len(logits_shape) == 2
        broadcast = two_d and logits_shape[1 - axis] == 1
        logit = _LOGIT[len(logits_shape), axis]
        # the noise's strides: (prefix, category, column) or (prefix, column, category)
        prefix_stride = n_cat * last if two_d else n_cat
        cat_stride = last if two_d and axis == 0 else 1
        col_stride = 0 if not two_d else (1 if axis == 0 else n_cat)

        def element(k0, k1, i, logits, n_noise):
            prefix, col = (i // last, i % last) if two_d else (i, 0)
            row = 0 if broadcast else col
            best, best_value = -1, logit(logits, 0, row)     # typed; replaced at c == 0
            for c in range(n_cat):
                noise_at = prefix * prefix_stride + c * cat_stride + col * col_stride
                v = gumbel(k0, k1, noise_at, n_noise, 0) + logit(logits, c, row)
                if v != v:
                    return c
                if best < 0 or v > best_value:
                    best, best_value = c, v
            return best
        return element
    return _once(("categorical", logits_shape, axis, dims, gumbel), build)


def categorical_top_element(logits_shape: tuple, axis: int, gumbel, dt: np.dtype):
    """Categorical without replacement: element `i` = (draw `t`, batch row `r`) is the
    category of rank `t` in row `r` by the Gumbel top-k (noise of the logits' shape)."""
    def build():
        n_cat = logits_shape[axis]
        rows = 1 if len(logits_shape) == 1 else logits_shape[1 - axis]
        size, nb_dt = int(np.prod(logits_shape)), from_dtype(dt)
        logit = _LOGIT[len(logits_shape), axis]
        # a logit's flat index: row * row_stride + category * cat_stride
        row_stride, cat_stride = (1, rows) if axis == 0 else (n_cat, 1)

        def element(k0, k1, i, logits, b):
            t, r = i // rows, i % rows
            scores = cuda.local.array(n_cat, nb_dt)
            for c in range(n_cat):
                at = r * row_stride + c * cat_stride
                scores[c] = -(logit(logits, c, r) + gumbel(k0, k1, at, size, 0))
            return _ranked(scores, n_cat, t)
        return element
    return _once(("categorical top", logits_shape, axis, gumbel, dt), build)


def _ranked_code(scores, n, t):
    """The index of rank `t` when `scores[:n]` are sorted ascending, stably, NaN last."""
    for c in range(n):
        a, rank = scores[c], 0
        for d in range(n):
            s = scores[d]
            if s != s:
                before = a != a and d < c
            elif a != a:
                before = True
            else:
                before = s < a or (s == a and d < c)
            if before:
                rank += 1
        if rank == t:
            return c
    return n


_ranked = cuda.jit(device=True)(_ranked_code)

# ---------------------------------------------------------------- shuffles


def shuffle_element(n: int, values: bool):
    """Element `i` of a shuffle of `arange(n)` (`values` False: `element(k0, k1, i, a, b)`
    gives the index) or of a 1-D array `a` of n values (`values` True: `a[index]`)."""
    def build():
        rounds, size = _rounds(n), max(n, 1)

        def element(k0, k1, i, a, b):
            perm = cuda.local.array(size, int64)
            keys = cuda.local.array(size, uint32)
            for j in range(n):
                perm[j] = j
            for _ in range(rounds):
                s0, s1 = block(k0, k1, 1)
                k0, k1 = block(k0, k1, 0)
                for j in range(n):
                    keys[j] = _bits32(s0, s1, j, 0, 0)
                for j in range(1, n):            # stable insertion sort by the keys
                    kj, pj, m = keys[j], perm[j], j - 1
                    while m >= 0 and keys[m] > kj:
                        keys[m + 1], perm[m + 1] = keys[m], perm[m]
                        m -= 1
                    keys[m + 1], perm[m + 1] = kj, pj
            if values:
                return a[perm[i]]
            return perm[i]
        return element
    return _once(("shuffle", n, values), build)

# ---------------------------------------------------------------- choice


def uniform_choice_element(n: int, values: bool):
    """`choice(key, a, shape)` with replacement and no `p`: `randint(key, size, 0, n)`."""
    def build():
        def element(k0, k1, i, a, b):
            index = _randint64(k0, k1, i, np.int64(0), np.int64(n))
            if values:
                return a[index]
            return index
        return element
    return _once(("uniform choice", n, values), build)


def weighted_choice_element(n: int, dt: np.dtype, values: bool):
    """`choice(key, a, shape, p=p)` with replacement: inverse CDF of p (dtype `dt`);
    `element(k0, k1, i, a, p)`."""
    def build():
        unit, one, nb_dt = (_unit64, 1.0, from_dtype(dt)) if dt == _F64 else \
            (_unit32, np.float32(1.0), from_dtype(dt))

        def element(k0, k1, i, a, p):
            cuml = cuda.local.array(n, nb_dt)
            total = p[0]
            cuml[0] = total
            for j in range(1, n):
                total += p[j]
                cuml[j] = total
            r = total * (one - unit(k0, k1, i))
            lo, hi = 0, n                          # searchsorted, side 'left'
            while lo < hi:
                mid = lo + ((hi - lo) >> 1)
                if cuml[mid] < r:
                    lo = mid + 1
                else:
                    hi = mid
            if values:
                return a[lo]
            return np.int64(lo)
        return element
    return _once(("weighted choice", n, dt, values), build)


def weighted_top_element(n: int, dt: np.dtype, values: bool):
    """`choice(key, a, shape, replace=False, p=p)`: the Gumbel top-k of `log(p)`."""
    def build():
        gumbel, log, nb_dt = (_gumbel64, _log64, from_dtype(dt)) if dt == _F64 else \
            (_gumbel32, log32, from_dtype(dt))

        def element(k0, k1, i, a, p):
            scores = cuda.local.array(n, nb_dt)
            for j in range(n):
                scores[j] = -(gumbel(k0, k1, j) + log(p[j]))
            index = _ranked(scores, n, i)
            if values:
                return a[index]
            return np.int64(index)
        return element
    return _once(("weighted top", n, dt, values), build)

