"""The samplers of ``jax.random`` beyond uniform/normal, on the keys of `transformer.random`.

Every sampler keeps JAX's signature and defaults (x64 on: float64 / int64 results) and
follows the algorithm of ``jax/_src/random/core.py`` (JAX 0.10.2) step for step: the same
key splits, the same draws from the same counters, the same order of floating-point
operations, with XLA's CPU arithmetic from `random_xla` and `random_xla_special` (fused
multiply-adds, ``log``, ``log1p``, ``erf_inv``, ``erf``, ``exp``, flush-to-zero) and its
rewrites (``x / c`` becomes ``x * (1 / c)``, ``a / sqrt(b)`` becomes ``a * rsqrt(b)``).
Measured against JAX 0.10.2 on tens of thousands of draws:

* bit for bit: ``gumbel``, ``categorical``, ``exponential``, ``laplace``, ``logistic``,
  ``truncated_normal`` (float32 and float64), ``poisson``, and in float64 ``gamma``,
  ``beta`` and ``dirichlet`` (``dirichlet`` over more than about a dozen categories sums
  in another order than XLA: 1e-15 relative);
* about 1e-15 relative (float64) or 1e-6 (float32): ``multivariate_normal`` and
  ``orthogonal`` (LAPACK factorizations, summed in another order), and float32 ``gamma``,
  ``beta`` and ``dirichlet``: they use ``1 / sqrt`` where XLA refines the CPU's
  approximate ``rsqrt`` instruction (so JAX itself differs between processors); where
  ``1 + c * x`` nearly cancels, a draw can differ by a few 1e-6 relative.
* float16: the samplers agree bit for bit too (measured: exponential, laplace, logistic,
  gumbel "low" and "high", truncated_normal, categorical, gamma, beta).

A rejection sampler's draw could differ outright only if a last-bit difference flipped
an acceptance test, which has probability of order 1e-7 per test.

Parameters that no distribution has (negative rates or shapes, NaN, non-square
covariances) raise ``ValueError``; dtypes that are not floats raise ``TypeError``.  The
code is elementwise array arithmetic and plain ``while`` loops, so that it can be
compiled later; nothing here holds state.
"""

from __future__ import annotations

import math

import numpy as np

from . import random_xla as xla
from . import random_xla_special as xla_special
from .random_bits import (
    _as_key,
    _canonical_shape,
    _check_broadcast,
    _float_dtype,
    _random_bits,
    _uniform,
    normal_from_uniform,
    normal_rows,
    split_keys,
    split_rows,
    standard_normal,
    uniform_rows,
)

__all__ = [
    "beta",
    "categorical",
    "dirichlet",
    "exponential",
    "gamma",
    "gumbel",
    "laplace",
    "logistic",
    "multivariate_normal",
    "orthogonal",
    "poisson",
    "truncated_normal",
]

_F32 = np.dtype(np.float32)
_F64 = np.dtype(np.float64)


# ---------------------------------------------------------------------------
# XLA's elementwise functions in a given dtype
# ---------------------------------------------------------------------------
# XLA has its own float32/float64 log and log1p (`random_xla`); float16 goes through
# LLVM's intrinsics, which call the C library's correctly rounded float32 functions.


def _log(x, dt: np.dtype) -> np.ndarray:
    with np.errstate(all="ignore"):
        if dt == np.float16:
            return _via_float32(np.log, x, dt)
        return xla.log(x, dt)


def _log1p(x, dt: np.dtype) -> np.ndarray:
    with np.errstate(all="ignore"):
        if dt == np.float16:
            return _via_float32(np.log1p, x, dt)
        return xla.log1p(np.asarray(x, dt), dt)


def _via_float32(fn, x, dt: np.dtype) -> np.ndarray:
    """``fn`` rounded to float32 and then to ``dt``."""
    return fn(np.asarray(x, dt).astype(_F64)).astype(_F32).astype(dt)


# ---------------------------------------------------------------------------
# Argument checks
# ---------------------------------------------------------------------------


def _shape_or_broadcast(name: str, shape, *params: np.ndarray) -> tuple[int, ...]:
    """``shape`` checked against the parameters, or their broadcast shape when None."""
    param_shapes = [p.shape for p in params]
    if shape is None:
        try:
            return np.broadcast_shapes(*param_shapes)
        except ValueError:
            raise ValueError(
                f"{name}: parameter shapes {param_shapes} are not broadcast-compatible"
            ) from None
    shape = _canonical_shape(shape)
    _check_broadcast(name, shape, *param_shapes)
    return shape


