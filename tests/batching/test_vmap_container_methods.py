"""vmap of a method of a list or dict holding batched values (`d.get("a")`, `lst.pop()`)
and of a loop over a dict's view that the function also writes (`d["b"] = ...`, then `for
v in d.values()`). The analysis took a method's result for unbatched (it looked only at
the call's arguments, not its receiver): `vmap` returned one number for the whole batch,
broadcast, with no error. A loop over `d.values()` failed inside the generated code
("'dict_values' object is not subscriptable"). A list bound to lists of two lengths (`ws =
[a, b]`, later `ws = [c]`) was taken for one batched array (`ws.shape[1]`). Oracle: the
function run example by example."""
import numpy as np
import pytest

from transformer import TransformError, jit, vmap

BATCH = np.arange(6.0).reshape(2, 3)


def dict_get(x):
    d = {"a": x * 2.0}
    v = d.get("a")
    return np.sum(v)


def list_pop(x):
    lst = [x * 2.0, x]
    v = lst.pop()
    return np.sum(v)


def written_then_values(x):
    d = {"a": x * 2.0}
    d["b"] = x * 3.0
    s = 0.0
    for v in d.values():
        s = s + np.sum(v)
    return s


def written_then_items(x):
    d = {"a": x * 2.0}
    d["b"] = x * 3.0
    s = 0.0
    for k, v in d.items():
        s = s + np.sum(v) * len(k)
    return s


def rebound_to_another_length(x):
    ws = [x, x * 2.0]
    if x.shape[0] > 2:
        ws = [x * 3.0]
    s = 0.0
    for w in ws:
        s = s + np.sum(w)
    return s + len(ws)


PROGRAMS = [dict_get, list_pop, written_then_values, written_then_items,
            rebound_to_another_length]


@pytest.mark.every_case
@pytest.mark.parametrize("method", ["auto", "loop"])
@pytest.mark.parametrize("f", PROGRAMS, ids=lambda f: f.__name__)
def test_vmap_against_the_examples(f, method):
    expected = [f(row) for row in BATCH]
    assert len(set(expected)) == len(expected)          # a broadcast result would fail
    np.testing.assert_allclose(vmap(f, method=method)(BATCH), expected, rtol=1e-12)


@pytest.mark.slow
@pytest.mark.parametrize("f", [dict_get, written_then_values], ids=lambda f: f.__name__)
def test_jit_of_vmap(f):
    np.testing.assert_allclose(jit(vmap(f))(BATCH), [f(row) for row in BATCH], rtol=1e-12)


def returned_after_rebinding(x):
    ws = [x, x * 2.0]
    if x.shape[0] > 2:
        ws = [x * 3.0]
    return ws


def test_a_returned_list_bound_to_lists_of_two_lengths():
    out = vmap(returned_after_rebinding)(BATCH)
    assert len(out) == 1
    np.testing.assert_allclose(out[0], BATCH * 3.0, rtol=1e-12)
    # the loop cannot stack items it cannot count: a located refusal, not an array of
    # whole lists (batch axis first) as it gave before
    with pytest.raises(TransformError, match="different lengths") as info:
        vmap(returned_after_rebinding, method="loop")(BATCH)
    assert info.value.filename == __file__
