"""The hand-written rules of the primitive registry (`transformer.primitives`).

Families (one line registers a whole class of primitives) live in
``transformer.primitives``; hand-written templates live in ``adjoints.py`` and
``tangents.py``; batching rules in ``batching.py``; ``lowering.py`` answers which NumPy
call forms Numba lacks. Every rule is stored in the primitive's registry record.
"""