def _real_param(name: str, what: str, value, dt: np.dtype, lowest: float) -> np.ndarray:
    """``value`` as a ``dt`` array, rejecting NaN and values below ``lowest``."""
    arr = np.asarray(value)
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"{name}: {what} must be real numbers, got dtype {arr.dtype}")
    arr = arr.astype(dt)
    bad = np.isnan(arr) | (arr < lowest)
    if bad.any():
        first = arr[bad].flat[0]
        raise ValueError(f"{name}: {what} must be >= {lowest:g} (and not NaN), got {first}")
    return arr


def _float_arg_dtype(name: str, dtype) -> np.dtype:
    return _float_dtype(np.float64 if dtype is None else dtype, name)


# ---------------------------------------------------------------------------
# Elementwise transforms of uniform draws
# ---------------------------------------------------------------------------


def exponential(key, shape=(), dtype=None) -> np.ndarray:
    """Exponential(1) samples: ``-log1p(-u)`` for ``u`` uniform in [0, 1)."""
    dt = _float_arg_dtype("exponential", dtype)
    shape = _canonical_shape(shape)
    u = _uniform(key, shape, dt, dt.type(0.0), dt.type(1.0))
    return -_log1p(-u, dt)


def laplace(key, shape=(), dtype=None) -> np.ndarray:
    """Laplace(0, 1) samples: ``sign(u) * log1p(-|u|)`` for ``u`` uniform in (-1, 1)."""
    dt = _float_arg_dtype("laplace", dtype)
    shape = _canonical_shape(shape)
    lo = np.asarray(-1.0 + float(np.finfo(dt).epsneg), dt)
    u = _uniform(key, shape, dt, lo, dt.type(1.0))
    return (np.sign(u) * _log1p(-np.abs(u), dt)).astype(dt, copy=False)


def logistic(key, shape=(), dtype=None) -> np.ndarray:
    """Standard logistic samples: ``log(u) - log1p(-u)`` for ``u`` uniform in [tiny, 1)."""
    dt = _float_arg_dtype("logistic", dtype)
    shape = _canonical_shape(shape)
    u = _uniform_from_tiny(key, shape, dt)
    return (_log(u, dt) - _log1p(-u, dt)).astype(dt, copy=False)


def _uniform_from_tiny(key, shape, dt: np.dtype) -> np.ndarray:
    """``uniform(key, shape, dt, tiny, 1)`` as XLA computes it.  In float16 the result is
    ``max(tiny, u)`` for ``u`` uniform in [0, 1): the ``+ tiny`` of the uniform recipe is
    gone from XLA's program (measured against JAX 0.10.2: 20,000 of 20,000 draws of
    ``logistic`` and ``gumbel`` agree this way, about 1 in 13 differed with it)."""
    tiny = np.asarray(np.finfo(dt).tiny, dt)
    if dt == np.float16:
        return np.maximum(tiny, _uniform(key, shape, dt, dt.type(0.0), dt.type(1.0)))
    return _uniform(key, shape, dt, tiny, dt.type(1.0))


def gumbel(key, shape=(), dtype=None, mode=None) -> np.ndarray:
    """Standard Gumbel samples ``-log(-log(u))``.

    ``mode`` is JAX's: ``"low"`` (the default) draws one uniform in [tiny, 1);
    ``"high"`` draws two and adds the second below the first's last bit, so that tiny
    ``u`` keep precision; ``"highest"`` (float32 only; other dtypes use ``"high"``) turns
    64 random bits into a float32 in (0, 1) exactly.
    """
    dt = _float_arg_dtype("gumbel", dtype)
    shape = _canonical_shape(shape)
    mode = "low" if mode is None else mode
    if mode not in ("highest", "high", "low"):
        raise ValueError(f"gumbel: mode must be 'low', 'high' or 'highest', got {mode!r}")
    finfo = np.finfo(dt)
    if mode == "highest" and dt == _F32:
        return _gumbel_highest32(key, shape)
    if mode == "low":
        u = _uniform_from_tiny(key, shape, dt)
        return -_log(-_log(u, dt), dt)
    high, low = _uniform(key, (2, *shape), dt, dt.type(0.0), dt.type(1.0))
    with np.errstate(over="ignore"):
        x = np.where(
            high >= 0.5, high, high + dt.type(2.0**-finfo.nmant) * low + dt.type(finfo.tiny)
        )
    return -_log(-_log1p(-x, dt), dt)


