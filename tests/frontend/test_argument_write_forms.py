"""Which parameters a user function writes into, read from its source
(`aliases.written_params_of_source`): every form NumPy code writes an array in place with,
directly, through a name sharing the array, or through a user function it calls.

Oracle: Python itself. Each helper runs on fresh arrays; the parameters whose arrays
changed are the ones the source analysis must name, no more and no fewer.
"""
from __future__ import annotations

import numpy as np
import pytest

from transformer import grad, vmap
from transformer.aliases import written_params_of_source, writes_into_arguments
from transformer.frontend import parse


def fill_method(p, q):
    p.fill(0.5)
    return np.sum(q)


def sort_method(p, q):
    p.sort()
    return np.sum(q)


def put_method(p, q):
    p.put(0, 0.5)
    return np.sum(q)


def copyto(p, q):
    np.copyto(p, q)
    return 0.0


def out_keyword(p, q):
    np.add(q, 1.0, out=p)
    return 0.0


def ufunc_at(p, q):
    np.add.at(p, (0, 1), 2.0)
    return np.sum(q)


def numpy_put(p, q):
    np.put(p, 0, 0.5)
    return np.sum(q)


def putmask(p, q):
    np.putmask(p, p > 4.0, 0.5)
    return np.sum(q)


def fill_diagonal(p, q):
    np.fill_diagonal(p, 0.5)
    return np.sum(q)


def fill_through_a_row(p, q):
    row = p[1]
    row.fill(0.5)
    return np.sum(q)


def writes_the_real_part(p, q):
    re = p.real
    re[0] += 0.5
    return np.sum(q)


def scale_first(a, k):
    a *= k
    return 0.0


def calls_a_writer(p, q):
    scale_first(p, 3.0)
    return np.sum(q)


def calls_a_writer_by_keyword(p, q):
    scale_first(k=3.0, a=q)
    return np.sum(p)


def calls_a_writer_through_a_name(p, q):
    z = p
    calls_a_writer(z, q)
    return 0.0


def writes_a_copy(p, q):
    t = p.copy()
    t.fill(0.5)
    np.add(q, 1.0, out=t)
    return np.sum(t)


def sorts_a_new_array(p, q):
    return np.sum(np.sort(p) * q)


def counts_down(p, q):
    if q[0, 0] > 0.0:
        return counts_down(p, q - 1.0)
    return np.sum(p)


def calls_a_writer_on_a_temporary(p, q):
    scale_first(p * 1.0, 3.0)
    return np.sum(q)


HELPERS = [fill_method, sort_method, put_method, copyto, out_keyword, ufunc_at, numpy_put,
           putmask, fill_diagonal, fill_through_a_row, writes_the_real_part, calls_a_writer,
           calls_a_writer_by_keyword, calls_a_writer_through_a_name, writes_a_copy,
           sorts_a_new_array, counts_down, calls_a_writer_on_a_temporary]


def _changed_by_python(helper) -> list[str]:
    p = np.array([[3.0, 1.0, 2.0], [6.0, 5.0, 4.0], [9.0, 8.0, 7.0]])
    q = np.array([[1.5, 2.5, 3.5], [4.5, 5.5, 6.5], [7.5, 8.5, 9.5]])
    args = {"p": p, "q": q}
    before = {k: v.copy() for k, v in args.items()}
    helper(**args)
    return [k for k in args if not np.array_equal(args[k], before[k])]


@pytest.mark.every_case
@pytest.mark.parametrize("helper", HELPERS, ids=lambda h: h.__name__)
def test_the_parameters_read_as_written_are_those_python_writes(helper):
    changed = _changed_by_python(helper)
    assert written_params_of_source(parse(helper)) == changed
    assert writes_into_arguments(helper) == bool(changed)


def test_a_function_without_source_may_write_into_its_arguments():
    exec_scope: dict = {}
    exec("def doubles(v):\n    return v * 2.0\n", exec_scope)
    assert writes_into_arguments(exec_scope["doubles"])


def bumps_a_copy_through_its_real_part(x):
    q = x * 1.0
    z = q.real                # a view: `+=` writes q
    z += 1.0
    return np.sum(q * x)


def test_an_update_through_a_real_view_writes_the_array_it_views():
    xs = np.array([[0.3, 0.5], [0.6, 0.1]])
    np.testing.assert_allclose(vmap(bumps_a_copy_through_its_real_part)(xs),
                               [bumps_a_copy_through_its_real_part(x) for x in xs],
                               rtol=1e-14)
    with pytest.raises(ValueError, match="'q' shares its array with 'z'") as info:
        grad(bumps_a_copy_through_its_real_part)(xs[0])      # located, with a hint
    assert f"{__file__}:" in str(info.value) and "copy()" in str(info.value)
