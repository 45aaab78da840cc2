"""Source emission, modules on disk, compile backends and the secant CLI."""