def _shift_left(x: np.ndarray, s: np.ndarray) -> np.ndarray:
    """``x << s`` for uint32 with XLA's rule: a shift by 32 or more gives 0."""
    s = np.asarray(s, np.uint32)
    return np.where(s >= 32, np.uint32(0), x << np.minimum(s, np.uint32(31)))


def _shift_right(x: np.ndarray, s: np.ndarray) -> np.ndarray:
    s = np.asarray(s, np.uint32)
    return np.where(s >= 32, np.uint32(0), x >> np.minimum(s, np.uint32(31)))


def _clz32(x: np.ndarray) -> np.ndarray:
    """Count of leading zero bits of each uint32 (32 for zero), by binary search."""
    n = np.zeros(x.shape, np.uint32)
    x = x.copy()
    for width in (16, 8, 4, 2, 1):
        top_empty = (x >> np.uint32(32 - width)) == 0
        n = np.where(top_empty, n + np.uint32(width), n)
        x = np.where(top_empty, x << np.uint32(width), x)
    return np.where(x == 0, n + np.uint32(1), n).astype(np.uint32)


def _bits_to_float32(hi: np.ndarray, lo: np.ndarray) -> np.ndarray:
    """The 64-bit fixed-point fraction ``hi:lo`` as a float32 in (0, 1), truncated."""
    u32 = np.uint32
    hiclz, loclz = _clz32(hi), _clz32(lo)
    with np.errstate(over="ignore"):
        below = np.where(hiclz == 32, _shift_left(lo, loclz), _shift_right(lo, u32(32) - hiclz))
        mant = (_shift_left(hi, hiclz) | below) >> u32(32 - 23 - 1)
        mant = mant & u32((1 << 23) - 1)
        lead = np.where(hiclz == 32, u32(32) + loclz, hiclz)
        expo = ((u32(126) - lead) << u32(23)) & u32((1 << 30) - (1 << 22))
    return (expo | mant).view(np.float32)


def _gumbel_highest32(key, shape: tuple[int, ...]) -> np.ndarray:
    bits = _random_bits(key, 32, (2, *shape))
    neg = ~bits
    with np.errstate(over="ignore"):
        # 1 - bits in 64-bit fixed point: the carry of the low word's increment.
        carry = (neg[1] == np.uint32(0xFFFFFFFF)).astype(np.uint32)
        neg = np.stack([neg[0] + carry, neg[1] + np.uint32(1)])
    flip = bits[0] < np.uint32(1 << 31)
    picked = np.where(flip, bits, neg)
    x = _bits_to_float32(picked[0], picked[1])
    # log1p keeps precision for x in (0, 0.5), log for [0.5, 1).
    near_zero = -_log(-_log1p(-x, _F32), _F32)
    near_one = -_log(-_log(x, _F32), _F32)
    return np.where(flip, near_zero, near_one)


def categorical(key, logits, axis=-1, shape=None, replace=True, mode=None) -> np.ndarray:
    """Indices drawn with probabilities ``softmax(logits)`` along ``axis``.

    With replacement: the Gumbel-max trick (``argmax(logits + gumbel)``), with the noise
    drawn for ``shape`` samples at once.  Without: the Gumbel top-k trick, so the
    leading ``shape`` dimensions beyond the batch shape must hold at most
    ``logits.shape[axis]`` samples.  Indices are int64 with replacement and int32
    without, as in JAX.
    """
    logits = np.asarray(logits)
    if logits.dtype.kind in "biu":
        logits = logits.astype(np.float64)
    dt = _float_dtype(logits.dtype, "categorical")
    if logits.ndim == 0:
        raise ValueError("categorical: logits must have at least one dimension")
    if not -logits.ndim <= axis < logits.ndim:
        raise ValueError(
            f"categorical: axis {axis} is out of bounds for logits of shape {logits.shape}"
        )
    batch_shape = tuple(np.delete(logits.shape, axis))
    shape = batch_shape if shape is None else _canonical_shape(shape)
    _check_broadcast("categorical", shape, batch_shape)
    prefix = shape[: len(shape) - len(batch_shape)]
    if replace:
        axis = axis - logits.ndim if axis >= 0 else axis
        noise_shape = list(shape[len(prefix) :])
        noise_shape.insert(axis % logits.ndim, logits.shape[axis])
        noise = gumbel(key, (*prefix, *noise_shape), dt, mode)
        scores = noise + logits.reshape((1,) * len(prefix) + logits.shape)
        return np.argmax(scores, axis=axis).astype(np.int64)
    k = math.prod(prefix)
    n = logits.shape[axis]
    if k > n:
        raise ValueError(
            f"categorical: number of samples without replacement ({k}) cannot exceed "
            f"the number of categories ({n})"
        )
    scores = np.moveaxis(logits + gumbel(key, logits.shape, dt, mode), axis, -1)
    # lax.top_k: largest first, ties to the lower index (a stable sort of -scores).
    top = np.argsort(-scores, axis=-1, kind="stable")[..., :k]
    # lax.top_k returns int32 indices, so JAX's draws without replacement are int32.
    return np.moveaxis(top, -1, 0).reshape(shape).astype(np.int32)


