"""Machine code made on demand for Numba libraries reached only from compiled code
(`codegen/numba_lazy_code.py`): each way something can need a deferred library's code
gets it, and results, errors and caches are the same as with every library compiled."""
from __future__ import annotations

import ctypes
import os
import subprocess
import sys
import textwrap

import numba
import numpy as np
import pytest
from llvmlite import ir
from numba.core import cgutils
from numba.core.compiler_lock import global_compiler_lock
from numba.extending import overload

from codegen import numba_lazy_code

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
pytestmark = pytest.mark.skipif(not numba_lazy_code.enabled(),
                                reason="SECANT_LAZY_MACHINE_CODE=0")


@pytest.fixture(autouse=True)
def _installed():
    numba_lazy_code.install()


def _fresh_scaled():
    """A new overloaded function, so each test compiles (and defers) its own library."""
    def scaled(x, k):
        raise NotImplementedError        # replaced by the overload inside compiled code

    @overload(scaled)
    def _scaled_impl(x, k):
        def impl(x, k):
            if k < 0:
                raise ValueError("negative scale", k)     # runtime argument: environment
            return x * k
        return impl
    return scaled


_scaled = _fresh_scaled()


def _library_of(dispatcher, name_part: str):
    """The code library of the overload implementation `dispatcher` linked in."""
    (cres,) = dispatcher.overloads.values()
    for library in cres.library._linking_libraries:
        if name_part in library.name:
            return library
    raise AssertionError(f"no linked library named like {name_part!r}")


@numba.njit
def _caller(x, k):
    return _scaled(x, k) + 1.0


def test_overload_library_is_deferred_and_its_caller_runs():
    np.testing.assert_allclose(_caller(np.arange(3.0), 2.0), np.arange(3.0) * 2.0 + 1.0)
    assert numba_lazy_code.is_deferred(_library_of(_caller, "impl"))


def test_exception_arguments_of_a_deferred_library_reach_python():
    _caller(np.ones(2), 1.0)
    with pytest.raises(ValueError) as raised:
        _caller(np.ones(2), -3.0)
    assert raised.value.args == ("negative scale", -3.0)


def test_an_address_asked_for_materializes_the_library():
    scaled = _fresh_scaled()

    @numba.njit
    def lone(x, k):
        return scaled(x, k)

    lone(1.5, 2.0)
    library = _library_of(lone, "impl")
    wrappers = [fn.name for fn in library._final_module.functions
                if fn.name.startswith("cfunc.") and not fn.is_declaration]
    assert numba_lazy_code.is_deferred(library) and wrappers
    address = library.get_pointer_to_function(wrappers[0])
    assert address and not numba_lazy_code.is_deferred(library)
    assert library.get_pointer_to_function("not_a_symbol_here") == 0


def test_a_deferred_library_is_optimized_only_when_its_own_code_is_made(monkeypatch):
    """Its callers link its IR and optimize it with their own code; Numba's whole-module
    pipeline runs on the library itself only when it is materialized."""
    from numba.core import codegen as nb_codegen
    optimized = []
    original = nb_codegen.JITCodeLibrary._secant_original_optimize

    def counting(library):
        optimized.append(library.name)
        return original(library)
    monkeypatch.setattr(nb_codegen.JITCodeLibrary, "_secant_original_optimize", counting)
    scaled = _fresh_scaled()

    @numba.njit
    def twice(x, k):
        return scaled(x, k) * 2.0

    assert twice(1.5, 3.0) == 9.0
    library = _library_of(twice, "impl")
    assert numba_lazy_code.is_deferred(library)
    assert library.name not in optimized
    assert [name for name in optimized if name.endswith(".twice")]     # the caller, once run
    wrapper = next(fn.name for fn in library._final_module.functions
                   if fn.name.startswith("cfunc.") and not fn.is_declaration)
    address = library.get_pointer_to_function(wrapper)
    assert address and optimized.count(library.name) == 1
    double = ctypes.c_double
    assert ctypes.CFUNCTYPE(double, double, double)(address)(1.5, 4.0) == 6.0


def test_a_name_the_library_lacks_answers_zero_and_keeps_it_deferred():
    scaled = _fresh_scaled()

    @numba.njit
    def other(x, k):
        return scaled(x, k) * 2.0

    other(1.0, 1.0)
    library = _library_of(other, "impl")
    assert numba_lazy_code.is_deferred(library)
    assert library.get_pointer_to_function("cpython.absent") == 0
    assert numba_lazy_code.is_deferred(library)


