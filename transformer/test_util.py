"""`check_grads`: compare derivatives with central finite differences, as JAX's.

The finite-difference oracles (`numerical_grad`, `numerical_jacobian`, `numerical_jvp`) use
NumPy only, so a test that compares with them compares with something secant did not
compute; secant's own tests use them and nothing else for finite differences.

For `modes=("rev",)` the vjp of `f` along a random output cotangent is compared with
the finite-difference directional derivative along a random input direction:
`<ct, (f(x + eps*t) - f(x - eps*t)) / 2eps>` must equal `sum_i <vjp(ct)_i, t_i>`.
`order=2` checks the gradient of the gradient the same way.
"""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np


def real_positions(args) -> tuple[int, ...]:
    """Positions of the real-valued arguments (integers are held fixed, as indices)."""
    return tuple(k for k, a in enumerate(args)
                 if not np.issubdtype(np.asarray(a).dtype, np.integer) and
                 np.asarray(a).dtype != bool)


def _random_like(value, rng):
    arr = np.asarray(value, dtype=float)
    return rng.standard_normal(arr.shape) if arr.shape else float(rng.standard_normal())


def _inner(a, b) -> float:
    if isinstance(a, tuple):
        return sum(_inner(x, y) for x, y in zip(a, b))
    return float(np.sum(np.asarray(a, dtype=float) * np.asarray(b, dtype=float)))


def _shift(args, directions, step):
    return tuple(a if np.issubdtype(np.asarray(a).dtype, np.integer) else
                 np.asarray(a, dtype=float) + step * t if np.ndim(a) else
                 float(a) + step * t for a, t in zip(args, directions))


def numerical_jvp(f: Callable, primals: Sequence, tangents: Sequence, eps: float = 1e-6):
    """The derivative of `f` at `primals` along `tangents`, by central differences.

    Integer arguments are held fixed; a tuple result gives a tuple of derivatives.
    """
    plus = f(*_shift(primals, tangents, eps))
    minus = f(*_shift(primals, tangents, -eps))
    if isinstance(plus, tuple):
        return tuple((np.asarray(p) - np.asarray(m)) / (2 * eps) for p, m in zip(plus, minus))
    return (np.asarray(plus) - np.asarray(minus)) / (2 * eps)


def numerical_grad(f: Callable, args: Sequence, argnum: int = 0, eps: float = 1e-6):
    """d f / d args[argnum] of a scalar `f` by central differences, shaped like the argument
    (a float for a scalar argument)."""
    args = list(args)
    x = np.asarray(args[argnum], dtype=float)
    grad = np.zeros_like(x)
    for index in np.ndindex(x.shape):
        step = np.zeros_like(x)
        step[index] = eps
        args[argnum] = _like(args[argnum], x + step)
        upper = f(*args)
        args[argnum] = _like(args[argnum], x - step)
        lower = f(*args)
        grad[index] = (upper - lower) / (2 * eps)
    return grad if x.ndim else float(grad)


def numerical_jacobian(f: Callable, x, eps: float = 1e-6) -> np.ndarray:
    """The Jacobian of `f` at `x` by central differences: shape `f(x).shape + x.shape`."""
    x = np.asarray(x, dtype=float)
    columns = []
    for index in np.ndindex(x.shape):
        step = np.zeros_like(x)
        step[index] = eps
        columns.append((np.asarray(f(x + step)) - np.asarray(f(x - step))) / (2 * eps))
    out_shape = np.shape(f(x))
    return np.moveaxis(np.array(columns).reshape((x.size,) + out_shape), 0, -1).reshape(
        out_shape + x.shape)


def _like(original, value):
    return value if isinstance(original, np.ndarray) else float(value)


def check_vjp(f: Callable, args: Sequence, atol=None, rtol=None, eps=None, seed=0) -> None:
    """Raise AssertionError when f's vjp disagrees with finite differences."""
    from .api_reverse import vjp_wrt
    rng = np.random.default_rng(seed)
    eps = eps or 1e-6
    atol = 1e-5 if atol is None else atol
    rtol = 1e-4 if rtol is None else rtol
    wrt = real_positions(args)
    out, vjp_fn = vjp_wrt(f, args, wrt)
    ct = tuple(_random_like(o, rng) for o in out) if isinstance(out, tuple) else \
        _random_like(out, rng)
    directions = [_random_like(a, rng) if k in wrt else 0 * np.asarray(a)
                  for k, a in enumerate(args)]
    cotangents = vjp_fn(ct)
    reverse = sum(_inner(c, directions[k]) for c, k in zip(cotangents, wrt))
    numeric = _inner(ct, numerical_jvp(f, args, directions, eps))
    if not np.isclose(reverse, numeric, atol=atol, rtol=rtol):
        raise AssertionError(f"vjp of {getattr(f, '__name__', f)} disagrees with finite "
                             f"differences: reverse {reverse!r}, numeric {numeric!r}")


def check_jvp(f: Callable, args: Sequence, atol=None, rtol=None, eps=None, seed=0) -> None:
    """Raise AssertionError when f's jvp disagrees with finite differences."""
    import transformer
    rng = np.random.default_rng(seed)
    eps = eps or 1e-6
    atol = 1e-5 if atol is None else atol
    rtol = 1e-4 if rtol is None else rtol
    directions = tuple(_random_like(a, rng) for a in args)
    _, tangent = transformer.jvp(f, tuple(args), directions)
    numeric = numerical_jvp(f, args, directions, eps)
    ct = _random_like(tangent, rng) if not isinstance(tangent, tuple) else \
        tuple(_random_like(t, rng) for t in tangent)
    if not np.isclose(_inner(ct, tangent), _inner(ct, numeric), atol=atol, rtol=rtol):
        raise AssertionError(f"jvp of {getattr(f, '__name__', f)} disagrees with finite "
                             "differences")


def check_grads(f: Callable, args: Sequence, order: int = 1, modes=("rev",), atol=None,
                rtol=None, eps=None) -> None:
    """Check derivatives of `f` at `args` up to `order` in each mode ("rev", "fwd")."""
    from .api_reverse import grad
    for mode in modes:
        if mode not in ("rev", "fwd"):
            raise ValueError(f"unknown mode {mode!r}; use 'rev' or 'fwd'")
        check = check_vjp if mode == "rev" else check_jvp
        check(f, args, atol, rtol, eps)
    if order > 1:
        argnums = real_positions(args)
        check_grads(grad(f, argnums=argnums), args, order - 1, modes, atol, rtol, eps)