def truncated_normal(key, lower, upper, shape=None, dtype=None) -> np.ndarray:
    """Standard normal samples conditioned on ``lower < x < upper`` (inverse CDF).

    ``shape`` defaults to the broadcast shape of the bounds; results lie in the open
    interval (clamped one ulp inside the bounds, as JAX does).
    """
    dt = _float_arg_dtype("truncated_normal", dtype)
    lower, upper = np.asarray(lower), np.asarray(upper)
    for what, bound in (("lower", lower), ("upper", upper)):
        if bound.dtype.kind not in "biuf":
            raise TypeError(f"truncated_normal: {what} must be real, got dtype {bound.dtype}")
    shape = _shape_or_broadcast("truncated_normal", shape, lower, upper)
    lower, upper = lower.astype(dt), upper.astype(dt)
    # XLA turns the division by the constant sqrt(2) into a product with its reciprocal.
    inv_sqrt2 = np.array(1.0, dt) / np.array(np.sqrt(2.0), dt)
    a = xla_special.erf((lower * inv_sqrt2).astype(dt), dt)
    b = xla_special.erf((upper * inv_sqrt2).astype(dt), dt)
    u = _uniform(key, shape, dt, a, b)
    out = normal_from_uniform(u, dt)
    lo = np.nextafter(lower, np.array(np.inf, dt))
    hi = np.nextafter(upper, np.array(-np.inf, dt))
    return np.minimum(hi, np.maximum(lo, out)).astype(dt, copy=False)


# ---------------------------------------------------------------------------
# Gamma family: Marsaglia-Tsang rejection, one key per element
# ---------------------------------------------------------------------------
# JAX splits the key into one key per element and runs a while loop per element; here
# one loop runs over the pending elements' key rows (see `random_bits`).


def _gamma_proposals(keys, c: np.ndarray, dt: np.dtype):
    """One round of JAX's proposal body for each row: (next keys, x, v, u)."""
    one = dt.type(1.0)
    k3 = split_rows(keys, 3)
    x_keys = k3[:, 1].copy()
    x = np.zeros(len(keys), dt)
    v = np.full(len(keys), -one)
    pending = np.arange(len(keys))
    while pending.size:  # redraw the normal until 1 + c * x > 0
        pair = split_rows(x_keys[pending], 2)
        x_keys[pending] = pair[:, 0]
        x[pending] = normal_rows(pair[:, 1], dt)
        v[pending] = xla.fma(x[pending], c[pending], one, dt)
        pending = pending[v[pending] <= 0]
    u = uniform_rows(k3[:, 2], dt, dt.type(0.0), one)
    return k3[:, 0], x, v, u


def _gamma_rejects(big_x, v, u, d, dt: np.dtype) -> np.ndarray:
    t = dt.type
    squeeze = xla.fma(-t(0.0331), big_x * big_x, t(1.0), dt)
    bound = big_x * t(0.5) + d * ((t(1.0) - v) + _log(v, dt))
    return (u >= squeeze) & (_log(u, dt) >= bound)


