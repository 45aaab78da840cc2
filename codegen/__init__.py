"""Source emission, modules on disk, compile backends and the secant CLI.

This package sits below `transformer`: it takes module text and a namespace and gives back
a callable, and imports nothing from `transformer` (the CLI and demo entry points aside).
"""
