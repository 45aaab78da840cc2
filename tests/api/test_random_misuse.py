"""A sampler called with arguments outside its contract raises at the user's line, in plain
NumPy (`transformer.random`: a TypeError/ValueError whose traceback holds the user's call)
and under jit (a TransformError at the user's file:line:col, not at the generated module),
with the same phrase where both sides refuse the same thing.

The contracts (transformer/random.py, transformer/runtime/random*.py): a key is an integer
array of shape (2,) (uint32 from PRNGKey/split); a shape is an int or a tuple of ints (plain
NumPy also takes any sequence of ints, e.g. a list; jit takes tuples only); a dtype is a
float type for uniform/normal (float32/float64 under jit), an integer type for randint, an
unsigned one for bits; `minval`/`maxval` broadcast to the shape (scalars under jit);
`fold_in` data is a scalar integer. Quick set: two refused compiles; the rest are slow.
"""
from __future__ import annotations

import inspect
import re

import numpy as np
import pytest

from transformer import TransformError, grad, jit, random, vmap

K = random.PRNGKey(3)


def float_shape(k):
    return random.normal(k, (2.5, 3))


def float_scalar_shape(k):
    return random.uniform(k, 4.0)


def float_array_as_key(k):
    return random.normal(k.astype(np.float64), (3,))


def keys_not_indexed(k):
    return random.normal(random.split(k, 3), (3,))


def list_shape(k):
    shape = [3, 2]
    return random.normal(k, shape)


def int_dtype_for_normal(k):
    return random.normal(k, (3,), np.int32)


def float_dtype_for_randint(k):
    return random.randint(k, (3,), 0, 5, np.float64)


def signed_dtype_for_bits(k):
    return random.bits(k, (3,), np.int32)


def uniform_bound_of_wrong_shape(k):
    return random.uniform(k, (3,), minval=np.zeros(2))


def randint_bound_of_wrong_shape(k):
    return random.randint(k, (3,), 0, np.full(2, 5))


def float_fold_in_data(k):
    return random.fold_in(k, 2.5)


def float_exponential_shape(k):
    return random.exponential(k, (1.5,))


# name -> (function, plain exception (None: plain NumPy accepts it), phrase in the plain
#          message, phrase in the jit message); the phrases are regular expressions
CASES = {
    "float in a shape tuple": (float_shape, TypeError, "shape must be an int or a tuple of ints",
                               "shape must be an int or a tuple of ints"),
    "float scalar shape": (float_scalar_shape, TypeError, "shape must be an int or a tuple",
                           "shape must be an int or a tuple"),
    "float array as key": (float_array_as_key, TypeError, "PRNG key", "PRNG key"),
    "split keys not indexed": (keys_not_indexed, TypeError, r"PRNG key of shape \(2,\)",
                               r"PRNG key \(a uint32 array of shape \(2,\)"),
    "shape in a list variable": (list_shape, None, None, r"write it as a tuple, e\.g\. \(3, 2\)"),
    "int dtype for normal": (int_dtype_for_normal, TypeError, "dtype, got int32",
                             "dtypes float32, float64; got int32"),
    "float dtype for randint": (float_dtype_for_randint, TypeError, "integer dtype, got float64",
                                "got float64"),
    "signed dtype for bits": (signed_dtype_for_bits, TypeError, "unsigned integer dtype",
                              "dtypes uint8, uint16, uint32, uint64; got int32"),
    "uniform bound of the wrong shape": (uniform_bound_of_wrong_shape, ValueError,
                                         "not broadcast-compatible", "scalar minval"),
    "randint bound of the wrong shape": (randint_bound_of_wrong_shape, ValueError,
                                         "not broadcast-compatible", "scalar maxval"),
    "float fold_in data": (float_fold_in_data, TypeError, "must be a scalar integer",
                           "data must be an integer"),
    "float exponential shape": (float_exponential_shape, TypeError, "shape must be an int",
                                "shape must be an int"),
}
QUICK = {"float in a shape tuple", "randint bound of the wrong shape"}


def call_line(fn) -> int:
    """The line of `fn`'s sampler call: the oracle for where the error must point."""
    lines, first = inspect.getsourcelines(fn)
    return first + next(i for i, text in enumerate(lines) if "random.normal(k" in text or
                       "return random." in text)


