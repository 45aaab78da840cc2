"""The LLVM level of secant's generated functions (`codegen/numba_opt_level.py`): -O2 for
a library defining a generated function, Numba's own level for everything else, never
above NUMBA_OPT, and a module per non-default SECANT_OPT_LEVEL."""
from __future__ import annotations

import numba
import numpy as np
import pytest
from numba.core import codegen as nb_codegen

from codegen import backends, numba_opt_level
from transformer import grad, jit


@pytest.fixture
def levels_seen(monkeypatch):
    """The `opt` of every whole-module pipeline Numba builds, by library, under NUMBA_OPT=3."""
    numba_opt_level.install()
    # Numba reads its settings again from the environment when that changes
    monkeypatch.setenv("NUMBA_OPT", "3")
    monkeypatch.setattr(numba.config, "OPT", type(numba.config.OPT)(3))
    seen = []
    make = nb_codegen.JITCPUCodegen._module_pass_manager
    current = []

    def recording(self, **kwargs):
        if kwargs.get("cost") != "cheap":           # the full pipeline
            seen.append((current[-1] if current else None,
                         kwargs.get("opt", int(numba.config.OPT))))
        return make(self, **kwargs)

    def tracking(optimize):
        def optimizing(self):
            current.append(self)
            try:
                return optimize(self)
            finally:
                current.pop()
        return optimizing
    monkeypatch.setattr(nb_codegen.JITCPUCodegen, "_module_pass_manager", recording)
    # where machine code is made on demand, a deferred library is optimized through the
    # wrapper that module keeps
    for name in ("_optimize_final_module", "_secant_original_optimize"):
        if hasattr(nb_codegen.JITCodeLibrary, name):
            monkeypatch.setattr(nb_codegen.JITCodeLibrary, name,
                                tracking(getattr(nb_codegen.JITCodeLibrary, name)))
    return seen


def _levels(seen, generated: bool) -> set:
    return {opt for library, opt in seen
            if library is not None and numba_opt_level.is_generated(library) == generated}


def test_a_generated_function_is_optimized_at_o2_and_a_users_njit_at_numbas_level(levels_seen):
    def energy(x):                       # a body no other test compiles: a new module
        return np.sum(np.sin(x) * x ** 3) - 0.25 * np.sum(x)

    @numba.njit
    def users(x):
        return np.sum(np.cos(x) * x) + 1.75

    x = np.linspace(-1.0, 1.0, 7)
    np.testing.assert_allclose(jit(grad(energy))(x), np.cos(x) * x ** 3 + 3 * np.sin(x) * x ** 2
                               - 0.25, rtol=1e-12)
    assert users(x) == pytest.approx(np.sum(np.cos(x) * x) + 1.75)
    assert _levels(levels_seen, generated=True) == {2}
    assert 3 in _levels(levels_seen, generated=False)


def test_a_generated_functions_own_ir_gets_its_function_passes_at_o2(monkeypatch):
    numba_opt_level.install()
    monkeypatch.setenv("NUMBA_OPT", "3")
    monkeypatch.setattr(numba.config, "OPT", type(numba.config.OPT)(3))
    seen, current = [], []
    make = nb_codegen.JITCPUCodegen._function_pass_manager
    optimize = nb_codegen.JITCodeLibrary._optimize_functions

    def recording(self, **kwargs):
        seen.append((current[-1] if current else None, kwargs.get("opt", 3)))
        return make(self, **kwargs)

    def tracking(self, ll_module):
        current.append(numba_opt_level.defines_generated(ll_module))
        try:
            return optimize(self, ll_module)
        finally:
            current.pop()
    monkeypatch.setattr(nb_codegen.JITCPUCodegen, "_function_pass_manager", recording)
    monkeypatch.setattr(nb_codegen.JITCodeLibrary, "_optimize_functions", tracking)

    def potential(x):                    # a body no other test compiles: a new module
        return np.sum(np.exp(-x) * x ** 2) + 0.375 * np.sum(x)

    x = np.linspace(0.0, 2.0, 6)
    np.testing.assert_allclose(jit(grad(potential))(x),
                               np.exp(-x) * (2 * x - x ** 2) + 0.375, rtol=1e-12)
    assert {opt for generated, opt in seen if generated} == {2}
    assert {opt for generated, opt in seen if generated is False} == {3}


def test_the_level_follows_secant_opt_level_and_never_exceeds_numba_opt(monkeypatch):
    monkeypatch.setattr(numba.config, "OPT", type(numba.config.OPT)(3))
    monkeypatch.delenv(numba_opt_level.ENV, raising=False)
    assert numba_opt_level.level() == 2
    for given, want in (("3", 3), ("1", 1), ("7", 3), ("-2", 0), ("fast", 2)):
        monkeypatch.setenv(numba_opt_level.ENV, given)
        assert numba_opt_level.level() == want, given
    monkeypatch.setenv(numba_opt_level.ENV, "3")
    monkeypatch.setattr(numba.config, "OPT", type(numba.config.OPT)(0))
    assert numba_opt_level.level() == 0


def test_another_secant_opt_level_gets_another_module(monkeypatch):
    """Numba's disk cache does not tell levels apart: the header (and so the module's
    name and cache entry) names a level that is not the default."""
    options = backends.Options(backend="cpu")
    monkeypatch.delenv(numba_opt_level.ENV, raising=False)
    default = backends._optimization_note(options)
    monkeypatch.setenv(numba_opt_level.ENV, "3")
    assert backends._optimization_note(options) == default + ", SECANT_OPT_LEVEL=3"
    assert backends._optimization_note(backends.Options(backend="python")) == ""


def test_a_library_linking_a_generated_function_is_not_taken_for_one():
    """Only a function the library defines with its own linkage counts: a helper linked in
    from elsewhere is `linkonce_odr`."""
    from llvmlite import binding

    module = binding.parse_assembly(
        f'define linkonce_odr i64 @"_ZN{numba_opt_level._MANGLED}4m0ab1fB2v1Ex"(i64 %a) {{\n'
        '  ret i64 %a\n}\n'
        'define i64 @"_ZN4user1fB2v1Ex"(i64 %a) {\n  ret i64 %a\n}\n')

    class Library:
        _final_module = module
    assert not numba_opt_level.is_generated(Library)
    module.get_function(f"_ZN{numba_opt_level._MANGLED}4m0ab1fB2v1Ex").linkage = "external"
    assert numba_opt_level.is_generated(Library)
