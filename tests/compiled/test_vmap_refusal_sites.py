"""A Numba refusal of batched code is reported at the user's line. vmap rewrites the
statement (the axis moves past the batch axis, literal arguments are named), so the
generated line no longer reads as the user's, and the TransformError pointed at the
generated module. It now finds the user's line from the `# vmap of:` comment above the
refused statement, with the transformation's temporaries written back in (`y_times_y`),
or from the one call of the same function; also for a function defined inside another
and for a bound method."""
import inspect

import numpy as np
import pytest

from transformer import TransformError, generated_lines, jit, vmap


def two_nan_maxima(x):
    y = x * 2.0
    top = np.nanmax(y * y, axis=1, keepdims=True)
    low = np.nanmax(-y, axis=0)
    return top + low


def turned(x):
    return np.rot90(x, 1, (0, 1))        # Numba's np.rot90 takes no axes


@pytest.mark.parametrize("function, line, text", [
    (two_nan_maxima, 2, "unexpected keyword argument 'axis'"),
    (turned, 1, "too many positional arguments"),
])
def test_the_refusal_is_at_the_users_line(function, line, text):
    with pytest.raises(TransformError) as caught:
        jit(vmap(function))(np.ones((2, 3, 4)))
    first = inspect.getsourcelines(function)[1]
    assert (caught.value.filename, caught.value.lineno) == (__file__, first + line)
    assert text in str(caught.value)
    assert "generated module" in str(caught.value)      # the generated line, in the hint


def test_a_rewritten_statement_is_found_by_the_line_its_comment_quotes(tmp_path):
    user = tmp_path / "user_code.py"
    user.write_text("import numpy as np\n\n"
                    "def masks(x):\n"
                    "    y = x * 2.0\n"
                    "    return np.all(y > 0.1, axis=1)\n")
    generated = tmp_path / "generated.py"
    generated.write_text(f"# secant: generated from {user}:3 (masks)\n"
                         "import numba\n\n"
                         "def masks_vmap(x):\n"
                         "    # vmap of: y = x * 2.0\n"
                         "    y = x * 2.0\n"
                         "    # vmap of: return np.all(y > 0.1, axis=1)\n"
                         "    cond = y > 0.1\n"
                         "    all_cond = np.all(cond, axis=2)\n"
                         "    return all_cond\n")
    assert generated_lines.user_site(str(generated), 9) == (str(user), 5, 4)
    assert generated_lines.user_site(str(generated), 6) == (str(user), 4, 4)


def _inner_function():
    def turned_inside(x):
        return np.rot90(x, 1, (0, 1))
    return turned_inside


@pytest.mark.parametrize("transform", [jit, lambda f: jit(vmap(f))], ids=["jit", "vmap"])
def test_a_function_defined_in_another_is_refused_at_its_line(transform):
    # the generated module's header names it by its qualified name, `_inner_function.
    # <locals>.turned_inside`: the refusal was at the generated line before
    function = _inner_function()
    with pytest.raises(TransformError) as caught:
        transform(function)(np.ones((2, 3, 4)))
    first = inspect.getsourcelines(function)[1]
    assert (caught.value.filename, caught.value.lineno) == (__file__, first + 1)


class _Turner:
    def turned(self, x):
        return np.rot90(x, 1, (0, 1))


def test_a_bound_method_is_refused_at_its_line():
    # its generated module's header names it `_Turner.turned (partial)`
    method = _Turner().turned
    with pytest.raises(TransformError) as caught:
        jit(method)(np.ones((2, 3, 4)))
    first = inspect.getsourcelines(_Turner.turned)[1]
    assert (caught.value.filename, caught.value.lineno) == (__file__, first + 1)
