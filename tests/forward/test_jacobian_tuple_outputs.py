"""jacfwd / jacrev of functions returning a tuple: JAX's structure, one Jacobian per output
(output-major with a tuple argnums), on the batched path and the loop path (a function
writing into its argument), under jit, with has_aux and pytree arguments; of functions
returning a dict, a dict of Jacobians; checked against central differences, and against
JAX where it is installed."""
import collections

import numpy as np
import pytest

from transformer import TransformError, hessian, jacfwd, jacrev, jit
from transformer.test_util import numerical_jacobian

try:
    import jax
    import jax.numpy as jnp
    jax.config.update("jax_enable_x64", True)
except ImportError:                                     # pragma: no cover
    jax = None
needs_jax = pytest.mark.skipif(jax is None, reason="JAX is not installed")

JACS = {"fwd": jacfwd, "rev": jacrev}


def two(x):
    return np.sin(x), np.cos(x) * 2


def two_written(x):
    x[0] = x[0] * 1.0                 # a write into the argument: the loop path
    return np.sin(x), np.cos(x) * 2


def three(x, y):
    return x * y, np.sum(x ** 2) * y[0], np.tanh(x)[1]


def three_written(x, y):
    x[0] = x[0] * 1.0
    return x * y, np.sum(x ** 2) * y[0], np.tanh(x)[1]


def one(x):
    return (np.sin(x) * x,)


def one_written(x):
    x[0] = x[0] * 1.0
    return (np.sin(x) * x,)


def with_aux(x):
    return (np.sin(x), np.cos(x)[0]), np.sum(x)


def with_aux_written(x):
    x[0] = x[0] * 1.0
    return (np.sin(x), np.cos(x)[0]), np.sum(x)


def quadratic(A, x):
    return (A @ x) @ x


def _numerical(f, args, out_index, arg_index):
    """Central differences of output `out_index` of `f` in argument `arg_index`."""
    def part(v):
        args_v = [np.array(a, dtype=float) for a in args]
        args_v[arg_index] = v
        return f(*args_v)[out_index]
    return numerical_jacobian(part, np.array(args[arg_index], dtype=float))


def _args(n):
    rng = np.random.default_rng(n)
    return rng.normal(size=3) + 0.5, rng.normal(size=3) + 0.5


@pytest.mark.parametrize("mode", ["fwd", "rev"])
@pytest.mark.parametrize("f", [two, two_written])
def test_int_argnums_gives_the_tuple_of_the_outputs_jacobians(mode, f):
    x = _args(0)[0]
    J = JACS[mode](f)(x.copy())
    assert isinstance(J, tuple) and len(J) == 2
    for i in range(2):
        np.testing.assert_allclose(J[i], _numerical(f, [x], i, 0), atol=1e-7)


@pytest.mark.parametrize("mode", ["fwd", "rev"])
@pytest.mark.parametrize("f", [three, three_written])
def test_tuple_argnums_nests_output_major(mode, f):
    x, y = _args(1)
    J = JACS[mode](f, argnums=(0, 1))(x.copy(), y.copy())
    assert len(J) == 3 and all(len(row) == 2 for row in J)
    for i in range(3):
        for j in range(2):
            np.testing.assert_allclose(J[i][j], _numerical(f, [x, y], i, j), atol=1e-7)


@pytest.mark.parametrize("mode", ["fwd", "rev"])
@pytest.mark.parametrize("f", [one, one_written])
def test_a_one_element_tuple_output(mode, f):
    x = _args(2)[0]
    J = JACS[mode](f)(x.copy())
    assert isinstance(J, tuple) and len(J) == 1
    np.testing.assert_allclose(J[0], _numerical(f, [x], 0, 0), atol=1e-7)


@pytest.mark.parametrize("f", [with_aux, with_aux_written])
def test_has_aux_with_a_tuple_output(f):
    x = _args(3)[0]
    J, aux = jacfwd(f, has_aux=True)(x.copy())
    np.testing.assert_allclose(aux, np.sum(x))
    for i in range(2):
        np.testing.assert_allclose(J[i], _numerical(lambda v: f(v)[0], [x], i, 0), atol=1e-7)


