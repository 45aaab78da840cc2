"""`transformer.debug`: printing and host callbacks that run when the code runs.

    def f(x):
        debug.print("x = {x}, sum = {}", np.sum(x), x=x)
        return np.sum(np.sin(x))

As in JAX: called from plain Python they act at once. In code secant transforms they act
each time the *generated* code runs - under `jit` at run time with the run-time values
(through one `numba.objmode` transition per call), never while secant transforms;
under `grad` in the forward sweep only, once per call, with primal values; under `vmap`
once per example (vmap loops over the examples for them). The batch index is JAX's:
`vmap(f, axis_name="i")` and `debug.print("{i}: {x}", i=axis_index("i"), x=x)`.
`secant show` prints the generated source, where each call sits as written.
"""
from __future__ import annotations

import builtins
from typing import Any, Callable

__all__ = ["callback", "print"]


def print(fmt: str, *args: Any, ordered: bool = False,  # noqa: A001 - JAX's name
          **kwargs: Any) -> None:
    """Print `fmt.format(*args, **kwargs)` when the code runs (`str.format` syntax).
    `ordered` is accepted for JAX's signature: compiled code prints in program order."""
    builtins.print(fmt.format(*args, **kwargs))


def callback(fun: Callable[..., Any], *args: Any, ordered: bool = False,
             **kwargs: Any) -> None:
    """Call `fun(*args, **kwargs)` on the host when the code runs; its result is dropped.

    Under `jit`, `fun` runs in the interpreter with the run-time values (NumPy arrays and
    Python scalars); it must be a function defined outside the transformed code.
    `ordered` is accepted for JAX's signature (calls keep program order)."""
    fun(*args, **kwargs)
