"""One function per construct the fence refuses. Each refused line ends in `# refused`."""
# ruff: noqa
import contextlib

import numpy as np


def uses_yield(x):
    yield x  # refused


def uses_yield_from(x):
    yield from x  # refused


async def uses_async_def(x):  # refused
    return x


def uses_nested_async_def(x):
    async def inner(y):  # refused
        return y
    return x


def uses_try(x):
    try:  # refused
        y = 1.0 / x
    except ZeroDivisionError:
        y = 0.0
    return y


def uses_with(x):
    with contextlib.suppress(ValueError):  # refused
        x = x + 1
    return x


def uses_global(x):
    global COUNTER  # refused
    return x


def uses_nonlocal(x):
    def inner():
        nonlocal x  # refused
    return x


def uses_class(x):
    class Box:  # refused
        pass
    return x


def uses_del(x):
    y = x
    del y  # refused
    return x


def uses_import(x):
    import math  # refused
    return math.sin(x)


def uses_import_from(x):
    from math import sin  # refused
    return sin(x)


def uses_set_comp(x):
    return {v for v in x}  # refused


def uses_generator(x):
    values = (v for v in x)  # refused
    return sum(values)


def uses_walrus(x):
    if (y := x + 1) > 0:  # refused
        return y
    return x


def uses_set_literal(x):
    return {x, 1}  # refused


def uses_fstring(x):
    print(f"{x}")  # refused
    return x


def uses_match(x):
    match x:  # refused
        case 0:
            return 1
    return x


def uses_varargs(*xs):  # refused
    return xs


def uses_kwargs(x, **options):  # refused
    return x


def uses_double_star_call(x, options):
    return np.sum(x, **options)  # refused


def uses_for_else(x):
    for i in range(3):  # refused
        x = x + i
    else:
        x = -x
    return x


def uses_while_else(x):
    while x > 0:  # refused
        x = x - 1
    else:
        x = -x
    return x


async def uses_await(x):  # refused
    return await x
