"""`np.einsum`'s derivatives batched, under jit: a jacrev pushes its rows through vmap, a
jacfwd its basis, and `vmap(grad(f))` batches the cotangent; each batches `einsum_grad`
(`einsum_tangent`, `einsum_grad_tangent`) in the cotangent (tangent) only, which vmap
makes `over_examples(einsum_grad, flags)`, plain Python Numba cannot type. Lowering
generates loops with the example axes as letters of their own instead (`einsum.py`).

Oracles: per-example runtime `einsum_grad` / `np.einsum` for the loops (python backend, no
compile), the same transformation without jit and central differences for the compiled
forms; JAX in `test_jit_jacrev_of_einsum_matches_jax` where it is installed.
"""
import os

os.environ.setdefault("NUMBA_OPT", "0")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from gradcheck import central_differences  # noqa: E402

from codegen.backends import Options  # noqa: E402
from transformer import (TransformError, einsum, grad, hessian, jacfwd, jacrev, jit,  # noqa: E402
                         runtime, vmap)
from transformer.materialize import compile_function  # noqa: E402
from transformer.runtime import examples  # noqa: E402

rng = np.random.default_rng(11)

# subscripts -> operand shapes
EINSUMS = {
    "ii": [(3, 3)], "ii->i": [(3, 3)], "ij->ji": [(2, 3)], "i,i->": [(4,), (4,)],
    "ij,kj->ik": [(2, 3), (2, 3)], "ij,jk": [(2, 3), (3, 4)], "iij,j->i": [(2, 2, 3), (3,)],
    "ij,j,ii->i": [(3, 3), (3,), (3, 3)], "ZY,Y->Z": [(2, 3), (3,)],
}


def _python(fn):
    return compile_function(fn, Options(backend="python")).function


@pytest.mark.every_case     # no compile: the loops run under the python backend
@pytest.mark.parametrize("subscripts", list(EINSUMS))
@pytest.mark.parametrize("examples_shape", [(4,), (2, 3)])
def test_batched_einsum_loops_match_each_example(subscripts, examples_shape):
    operands = [rng.normal(size=s) for s in EINSUMS[subscripts]]
    spec = einsum.parse(subscripts, len(operands))
    lead = einsum.fresh_letters(spec, len(examples_shape))
    assert not set(lead) & set(spec.letters)
    out_shape = np.shape(np.einsum(subscripts, *operands))
    g = rng.normal(size=examples_shape + out_shape)
    for k in range(len(operands)):
        loops = _python(einsum.adjoint_function(spec, k, lead))(g, *operands)
        assert loops.shape == examples_shape + operands[k].shape
        for index in np.ndindex(examples_shape):
            np.testing.assert_allclose(loops[index],
                                       runtime.einsum_grad(subscripts, k, g[index], operands),
                                       atol=1e-12)
        t = rng.normal(size=examples_shape + operands[k].shape)
        forward = _python(einsum.forward_function(einsum.with_examples(spec, k, lead)))
        varied = list(operands)
        varied[k] = t
        tangent = forward(*varied)
        for index in np.ndindex(examples_shape):
            np.testing.assert_allclose(
                tangent[index], runtime.einsum_tangent(subscripts, k, t[index], operands),
                atol=1e-12)


def weighted(w, b):
    return np.einsum("i,i->", w, b) * b


def gram_row(w, x):
    return np.sum(np.einsum("ij,kj->ik", w, w)[0] * x)


def diagonal_mix(A, x):
    return np.tanh(np.einsum("ij,j,ii->i", A, x, A))


W = np.array([1.0, 2.0, 3.0])
B = np.array([0.5, -1.0, 2.0])
A = np.arange(9.0).reshape(3, 3) / 7 + np.diag(np.cos(np.arange(3.0)))


def _jacobian_by_differences(fn, args, k):
    out = np.asarray(fn(*args))
    rows = [central_differences(lambda *a, i=i: np.asarray(fn(*a))[i], args, k)
            for i in np.ndindex(out.shape)]
    return np.reshape(rows, out.shape + np.shape(args[k]))