def test_jacrev_has_aux_with_a_tuple_output_is_refused_with_a_hint_that_works():
    x = _args(3)[0]
    with pytest.raises(TransformError, match="each output") as info:
        jacrev(with_aux, has_aux=True)(x)
    assert "test_jacobian_tuple_outputs.py" in str(info.value)
    J, aux = jacrev(lambda v: (with_aux(v)[0][0], with_aux(v)[1]), has_aux=True)(x)
    np.testing.assert_allclose(J, np.diag(np.cos(x)), atol=1e-12)
    np.testing.assert_allclose(aux, np.sum(x))


@pytest.mark.slow
def test_jacfwd_of_jacrev_in_a_tuple_argnums_is_the_hessian():
    A, x = np.eye(3) + 0.1, np.arange(3.0)
    H = jacfwd(jacrev(quadratic, argnums=(0, 1)), argnums=(0, 1))(A, x)
    expected = hessian(quadratic, argnums=(0, 1))(A, x)
    # independent: d2/dA dx of x^T A x is the symmetric product, d2/dx2 = A + A^T
    np.testing.assert_allclose(H[1][1], A + A.T)
    np.testing.assert_allclose(H[0][0], np.zeros((3, 3, 3, 3)))
    for i in range(2):
        for j in range(2):
            np.testing.assert_allclose(H[i][j], expected[i][j], atol=1e-12)
    grad_x = lambda A_: jacrev(quadratic, argnums=1)(A_, x)           # noqa: E731
    np.testing.assert_allclose(H[1][0], numerical_jacobian(grad_x, A), atol=1e-6)


def nested(x):
    return np.sin(x), (np.cos(x) * 2, x[0] * x)


def nested_written(x):
    x[0] = x[0] * 1.0
    return np.sin(x), (np.cos(x) * 2, x[0] * x)


@pytest.mark.parametrize("nested", [nested, nested_written])
def test_nested_tuple_output_forward(nested):
    x = _args(4)[0]
    J = jacfwd(nested)(x.copy())
    assert isinstance(J[1], tuple) and len(J[1]) == 2
    np.testing.assert_allclose(J[0], _numerical(nested, [x], 0, 0), atol=1e-7)
    for i in range(2):
        np.testing.assert_allclose(J[1][i], _numerical(lambda v: nested(v)[1], [x], i, 0),
                                   atol=1e-7)


def as_dict(x, y):
    return {"s": np.sin(x) * y, "t": np.sum(x ** 2) * y[0]}


def as_dict_written(x, y):
    x[0] = x[0] * 1.0                 # the loop path
    return {"s": np.sin(x) * y, "t": np.sum(x ** 2) * y[0]}


def as_dict_branches(x, y):
    if x[0] > 0:
        return {"t": x[1] * y, "s": np.sin(x)}     # the keys in another order
    return {"s": np.cos(x), "t": x * y}


@pytest.mark.parametrize("mode", ["fwd", "rev"])
@pytest.mark.parametrize("f", [as_dict, as_dict_written, as_dict_branches])
@pytest.mark.parametrize("compiled", [False, True], ids=["python", "jit"])
def test_a_returned_dict_gives_a_dict_of_the_outputs_jacobians(mode, f, compiled):
    x, y = _args(5)
    for sign in (1.0, -1.0):
        xs = sign * x
        jac = JACS[mode](f, argnums=(0, 1))
        J = (jit(jac) if compiled else jac)(xs.copy(), y.copy())
        assert isinstance(J, dict) and set(J) == {"s", "t"}
        for key in ("s", "t"):
            assert isinstance(J[key], tuple) and len(J[key]) == 2
            for j in range(2):
                def part(v, key=key, j=j, xs=xs):
                    args = [xs.copy(), y.copy()]
                    args[j] = v
                    return f(*args)[key]
                np.testing.assert_allclose(J[key][j], numerical_jacobian(part, [xs, y][j]),
                                           atol=1e-7)


@pytest.mark.parametrize("mode", ["fwd", "rev"])
def test_a_returned_namedtuple_the_loop_path_cannot_build_is_refused_located(mode):
    def as_pair(x):
        x[0] = x[0] * 1.0
        return Pair(np.sin(x), x)
    with pytest.raises(TransformError, match="jac" + mode + "|tangent rule") as info:
        JACS[mode](as_pair)(_args(5)[0])
    assert "test_jacobian_tuple_outputs.py" in str(info.value)


