"""Helpers shared by the gradient tests: a finite-difference oracle and partial modules.

`central_differences` is `transformer.test_util.numerical_grad`, the one finite-difference
oracle (plain NumPy, independent of what secant computes). `partial_module` writes real
source binding a corpus function's non-differentiable arguments, the way a user would
write `lambda x: f(x, n)`, so functions taking integers can go through tools that
differentiate every argument (check_grads).
"""
from __future__ import annotations

import importlib.util
import itertools
import pathlib

import numpy as np

from transformer.test_util import numerical_grad as central_differences  # noqa: F401

_counter = itertools.count()


def assert_gradient_close(got, expected, what=""):
    """Gradients agree to finite-difference accuracy, scaled by their magnitude."""
    got, expected = np.asarray(got, dtype=float), np.asarray(expected, dtype=float)
    assert got.shape == expected.shape, f"{what}: shape {got.shape} != {expected.shape}"
    scale = max(1.0, float(np.max(np.abs(expected), initial=0.0)))
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6 * scale, err_msg=what)


def assert_jvp_matches_differences(transformed_jvp, reference, x, t):
    """`transformed_jvp(x, t)` gives (value, tangent) of `reference` at `x` along `t`: the
    value as `reference` computes it, the tangent as central differences along `t`."""
    value, tangent = transformed_jvp(x, t)
    eps = 1e-6
    expected = (reference(x + eps * t) - reference(x - eps * t)) / (2 * eps)
    np.testing.assert_allclose(value, reference(x), rtol=1e-12)
    np.testing.assert_allclose(tangent, expected, rtol=1e-5, atol=1e-7)


def assert_hessian_matches_differences(hessian_f, reference, x):
    """`hessian_f(x)` agrees with central differences of the central-difference gradient
    of `reference` at `x`."""
    from transformer.test_util import numerical_jacobian
    expected = numerical_jacobian(lambda v: central_differences(reference, (v,), eps=1e-4),
                                  x, eps=1e-4)
    np.testing.assert_allclose(hessian_f(x), expected, rtol=1e-4, atol=1e-5)


def jax_with_x64():
    """The jax module in 64-bit mode (the test is skipped without JAX)."""
    import pytest
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    return jax


def on_jax(fun, jnp):
    """`fun` with `np` read as `jnp` (jax.numpy): the same source, run by JAX (the oracle)."""
    import inspect
    scope = {"np": jnp}
    exec(inspect.getsource(fun), scope)
    return scope[fun.__name__]


def assert_matches_jax(f, jax_f, points, jax):
    """`f` and secant's `grad(f)` agree with the same program run by JAX (`jax_f`)."""
    from transformer import grad
    for x in points:
        np.testing.assert_allclose(f(x), jax_f(jax.numpy.asarray(x)), rtol=1e-12)
        np.testing.assert_allclose(grad(f)(x), jax.jacfwd(jax_f)(jax.numpy.asarray(x)),
                                   rtol=1e-10, atol=1e-12)


def smooth_differences(fn, args, argnums):
    """Central differences of `fn` at `args` for each of `argnums`, or None when a coarser
    step disagrees (a branch threshold near the point: no derivative to compare with)."""
    fine = [central_differences(fn, args, k) for k in argnums]
    coarse = [central_differences(fn, args, k, eps=1e-4) for k in argnums]
    smooth = all(np.allclose(f, c, rtol=1e-3, atol=1e-4) for f, c in zip(fine, coarse))
    return fine if smooth else None


def write_module(directory: pathlib.Path, source: str, constants: dict):
    """Import `source` as a fresh module from a real file, with `constants` as globals."""
    path = directory / f"generated_case_{next(_counter)}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    module.__dict__.update(constants)
    spec.loader.exec_module(module)
    return module


def partial_source(case, prefix: str, fixed_prefix: str) -> tuple[str, str, dict]:
    """A call to `case.fn` whose differentiable arguments are parameters.

    Returns (parameter list, call expression, globals holding the fixed arguments).
    """
    args = case.args()
    params, actuals, constants = [], [], {}
    for k, value in enumerate(args):
        if k in case.argnums:
            params.append(f"{prefix}{k}")
            actuals.append(f"{prefix}{k}")
        else:
            constants[f"{fixed_prefix}{k}"] = value
            actuals.append(f"{fixed_prefix}{k}")
    return ", ".join(params), f"{case.name}({', '.join(actuals)})", constants


def partial_module(case, directory: pathlib.Path):
    """A module with `case.fn` of its differentiable arguments only; returns the function."""
    params, call, constants = partial_source(case, "x", "fixed")
    source = (f"from corpus import {case.name}\n\n\n"
              f"def {case.name}_partial({params}):\n    return {call}\n")
    module = write_module(directory, source, constants)
    return getattr(module, f"{case.name}_partial")


def group_module(cases, directory: pathlib.Path, name: str):
    """One function summing several corpus functions; each one's inputs are parameters.

    Its gradient with respect to every parameter holds each member's gradient, so one
    compile checks many functions.
    """
    params, calls, constants = [], [], {}
    for i, case in enumerate(cases):
        p, call, c = partial_source(case, f"x{i}_", f"fixed{i}_")
        params.append(p)
        calls.append(call)
        constants.update(c)
    imports = "".join(f"from corpus import {c.name}\n" for c in cases)
    body = "\n".join(f"    total = total + {call}" for call in calls)
    source = (f"{imports}\n\ndef {name}({', '.join(params)}):\n    total = 0.0\n{body}\n"
              f"    return total\n")
    return getattr(write_module(directory, source, constants), name)
