"""Generated programs through jit, grad and vmap against plain Python and finite differences.

tests/program_generator.py writes programs with the constructs users write (branches on
values, loops with break and continue, early return, in-place writes, aliases updated in
place, indices at and past the bounds, decorators, keyword-only arguments, defaults,
module attributes, names whose first value is an int or a bool and later ones floats,
`//`, `%` and integer powers); tests/differential.py runs each under a transformation and
compares it with the plain run (values, and IndexError where Python raises it) or with central
differences. Any disagreement fails with the program, the inputs, expected and got.

The sequence of programs is fixed (derandomized). Compiles are the cost, so the compiled
checks draw few programs and call each at several inputs; `--runslow` draws many more, and
benchmarks/hunt_silent_errors.py runs a search of any size.

Constructs that break on today's code are listed in `differential.KNOWN_BUGS` and left out
of the checks they break; delete an entry there once its fix is merged, and these tests
cover the construct.
"""
import math

import numpy as np
import pytest
from differential import (CHECKS, KNOWN_BUGS, Outcome, allowed_features, check_program,
                          disagreement, skipped)
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from program_generator import Program, whole_programs, write_program

import differential

_SETTINGS = dict(derandomize=True, database=None, deadline=None,
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                        HealthCheck.filter_too_much,
                                        HealthCheck.function_scoped_fixture])
# reverse mode refuses an alias updated in place (README, "What it refuses"): the grad
# searches draw programs without it so that every example checks a value
_NO_ALIAS = ("alias_augmented",)


def _hunt(directory, checks, examples, leave_out=(), points=4, forced=(), sizes=None,
          min_lines=0, contains=()):
    """Draw `examples` programs and run `checks` on each; fail on the first mismatch.

    `forced` features are in every program; `min_lines` rejects shorter programs (the
    search starts from the simplest one, too plain to be worth a compile), as do programs
    without each text in `contains` and those whose every check a known bug skips.
    """
    features = tuple(f for f in allowed_features(checks) if f not in leave_out)
    assert set(forced) <= set(features), f"{forced} are not all allowed in {features}"
    drawn = whole_programs(features, sizes or (1, 2, 3, 4, 5, 6), forced)

    @settings(max_examples=examples, **_SETTINGS)
    @given(program=drawn, seed=st.integers(0, 2 ** 16))
    def search(program, seed):
        assume(program.source.count("\n") >= min_lines)
        assume(all(text in program.source for text in contains))
        assume(not all(skipped(program, check) for check in checks))
        found = check_program(program, checks, directory, seed, points)
        assert not found, "\n\n".join(str(m) for m in found)

    search()


@pytest.fixture
def directory(tmp_path):
    return tmp_path


# ---------------------------------------------- small searches (two in the quick set)
@pytest.mark.slow
def test_python_backend_jit_and_vmap_agree_with_numpy(directory):
    _hunt(directory, ("jit_python", "vmap", "vmap_loop", "vmap_shared_x"), examples=12)


def test_grad_agrees_with_finite_differences(directory):
    _hunt(directory, ("grad",), examples=5, leave_out=_NO_ALIAS)


@pytest.mark.slow
def test_jvp_agrees_with_finite_differences_on_aliases_updated_in_place(directory):
    """Forward mode keeps the tangents of names sharing an array updated in place shared;
    the program's own plain run is the only reference it needs."""
    _hunt(directory, ("jvp",), examples=10, forced=("alias_augmented",), contains=("z = w",))


@pytest.mark.slow
def test_hessian_vector_products_agree_with_finite_differences_of_the_gradient(directory):
    _hunt(directory, ("hvp",), examples=3, leave_out=_NO_ALIAS + ("keyword_only",),
          forced=("vector_math",))


# Each compiled check compiles one rich program and calls it at several inputs.
_RICH = dict(examples=1, points=6, min_lines=14)


@pytest.mark.slow
def test_jit_agrees_with_python_on_short_vectors(directory):
    _hunt(directory, ("jit",), forced=("early_return", "vector_rebind", "helper_call"),
          sizes=(2, 3, 4), **_RICH)


def test_jit_agrees_with_python_on_aliases_updated_in_place(directory):
    _hunt(directory, ("jit",), forced=("alias_augmented", "vector_math", "integer_input"),
          sizes=(5, 6), contains=("z = w",), **_RICH)