def _gamma(key, a: np.ndarray, shape: tuple[int, ...], dt: np.dtype, log_space: bool):
    """Gamma(a) draws of ``shape`` (their logs when ``log_space``), JAX's ``_gamma_one``.

    Gamma(alpha) for alpha < 1 is Gamma(alpha + 1) * U**(1/alpha).  Each proposal splits
    the loop key in three (next key, normal key, acceptance uniform key); the normal
    draw repeats, splitting its own key, until ``1 + c * x > 0``.
    """
    t = dt.type
    one, third = t(1.0), t(1.0 / 3.0)
    alpha = np.broadcast_to(a, shape).reshape(-1).astype(dt)
    keys = split_rows(split_keys(_as_key(key), alpha.size), 2)
    keys, subkeys = keys[:, 0].copy(), keys[:, 1]
    boost = alpha >= one
    d = np.where(boost, alpha, alpha + one) - third
    c = third * (one / np.sqrt(d))  # XLA rewrites the division into a product with rsqrt
    big_x, v, u = np.zeros_like(alpha), np.ones_like(alpha), np.full_like(alpha, t(2.0))
    with np.errstate(all="ignore"):
        active = np.flatnonzero(_gamma_rejects(big_x, v, u, d, dt))
        while active.size:
            keys[active], x, vv, u[active] = _gamma_proposals(keys[active], c[active], dt)
            big_x[active], v[active] = x * x, vv * vv * vv
            again = _gamma_rejects(big_x[active], v[active], u[active], d[active], dt)
            active = active[again]
        u_final = uniform_rows(subkeys, dt, t(0.0), one)
        if log_space:
            # JAX negates an exponential draw: log1p(-u) for u uniform in [0, 1).
            log_u = _log1p(-u_final, dt)
            log_boost = np.where(boost | (log_u == 0), t(0.0), log_u * (one / alpha))
            out = _log(d, dt) + _log(v, dt) + log_boost
        else:
            boosted = xla_special.flush_subnormal(np.power(one - u_final, one / alpha))
            scale = np.where(boost, one, boosted)
            out = xla_special.flush_subnormal(d * v * scale)
    return out.astype(dt, copy=False).reshape(shape)


def gamma(key, a, shape=None, dtype=None) -> np.ndarray:
    """Gamma(a, 1) samples; ``shape`` defaults to ``a``'s shape (``a >= 0``)."""
    dt = _float_arg_dtype("gamma", dtype)
    a = _real_param("gamma", "a", a, dt, 0.0)
    shape = _shape_or_broadcast("gamma", shape, a)
    return _gamma(key, a, shape, dt, log_space=False)


def beta(key, a, b, shape=None, dtype=None) -> np.ndarray:
    """Beta(a, b) samples, as ``G_a / (G_a + G_b)`` from log-space gamma draws."""
    dt = _float_arg_dtype("beta", dtype)
    a = _real_param("beta", "a", a, dt, 0.0)
    b = _real_param("beta", "b", b, dt, 0.0)
    shape = _shape_or_broadcast("beta", shape, a, b)
    key_a, key_b = split_keys(key)
    log_ga = _gamma(key_a, a, shape, dt, log_space=True)
    log_gb = _gamma(key_b, b, shape, dt, log_space=True)
    log_max = np.maximum(log_ga, log_gb)
    with np.errstate(invalid="ignore"):
        ga = xla_special.exp(log_ga - log_max, dt)
        gb = xla_special.exp(log_gb - log_max, dt)
        return xla_special.flush_subnormal(ga / (ga + gb)).astype(dt, copy=False)


def dirichlet(key, alpha, shape=None, dtype=None) -> np.ndarray:
    """Dirichlet(alpha) samples over the last axis of ``alpha``.

    The result has shape ``shape + alpha.shape[-1:]`` (``shape`` defaults to
    ``alpha.shape[:-1]``): a softmax of log-space gamma draws.
    """
    dt = _float_arg_dtype("dirichlet", dtype)
    alpha = _real_param("dirichlet", "alpha", alpha, dt, 0.0)
    if alpha.ndim < 1:
        raise ValueError("dirichlet requires alpha.ndim >= 1, got a scalar alpha")
    batch = _shape_or_broadcast("dirichlet", shape, np.empty(alpha.shape[:-1]))
    log_g = _gamma(key, alpha, batch + alpha.shape[-1:], dt, log_space=True)
    with np.errstate(invalid="ignore"):
        e = xla_special.exp(log_g - np.max(log_g, axis=-1, keepdims=True), dt)
        # XLA sums left to right and divides by the sum through its reciprocal.
        total = e[..., 0].copy()
        for j in range(1, e.shape[-1]):
            total = total + e[..., j]
        out = xla_special.flush_subnormal(e * (dt.type(1.0) / total)[..., None])
        return out.astype(dt, copy=False)


