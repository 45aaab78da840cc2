"""`random.gamma`, `beta` and `poisson` in CUDA threads: their element forms for
`transformer.cuda.random_forms`, which turns a draw with a constant shape into a loop of
element calls `element(key[0], key[1], flat, a, b)`.

Contract: a draw's parameters are scalars of the thread (a literal or a scalar local or
argument); an array parameter is a TransformError at the user's line. The elements are
`transformer.runtime.random_gamma.ELEMENTS` and `random_poisson.ELEMENTS`: element `i`
gives the number the CPU gives (gamma and beta from their own element keys; poisson with
`a` the rate as float32 and `b` the count of draws, since its rejection rounds are those
of the whole array). A kernel cannot raise, so an invalid parameter gives NaN (gamma,
beta) or -1 (poisson). `orthogonal(key, n, shape, dtype, m)` with literal sizes is drawn
by `draw_orthogonal`: each element redraws its matrix and orthonormalizes its columns up
to its own (modified Gram-Schmidt in a `cuda.local.array`); Gram-Schmidt's R has a
positive diagonal, so its Q is the sign-corrected Q of the CPU's QR, to rounding.
`multivariate_normal(key, mean, cov, shape)` (1-D mean, one covariance, method
'cholesky') by `draw_multivariate_normal`: each element factors the rows of `cov` it needs
(methods 'eigh' and 'svd' are refused: their draws depend on the signs LAPACK picks for
the vectors, which a thread's factorization cannot reproduce);
`dirichlet(key, alpha, shape)` (1-D alpha) by `draw_dirichlet`: each element draws its
row's log-gammas. Other call forms are refused at the user's line.
"""
from __future__ import annotations

import math

import numpy as np

import gast

from transformer import random
from transformer.function import resolve
from transformer.runtime import random_gamma, random_poisson
from transformer.syntax import assign, call, const, located, name, store

from ..nodes import copy_tree
from .random_sampler_forms import bound_arguments

_F64, _F32 = np.dtype(np.float64), np.dtype(np.float32)
_I64, _I32 = np.dtype(np.int64), np.dtype(np.int32)

ELEMENTS = {
    (random.gamma, _F64): random_gamma.ELEMENTS[_F64][0],
    (random.gamma, _F32): random_gamma.ELEMENTS[_F32][0],
    (random.beta, _F64): random_gamma.ELEMENTS[_F64][1],
    (random.beta, _F32): random_gamma.ELEMENTS[_F32][1],
    (random.poisson, _I64): random_poisson.ELEMENTS[_I64],
    (random.poisson, _I32): random_poisson.ELEMENTS[_I32],
}
DEFAULT_DTYPE = {random.gamma: _F64, random.beta: _F64, random.poisson: _I64}
_PARAMETERS = {random.gamma: ("a",), random.beta: ("a", "b"), random.poisson: ("lam",)}


def parameters(draws, site, target, args, dtype) -> tuple:
    """The `(a, b)` expressions of the element call of a heavy draw (`draws`: the
    random_forms rewriter, whose binder, specs and refusals this uses)."""
    values = []
    for what in _PARAMETERS[target]:
        node = args[what]
        spec = draws.key_spec(node)
        if spec is not None and tuple(spec.shape):
            raise draws.refuse(site, f"random.{target.__name__} takes a scalar {what}")
        values.append(node)
    if target is random.poisson:
        size = math.prod(draws.shape(site, target, args))
        cast = draws.binder.bind(np.float32, "float32")
        return call(name(cast), copy_tree(values[0])), const(size)
    cast = draws.binder.bind(dtype.type, dtype.name)
    calls = [call(name(cast), copy_tree(v)) for v in values]
    return calls[0], calls[1] if len(calls) > 1 else const(0)


# ---------------------------------------------------------------- orthogonal

def _filled(draws, stmt, shape, dt, element, words, a, b) -> list:
    """`out = np.empty(shape, dt)` and the loops writing `element(*words, flat, a, b)`."""
    out, np_name = stmt.targets[0].id, draws.binder.bind(np, "np")
    draws.changed = True
    alloc = call(gast.Attribute(value=name(np_name), attr="empty", ctx=gast.Load()),
                 gast.Tuple(elts=[const(d) for d in shape], ctx=gast.Load()),
                 gast.Attribute(value=name(np_name), attr=dt.name, ctx=gast.Load()))
    return [located(assign(store(out), alloc), stmt),
            located(draws.loops(out, shape, element, words, a, b), stmt)]


