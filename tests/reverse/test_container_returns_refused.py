"""A helper returning a dict or a nested tuple whose result is used whole (handed on to
another function, which `transformer.helper_returns` does not follow) is refused under
grad at its return, with a hint that works (one flat tuple), where the refusal named a
missing adjoint rule. Read by constant keys, it is differentiated
(tests/api/test_helper_returns.py)."""
from __future__ import annotations

import numpy as np
import pytest

from transformer import TransformError, grad


def with_a_dict(x):
    loss = np.sum(x ** 2)
    return loss, {"loss": loss}


def with_a_nested_tuple(x):
    loss = np.sum(x ** 2)
    return loss, (loss, np.max(x))


def first(result):
    return result[0]


def flat(x):
    loss = np.sum(x ** 2)
    return loss, np.max(x)


@pytest.mark.parametrize("helper, message", [
    (with_a_dict, "a dict built in a differentiated function"),
    (with_a_nested_tuple, "a container nested in the returned tuple"),
], ids=["dict", "nested-tuple"])
def test_a_helper_returning_a_container_is_refused_at_its_return(helper, message):
    with pytest.raises(TransformError) as info:
        grad(lambda v: first(helper(v)))(np.array([1.0, 2.0]))
    assert message in info.value.message
    assert info.value.line.strip().startswith("return loss, ")
    assert "instead of handing it on whole" in info.value.hint


@pytest.mark.parametrize("helper", [with_a_dict, with_a_nested_tuple, flat])
def test_the_reads_the_hint_names_are_differentiated(helper):
    def unpacked(v):
        loss, _ = helper(v)
        return loss

    x = np.array([1.0, 2.0])
    np.testing.assert_allclose(grad(lambda v: helper(v)[0])(x), 2 * x)
    np.testing.assert_allclose(grad(unpacked)(x), 2 * x)
