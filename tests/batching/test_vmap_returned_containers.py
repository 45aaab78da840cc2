"""vmap of a function returning a list or dict it wrote an item of after building it: the
result keeps the container (a list stays a list, as in JAX), each item stacked over the
examples. An item write once made the whole list one batch (`np.asarray` of the list per
example: the items of one example came back where the examples of one item belong, with no
error) and a dict a tuple that the write then failed on. Oracle: the per-example loop."""
import numpy as np
import pytest

from transformer import TransformError, jit, vmap

X = np.array([[0.3, -0.7, 1.1], [1.5, 0.2, -0.4]])
Y = np.array([2.0, 0.5, -1.0])


def list_item_written(x, y):
    out = [x * y, np.sin(x) * y[0], y]
    out[1] = np.cos(x) * y[1]
    return out


def list_item_written_at(x, y, k):
    out = [x * y, np.sin(x), y]
    out[k] = np.cos(x)
    return out


def dict_item_written(x, y):
    d = {"a": x * y, "b": np.sin(x)}
    d["a"] = np.cos(x) * y[1]
    return d


def local_dict_grown(x, y):
    cache = {}
    cache["a"] = np.sin(x)
    return cache["a"] * y


def dict_grown(x, y):
    out = {"loss": np.sum(x * y)}
    out["grad"] = np.cos(x)
    return out


def _per_example(f, *shared):
    return [f(x, *shared) for x in X]


@pytest.mark.parametrize("compiled", [False, True], ids=["python", "jit"])
@pytest.mark.parametrize("f, shared", [(list_item_written, (Y,)),
                                       (list_item_written_at, (Y, 2)),
                                       (dict_item_written, (Y,))],
                         ids=["list", "list-computed-index", "dict"])
def test_a_returned_container_written_by_item_keeps_its_structure(f, shared, compiled):
    mapped = vmap(f, in_axes=(0,) + (None,) * len(shared))
    got = (jit(mapped) if compiled else mapped)(X, *shared)
    examples = _per_example(f, *shared)
    assert type(got) is type(examples[0])
    keys = list(examples[0]) if isinstance(got, dict) else range(len(examples[0]))
    assert (list(got) == keys) if isinstance(got, dict) else (len(got) == len(keys))
    for k in keys:
        np.testing.assert_allclose(got[k], np.stack([e[k] for e in examples]))


def test_a_local_dict_given_a_new_key_is_batched_as_before():
    got = vmap(local_dict_grown, in_axes=(0, None))(X, Y)
    np.testing.assert_allclose(got, np.stack(_per_example(local_dict_grown, Y)))


def test_a_returned_dict_given_a_new_key_is_refused_at_the_users_line():
    with pytest.raises(TransformError, match="gets a key it was not built with") as info:
        vmap(dict_grown, in_axes=(0, None))(X, Y)
    assert "test_vmap_returned_containers.py" in str(info.value)
    assert "one literal with every key" in str(info.value)
