"""Record known answers of jax.random's samplers into jax_random_samplers.json.

Run from the repository root with JAX installed (the tests read the file and need no JAX):

    python tests/data/record_jax_samplers.py

Each case is a call written once, as text, and evaluated against ``jax.random`` here and
against ``transformer.random`` in tests/api/test_random_samplers.py (the two share names
and signatures).  ``exact`` cases must agree bit for bit; the others (float32 rejection
samplers, where XLA refines the CPU's approximate rsqrt; LAPACK factorizations) to
``rtol`` relative to the largest magnitude in the answer.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parent / "jax_random_samplers.json"
RTOL = 1e-6

LOGITS = "np.array([[0.5, -1.0, 2.0, 0.0, 1.0], [3.0, 0.1, -2.0, 0.2, 0.3], [0.0] * 5])"
ALPHAS = "np.array([0.01, 0.3, 0.9, 1.0, 1.7, 5.0, 60.0])"
LAMS = "np.array([0.0, 0.5, 3.0, 9.9, 10.0, 25.0, 300.0, 1e4])"
TINY = "np.array([0.001, 0.002, 0.003, 0.004, 0.005, 0.006, 0.008, 0.01])"
P = "np.array([0.1, 0.2, 0.3, 0.15, 0.25])"
COV = "np.array([[2.0, 0.3, 0.1], [0.3, 1.0, -0.2], [0.1, -0.2, 0.5]])"

# (call, exact)
CASES = [
    ("bits(PRNGKey(7), (3,))", True),
    ("exponential(PRNGKey(7), (6,))", True),
    ("exponential(PRNGKey(3), (2, 3), np.float32)", True),
    ("exponential(PRNGKey(3), (5,), np.float16)", True),
    ("laplace(PRNGKey(7), (6,))", True),
    ("laplace(PRNGKey(3), (5,), np.float32)", True),
    ("logistic(PRNGKey(7), (6,))", True),
    ("logistic(PRNGKey(3), (5,), np.float32)", True),
    ("logistic(PRNGKey(5), (40,), np.float16)", True),
    ("gumbel(PRNGKey(7), (6,))", True),
    ("gumbel(PRNGKey(3), (5,), np.float32)", True),
    ("gumbel(PRNGKey(5), (40,), np.float16)", True),
    ("gumbel(PRNGKey(7), (5,), mode='high')", True),
    ("gumbel(PRNGKey(7), (4,), np.float16, mode='high')", True),
    ("gumbel(PRNGKey(7), (6,), np.float32, mode='highest')", True),
    (f"categorical(PRNGKey(7), {LOGITS})", True),
    (f"categorical(PRNGKey(7), {LOGITS}, axis=0)", True),
    (f"categorical(PRNGKey(3), {LOGITS}, shape=(4, 3))", True),
    (f"categorical(PRNGKey(3), {LOGITS}, shape=(2, 3), replace=False)", True),
    (f"categorical(PRNGKey(3), {LOGITS}, axis=0, shape=(2, 5), replace=False)", True),
    (f"categorical(PRNGKey(7), {LOGITS}.astype(np.float32), mode='high')", True),
    ("truncated_normal(PRNGKey(7), -1.5, 0.7, (6,))", True),
    ("truncated_normal(PRNGKey(3), 2.0, 5.0, (4,), np.float32)", True),
    ("truncated_normal(PRNGKey(7), np.array([-1.0, 0.0]), np.array([[1.0], [2.0], [3.0]]))", True),
    (f"gamma(PRNGKey(7), {ALPHAS})", True),
    ("gamma(PRNGKey(3), 2.5, (2, 2))", True),
    ("gamma(PRNGKey(3), np.float16(2.0), (4,), np.float16)", True),
    ("gamma(PRNGKey(3), np.float32(0.5), (5,), np.float32)", False),
    # Tiny shapes: results below the smallest normal float are flushed to zero, as in XLA.
    (f"gamma(PRNGKey(2), {TINY})", True),
    (f"gamma(PRNGKey(2), {TINY}.astype(np.float32), dtype=np.float32)", True),
    (f"beta(PRNGKey(2), {TINY}, 1.0)", True),
    (f"poisson(PRNGKey(7), {LAMS})", True),
    ("poisson(PRNGKey(3), 4.0, (6,), np.int32)", True),
    ("poisson(PRNGKey(3), np.array([5.0, 300.0, 1e6]), dtype=np.uint8)", True),
    ("poisson(PRNGKey(0), 3e38, (2,))", True),
    (f"beta(PRNGKey(7), {ALPHAS}, 2.0)", True),
    ("beta(PRNGKey(3), np.float32(0.3), np.float32(0.7), (5,), np.float32)", False),
    ("dirichlet(PRNGKey(7), np.array([0.5, 1.0, 2.0, 4.0]))", True),
    ("dirichlet(PRNGKey(3), np.ones((2, 3)), (4, 2))", True),
    (f"multivariate_normal(PRNGKey(7), np.arange(3.0), {COV}, (4,))", False),
    (f"multivariate_normal(PRNGKey(7), np.arange(3.0), {COV}, (4,), method='eigh')", False),
    (f"multivariate_normal(PRNGKey(7), np.arange(3.0), {COV}, (4,), method='svd')", False),
    (f"multivariate_normal(PRNGKey(3), np.zeros((2, 3)), {COV})", False),
    ("orthogonal(PRNGKey(7), 4)", False),
    ("orthogonal(PRNGKey(3), 3, (2,), m=5)", False),
    ("orthogonal(PRNGKey(7), 5, (), np.float32, m=2)", False),
    ("permutation(PRNGKey(7), 10)", True),
    ("permutation(PRNGKey(3), np.linspace(0.0, 1.0, 7))", True),
    ("choice(PRNGKey(7), 10, (5,))", True),
    ("choice(PRNGKey(3), np.linspace(0.0, 1.0, 7), (2, 3))", True),
    ("choice(PRNGKey(7), 10, (4,), replace=False)", True),
    (f"choice(PRNGKey(7), 5, (6,), p={P})", True),
    (f"choice(PRNGKey(3), 5, (3,), replace=False, p={P})", True),
    (f"choice(PRNGKey(3), 5, (4,), p={P}.astype(np.float32))", True),
    (f"choice(PRNGKey(7), 5, (2,), replace=False, p={P}.astype(np.float32))", True),
    (f"categorical(PRNGKey(5), {LOGITS}[0], shape=(3,))", True),
    (f"categorical(PRNGKey(5), {LOGITS}.astype(np.float32), axis=0, mode='high')", True),
]


def record() -> dict:
    import jax

    jax.config.update("jax_enable_x64", True)
    import jax.random as jr

    assert jax.config.jax_default_prng_impl == "threefry2x32"
    assert jax.config.jax_threefry_partitionable
    namespace = {"np": np, **{name: getattr(jr, name) for name in dir(jr)}}
    cases = []
    for call, exact in CASES:
        value = np.asarray(eval(call, namespace))  # noqa: S307 - the calls above
        case = {"call": call, "dtype": str(value.dtype), "shape": list(value.shape)}
        case.update({"exact": exact, "value": value.tolist()})
        if not exact:
            case["rtol"] = RTOL
        cases.append(case)
    return {
        "jax_version": jax.__version__,
        "prng_impl": "threefry2x32",
        "jax_threefry_partitionable": True,
        "jax_enable_x64": True,
        "cases": cases,
    }


def dumps(data: dict) -> str:
    """JSON with one case per line, so that a re-recording diffs case by case."""
    head = {key: value for key, value in data.items() if key != "cases"}
    cases = ",\n  ".join(json.dumps(case) for case in data["cases"])
    return json.dumps(head)[:-1] + ',\n "cases": [\n  ' + cases + "\n ]\n}\n"


if __name__ == "__main__":
    OUT.write_text(dumps(record()))
    print(f"wrote {len(CASES)} cases to {OUT}")
