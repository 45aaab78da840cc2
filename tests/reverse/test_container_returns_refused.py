"""A helper returning a dict or a nested tuple is refused under grad at its return, with
a hint that works (one flat tuple), where the refusal named a missing adjoint rule."""
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


def flat(x):
    loss = np.sum(x ** 2)
    return loss, np.max(x)


@pytest.mark.parametrize("helper, message", [
    (with_a_dict, "a dict built in a differentiated function"),
    (with_a_nested_tuple, "a container nested in the returned tuple"),
], ids=["dict", "nested-tuple"])
def test_a_helper_returning_a_container_is_refused_at_its_return(helper, message):
    with pytest.raises(TransformError) as info:
        grad(lambda v: helper(v)[0])(np.array([1.0, 2.0]))
    assert message in info.value.message
    assert info.value.line.strip().startswith("return loss, ")
    assert "flat tuple" in info.value.hint


def test_the_flat_tuple_the_hint_names_is_differentiated():
    x = np.array([1.0, 2.0])
    np.testing.assert_allclose(grad(lambda v: flat(v)[0])(x), 2 * x)