Pair = collections.namedtuple("Pair", "a b")


def test_returns_of_different_structures_are_refused_located():
    def mixed(x):
        if x[0] > 0:
            return np.sin(x), x
        return np.sin(x)
    with pytest.raises(TransformError, match="jacrev of mixed") as info:
        jacrev(mixed)(_args(6)[0])
    assert "test_jacobian_tuple_outputs.py" in str(info.value)


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["fwd", "rev"])
@pytest.mark.parametrize("f", [three, three_written])
def test_under_jit(mode, f):
    x, y = _args(7)
    J = jit(JACS[mode](f, argnums=(0, 1)))(x.copy(), y.copy())
    for i in range(3):
        for j in range(2):
            np.testing.assert_allclose(J[i][j], _numerical(f, [x, y], i, j), atol=1e-7)


@pytest.mark.parametrize("mode", ["fwd", "rev"])
def test_pytree_argument(mode):
    def f(p, x):
        return p["w"] * x, np.sum(p["b"] * x)
    p, x = {"w": np.array([1.0, 2.0, 3.0]), "b": np.array([0.5, -1.0, 2.0])}, _args(8)[0]
    J = JACS[mode](f)(p, x)
    assert isinstance(J, tuple) and set(J[0]) == {"w", "b"}
    np.testing.assert_allclose(J[0]["w"], np.diag(x))
    np.testing.assert_allclose(J[0]["b"], np.zeros((3, 3)))
    np.testing.assert_allclose(J[1]["w"], np.zeros(3))
    np.testing.assert_allclose(J[1]["b"], x)


@pytest.mark.slow
def _same_as_jax(ours, theirs):
    assert jax.tree_util.tree_structure(ours) == jax.tree_util.tree_structure(theirs)
    for a, b in zip(jax.tree_util.tree_leaves(ours), jax.tree_util.tree_leaves(theirs)):
        np.testing.assert_allclose(a, b, atol=1e-12)


@needs_jax
@pytest.mark.parametrize("mode", ["fwd", "rev"])
def test_matches_jax(mode):
    x, y = _args(9)
    jax_f = lambda a, b: (a * b, jnp.sum(a ** 2) * b[0], jnp.tanh(a)[1])    # noqa: E731
    jax_jac = {"fwd": jax.jacfwd, "rev": jax.jacrev}[mode]
    for argnums in (0, (0, 1), (1,)):
        ours = JACS[mode](three, argnums=argnums)(x, y)
        theirs = jax_jac(jax_f, argnums=argnums)(x, y)
        _same_as_jax(ours, theirs)
    jax_dict = lambda a, b: {"s": jnp.sin(a) * b, "t": jnp.sum(a ** 2) * b[0]}  # noqa: E731
    for argnums in (0, (0, 1)):
        ours = JACS[mode](as_dict, argnums=argnums)(x, y)
        theirs = jax_jac(jax_dict, argnums=argnums)(x, y)
        _same_as_jax(ours, theirs)
    A = np.eye(3) + 0.1
    ours = jacfwd(jacrev(quadratic, argnums=(0, 1)), argnums=(0, 1))(A, x)
    theirs = jax.hessian(lambda A_, x_: (A_ @ x_) @ x_, argnums=(0, 1))(A, x)
    _same_as_jax(ours, theirs)


def named(x):
    t = np.sin(x), np.cos(x)
    return t


def named_written(x):
    x[0] = x[0] * 1.0
    t = np.sin(x), np.cos(x)
    return t


@pytest.mark.parametrize("mode", ["fwd", "rev"])
@pytest.mark.parametrize("f", [named, named_written])
def test_a_tuple_bound_to_a_name_then_returned(mode, f):
    x = _args(10)[0]
    J = JACS[mode](f)(x.copy())
    assert isinstance(J, tuple) and len(J) == 2
    for i in range(2):
        np.testing.assert_allclose(J[i], _numerical(f, [x], i, 0), atol=1e-7)


@pytest.mark.parametrize("mode", ["fwd", "rev"])
def test_a_tuple_of_structure_unknown_when_transforming_is_refused_with_a_hint(mode):
    def chosen(x):
        x[0] = x[0] * 1.0
        t = (np.sin(x), x) if x[0] > 0 else (x, np.sin(x))
        return t
    with pytest.raises(TransformError, match="not known when") as info:
        JACS[mode](chosen)(_args(11)[0])
    assert "each output's Jacobian" in str(info.value)


