"""A function compiled for too many specializations warns once, at a configurable limit."""
import warnings

import pytest

from transformer import jit


def scaled(x, k):
    return x * k


def calls_until_warning(function, count):
    """Call with `count` distinct static values; the warnings raised, in order."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for k in range(count):
            assert function(3.0, k) == 3.0 * k
    return [w for w in caught if "specializations" in str(w.message)]


def test_default_limit_warns_once_after_twenty(monkeypatch):
    monkeypatch.delenv("SECANT_MAX_SPECIALIZATIONS", raising=False)
    function = jit(scaled, static_argnums=1, backend="python")
    assert calls_until_warning(function, 20) == []
    caught = calls_until_warning(function, 30)   # 10 new specializations
    assert len(caught) == 1
    message = str(caught[0].message)
    assert "scaled has been compiled for 21 specializations (more than 20" in message
    assert "max_specializations" in message and "SECANT_MAX_SPECIALIZATIONS" in message
    assert caught[0].category is RuntimeWarning
    assert caught[0].filename == __file__         # points at the user's call


def test_limit_from_the_argument_or_the_environment(monkeypatch):
    monkeypatch.setenv("SECANT_MAX_SPECIALIZATIONS", "2")
    assert len(calls_until_warning(jit(scaled, static_argnums=1, backend="python"), 3)) == 1
    explicit = jit(scaled, static_argnums=1, backend="python", max_specializations=4)
    assert calls_until_warning(explicit, 4) == []
    assert len(calls_until_warning(explicit, 5)) == 1


@pytest.mark.parametrize("value", [0, -3, "many", 2.5, True])
def test_invalid_limit_is_refused(value):
    with pytest.raises(ValueError, match="max_specializations must be a positive integer"):
        jit(scaled, max_specializations=value)


def test_invalid_limit_in_the_environment_is_refused(monkeypatch):
    monkeypatch.setenv("SECANT_MAX_SPECIALIZATIONS", "lots")
    with pytest.raises(ValueError, match="SECANT_MAX_SPECIALIZATIONS must be a positive"):
        jit(scaled)
