"""Which bindings a transformation read, and whether they still hold.

Parsing a function resolves its free names (globals, closure cells, builtins), reads
through modules (`cfg.SCALE`) and takes its defaults. A transformed function built from
those values is out of date once any of them is rebound. `Bindings` remembers each value
read, by identity, so that checking a whole call tree costs a few dict lookups and `is`
comparisons - no hashing of arrays. An array mutated in place keeps its identity: the
python backend reads it live anyway.

Builds run inside `recording(bindings)`; `frontend.parse` reports what it read to every
recording active on this thread, and a transformed function used inside another one's
build reports its own bindings the same way (`note`). What a build makes more than once
(a callee's parse) is made once per build by `once_per_build`, and made again if a
binding it read has been rebound meanwhile.
"""
from __future__ import annotations

import threading
from typing import Callable, Iterator, TypeVar

_MISSING = object()
_T = TypeVar("_T")


class Bindings:
    """Values read from namespaces, closure cells and defaults, compared by identity."""

    def __init__(self):
        self._names: dict = {}       # (id(namespace), name) -> (namespace, name, value)
        self._cells: dict = {}       # id(cell) -> (cell, value)
        self._defaults: dict = {}    # id(function) -> (function, __defaults__, kw items)

    def read_name(self, namespace: dict, name: str, value=_MISSING) -> None:
        """`namespace[name]` was `value` (`missing()` when the name was not there)."""
        self._names.setdefault((id(namespace), name), (namespace, name, value))

    def read_cell(self, cell, value) -> None:
        self._cells.setdefault(id(cell), (cell, value))

    def read_defaults(self, function) -> None:
        kw = function.__kwdefaults__          # the same dict until rebound
        self._defaults.setdefault(id(function), (function, function.__defaults__, kw,
                                                 tuple(kw.values()) if kw else ()))

    def extend(self, other: "Bindings") -> None:
        for mine, theirs in ((self._names, other._names), (self._cells, other._cells),
                             (self._defaults, other._defaults)):
            for key, entry in theirs.items():
                mine.setdefault(key, entry)

    def current(self) -> bool:
        """Whether every value read is still the one bound now."""
        for namespace, name, value in self._names.values():
            if namespace.get(name, _MISSING) is not value:
                return False
        for cell, value in self._cells.values():
            if cell_contents(cell) is not value:
                return False
        for function, defaults, kw, kw_values in self._defaults.values():
            if function.__defaults__ is not defaults or function.__kwdefaults__ is not kw:
                return False
            if kw and not _same_values(kw, kw_values):     # a value set in place
                return False
        return True

    def binding_of(self, value):
        """A function returning what now holds the global or closure cell that was read
        as `value` (by identity), or None when `value` was not read from one."""
        for namespace, name, read in list(self._names.values()):
            if read is value:
                return lambda: namespace.get(name, _MISSING)
        for cell, read in list(self._cells.values()):
            if read is value:
                return lambda: cell_contents(cell)
        return None

    def __len__(self) -> int:
        return len(self._names) + len(self._cells) + len(self._defaults)


def missing():
    """The marker `Bindings.read_name` records for a name that was not bound."""
    return _MISSING


def cell_contents(cell):
    """What closure `cell` holds, or `missing()` for an empty cell (assigned later)."""
    try:
        return cell.cell_contents
    except ValueError:
        return _MISSING


def _same_values(kw: dict, values: tuple) -> bool:
    return len(kw) == len(values) and all(a is b for a, b in zip(kw.values(), values))


# ---------------------------------------------------------------- recording builds

_active = threading.local()


class recording:
    """`with recording(bindings):` every `note` on this thread also goes to `bindings`."""

    def __init__(self, bindings: Bindings):
        self.bindings = bindings

    def __enter__(self) -> Bindings:
        stack = getattr(_active, "stack", None)
        if stack is None:
            stack = _active.stack = []
        if not stack:                   # the outermost recording: a build starts
            _active.made = {}
        stack.append(self.bindings)
        return self.bindings

    def __exit__(self, *exc) -> None:
        _active.stack.pop()
        if not _active.stack:
            _active.made = None


def note(bindings: Bindings) -> None:
    """Report `bindings` to every recording active on this thread."""
    for recorder in _recorders():
        if recorder is not bindings:
            recorder.extend(bindings)


def once_per_build(key: tuple, make: Callable[[], _T]) -> _T:
    """`make()`, made once in the build active on this thread (its outermost recording) for
    `key` - strings compared by value, other objects by identity - and made again if a
    binding it read has since been rebound; outside a build, made at each call. A value
    reused is reported to the recordings active now, as if it had been made again."""
    made = getattr(_active, "made", None)
    if made is None:
        return make()
    ids = tuple(k if isinstance(k, str) else id(k) for k in key)
    entry = made.get(ids)
    if entry is not None and entry[2].current():
        note(entry[2])
        return entry[1]
    read = Bindings()
    with recording(read):
        value = make()
    made[ids] = (key, value, read)      # the key's objects held: their ids stay theirs
    return value


def recording_active() -> bool:
    return bool(getattr(_active, "stack", None))


def _recorders() -> Iterator[Bindings]:
    return iter(getattr(_active, "stack", ()))
