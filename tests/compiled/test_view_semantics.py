"""Under jit, a reshape, squeeze or flip is a view of its argument exactly where NumPy's is,
and `flatten` is always a copy: a write through the result reaches the argument (and a
write to the argument shows in the result) as in NumPy. Each function below takes one
such result of seven layouts of `w` (C, transposed, strided columns, strided rows, a block
of columns, a block of rows, all columns as a slice), writes through it, and reads both;
the oracle is NumPy."""
import numpy as np
import pytest

from transformer import grad, jit, vmap

# `w[:, 0:6]` is contiguous, though Numba types it as not (layout 'A')
SOURCES = ("w", "w.T", "w[:, ::2]", "w[::2]", "w[:, 1:3]", "w[0:2]", "w[:, 0:6]")


def _program(form: str, write: str) -> str:
    """`def f(w)` applying `form` to each source `x` in turn, then `write`."""
    lines = ["def f(w):", "    total = 0.0"]
    for k, source in enumerate(SOURCES):
        lines += [f"    x = {source}", f"    y = {form}", f"    {write.format(k=k)}",
                  "    total += np.sum(w) + 1000.0 * np.sum(y)"]
    return "\n".join(lines + ["    return total"]) + "\n"


FORMS = {
    "reshape to its shape": "x.reshape(x.shape)",
    "reshape flat": "x.reshape(-1)",
    "reshape splitting an axis": "np.reshape(x, x.shape + (1,))",
    "reshape transposed": "x.reshape((x.shape[1], x.shape[0]))",
    "squeeze": "np.squeeze(x[:, :1], axis=1)",
    "flip": "np.flip(x, 0)",
    "flatten": "x.flatten()",
    "ravel": "x.ravel()",
}


def _compiled(tmp_path, name, form, write):
    path = tmp_path / f"views_{name.replace(' ', '_')}.py"
    path.write_text("import numpy as np\n\n\n" + _program(form, write))
    scope = {"__name__": path.stem}
    exec(compile(path.read_text(), str(path), "exec"), scope)
    return scope["f"]


def _first(y_ndim_form):
    return "y[" + ", ".join(["0"] * y_ndim_form) + "]"


@pytest.mark.parametrize("name", list(FORMS))
def test_a_write_through_the_result_reaches_the_argument_as_in_numpy(tmp_path, name):
    ndim = 1 if name in ("reshape flat", "squeeze", "flatten", "ravel") else \
        3 if name == "reshape splitting an axis" else 2
    f = _compiled(tmp_path, name, FORMS[name], _first(ndim) + " = 100.0 + {k}")
    w = np.arange(24.0).reshape(4, 6)
    assert jit(f)(w.copy()) == f(w.copy())
    batch = np.stack([w, 2.0 * w - 1.0])
    np.testing.assert_array_equal(jit(vmap(f))(batch.copy()), [f(b.copy()) for b in batch])


@pytest.mark.parametrize("name", ["reshape to its shape", "squeeze", "flip", "ravel"])
def test_a_write_to_the_argument_shows_in_the_result_as_in_numpy(tmp_path, name):
    f = _compiled(tmp_path, name + " source", FORMS[name], "w[0, 0] = -50.0 - {k}")
    w = np.arange(24.0).reshape(4, 6)
    assert jit(f)(w.copy()) == f(w.copy())


def strided_reshape_read(w):
    y = w[:, ::2].reshape(-1)           # a view with stride 2 elements
    return np.sum(y * y) + y[1] * w[0, 2]


def test_derivatives_through_a_strided_reshape_view():
    w = np.arange(8.0).reshape(2, 4) / 5.0
    want = 2.0 * np.where(np.arange(4) % 2 == 0, w, 0.0)
    want[0, 2] += 2.0 * w[0, 2]
    np.testing.assert_allclose(grad(strided_reshape_read)(w), want, rtol=1e-14)
    np.testing.assert_allclose(jit(grad(strided_reshape_read))(w), want, rtol=1e-14)


def test_a_reshape_that_does_not_fit_raises_numpys_error_under_jit():
    def f(w):
        return w[:, ::2].reshape(3, -1)
    with pytest.raises(ValueError):
        f(np.ones((2, 4)))
    with pytest.raises(ValueError):
        jit(f)(np.ones((2, 4)))
