"""A `for` loop over a list, tuple or dict the function builds (`for w in ws`, `for i, w in
enumerate(ws)`, `for k, v in d.items()`, `for k in d: ... d[k]`) works under every
transformation (`transformer.container_loops` writes it out, one copy of the body per item).

Before, reverse mode refused such loops ("a tuple of differentiated values is passed on
whole"), jacfwd refused `.items()`, and vmap failed inside its own generated code
("list indices must be integers or slices, not tuple", "'dict_items' object is not
subscriptable"). Oracles: the plain Python run, central differences (second differences
of the gradient for `hessian`) and a loop over the examples."""
import gast
import numpy as np
import pytest

from transformer import TransformError, grad, hessian, jacfwd, jacrev, jit, vmap
from transformer.frontend import parse
from transformer.test_util import numerical_grad, numerical_jacobian

X = np.array([0.1, 0.25, 0.4])
BATCH = np.stack([X, 1.5 * X - 0.2, 0.3 - X])


def list_items(x):
    ws = [x * 1.0, x * 3.0, np.sin(x)]
    s = 0.0
    for w in ws:
        s = s + np.sum(w * x)
    return s


def tuple_literal(x):
    s = 0.0
    for c in (x, x * 2.0, np.cos(x)):
        s = s + np.sum(c * c)
    return s


def mixed_items(x):
    ws = [x * 1.0, np.ones(3)]                  # one item depends on x, one does not
    s = 0.0
    for w in ws:
        s = s + np.sum(w * x)
    return s


def enumerated(x):
    ws = [x * 2.0, np.cos(x), x ** 2]
    s = 0.0
    for i, w in enumerate(ws):
        s = s + (i + 1.0) * np.sum(w * x) + np.sum(ws[i])
    return s


def pairs(x):
    s = 0.0
    for a, b in [(x, 2.0), (np.sin(x), 3.0)]:
        s = s + b * np.sum(a * a)
    return s


def nested(x):
    ws = (x, x * 2.0)
    s = 0.0
    for a in ws:
        for b in ws:
            s = s + np.sum(a * b)
    return s


def last_item_after(x):
    ws = [x, np.exp(x)]
    for w in ws:  # noqa: B007 (its value after the loop is the point)
        pass
    return np.sum(w * x) + len(ws)


def scales(x):
    h = x
    for scale in [1.0, 2.0, 3.0]:
        h = np.tanh(h * scale)
    return np.sum(h)


def built_in_a_loop(x):
    s = 0.0
    for k in range(3):
        ws = [x * k, np.sin(x)]
        for w in ws:
            s = s + np.sum(w * w)
    return s


def dict_items(x):
    d = {"a": x * 2.0, "bb": np.sin(x)}
    s = 0.0
    for k, v in d.items():
        s = s + np.sum(v * v) * len(k)
    return s


def dict_values(x):
    d = {"a": x * 2.0, "b": np.sin(x)}
    s = 0.0
    for v in d.values():
        s = s + np.sum(v * v)
    return s


def dict_keys(x):
    d = {"a": x * 2.0, "bb": np.sin(x)}
    s = 0.0
    for k in d:
        s = s + np.sum(d[k]) * len(k)
    for k in d.keys():
        s = s + np.sum(d[k] ** 2)
    return s


PROGRAMS = [list_items, tuple_literal, mixed_items, enumerated, pairs, nested,
            last_item_after, scales, built_in_a_loop, dict_items, dict_values, dict_keys]
_ids = [f.__name__ for f in PROGRAMS]


@pytest.mark.every_case
@pytest.mark.parametrize("f", PROGRAMS, ids=_ids)
def test_grad(f):
    np.testing.assert_allclose(grad(f)(X), numerical_grad(f, (X,)), rtol=1e-6, atol=1e-9)


