"""Error flags: failed index checks carried out of code that cannot raise.

Two places drop an exception: a CUDA kernel, and a `prange` loop body, whose exception
Numba drops (`transformer.prange_checks`). In both, a check records its failure in a
flag that the caller reads afterwards.

A CUDA kernel cannot raise an exception, so its index checks (`transformer.cuda.checks`)
record a failure into a flag instead: a small int64 device array, `[site, index, axis,
size]`, -1 everywhere while nothing failed (`codegen.cuda.new_flag`; the launch
makes one per flagged kernel). The first failing thread claims the flag with
an atomic compare-and-swap on `flag[0]` and only then writes the other three entries, so
the record is one failure, never a mix of two
(`transformer.cuda.flag`: the device side). After the launch,
`index_checks.raise_flagged` reads the flag on the host and raises the `IndexError` the
cpu backend raises for that check, with the user's line and a caret.

A site is the user's `file:line:col` of the index, as a number (`site_number`): a stable
hash, so a kernel's text does not depend on the order in which sites were numbered in a
process, and the same location in a kernel and in a device function it calls is one
site. `site_number` remembers each location it numbered, for `where_of`.

On the cpu, a function that a `prange` body calls cannot see the loop's flag. The body
calls `Flagged(f)` instead: `f` compiled with one more parameter, the flag, into which
each of its checks records before raising (as the checks of the loop body do), and which
it passes on to the functions it calls in turn (`FLAG_PARAMETER` marks such a function
for `transformer.bounds`). The caller raises the recorded failure after the loop.
"""
from __future__ import annotations

import copy
import hashlib
import threading

import gast

from .function import Function, positional_parameters

__all__ = ["FLAG_PARAMETER", "Flagged", "site_number", "where_of"]

FLAG_PARAMETER = "secant_error_flag"    # FunctionDef attribute: the flag parameter's name

_sites: dict[int, str] = {}
_sites_lock = threading.Lock()


def site_number(where: str) -> int:
    """The flag's number for the check at `where` (`file:line:col`), always >= 0."""
    number = int(hashlib.sha256(where.encode()).hexdigest()[:15], 16)
    with _sites_lock:
        _sites[number] = where
    return number


def where_of(site: int) -> str | None:
    """The `file:line:col` that `site_number` numbered `site`, or None."""
    return _sites.get(site)


class Flagged:
    """The Function `fn` compiled to take an error flag as its last parameter and to
    record its failed checks in it."""

    def __init__(self, fn: Function):
        self.fn = fn
        self.__name__ = fn.name

    def __secant_function__(self) -> Function:
        # the caller binds every parameter positionally (bound_calls): the flag goes last
        fn = positional_parameters(self.fn)
        node = copy.copy(fn.node)
        node.args = copy.copy(node.args)
        flag = "index_error"
        taken = {a.id for a in node.args.args} | set(fn.env)
        while flag in taken:
            flag += "_"
        node.args.args = node.args.args + [gast.Name(id=flag, ctx=gast.Param(),
                                                     annotation=None, type_comment=None)]
        setattr(node, FLAG_PARAMETER, flag)
        return fn.replace(node=node)
