"""Visible compiles: a slow compile logs one line on logger `secant`; cache_info has the time.

"Slow" is decided by `codegen.compile_log.THRESHOLD_SECONDS`, which the tests set to 0 (every
compile is slow) or to a huge value (none is), so no test depends on how long a compile takes.
Most compiles here use the python backend, which costs no Numba compile.
"""
import logging
import threading

import numpy as np
import pytest

from codegen import compile_log
from transformer import grad, jit


def _weight(x):
    return np.sin(x) * x


def energy(x):
    return np.sum(_weight(x))


def energy_grad_oracle(x):
    return np.cos(x) * x + np.sin(x)


def _secant_records(caplog):
    return [r for r in caplog.records if r.name == "secant"]


@pytest.fixture
def every_compile_is_slow(monkeypatch):
    monkeypatch.setattr(compile_log, "THRESHOLD_SECONDS", 0.0)


X = np.linspace(-1.0, 2.0, 5)


def test_slow_compile_logs_one_line_naming_function_chain_and_backend(every_compile_is_slow,
                                                                         caplog):
    caplog.set_level(logging.INFO, logger="secant")
    f = jit(grad(energy), backend="python")
    np.testing.assert_allclose(f(X), energy_grad_oracle(X), rtol=1e-12)
    np.testing.assert_allclose(f(X + 1.0), energy_grad_oracle(X + 1.0), rtol=1e-12)
    records = _secant_records(caplog)
    assert len(records) == 1, [r.getMessage() for r in records]   # helper _weight included
    message = records[0].getMessage()
    assert records[0].levelno == logging.INFO
    assert message.startswith("compiled energy [grad(argnums=0) | jit(backend='python')]")
    assert "for backend 'python' in " in message and " s transforming" in message


def scaled_energy(x, k):
    return k * energy(x)


def test_each_new_specialization_is_a_compile_of_its_own(every_compile_is_slow, caplog):
    caplog.set_level(logging.INFO, logger="secant")
    f = jit(scaled_energy, static_argnums=1, backend="python")
    for k in (2.0, 3.0, 3.0):
        np.testing.assert_allclose(f(X, k), k * np.sum(np.sin(X) * X), rtol=1e-12)
    messages = [r.getMessage() for r in _secant_records(caplog)]
    assert len(messages) == 2
    assert "jit(backend='python', k=2.0)]" in messages[0]
    assert "jit(backend='python', k=3.0)]" in messages[1]


def test_fast_compile_logs_nothing(monkeypatch, caplog):
    monkeypatch.setattr(compile_log, "THRESHOLD_SECONDS", 1e9)
    caplog.set_level(logging.INFO, logger="secant")
    np.testing.assert_allclose(jit(grad(energy), backend="python")(X), energy_grad_oracle(X))
    assert _secant_records(caplog) == []


def test_warning_level_on_the_secant_logger_silences_compile_lines(every_compile_is_slow,
                                                                     caplog):
    caplog.set_level(logging.WARNING, logger="secant")
    np.testing.assert_allclose(jit(grad(energy), backend="python")(X), energy_grad_oracle(X))
    assert _secant_records(caplog) == []


def test_eager_transformed_call_logs_its_transformation(every_compile_is_slow, caplog):
    caplog.set_level(logging.INFO, logger="secant")
    g = grad(energy)
    np.testing.assert_allclose(g(X), energy_grad_oracle(X), rtol=1e-12)
    g(X)
    messages = [r.getMessage() for r in _secant_records(caplog)]
    assert len(messages) == 1
    assert messages[0].startswith("compiled energy [grad(argnums=0)] for backend 'python'")


def test_line_reaches_stderr_without_any_logging_configuration(every_compile_is_slow, capsys):
    root = logging.getLogger()
    saved = root.handlers[:]
    root.handlers.clear()       # what a plain `python script.py` has: no handler anywhere
    try:
        jit(grad(energy), backend="python")(X)
    finally:
        root.handlers[:] = saved
    lines = capsys.readouterr().err.splitlines()
    assert [line for line in lines if line.startswith("secant: compiled energy")] == lines
    assert len(lines) == 1


def test_configured_logging_gets_the_line_and_stderr_no_copy(every_compile_is_slow, capsys):
    root = logging.getLogger()
    seen = []
    handler = logging.Handler()
    handler.emit = seen.append
    saved = root.handlers[:]
    root.handlers[:] = [handler]
    try:
        jit(grad(energy), backend="python")(X)
    finally:
        root.handlers[:] = saved
    assert [r.getMessage()[:15] for r in seen] == ["compiled energy"]
    assert "secant" not in capsys.readouterr().err


# one Numba compile: a function no other test compiles, so Numba's disk cache cannot serve it
def _cubed_weight(x):
    return x * x * x + 0.5 * x


def cubed(x):
    return np.sum(_cubed_weight(x))


def test_cpu_compile_time_includes_numba_and_reaches_cache_info(every_compile_is_slow, caplog):
    caplog.set_level(logging.INFO, logger="secant")
    f = jit(grad(cubed))
    assert f.cache_info().compile_seconds == 0.0
    np.testing.assert_allclose(f(X), 3 * X * X + 0.5, rtol=1e-12)
    after_compile = f.cache_info().compile_seconds
    f(X)
    assert f.cache_info().compile_seconds == after_compile > 0.0
    (record,) = _secant_records(caplog)
    message = record.getMessage()
    assert "jit(backend='cpu')] for backend 'cpu'" in message and " s in Numba)" in message


def test_numba_compile_begun_before_secant_was_imported_ends_cleanly():
    """A compile that started in another thread before the listener was registered sends
    its end event to a thread state the listener never saw: it must not raise into Numba."""
    errors = []

    def end_unseen_compile():
        try:
            compile_log._CompileListener().on_end(None)
        except Exception as exc:     # any exception would break the compile in Numba
            errors.append(exc)

    thread = threading.Thread(target=end_unseen_compile)
    thread.start()
    thread.join()
    assert errors == []