@pytest.mark.slow
def test_jit_vmap_agrees_with_python(directory):
    _hunt(directory, ("jit_vmap",), forced=("early_return", "vector_rebind", "min_max"),
          **_RICH)


@pytest.mark.slow
def test_jit_grad_agrees_with_finite_differences(directory):
    # a gradient compiles several times slower than its primal: a shorter program, no
    # helper calls (each adds compiled functions and their vjps) and no module attributes
    # (a second load against other values compiles it twice); the hunt script has them
    _hunt(directory, ("jit_grad",), forced=("vector_math",),
          leave_out=_NO_ALIAS + ("module_attribute", "helper_call"),
          **{**_RICH, "min_lines": 10})


# ------------------------------------------------------------------ larger searches
@pytest.mark.slow
@pytest.mark.parametrize("checks, examples", [
    # sized for CI's hour on a slow 2-core machine; benchmarks/hunt_silent_errors.py runs
    # searches of any size
    (("jit_python", "vmap", "vmap_loop", "vmap_shared_x", "grad", "jvp"), 10),
    (("hvp",), 5),
    (("jit",), 5),
    (("jit_vmap",), 5),
    (("jit_grad",), 3),
    (("jit_parallel",), 4),
])
def test_larger_search_finds_no_mismatch(directory, checks, examples):
    _hunt(directory, checks, examples)


# ------------------------------------------------------------------ the harness itself
@settings(max_examples=60, **_SETTINGS)
@given(program=whole_programs(), seed=st.integers(0, 2 ** 16))
def test_generated_programs_are_well_defined(directory, program, seed):
    fn, _ = write_program(directory, program)
    for point in differential.points(program, 3, seed):
        outcome = differential.run(fn, point)
        if outcome.error is not None:
            assert isinstance(outcome.error, IndexError), program.listing()
            assert "out_of_range" in program.features, program.listing()
        else:
            assert isinstance(outcome.value, float) and math.isfinite(outcome.value)
            assert abs(outcome.value) < 1e3, program.listing()


_PROGRAM = Program(source="def program(x, v):\n    w = v.copy()\n    w[1] = x\n"
                          "    return np.sum(w * w) + x * w[2]\n", size=3,
                   features=frozenset({"out_of_range"}))


@pytest.mark.parametrize("check", ["jit_python", "grad", "vmap"])
def test_a_wrong_value_is_reported_with_program_and_inputs(monkeypatch, directory, check):
    real = differential.transformation

    def off_by_a_little(name, fn):
        transformed = real(name, fn)
        return lambda *args, **kwargs: _perturbed(transformed(*args, **kwargs))

    monkeypatch.setattr(differential, "transformation", off_by_a_little)
    found = check_program(_PROGRAM, (check,), directory)
    assert len(found) == 1 and found[0].check == check
    assert "values differ" in found[0].why and "def program(x, v):" in str(found[0])


def _perturbed(value):
    if isinstance(value, tuple):
        return tuple(_perturbed(v) for v in value)
    return value + 1e-4


def test_a_value_where_python_raises_index_error_is_a_mismatch():
    expected = Outcome(error=IndexError("index 3 is out of bounds"))
    assert disagreement(expected, Outcome(value=6.9e-321)) == \
        "Python raises IndexError; got a value"
    assert disagreement(expected, Outcome(error=IndexError("index 3"))) is None
    assert "TransformError" in disagreement(expected, Outcome(error=_transform_error()))


def _transform_error():
    from transformer import TransformError
    return TransformError("refused")


def test_an_out_of_range_index_raises_index_error_under_python_backend_transformations(
        directory):
    program = Program(source=_PROGRAM.source.replace("w[2]", "w[3]"), size=3,
                      features=frozenset({"out_of_range"}))
    assert check_program(program, ("jit_python", "grad", "vmap"), directory) == []
    fn, _ = write_program(directory, program)
    with pytest.raises(IndexError):
        fn(0.5, np.ones(3))


def test_known_bugs_name_a_generated_feature_and_a_check():
    from program_generator import FEATURES
    for name, bug in KNOWN_BUGS.items():
        assert bug.feature in FEATURES, name
        assert set(bug.checks) <= set(CHECKS) and bug.description, name
