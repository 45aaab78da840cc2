"""Source emission, modules on disk, compile backends and the secant CLI."""

# transformer imports codegen.backends while it initializes; importing it first here makes
# `from codegen import backends` work as a program's first import too
import transformer  # noqa: E402,F401