@pytest.mark.every_case      # plain NumPy: no compile
@pytest.mark.parametrize("case", sorted(CASES))
def test_plain_misuse_raises_with_the_users_call_in_the_traceback(case):
    fn, error, phrase, _ = CASES[case]
    if error is None:       # JAX takes any sequence of ints: so does plain NumPy
        np.testing.assert_array_equal(fn(K), random.normal(K, (3, 2)))
        return
    with pytest.raises(error, match=phrase) as info:
        fn(K)
    frames = [(str(entry.path), entry.lineno + 1) for entry in info.traceback]
    assert (__file__, call_line(fn)) in frames


@pytest.mark.parametrize("case", [pytest.param(c, marks=[] if c in QUICK else pytest.mark.slow)
                                  for c in sorted(CASES)])
def test_jit_misuse_is_a_transform_error_at_the_users_call(case):
    fn, _, _, phrase = CASES[case]
    with pytest.raises(TransformError, match=phrase) as info:
        jit(fn)(K)
    error = info.value
    assert (error.filename, error.lineno) == (__file__, call_line(fn)), str(error)
    assert error.line.strip().startswith("return random.") and "PRNGKey" in error.hint
    assert str(error).splitlines()[2].index("^") == 4 + error.line.index("random.")


def noise(k):
    return random.normal(k, 2.5)


def noisy(k, x):
    return x + noise(k)


@pytest.mark.slow
def test_jit_misuse_inside_a_helper_points_at_the_helpers_call():
    with pytest.raises(TransformError, match="shape must be an int or a tuple") as info:
        jit(noisy)(K, 1.0)
    assert (info.value.filename, info.value.lineno) == (__file__, call_line(noise))


def test_a_float_shape_is_refused_not_truncated_by_the_runtime_forms():
    from transformer.runtime import random as compiled
    with pytest.raises(TypeError, match=r"shape must be an int or a tuple of ints, got \(2\.5,"):
        compiled.normal(K, (2.5, 3))
    np.testing.assert_array_equal(compiled.normal(K, (np.int64(2), 3)),
                                  random.normal(K, (2, 3)))


def draw_with(k):
    return random.normal(k, (3,))


def test_a_key_of_the_wrong_length_is_refused_at_the_users_call():
    three = np.zeros(3, np.uint32)
    with pytest.raises(TypeError, match=r"PRNG key of shape \(2,\), got shape \(3,\)") as info:
        draw_with(three)
    assert (__file__, call_line(draw_with)) in [(str(e.path), e.lineno + 1)
                                                 for e in info.traceback]
    with pytest.raises(ValueError) as info:
        jit(draw_with)(three)
    where = f"{__file__}:{call_line(draw_with)}:12"
    first, line, caret = str(info.value).splitlines()
    assert first.startswith(f"{where}: random.normal: expected a raw PRNG key of shape (2,)")
    assert line.strip() == "return random.normal(k, (3,))" and caret.index("^") == 4 + 11
    np.testing.assert_array_equal(jit(draw_with)(K), random.normal(K, (3,)))


def loss_with_float_shape(w, k):
    return np.sum(w * random.normal(k, (2.5,)))


@pytest.mark.slow
def test_jit_of_grad_and_of_vmap_misuse_points_at_the_users_call():
    line = call_line(loss_with_float_shape)
    with pytest.raises(TransformError, match="shape must be an int or a tuple") as info:
        jit(grad(loss_with_float_shape))(np.ones(2), K)
    assert (info.value.filename, info.value.lineno) == (__file__, line)
    with pytest.raises(TransformError, match="shape must be an int or a tuple") as info:
        jit(vmap(loss_with_float_shape, in_axes=(None, 0)))(np.ones(2), random.split(K, 2))
    assert (info.value.filename, info.value.lineno) == (__file__, line)
    where = rf"^{re.escape(__file__)}:{call_line(draw_with)}:\d+: random\.normal"
    with pytest.raises(ValueError, match=where):
        jit(vmap(draw_with))(np.zeros((2, 3), np.uint32))
