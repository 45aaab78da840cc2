"""The messages of forward mode's refusals around in-place writes and methods, in the
user's words (see `spelling`)."""
from __future__ import annotations

from .errors import TransformError, copy_hint
from .spelling import spelled, user_names

METHOD_HINT = ("call the NumPy function instead (`np.repeat(v, 2)` for `v.repeat(2)`) where "
               "secant has a rule for it, wrap the call in a function with custom_jvp, or "
               "apply stop_gradient to the array")


def method_error(fn, stmt, method: str) -> TransformError:
    """A method of an array being differentiated with no tangent rule (`v.take(i)`)."""
    return fn.origin.error(stmt, f"no tangent rule for the method .{method}() of an array "
                           "being differentiated", METHOD_HINT)


def shared_view_error(fn, node, target: str, source: str) -> TransformError:
    """`target`, a view of `source` other than a name or an item, is written in place: its
    tangent cannot be the same view of the source's tangent."""
    names = user_names(fn)
    shown, of = spelled(fn, target, names), spelled(fn, source, names)
    if source == target:
        of = "its previous array"
    hint = copy_hint(target, source)
    if not shown.startswith("'"):           # a view the user wrote inline and wrote into
        hint = f"write into {of} itself at the same elements (`{source}[...] = ...`)" \
            if of.startswith("'") else f"make {of} its own array: `{of[1:-1]}.copy()`"
    return fn.origin.error(node, f"{shown} may be a view of {of} and is written in place: "
                           f"forward mode cannot make its tangent the same view of the "
                           f"tangent of {of}", hint)