def _agree(got, without_jit, fn, args):
    for k, (jac, plain) in enumerate(zip(got, without_jit)):
        np.testing.assert_allclose(jac, plain, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(jac, _jacobian_by_differences(fn, args, k), rtol=1e-6,
                                   atol=1e-8)


def _code(compiled) -> str:
    return "\n".join(line for line in compiled.source().splitlines()
                     if not line.strip().startswith("#"))


@pytest.mark.slow
@pytest.mark.parametrize("mode", [jacrev, jacfwd])
@pytest.mark.parametrize("fn,args", [(weighted, (W, B)), (diagonal_mix, (A, W))])
def test_jit_jacobian_of_einsum_matches_without_jit_and_differences(mode, fn, args):
    compiled = jit(mode(fn, argnums=(0, 1)))
    _agree(compiled(*args), mode(fn, argnums=(0, 1))(*args), fn, args)
    assert "_each(" not in _code(compiled)      # no per-example Python helper is left


@pytest.mark.slow
def test_jit_vmap_grad_of_einsum_matches_without_jit_and_differences():
    w = np.arange(6.0).reshape(2, 3) / 5
    xs = rng.normal(size=(4, 2))
    got = jit(vmap(grad(gram_row), in_axes=(None, 0)))(w, xs)
    np.testing.assert_allclose(got, vmap(grad(gram_row), in_axes=(None, 0))(w, xs),
                               rtol=1e-12, atol=1e-12)
    for n, x in enumerate(xs):
        np.testing.assert_allclose(got[n], central_differences(gram_row, [w, x], 0),
                                   rtol=1e-6, atol=1e-8)


@pytest.mark.slow
def test_jit_vmap_of_jacrev_of_einsum_matches_without_jit():
    ws = rng.normal(size=(3, 3))
    transform = vmap(jacrev(weighted), in_axes=(0, None))
    got = jit(transform)(ws, B)
    np.testing.assert_allclose(got, transform(ws, B), rtol=1e-12, atol=1e-12)
    for n, w in enumerate(ws):
        np.testing.assert_allclose(got[n], _jacobian_by_differences(weighted, (w, B), 0),
                                   rtol=1e-6, atol=1e-8)


@pytest.mark.slow
def test_jit_hessian_through_einsum_matches_without_jit_and_differences():
    def f(x):
        return np.sum(np.sin(np.einsum("ij,j->i", A, x)) * x)
    got = jit(hessian(f))(W)
    np.testing.assert_allclose(got, hessian(f)(W), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(got, _jacobian_by_differences(grad(f), (W,), 0), rtol=1e-6,
                               atol=1e-8)


@pytest.mark.slow
def test_jit_jacrev_of_einsum_matches_jax():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy

    def weighted_jax(w, b):
        return jnp.einsum("i,i->", w, b) * b

    expected = jax.jacrev(weighted_jax, argnums=(0, 1))(W, B)
    for mode in (jacrev, jacfwd):
        for got, want in zip(jit(mode(weighted, argnums=(0, 1)))(W, B), expected):
            np.testing.assert_allclose(got, np.asarray(want), rtol=1e-12, atol=1e-12)


# batched in its operands too: no loops are generated for it (vmap's own rule runs such a
# call example by example instead); written out, it is refused at the user's call
_OPERANDS_BATCHED = examples.over_examples(runtime.einsum_grad, (False, False, True, True))


def operands_batched(g, a):
    return _OPERANDS_BATCHED("i,i->", 0, g, (a, a))


def test_batched_einsum_derivative_without_loops_is_refused_at_the_users_line():
    with pytest.raises(TransformError) as info:
        jit(operands_batched)(np.ones(2), np.ones((2, 3)))
    error = info.value
    assert error.filename == __file__
    assert error.lineno == operands_batched.__code__.co_firstlineno + 1
    assert "backend='python'" in error.hint
    assert jit(operands_batched, backend="python")(np.ones(2), np.ones((2, 3))).shape == (2, 3)


def refused_weighted(w, b):
    scale = np.sum(w)
    return np.einsum("i,i->", w, b) * b * scale


def test_refused_batched_einsum_derivative_names_the_users_einsum_call(monkeypatch):
    """The per-example call vmap makes has no location of its own: the refusal names the
    user's einsum call with its subscripts (forced here: no loops can be generated)."""
    def no_letters(spec, count):
        assert count > 0, "letters are asked for only for a batched derivative"
        raise ValueError("no letters left")
    monkeypatch.setattr(einsum, "fresh_letters", no_letters)
    with pytest.raises(TransformError) as info:
        jit(jacrev(refused_weighted, argnums=(0, 1)))(W, B)
    error = info.value
    assert (error.filename, error.lineno) == (__file__,
                                              refused_weighted.__code__.co_firstlineno + 2)
    assert error.col == error.line.index("np.einsum")
    assert "no letters left" in error.message and "backend='python'" in error.hint


def test_numba_refusal_inside_a_per_example_helper_names_the_generated_call():
    """A per-example helper made by `exec` has no source: the refusal names the generated
    line that calls it (from which the user's line is told where it can be)."""
    from transformer import numba_errors
    report = ('No implementation of function einsum_grad_each\n'
              'File "<batched einsum_grad>", line 2:\n<source missing>\n'
              f'File "{__file__}", line 7:\n    x = helper_each(a)\n')
    error = numba_errors.typing_error("f", [], Exception(report), [], None)
    assert (error.filename, error.lineno) == (__file__, 7)