# ---------------------------------------------------------------------------
# Poisson: Knuth's product of uniforms below 10, Hormann's rejection above
# ---------------------------------------------------------------------------
# Both run over the whole array at once, as in JAX, and both start from the same key.
# The rejection loop keeps overwriting an accepted element when it accepts again while
# other elements are still pending, so an element's value depends on how long the
# whole array loops: reproducing JAX needs the array-wide loop.


def _poisson_knuth(key, lam: np.ndarray, shape) -> np.ndarray:
    k = np.zeros(shape, np.int64)
    log_prod = np.zeros(shape, np.float32)
    rng = _as_key(key)
    while (log_prod > -lam).any():
        rng, sub = split_keys(rng)
        k = np.where(log_prod > -lam, k + 1, k)
        u = _uniform(sub, shape, _F32, np.float32(0.0), np.float32(1.0))
        log_prod = log_prod + _log(u, _F32)
    return k - 1


def _poisson_rejection(key, lam: np.ndarray, shape) -> np.ndarray:
    f, f32 = np.float32, _F32
    log_lam = _log(lam, f32)
    b = xla.fma(f(2.53), np.sqrt(lam), f(0.931), f32)
    a = xla.fma(f(0.02483), b, f(-0.059), f32)
    inv_alpha = f(1.1239) + f(1.1328) / (b - f(3.4))
    v_r = f(0.9277) - f(3.6224) / (b - f(2.0))
    k_out = np.full(shape, f(-1.0))
    accepted = np.zeros(shape, bool)
    key = _as_key(key)
    while not accepted.all():
        key, sub0, sub1 = split_keys(key, 3)
        u = _uniform(sub0, shape, f32, f(0.0), f(1.0)) - f(0.5)
        v = _uniform(sub1, shape, f32, f(0.0), f(1.0))
        us = f(0.5) - np.abs(u)
        k = np.floor(xla.fma(f(2.0) * a / us + b, u, lam, f32) + f(0.43))
        s = _log(v * inv_alpha / (a / (us * us) + b), f32)
        t = xla.fma(k, log_lam, -lam, f32) - xla_special.lgamma32(k + f(1.0))
        accept1 = (us >= f(0.07)) & (v <= v_r)
        reject = (k < 0) | ((us < f(0.013)) & (v > us))
        accept = accept1 | (~reject & (s <= t))
        k_out = np.where(accept, k, k_out)
        accepted |= accept
    return k_out


def poisson(key, lam, shape=None, dtype=None) -> np.ndarray:
    """Poisson(lam) counts (int64 by default); ``lam`` is read as float32, as in JAX.

    Counts beyond the range of ``dtype`` clamp to its maximum, as XLA's conversion does.
    """
    dt = np.dtype(np.int64 if dtype is None else dtype)
    if dt.kind not in "iu":
        raise TypeError(f"poisson requires an integer dtype, got {dt}")
    lam = _real_param("poisson", "lam", lam, _F32, 0.0)
    if np.isinf(lam).any():
        raise ValueError("poisson: lam must be finite (as a float32), got inf")
    shape = _shape_or_broadcast("poisson", shape, lam)
    lam = np.broadcast_to(lam, shape)
    use_knuth = lam < 10
    with np.errstate(all="ignore"):
        knuth = _poisson_knuth(key, np.where(use_knuth, lam, np.float32(0.0)), shape)
        rejection = _poisson_rejection(key, np.where(use_knuth, np.float32(1e5), lam), shape)
    result = np.where(use_knuth, knuth.astype(dt), _to_int_saturating(rejection, dt))
    return np.where(lam == 0, dt.type(0), result).astype(dt)


def _to_int_saturating(x: np.ndarray, dt: np.dtype) -> np.ndarray:
    """Whole floats to ``dt`` as XLA converts them: out-of-range values clamp to its bounds."""
    info = np.iinfo(dt)
    x64 = x.astype(np.float64)
    top = x64 >= 2.0 ** (info.bits - (1 if info.min < 0 else 0))
    low = x64 < float(info.min)
    inner = np.where(top | low, 0.0, x64).astype(dt)
    return np.where(top, dt.type(info.max), np.where(low, dt.type(info.min), inner))


