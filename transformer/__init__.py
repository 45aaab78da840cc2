"""secant: source-to-source transformations of NumPy code."""
