"""No stale code: what a function reads is part of what its compiled code depends on.

Across processes: a constant read as `cfg.SCALE` and an `@njit` helper reached as
`helpers.h(x)` are part of the generated module's name, so a new process sharing the
cache directory sees an edit of cfg.py or helpers.py (or of a kernel the helper calls).

Within a process: grad, vmap, jvp, hessian... (the python backend) read globals,
closure values, module attributes and defaults as they are at each call, as JAX's `grad`
does; `jit` keeps the values it compiled with, as `jax.jit` does (README, "jit").
"""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from tests.gradcheck import assert_gradient_close, central_differences
from transformer import grad, hessian, jit, jvp, vmap

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# ---------------------------------------------------------------- across processes

MODEL = """
from pkg import cfg, helpers
from transformer import grad, jit

def scaled(x):
    return cfg.SCALE * x

def shifted(x):
    return helpers.h(x) * x

print(jit(scaled)(3.0), jit(shifted)(3.0), jit(grad(scaled))(3.0))
"""
HELPERS = """
import numba

@numba.njit
def inner(x):
    return x + {offset}

@numba.njit
def h(x):
    return inner(x)
"""


def _run(directory):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, str(directory)]),
               SECANT_CACHE_DIR=str(directory / "cache"), PYTHONDONTWRITEBYTECODE="1",
               NUMBA_OPT="0")
    done = subprocess.run([sys.executable, str(directory / "model.py")], env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return [float(v) for v in done.stdout.split()]


def _write_package(directory, scale: float, offset: float):
    (directory / "pkg").mkdir(exist_ok=True)
    (directory / "pkg" / "__init__.py").write_text("")
    (directory / "pkg" / "cfg.py").write_text(f"SCALE = {scale!r}\n")
    (directory / "pkg" / "helpers.py").write_text(textwrap.dedent(HELPERS).format(
        offset=repr(offset)))


@pytest.mark.slow
def test_new_process_sees_edited_module_constant_and_helper(tmp_path):
    (tmp_path / "model.py").write_text(MODEL)
    _write_package(tmp_path, 2.0, 1.0)
    assert _run(tmp_path) == [6.0, (3.0 + 1.0) * 3.0, 2.0]
    _write_package(tmp_path, 5.0, 10.0)          # same file sizes: only the values differ
    assert _run(tmp_path) == [15.0, (3.0 + 10.0) * 3.0, 5.0]


# ---------------------------------------------------------------- within a process

this = sys.modules[__name__]
WEIGHT = 2.0


def helper(x):
    return WEIGHT * x


def weighted(x):
    return np.sum(helper(x) * x)


def through_module(x):
    return this.FACTOR * np.sum(this.helper(x))


FACTOR = 3.0


def make_closure():
    offset = 1.0

    def shifted(x):
        return np.sum((x + offset) * x)

    def move(value):
        nonlocal offset
        offset = value
    return shifted, move


def with_default(x, k=2.0):
    return k * np.sum(x * x)


X = np.array([0.5, -1.5])


def _check_grad(transformed, fn):
    assert_gradient_close(transformed(X), central_differences(fn, (X,), 0))


def test_grad_sees_a_global_changed_after_the_first_call(monkeypatch):
    derivative, batched, pushed = grad(weighted), vmap(weighted), hessian(weighted)
    _check_grad(derivative, weighted)
    monkeypatch.setattr(this, "WEIGHT", 5.0)
    _check_grad(derivative, weighted)
    np.testing.assert_allclose(batched(np.stack([X, X])), [weighted(X)] * 2)
    np.testing.assert_allclose(pushed(X), 2.0 * 5.0 * np.eye(2))
    assert jvp(weighted, (X,), (X,))[1] == pytest.approx(2.0 * 5.0 * np.sum(X * X))


def test_grad_sees_module_attributes_rebound_after_the_first_call(monkeypatch):
    derivative = grad(through_module)
    _check_grad(derivative, through_module)
    monkeypatch.setattr(this, "FACTOR", -4.0)
    _check_grad(derivative, through_module)
    monkeypatch.setattr(this, "helper", lambda x: x * x)
    _check_grad(derivative, through_module)


def test_grad_sees_a_closure_value_and_defaults_rebound_after_the_first_call(monkeypatch):
    shifted, move = make_closure()
    derivative = grad(shifted)
    _check_grad(derivative, shifted)
    move(7.0)
    _check_grad(derivative, shifted)
    by_default = grad(with_default)
    _check_grad(by_default, with_default)
    monkeypatch.setattr(with_default, "__defaults__", (10.0,))
    _check_grad(by_default, with_default)


def repeated(x, n):
    return n * WEIGHT * np.sum(x)


def test_jit_keeps_the_values_it_compiled_with_as_jax_jit_does(monkeypatch):
    compiled = jit(weighted, backend="python")
    before = compiled(X)
    monkeypatch.setattr(this, "WEIGHT", 7.0)
    assert compiled(X) == pytest.approx(before)           # the same specialization
    assert jit(weighted, backend="python")(X) == pytest.approx(weighted(X))   # a new jit


def test_jit_reads_globals_anew_for_a_new_specialization(monkeypatch):
    compiled = jit(repeated, static_argnums=1, backend="python")
    assert compiled(X, 1) == pytest.approx(repeated(X, 1))
    monkeypatch.setattr(this, "WEIGHT", -3.0)
    assert compiled(X, 1) == pytest.approx(2.0 * np.sum(X))          # compiled before
    assert compiled(X, 2) == pytest.approx(repeated(X, 2))           # compiled now


def test_global_array_mutated_in_place_is_read_live(monkeypatch):
    big = np.ones(1000)
    monkeypatch.setattr(this, "WEIGHT", big)
    derivative = grad(weighted)
    derivative(np.ones(1000))
    big[0] = 3.0                    # mutated in place: the python backend reads it live
    np.testing.assert_allclose(derivative(np.ones(1000))[:2], [6.0, 2.0])