# ---------------------------------------------------------------------------
# Samplers built on linear algebra
# ---------------------------------------------------------------------------

_FACTOR_METHODS = ("cholesky", "eigh", "svd")


def _cov_factor(cov: np.ndarray, method: str) -> np.ndarray:
    if method == "svd":
        u, s, _ = np.linalg.svd(cov)
        return u * np.sqrt(s[..., None, :])
    if method == "eigh":
        w, v = np.linalg.eigh(cov)
        with np.errstate(invalid="ignore"):
            return v * np.sqrt(w[..., None, :])
    try:
        return np.linalg.cholesky(cov)
    except np.linalg.LinAlgError:
        raise ValueError(
            "multivariate_normal: cov is not positive definite; for a singular "
            "covariance pass method='svd' or method='eigh'"
        ) from None


def multivariate_normal(
    key, mean, cov, shape=None, dtype=None, method="cholesky"
) -> np.ndarray:
    """Samples of N(mean, cov): ``mean + factor @ z`` with ``cov = factor @ factor.T``.

    ``mean`` has shape ``(..., n)``, ``cov`` ``(..., n, n)``; the result has shape
    ``shape + (n,)`` (``shape`` defaults to the broadcast batch shapes).  ``method``
    picks the factor: ``'cholesky'`` (positive definite), ``'eigh'`` or ``'svd'``.
    """
    if method not in _FACTOR_METHODS:
        raise ValueError(f"multivariate_normal: method must be one of {_FACTOR_METHODS}")
    mean, cov = np.asarray(mean), np.asarray(cov)
    for what, arr in (("mean", mean), ("cov", cov)):
        if arr.dtype.kind not in "biuf":
            raise TypeError(f"multivariate_normal: {what} must be real, got dtype {arr.dtype}")
    # JAX's promote_dtypes_inexact: integers join the float operand, or become float64.
    floats = [arr.dtype for arr in (mean, cov) if arr.dtype.kind == "f"]
    promoted = np.result_type(*floats) if floats else np.dtype(np.float64)
    mean, cov = mean.astype(promoted), cov.astype(promoted)
    dt = _float_dtype(promoted if dtype is None else dtype, "multivariate_normal")
    if mean.ndim < 1:
        raise ValueError("multivariate_normal requires mean.ndim >= 1, got a scalar mean")
    if cov.ndim < 2:
        raise ValueError(f"multivariate_normal requires cov.ndim >= 2, got {cov.ndim}")
    n = mean.shape[-1]
    if cov.shape[-2:] != (n, n):
        raise ValueError(
            f"multivariate_normal requires cov.shape == (..., n, n) for n={n}, "
            f"got cov.shape == {cov.shape}"
        )
    batch = _shape_or_broadcast(
        "multivariate_normal", shape, np.empty(mean.shape[:-1]), np.empty(cov.shape[:-2])
    )
    factor = _cov_factor(cov, method)
    z = standard_normal(key, batch + (n,), dt)
    return mean + np.einsum("...ij,...j->...i", factor, z)


def orthogonal(key, n, shape=(), dtype=None, m=None) -> np.ndarray:
    """Haar-random matrices of shape ``(*shape, n, m)`` (``m`` defaults to ``n``).

    Square results are orthogonal; otherwise the shorter side is orthonormal.  The QR
    factors of a normal matrix, with the signs of R's diagonal moved into Q (Mezzadri).
    """
    dt = _float_arg_dtype("orthogonal", dtype)
    shape = _canonical_shape(shape)
    n = _dimension("orthogonal", "n", n)
    m = n if m is None else _dimension("orthogonal", "m", m)
    z = standard_normal(key, (*shape, max(n, m), min(n, m)), dt)
    q, r = np.linalg.qr(z)
    d = np.diagonal(r, axis1=-2, axis2=-1)
    x = (q * np.sign(d)[..., None, :]).astype(dt, copy=False)
    return np.swapaxes(x, -1, -2) if n < m else x


def _dimension(name: str, what: str, value) -> int:
    arr = np.asarray(value)
    if arr.shape or arr.dtype.kind not in "iu":
        raise TypeError(f"{name}: {what} must be a non-negative integer, got {value!r}")
    if int(arr) < 0:
        raise ValueError(f"{name}: {what} must be a non-negative integer, got {value!r}")
    return int(arr)
