"""Test session setup: fast Numba compiles and a private secant cache directory.

Both must be in the environment before Numba is imported, which is why they are set at
import time of this file rather than in a fixture.
"""
import os
import tempfile

os.environ.setdefault("NUMBA_OPT", "0")
if not os.environ.get("SECANT_CACHE_DIR"):
    os.environ["SECANT_CACHE_DIR"] = tempfile.mkdtemp(prefix="secant-test-cache-")