def test_a_module_declaring_a_deferred_symbol_gets_it_compiled_first():
    """Without the materialization the engine could not resolve the declaration and
    would end the process."""
    scaled = _fresh_scaled()

    @numba.njit
    def seed(x, k):
        return scaled(x, k) - 1.0

    seed(2.0, 3.0)
    library = _library_of(seed, "impl")
    assert numba_lazy_code.is_deferred(library)
    target = next(fn for fn in library._final_module.functions
                  if fn.name.startswith("cfunc.") and not fn.is_declaration)
    codegen = library.codegen
    module = ir.Module(name="declares_deferred")
    double = ir.DoubleType()
    callee = cgutils.get_or_insert_function(
        module, ir.FunctionType(double, [double, double]), target.name)
    caller = ir.Function(module, ir.FunctionType(double, [double]), name="secant_lazy_probe")
    builder = ir.IRBuilder(caller.append_basic_block())
    builder.ret(builder.call(callee, [caller.args[0], ir.Constant(double, 4.0)]))
    with global_compiler_lock:
        probe = codegen.create_library("secant_lazy_probe")
        probe.add_ir_module(module)
        probe.finalize()
    assert numba_lazy_code.is_deferred(library)        # nothing has run the probe yet
    address = probe.get_pointer_to_function("secant_lazy_probe")
    assert not numba_lazy_code.is_deferred(library)
    assert ctypes.CFUNCTYPE(ctypes.c_double, ctypes.c_double)(address)(2.5) == 10.0


def test_cfunc_calling_an_overload():
    @numba.cfunc("float64(float64)")
    def scaled_by_three(x):
        return _scaled(x, 3.0)

    assert scaled_by_three.ctypes(2.0) == 6.0


def test_recursion_and_parallel_loops():
    @numba.njit
    def even(n):
        return True if n == 0 else odd(n - 1)

    @numba.njit
    def odd(n):
        return False if n == 0 else even(n - 1)

    @numba.njit(parallel=True)
    def scaled_rows(a):
        out = np.empty_like(a)
        for i in numba.prange(a.shape[0]):
            out[i] = _scaled(a[i], 2.0)
        return out

    assert even(10) and odd(7) and not even(7)
    a = np.arange(12.0).reshape(4, 3)
    np.testing.assert_allclose(scaled_rows(a), a * 2.0)


_CACHED_RUN = textwrap.dedent("""
    import numpy as np
    from transformer import grad, hessian, jit
    from codegen import numba_lazy_code

    def f(x):
        return np.sum(np.tanh(x) * x[::-1]) + x[0] ** 3

    x = np.linspace(-1.0, 1.0, 5)
    h = jit(hessian(f))(x)
    g = jit(grad(f))(x)
    eps = 1e-5
    fd = np.array([(jit(grad(f))(x + eps * e) - jit(grad(f))(x - eps * e)) / (2 * eps)
                   for e in np.eye(5)])
    assert np.allclose(h, fd, atol=1e-6), (h, fd)
    def pick(v, i):
        return v[i] * 2.0

    try:
        jit(grad(pick))(x, 7)
    except IndexError as error:
        message = str(error)
    print(repr((numba_lazy_code._installed, float(g.sum()), float(h.sum()), message)))
""")


@pytest.mark.slow
def test_results_and_errors_the_same_from_a_warm_cache_and_without_deferral(tmp_path):
    """A cold process, a second one loading the deferred helpers as bitcode from the
    cache, and one with deferral off give the same gradients, Hessian and error."""
    script = tmp_path / "cached_run.py"
    script.write_text(_CACHED_RUN)

    def run(cache, **env):
        full = {**os.environ, "SECANT_CACHE_DIR": str(cache), "PYTHONPATH": ROOT,
                "NUMBA_OPT": "0", **env}
        done = subprocess.run([sys.executable, str(script)], capture_output=True,
                              text=True, env=full, cwd=ROOT, timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
        return eval(done.stdout.strip().splitlines()[-1])

    cold = run(tmp_path / "lazy")
    warm = run(tmp_path / "lazy")
    eager = run(tmp_path / "eager", SECANT_LAZY_MACHINE_CODE="0")
    assert cold[0] and warm[0] and not eager[0]
    assert cold[1:] == warm[1:]
    np.testing.assert_allclose(cold[1:3], eager[1:3], rtol=1e-12)
    assert cold[3] == eager[3] and "7" in cold[3]
