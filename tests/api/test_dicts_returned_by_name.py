"""A dict built under a name and returned (`d = {"loss": l, "pred": p}; return d`), as JAX
code returns metrics: under jit it comes back as a dict, as a dict literal in the return
statement does (`pytree_returns`), where Numba could not hand it back to Python before; a
dict that is changed after it is built is refused at its return with a hint that works."""
from __future__ import annotations

import numpy as np
import pytest

from transformer import TransformError, grad, jit, value_and_grad

X = np.linspace(0.1, 0.9, 4)


def metrics(x):
    d = {"loss": np.sum(x * x), "pred": np.tanh(x)}
    return d


def metrics_read_and_rebound(x):
    stats = {"mean": np.mean(x), "rows": x}
    s = stats["mean"] * 2.0
    x = x + s                       # the dict keeps the arrays it was given
    return stats, x


def metrics_in_a_branch(x):
    if x[0] > 0:
        out = {"sign": 1.0, "x": x}
    else:
        return {"sign": -1.0, "x": -x}
    return out


def written_after(x):
    out = {"a": x, "s": np.sum(x)}
    x[0] = 7.0                      # the array the dict holds, written in place
    return out


def rebound_item(x):
    s = np.sum(x)
    out = {"s": s}
    s = s + 1.0                     # the dict keeps the value it was given
    return out, s


@pytest.mark.parametrize("f", [metrics, metrics_read_and_rebound, metrics_in_a_branch,
                               written_after, rebound_item])
def test_a_dict_returned_by_name_comes_back_as_a_dict(f):
    for sign in (1.0, -1.0):
        want, got = f(sign * X.copy()), jit(f)(sign * X.copy())
        _same(got, want)


def _same(got, want):
    if isinstance(want, (dict, tuple)):
        assert type(got) is type(want)
    if isinstance(want, dict):
        assert list(got) == list(want)
        for key in want:
            _same(got[key], want[key])
    elif isinstance(want, tuple):
        for g, w in zip(got, want):
            _same(g, w)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-12)


def loss_with_metrics(w, x):
    pred = np.tanh(w * x)
    metrics_ = {"mean": np.mean(pred), "max": np.max(pred)}
    return np.sum(pred ** 2), metrics_


def test_an_aux_dict_returned_by_name_under_jit_grad():
    w = np.array([0.5, -1.0, 2.0, 0.25])
    (value, aux), g = jit(value_and_grad(loss_with_metrics, has_aux=True))(w, X)
    pred = np.tanh(w * X)
    assert value == pytest.approx(np.sum(pred ** 2))
    assert aux == pytest.approx({"mean": np.mean(pred), "max": np.max(pred)})
    np.testing.assert_allclose(g, 2 * pred * (1 - pred ** 2) * X, rtol=1e-12)
    g2, aux2 = jit(grad(loss_with_metrics, has_aux=True))(w, X)
    np.testing.assert_allclose(g2, g, rtol=1e-12)
    assert aux2 == pytest.approx(aux)


def changed_after(x):
    d = {"a": x}
    d["b"] = np.sum(x)              # an item added: not the literal's dict any more
    return d


def test_a_dict_changed_after_it_is_built_is_refused_at_its_return():
    with pytest.raises(TransformError) as info:
        jit(changed_after)(X.copy())
    assert "test_dicts_returned_by_name.py" in str(info.value)

    def written_out(x):             # the form the hint asks for
        return {"a": x, "b": np.sum(x)}
    _same(jit(written_out)(X.copy()), changed_after(X.copy()))


def reads_last_passes_dict(x):
    d = {"a": x[0], "b": 0.0}
    for i in range(3):
        d = {"a": x[i] * 2.0, "b": d["a"]}   # the previous pass's item
    return d


def read_only_in_a_loop(x):
    total = 0.0
    for i in range(3):
        row = {"v": x[i], "w": x[i + 1] * 2.0}
        total = total + row["v"] * row["w"]
    return total


def repeated_key(x):
    d = {"a": x[0], "a": x[1]}              # noqa: F601  (the last one counts)
    return d["a"] * 2.0, d


@pytest.mark.parametrize("f", [reads_last_passes_dict, read_only_in_a_loop, repeated_key])
def test_dict_reads_in_loops_and_repeated_keys_match_python(f):
    for compiled in (jit(f, backend="python"), jit(f)):
        try:
            got = compiled(X.copy())
        except TransformError:
            continue                        # refused, located: never a wrong number
        _same(_plain(got), f(X.copy()))


def _plain(value):
    """A dict Numba hands back as its typed dict (one these rewrites leave alone), as a
    dict: the values are what is checked here."""
    if isinstance(value, tuple):
        return tuple(_plain(v) for v in value)
    return dict(value) if hasattr(value, "keys") else value


def handed_on(x):
    d = {"a": x, "s": np.sum(x)}
    e = d                           # handed on whole: not a read-only dict any more
    return e


def test_a_dict_handed_on_and_returned_is_refused_at_its_return_with_a_hint_that_works():
    with pytest.raises(TransformError, match="cannot hand back to Python") as info:
        jit(handed_on)(X.copy())
    assert "test_dicts_returned_by_name.py" in str(info.value)
    assert "return e" in str(info.value)
    assert "a name of its own" in str(info.value)

    def as_hinted(x):
        a = x
        s = np.sum(x)
        return {"a": a, "s": s}
    _same(jit(as_hinted)(X.copy()), handed_on(X.copy()))
