"""`transformer.random`: keys and samplers as primitives.

Under jit a call runs the runtime form of the same name (`transformer.runtime.random`, same
signature, same bits). Keys are integers, so grad and jvp give them nothing; the samplers'
outputs depend on nothing differentiable (a key, a shape, a dtype; `bernoulli`'s booleans
have derivative zero in `p`), so they are constants of the differentiated function and
`mu + sigma * random.normal(k, shape)` differentiates in `mu` and `sigma`. `uniform` is the
exception: its result moves with `minval` and `maxval`, and no rule says how, so grad
refuses a differentiated bound instead of dropping its derivative; `permutation` and
`choice` of a differentiated array are refused the same way (their indices are constants).
vmap over keys runs the loop strategy: one example per key, which is what a loop over the
keys computes.
In CUDA kernels `split`, `fold_in`, `PRNGKey` and `normal`, `uniform`, `bernoulli`, `bits`,
`randint`, `exponential`, `laplace`, `logistic`, `gumbel`, `truncated_normal`,
`categorical`, `permutation` and `choice` with constant shapes and sizes run as loops of
per-element device functions (`transformer.cuda.random_forms`); a call form without one
is refused at the user's line. `truncated_normal` is refused by grad like `uniform`.
"""
from __future__ import annotations

from transformer import random
from transformer.runtime import random as compiled
from transformer.runtime import random_choice
from transformer.runtime import random_samplers as compiled_samplers

from . import registry
from .families import lowered, nondifferentiable

KEY_OPERATIONS = (random.PRNGKey, random.key, random.split, random.fold_in)
SAMPLERS = (random.bits, random.uniform, random.normal, random.randint, random.bernoulli)
SHUFFLES = (random.permutation, random.choice)
for _key in KEY_OPERATIONS + SAMPLERS + SHUFFLES:
    lowered(_key, getattr(random_choice if _key in SHUFFLES else compiled, _key.__name__))
    registry.record(_key).kind = "random"
    registry.unsupported(_key, "vmap", "vmap over keys runs a loop, one example per key")
    registry.record(_key).cuda = "random"            # element loops (transformer.cuda)
nondifferentiable(*KEY_OPERATIONS, *(s for s in SAMPLERS if s is not random.uniform))

# exponential, laplace, logistic, gumbel, truncated_normal, categorical
# (transformer.runtime.random_samplers)
ELEMENT_SAMPLERS = (random.exponential, random.laplace, random.logistic, random.gumbel,
                    random.truncated_normal, random.categorical)
for _key in ELEMENT_SAMPLERS:
    lowered(_key, getattr(compiled_samplers, _key.__name__))
    registry.record(_key).kind = "random"
    registry.unsupported(_key, "vmap", "vmap over keys runs a loop, one example per key")
    registry.record(_key).cuda = "random"        # element loops (transformer.cuda)
nondifferentiable(*(s for s in ELEMENT_SAMPLERS if s is not random.truncated_normal))
for _transform in ("grad", "jvp"):
    registry.unsupported(random.truncated_normal, _transform,
                         "random.truncated_normal has no derivative rule in lower/upper; "
                         "pass constant bounds, e.g. transformer.stop_gradient(lower)")
for _transform in ("grad", "jvp"):
    registry.unsupported(random.uniform, _transform,
                         "random.uniform has no derivative rule in minval/maxval; write "
                         "minval + (maxval - minval) * random.uniform(key, shape)")
for _key in SHUFFLES:
    for _transform in ("grad", "jvp"):
        registry.unsupported(_key, _transform, "no derivative rule through a shuffled or drawn "
                             "array; draw indices and index instead: x[random.permutation(key, "
                             "x.shape[0])]")
