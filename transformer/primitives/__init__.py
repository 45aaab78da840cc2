"""The primitive registry: one description per NumPy/`math` function, read by every pass.

`registry` holds the records and the views the passes read; `families` the one-line
helpers that describe a whole class; `elementwise`, `binary` and `structural` the
registrations by family; `transformer.rules` the hand-written templates and batching rules.
`catalog` loads them all (`import transformer` does) and prints the table of primitives.
"""