@pytest.mark.every_case
@pytest.mark.parametrize("f", PROGRAMS, ids=_ids)
def test_forward_and_reverse_jacobians(f):
    expected = numerical_grad(f, (X,))
    np.testing.assert_allclose(jacfwd(f)(X), expected, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(jacrev(f)(X), expected, rtol=1e-6, atol=1e-9)


@pytest.mark.every_case
@pytest.mark.parametrize("f", PROGRAMS, ids=_ids)
def test_vmap_and_vmap_grad(f):
    np.testing.assert_allclose(vmap(f)(BATCH), [f(row) for row in BATCH], rtol=1e-12)
    np.testing.assert_allclose(vmap(grad(f))(BATCH),
                               [numerical_grad(f, (row,)) for row in BATCH],
                               rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("f", PROGRAMS, ids=_ids)
def test_hessian(f):
    expected = numerical_jacobian(grad(f), X)
    np.testing.assert_allclose(hessian(f)(X), expected, rtol=1e-5, atol=1e-7)


@pytest.mark.slow
@pytest.mark.parametrize("f", [list_items, enumerated, dict_items], ids=lambda f: f.__name__)
def test_compiled(f):
    np.testing.assert_allclose(jit(grad(f))(X), numerical_grad(f, (X,)), rtol=1e-6,
                               atol=1e-9)
    np.testing.assert_allclose(jit(vmap(f))(BATCH), [f(row) for row in BATCH], rtol=1e-12)


def _loops(f) -> int:
    from transformer.desugar import python_forms
    return sum(isinstance(n, gast.For) and not isinstance(n.iter, gast.Call)
               or isinstance(n, gast.For) and getattr(n.iter.func, "id", "") != "range"
               for n in gast.walk(python_forms(parse(f)).node))


@pytest.mark.parametrize("f", [list_items, tuple_literal, enumerated, pairs, nested,
                               dict_items, dict_values, dict_keys],
                         ids=lambda f: f.__name__)
def test_the_loops_are_written_out(f):
    assert _loops(f) == 0


# --------------------------------------------------------------- loops left as they are

def appended_to(x):
    ws = [x * 1.0]
    ws.append(x * 2.0)              # its length is not the literal's
    s = 0.0
    for w in ws:
        s = s + np.sum(w)
    return s


def with_break(x):
    ws = [x, np.exp(x)]
    s = 0.0
    for w in ws:
        s = s + np.sum(w)
        if s > 100.0:
            break
    return s


def rebound(x):
    ws = [x, x * 2.0]
    ws = [x * 3.0]
    s = 0.0
    for w in ws:
        s = s + np.sum(w)
    return s


@pytest.mark.parametrize("f", [appended_to, with_break, rebound], ids=lambda f: f.__name__)
def test_loops_it_cannot_write_out_stay_loops(f):
    assert _loops(f) == 1
    np.testing.assert_allclose(vmap(f)(BATCH), [f(row) for row in BATCH], rtol=1e-12)


def test_a_loop_with_break_over_a_list_is_refused_at_the_loop_with_a_hint_that_works():
    with pytest.raises(TransformError) as info:
        grad(with_break)(X)
    message = str(info.value)
    assert "read at a run-time index" in message and "test_container_loops.py:" in message
    assert "np.stack(ws)" in message

    def stacked(x):                 # the hint's form
        ws = [x, np.exp(x)]
        s = 0.0
        for w in np.stack(ws):
            s = s + np.sum(w)
            if s > 100.0:
                break
        return s
    np.testing.assert_allclose(grad(stacked)(X), numerical_grad(with_break, (X,)),
                               rtol=1e-6)


def test_a_list_grown_by_append_is_refused_with_a_hint_that_works():
    def rows(x):
        h = np.zeros(3)
        hs = []
        for t in range(4):
            h = np.tanh(h + x * t)
            hs.append(h)
        return np.sum(np.stack(hs) ** 2)

    def preallocated(x):            # the hint's form
        h = np.zeros(3)
        hs = np.zeros((4,) + np.shape(h))
        for t in range(4):
            h = np.tanh(h + x * t)
            hs[t] = h
        return np.sum(hs ** 2)
    for transform in (grad, jacfwd):
        with pytest.raises(TransformError, match="hs = np.zeros") as info:
            transform(rows)(X)
        assert "hs.append(h)" in str(info.value)
    np.testing.assert_allclose(grad(preallocated)(X), numerical_grad(rows, (X,)), rtol=1e-6)