# ---------------------------------------------------------------- list outputs stay lists

def listed(x, y):
    return [x * y, np.sum(x ** 2) * y[0], np.outer(np.tanh(x), y)]


def listed_by_name(x, y):
    out = [x * y, np.sin(x) * y[0]]
    out[1] = np.cos(x) * y[1]              # an item write keeps the list's length
    return out


@pytest.mark.parametrize("compiled", [False, True], ids=["python", "jit"])
@pytest.mark.parametrize("f, mode", [(listed, "fwd"), (listed, "rev"), (listed_by_name, "fwd")])
def test_a_list_output_gives_a_list_of_jacobians(f, mode, compiled):
    # (reverse mode refuses the item write of listed_by_name, located: a test of its own)
    x, y = _args(12)
    jac = JACS[mode](f, argnums=(0, 1))
    J = (jit(jac) if compiled else jac)(x.copy(), y.copy())
    count = len(f(x, y))
    assert isinstance(J, list) and len(J) == count      # JAX keeps the output's list
    for i in range(count):
        assert isinstance(J[i], tuple)
        for j in range(2):
            np.testing.assert_allclose(J[i][j], _numerical(f, [x, y], i, j), atol=1e-7)


def test_vmap_of_a_list_output_gives_a_list_under_each_strategy():
    from transformer import vmap
    X, Y = np.arange(6.0).reshape(2, 3), np.arange(6.0).reshape(2, 3) * 0.5
    expected = [np.stack(parts) for parts in zip(*(listed(x, y) for x, y in zip(X, Y)))]
    for mapped in (vmap(listed), vmap(listed, method="loop"), jit(vmap(listed))):
        got = mapped(X, Y)
        assert isinstance(got, list) and len(got) == 3
        for a, b in zip(got, expected):
            np.testing.assert_allclose(a, b)


KEY = "s"


def keyed_by_a_name(x):
    return np.sin(x), {KEY: x * 2.0}


@pytest.mark.parametrize("mode", ["fwd", "rev"])
def test_a_returned_dict_keyed_by_a_name_is_refused_located(mode):
    # its structure is not known when transforming: its values would be taken for arrays
    with pytest.raises(TransformError, match=f"jac{mode} of keyed_by_a_name") as info:
        JACS[mode](keyed_by_a_name)(_args(11)[0])
    assert "test_jacobian_tuple_outputs.py" in str(info.value)
    assert "constant keys and no `*`" in str(info.value)


def written_out_nested(x):                # the forms the hint asks for
    return np.sin(x), {"s": x * 2.0}


def written_out_flat(x):
    return {"c": np.sin(x), "s": x * 2.0}


@pytest.mark.parametrize("mode", ["fwd", "rev"])
def test_the_hint_for_a_dict_keyed_by_a_name_works(mode):
    x = _args(11)[0]
    J = JACS[mode](written_out_flat)(x)
    np.testing.assert_allclose(J["c"], np.diag(np.cos(x)), atol=1e-12)
    np.testing.assert_allclose(J["s"], 2.0 * np.eye(3), atol=1e-12)
    J = JACS[mode](written_out_nested)(x)
    np.testing.assert_allclose(J[0], np.diag(np.cos(x)), atol=1e-12)
    np.testing.assert_allclose(J[1]["s"], 2.0 * np.eye(3), atol=1e-12)


def dict_with_aux(x, y):
    return {"p": x * y, "q": np.sin(x)}, np.sum(x)


def list_with_dict_aux(x, y):
    return [x * y, np.sin(x)], {"s": np.sum(x), "l": [x]}


@pytest.mark.parametrize("compiled", [False, True], ids=["python", "jit"])
def test_jacfwd_with_aux_of_a_dict_output(compiled):
    x, y = _args(12)
    jac = jacfwd(dict_with_aux, has_aux=True)
    J, aux = (jit(jac) if compiled else jac)(x, y)
    assert set(J) == {"p", "q"} and aux == pytest.approx(np.sum(x))
    np.testing.assert_allclose(J["p"], np.diag(y), atol=1e-12)
    np.testing.assert_allclose(J["q"], np.diag(np.cos(x)), atol=1e-12)