def draw_orthogonal(draws, stmt, site, device_function) -> list:
    """`q = random.orthogonal(key, n, shape, dtype, m)` with literal sizes, shape and dtype:
    `np.empty(shape + (n, m))` filled by element loops (`random_thread_linalg`), built into
    device functions by `device_function`."""
    args = bound_arguments(draws, stmt, site, random.orthogonal)
    sizes = [args.get(what, args["n"]) for what in ("n", "m")]
    if not all(isinstance(s, gast.Constant) and type(s.value) is int and s.value >= 0
               for s in sizes):
        raise draws.refuse(site, "random.orthogonal needs n and m as int literals")
    n, m = (s.value for s in sizes)
    given = args.get("dtype")
    try:
        dt = _F64 if given is None else np.dtype(resolve(draws.fn, given, None))
    except TypeError:
        dt = None
    if dt not in (_F64, _F32):
        raise draws.refuse(site, "random.orthogonal takes a dtype written as np.float64 or "
                                 "np.float32")
    shape = draws.shape(site, random.orthogonal, args) + (n, m)
    from .random_thread_linalg import orthogonal_element       # imports numba.cuda
    element = name(draws.binder.bind(device_function(orthogonal_element(n, m, dt)),
                                     f"orthogonal_{n}x{m}"))
    words = draws.key_words(site, "random.orthogonal", args["key"])
    return _filled(draws, stmt, shape, dt, element, words, const(n), const(m))


def draw_multivariate_normal(draws, stmt, site, device_function) -> list:
    """`x = random.multivariate_normal(key, mean, cov, shape)` with a 1-D `mean`, one
    (n, n) `cov` of its dtype, a literal shape and method 'cholesky': `np.empty(shape +
    (n,))` filled by element loops (`random_thread_linalg`)."""
    target = random.multivariate_normal
    args = bound_arguments(draws, stmt, site, target)
    method = args.get("method")
    if method is not None and not (isinstance(method, gast.Constant) and
                                   method.value == "cholesky"):
        raise draws.refuse(site, "random.multivariate_normal takes method='cholesky': the "
                                 "draws of 'eigh' and 'svd' follow the signs LAPACK gives "
                                 "the eigen- or singular vectors, which a thread cannot "
                                 "reproduce. For the numbers of method='eigh', factor on the "
                                 "host (w, v = np.linalg.eigh(cov); L = v * np.sqrt(w)), "
                                 "pass L with vmap in_axes None and draw "
                                 "mean + L @ random.normal(k, (n,))")
    mean, cov = (draws.key_spec(args[what]) for what in ("mean", "cov"))
    if mean is None or cov is None or len(mean.shape) != 1 or \
            tuple(cov.shape) != (mean.shape[0],) * 2 or mean.dtype != cov.dtype or \
            mean.dtype not in (_F64, _F32) or args.get("dtype") is not None:
        raise draws.refuse(site, "random.multivariate_normal takes mean as a 1-D float array "
                                 "and cov as one (n, n) matrix of its dtype, without dtype, "
                                 "both arguments or locals of the kernel (a shared cov: "
                                 "vmap with in_axes None)")
    n, dt = int(mean.shape[0]), np.dtype(mean.dtype)
    shape = draws.shape(site, target, args) + (n,)
    from .random_thread_linalg import multivariate_normal_element
    element = name(draws.binder.bind(device_function(multivariate_normal_element(n, dt)),
                                     f"multivariate_normal_{n}"))
    words = draws.key_words(site, "random.multivariate_normal", args["key"])
    return _filled(draws, stmt, shape, dt, element, words,
                   copy_tree(args["mean"]), copy_tree(args["cov"]))


def draw_dirichlet(draws, stmt, site, device_function) -> list:
    """`x = random.dirichlet(key, alpha, shape, dtype)` with a 1-D `alpha` of the draw's
    dtype and a literal shape: `np.empty(shape + alpha.shape)` filled by element loops
    (`random_gamma.ELEMENTS`: each element draws its row's log-gammas)."""
    args = bound_arguments(draws, stmt, site, random.dirichlet)
    alpha, given = draws.key_spec(args["alpha"]), args.get("dtype")
    try:
        dt = _F64 if given is None else np.dtype(resolve(draws.fn, given, None))
    except TypeError:
        dt = None
    if alpha is None or len(alpha.shape) != 1 or alpha.dtype != dt or dt not in (_F64, _F32):
        raise draws.refuse(site, "random.dirichlet takes alpha as a 1-D array of the draw's "
                                 "dtype (np.float64 unless dtype says np.float32), an "
                                 "argument or local of the kernel")
    shape = draws.shape(site, random.dirichlet, args) + (int(alpha.shape[0]),)
    element = name(draws.binder.bind(device_function(random_gamma.ELEMENTS[dt][2]),
                                     "dirichlet_element"))
    words = draws.key_words(site, "random.dirichlet", args["key"])
    return _filled(draws, stmt, shape, dt, element, words, copy_tree(args["alpha"]),
                   const(0))


DRAWS = {random.orthogonal: draw_orthogonal,
         random.multivariate_normal: draw_multivariate_normal,
         random.dirichlet: draw_dirichlet}
