"""How every example reports what it checked: the value, the reference it is compared
with, the largest difference and the tolerance - and a non-zero exit when it fails.

    from checks import check
    check("forces vs finite differences", forces, reference, rtol=1e-6)

A failed check prints `FAILED: ...` on stderr and exits with status 1 at once, so a
script that ends normally has passed every check it printed.
"""
from __future__ import annotations

import sys

import numpy as np


def describe(value) -> str:
    """A number as itself; an array by its shape and largest magnitude."""
    array = np.asarray(value)
    if array.size == 1:
        return f"{array.item():.8g}"
    if array.size == 0:
        return f"empty array{array.shape}"
    if array.size <= 4:
        return np.array2string(array.ravel(), precision=8, separator=", ")
    return f"array{array.shape} (max |x| {np.max(np.abs(array)):.4g})"


def check(what: str, got, expected, rtol: float = 0.0, atol: float = 0.0) -> None:
    """Compare `got` with `expected` elementwise (|got - expected| <= atol + rtol
    |expected|, shapes equal); print the comparison; exit 1 if it fails."""
    got, expected = np.asarray(got), np.asarray(expected)
    if got.shape != expected.shape:
        sys.exit(f"FAILED: {what}: shape {got.shape}, expected {expected.shape}")
    difference = np.abs(got.astype(np.float64) - expected.astype(np.float64))
    largest = float(np.max(difference)) if difference.size else 0.0
    passed = bool(np.all(difference <= atol + rtol * np.abs(expected.astype(np.float64))))
    line = (f"{what}: {describe(got)} vs {describe(expected)}, max difference {largest:.2e} "
            f"(tolerance rtol {rtol:g}, atol {atol:g})")
    if not passed:
        sys.exit(f"FAILED: {line}")
    print(f"check ok: {line}")


def check_true(what: str, condition: bool, detail: str) -> None:
    """A check that is not a numeric comparison (a dtype, a count); `detail` says what
    was compared."""
    if not condition:
        sys.exit(f"FAILED: {what}: {detail}")
    print(f"check ok: {what}: {detail}")