def test_jacfwd_with_a_list_output_and_a_dict_aux():
    x, y = _args(13)
    J, aux = jacfwd(list_with_dict_aux, has_aux=True)(x, y)
    assert isinstance(J, list) and set(aux) == {"s", "l"}
    np.testing.assert_allclose(J[0], np.diag(y), atol=1e-12)
    np.testing.assert_allclose(aux["l"][0], x)


def test_jacrev_with_aux_of_a_dict_output_is_refused_with_a_hint_that_works():
    x, y = _args(14)
    with pytest.raises(TransformError, match="beside an aux") as info:
        jacrev(dict_with_aux, has_aux=True)(x, y)
    hint = str(info.value).split("hint: ")[1]
    assert "dict_with_aux(x, y)[0]['p']" in hint
    J, aux = jacrev(lambda x, y: (dict_with_aux(x, y)[0]['p'], dict_with_aux(x, y)[1]),
                    has_aux=True)(x, y)
    np.testing.assert_allclose(J, np.diag(y), atol=1e-12)


def test_a_compiled_result_numba_cannot_return_is_refused_at_the_def():
    # jacfwd's aux reaches the compiled code's return whole: a dict of a float and a list
    x, y = _args(15)
    with pytest.raises(TransformError, match="cannot hand back to Python") as info:
        jit(jacfwd(list_with_dict_aux, has_aux=True))(x, y)
    assert "test_jacobian_tuple_outputs.py" in str(info.value)
    assert "def list_with_dict_aux" in str(info.value)

    def as_tuple(x, y):                   # the form the hint asks for
        return [x * y, np.sin(x)], (np.sum(x), [x])
    J, aux = jit(jacfwd(as_tuple, has_aux=True))(x, y)
    np.testing.assert_allclose(J[1], np.diag(np.cos(x)), atol=1e-12)
    assert aux[0] == pytest.approx(np.sum(x))


def nested_out(x, y):
    return x * y, (np.sin(x), {"r": [y * 2.0], "q": np.sum(x * y)})


def nested_out_written(x, y):
    x[0] = x[0] * 1.0                 # the loop path
    return x * y, (np.sin(x), {"r": [y * 2.0], "q": np.sum(x * y)})


def _leaves(value):
    """The leaves of nested tuples, lists and dicts (a dict's in sorted key order)."""
    if isinstance(value, dict):
        return [leaf for key in sorted(value) for leaf in _leaves(value[key])]
    if isinstance(value, (tuple, list)):
        return [leaf for item in value for leaf in _leaves(item)]
    return [value]


@pytest.mark.parametrize("mode", ["fwd", "rev"])
@pytest.mark.parametrize("f", [nested_out, nested_out_written])
@pytest.mark.parametrize("compiled", [False, True], ids=["python", "jit"])
def test_nested_outputs_give_jacobians_nested_alike(mode, f, compiled):
    x, y = _args(16)
    jac = JACS[mode](f, argnums=(0, 1))
    J = (jit(jac) if compiled else jac)(x.copy(), y.copy())
    assert isinstance(J, tuple) and isinstance(J[1], tuple) and isinstance(J[1][1], dict)
    assert isinstance(J[1][1]["r"], list)
    leaves = _leaves(J)
    outputs = len(_leaves(f(x.copy(), y.copy())))
    assert len(leaves) == 2 * outputs
    for i in range(outputs):
        for j in range(2):
            def part(v, i=i, j=j):
                args = [x.copy(), y.copy()]
                args[j] = v
                return _leaves(f(*args))[i]
            np.testing.assert_allclose(leaves[2 * i + j], numerical_jacobian(part, [x, y][j]),
                                       atol=1e-7)


@needs_jax
@pytest.mark.parametrize("mode", ["fwd", "rev"])
def test_nested_outputs_match_jax_structure(mode):
    x, y = _args(17)
    jax_f = lambda a, b: (a * b, (jnp.sin(a), {"r": [b * 2.0], "q": jnp.sum(a * b)}))  # noqa
    jax_jac = {"fwd": jax.jacfwd, "rev": jax.jacrev}[mode]
    for argnums in (0, (0, 1)):
        ours = JACS[mode](nested_out, argnums=argnums)(x, y)
        theirs = jax_jac(jax_f, argnums=argnums)(x, y)
        _same_as_jax(ours, theirs)
