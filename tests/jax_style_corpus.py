"""Small programs written the way JAX users write them, each twice, side by side: in NumPy
(what secant transforms) and in `jax.numpy` (the oracle when JAX is installed).

A `Case` holds the pair and an argument maker `make(rng)` returning one example's arguments;
argument 0 is differentiated, the positions in `batched` are the data a `vmap(grad)` maps
over (None: no per-example form). Integer arguments are static (counts, indices). The JAX
side uses `.at[...]` for in-place writes and `jax.lax.stop_gradient` where NumPy uses
`transformer.stop_gradient`; otherwise the two bodies are the same line for line.
"""
from __future__ import annotations

import collections
import dataclasses
from typing import Callable

import numpy as np

from transformer import stop_gradient, tree_util

try:                                    # the oracle side; the NumPy side never needs it
    import jax
    import jax.numpy as jnp
except ImportError:                     # pragma: no cover - JAX is an optional extra
    jax = jnp = None


@dataclasses.dataclass(frozen=True)
class Case:
    name: str
    numpy: Callable
    jax: Callable
    make: Callable                      # rng -> one example's arguments
    batched: tuple | None = (1, 2)      # data positions a vmap(grad) maps over
    hessian: bool = True                # small enough for a Hessian by differences
    jit: bool = True                    # in the jit sweep
    frozen: Callable | None = None      # (arg0, arg0 held fixed, *rest): the program with
    #                                     its stop_gradient terms evaluated at the fixed
    #                                     point, what finite differences differentiate


Params = collections.namedtuple("Params", "W b")


@tree_util.register_dataclass
@dataclasses.dataclass
class Dense:
    W: np.ndarray
    b: np.ndarray


@dataclasses.dataclass
class Gauss:
    mu: np.ndarray
    log_sigma: np.ndarray
    label: str = "g"


tree_util.register_dataclass(Gauss, data_fields=["mu", "log_sigma"], meta_fields=["label"])


def register_with_jax():
    """Make the corpus's dataclasses JAX pytrees too (once)."""
    if getattr(register_with_jax, "done", False):
        return
    jax.tree_util.register_dataclass(Dense, data_fields=["W", "b"], meta_fields=[])
    jax.tree_util.register_dataclass(Gauss, data_fields=["mu", "log_sigma"],
                                     meta_fields=["label"])
    register_with_jax.done = True


# ---------------------------------------------------------------- argument makers

def _n(rng, *shape, scale=0.5):
    return rng.standard_normal(shape) * scale


def regression(rng):
    return {"W": _n(rng, 3, 2), "b": _n(rng, 2)}, _n(rng, 3, scale=1.0), _n(rng, 2)


def regression_tuple(rng):
    p, x, y = regression(rng)
    return (p["W"], p["b"]), x, y


def regression_namedtuple(rng):
    p, x, y = regression(rng)
    return Params(p["W"], p["b"]), x, y


def regression_dataclass(rng):
    p, x, y = regression(rng)
    return Dense(p["W"], p["b"]), x, y


def two_layers(rng):
    layers = [(_n(rng, 3, 4), _n(rng, 4)), (_n(rng, 4, 2), _n(rng, 2))]
    return layers, _n(rng, 3, scale=1.0), _n(rng, 2)


def two_layer_dicts(rng):
    layers, x, y = two_layers(rng)
    return [{"W": W, "b": b} for W, b in layers], x, y


def nested_params(rng):
    return ({"enc": {"W": _n(rng, 3, 2), "b": _n(rng, 2)}, "dec": {"W": _n(rng, 2, 2)},
             "scale": 1.3}, _n(rng, 3, scale=1.0), _n(rng, 2))


def classify(rng):
    label = np.zeros(3)
    label[rng.integers(3)] = 1.0
    return {"W": _n(rng, 4, 3), "b": _n(rng, 3)}, _n(rng, 4, scale=1.0), label


def vector(rng):
    return (_n(rng, 5, scale=1.0),)


def vector_and_int(rng):
    return _n(rng, 5, scale=1.0), 3


def logistic(rng):
    return _n(rng, 3), _n(rng, 3, scale=1.0), float(rng.choice([-1.0, 1.0]))


def layernorm_args(rng):
    return ({"g": 1.0 + _n(rng, 4, scale=0.1), "b": _n(rng, 4, scale=0.1)},
            _n(rng, 4, scale=1.0), _n(rng, 4))


def attention_args(rng):
    return ({"q": _n(rng, 3, 3), "k": _n(rng, 3, 3), "v": _n(rng, 3, 3)},
            _n(rng, 4, 3, scale=1.0), _n(rng, 4, 3))


def rnn_args(rng):
    return {"W": _n(rng, 3, 3), "U": _n(rng, 3, 2)}, _n(rng, 4, 2, scale=1.0), _n(rng, 3)


def positions(rng):
    grid = np.array([[0.0, 0, 0], [1.1, 0, 0], [0, 1.2, 0], [0, 0, 1.05], [1.2, 1.1, 0.1]])
    return (grid + _n(rng, 5, 3, scale=0.05),)


def lj_args(rng):
    return {"sigma": 1.0 + 0.05 * float(rng.standard_normal()),
            "eps": 1.0 + 0.1 * float(rng.standard_normal())}, positions(rng)[0]


def bonded(rng):
    return positions(rng)[0], np.array([[0, 1], [0, 2], [0, 3], [1, 4]]), 2.0, 1.0


def chain(rng):
    return (np.cumsum(1.0 + _n(rng, 5, 2, scale=0.1), axis=0),)


def trajectory(rng):
    obs = _n(rng, 6, 3, scale=1.0)
    actions = np.eye(2)[rng.integers(2, size=6)]
    return {"W": _n(rng, 3, 2), "b": _n(rng, 2)}, obs, actions, _n(rng, 6, scale=1.0)


def trajectory_baseline(rng):
    p, obs, actions, returns = trajectory(rng)
    p["v"] = _n(rng, 3)
    return p, obs, actions, returns


def td_args(rng):
    return _n(rng, 3), _n(rng, 5, 3, scale=1.0), _n(rng, 5, scale=1.0), \
        _n(rng, 5, 3, scale=1.0)


def td_lambda_args(rng):
    return _n(rng, 3), _n(rng, 6, 3, scale=1.0), _n(rng, 5, scale=1.0)


def q_args(rng):
    p, obs, actions, rewards = trajectory(rng)
    return p["W"], obs, actions, rewards, _n(rng, 6, 3, scale=1.0)


def ppo_args(rng):
    p, obs, actions, adv = trajectory(rng)
    return p, obs, actions, adv, -0.7 + _n(rng, 6, scale=0.1)


def gauss_args(rng):
    return {"mu": _n(rng, 3), "log_sigma": _n(rng, 3, scale=0.1)}, _n(rng, 3, scale=1.0)


def gauss_dataclass_args(rng):
    p, x = gauss_args(rng)
    return Gauss(p["mu"], p["log_sigma"]), x


def mixture_args(rng):
    return {"mu": _n(rng, 3, scale=1.0), "logit": _n(rng, 3)}, float(rng.standard_normal())


def conv_args(rng):
    return _n(rng, 3), _n(rng, 7, scale=1.0), _n(rng, 5)


def scalar_pair(rng):
    return (1.0 + 0.3 * float(rng.standard_normal()), 0.5 + 0.1 * float(rng.standard_normal())), \
        _n(rng, 4, scale=1.0), _n(rng, 4)


def positive(rng):
    return 1.5 + 0.5 * float(rng.random()), 0.25 * float(rng.random())


def matrix_args(rng):
    return _n(rng, 3, 3), _n(rng, 3, scale=1.0)


# ================================================================ the programs, NumPy | JAX
# ---------------------------------------------------------------- pytree parameters

def linear_mse(params, x, y):
    pred = x @ params["W"] + params["b"]
    return np.mean((pred - y) ** 2)


def linear_mse_jax(params, x, y):
    pred = x @ params["W"] + params["b"]
    return jnp.mean((pred - y) ** 2)


def unpacked_mse(params, x, y):
    W, b = params
    return np.sum((np.tanh(x @ W + b) - y) ** 2)


def unpacked_mse_jax(params, x, y):
    W, b = params
    return jnp.sum((jnp.tanh(x @ W + b) - y) ** 2)


def namedtuple_mse(p, x, y):
    return np.sum((np.tanh(x @ p.W + p.b) - y) ** 2)


def namedtuple_mse_jax(p, x, y):
    return jnp.sum((jnp.tanh(x @ p.W + p.b) - y) ** 2)


def dataclass_mse(layer, x, y):
    h = np.sin(x @ layer.W) + layer.b
    return np.sum((h - y) ** 2)


def dataclass_mse_jax(layer, x, y):
    h = jnp.sin(x @ layer.W) + layer.b
    return jnp.sum((h - y) ** 2)


def mlp_layers(layers, x, y):
    h = x
    for W, b in layers:
        h = np.tanh(h @ W + b)
    return np.sum((h - y) ** 2)


def mlp_layers_jax(layers, x, y):
    h = x
    for W, b in layers:
        h = jnp.tanh(h @ W + b)
    return jnp.sum((h - y) ** 2)


def mlp_layer_dicts(layers, x, y):
    h = x
    for layer in layers:
        h = np.tanh(h @ layer["W"] + layer["b"])
    return np.sum((h - y) ** 2)


def mlp_layer_dicts_jax(layers, x, y):
    h = x
    for layer in layers:
        h = jnp.tanh(h @ layer["W"] + layer["b"])
    return jnp.sum((h - y) ** 2)


def mlp_linear_head(layers, x, y):
    W0, b0 = layers[0]
    W1, b1 = layers[1]
    h = np.maximum(x @ W0 + b0, 0.0)
    return np.mean((h @ W1 + b1 - y) ** 2)


def mlp_linear_head_jax(layers, x, y):
    W0, b0 = layers[0]
    W1, b1 = layers[1]
    h = jnp.maximum(x @ W0 + b0, 0.0)
    return jnp.mean((h @ W1 + b1 - y) ** 2)


def swish_mlp(layers, x, y):
    h = x
    for layer in layers:
        z = h @ layer["W"] + layer["b"]
        h = z / (1.0 + np.exp(-z))
    return np.sum((h - y) ** 2)


def swish_mlp_jax(layers, x, y):
    h = x
    for layer in layers:
        z = h @ layer["W"] + layer["b"]
        h = z / (1.0 + jnp.exp(-z))
    return jnp.sum((h - y) ** 2)


def nested_autoencoder(params, x, y):
    z = np.tanh(x @ params["enc"]["W"] + params["enc"]["b"])
    out = params["scale"] * (z @ params["dec"]["W"])
    return np.sum((out - y) ** 2)


def nested_autoencoder_jax(params, x, y):
    z = jnp.tanh(x @ params["enc"]["W"] + params["enc"]["b"])
    out = params["scale"] * (z @ params["dec"]["W"])
    return jnp.sum((out - y) ** 2)


def l2_regularized(params, x, y):
    W, b = params
    data = np.sum((x @ W + b - y) ** 2)
    return data + 0.01 * (np.sum(W ** 2) + np.sum(b ** 2))


def l2_regularized_jax(params, x, y):
    W, b = params
    data = jnp.sum((x @ W + b - y) ** 2)
    return data + 0.01 * (jnp.sum(W ** 2) + jnp.sum(b ** 2))


def halved(a):
    return 0.5 * a


def tree_map_scaled(params, x, y):
    small = tree_util.tree_map(halved, params)
    return np.sum((np.tanh(x @ small["W"] + small["b"]) - y) ** 2)


def tree_map_scaled_jax(params, x, y):
    small = jax.tree_util.tree_map(halved, params)
    return jnp.sum((jnp.tanh(x @ small["W"] + small["b"]) - y) ** 2)


def squared(a):
    return a * a


def tree_map_penalty(params, x, y):
    sq = tree_util.tree_map(squared, params)
    return np.sum((x @ params["W"] + params["b"] - y) ** 2) + np.sum(sq["W"]) + np.sum(sq["b"])


def tree_map_penalty_jax(params, x, y):
    sq = jax.tree_util.tree_map(squared, params)
    return jnp.sum((x @ params["W"] + params["b"] - y) ** 2) + jnp.sum(sq["W"]) + jnp.sum(sq["b"])


def scalar_tuple_fit(params, x, y):
    a, b = params
    return np.sum((a * np.sin(x) + b - y) ** 2)


def scalar_tuple_fit_jax(params, x, y):
    a, b = params
    return jnp.sum((a * jnp.sin(x) + b - y) ** 2)


def gaussian_nll(p, x):
    sigma = np.exp(p["log_sigma"])
    return np.sum(0.5 * ((x - p["mu"]) / sigma) ** 2 + p["log_sigma"])


def gaussian_nll_jax(p, x):
    sigma = jnp.exp(p["log_sigma"])
    return jnp.sum(0.5 * ((x - p["mu"]) / sigma) ** 2 + p["log_sigma"])


def gaussian_nll_dataclass(g, x):
    return np.sum(0.5 * (x - g.mu) ** 2 * np.exp(-2.0 * g.log_sigma) + g.log_sigma)


def gaussian_nll_dataclass_jax(g, x):
    return jnp.sum(0.5 * (x - g.mu) ** 2 * jnp.exp(-2.0 * g.log_sigma) + g.log_sigma)


def layernorm_loss(p, x, y):
    mu = np.mean(x)
    var = np.mean((x - mu) ** 2)
    h = (x - mu) / np.sqrt(var + 1e-5) * p["g"] + p["b"]
    return np.sum((h - y) ** 2)


def layernorm_loss_jax(p, x, y):
    mu = jnp.mean(x)
    var = jnp.mean((x - mu) ** 2)
    h = (x - mu) / jnp.sqrt(var + 1e-5) * p["g"] + p["b"]
    return jnp.sum((h - y) ** 2)


def attention_loss(p, x, y):
    q = x @ p["q"]
    k = x @ p["k"]
    s = q @ k.T / np.sqrt(3.0)
    e = np.exp(s - np.max(s, axis=1, keepdims=True))
    a = e / np.sum(e, axis=1, keepdims=True)
    return np.sum((a @ (x @ p["v"]) - y) ** 2)


def attention_loss_jax(p, x, y):
    q = x @ p["q"]
    k = x @ p["k"]
    s = q @ k.T / jnp.sqrt(3.0)
    e = jnp.exp(s - jnp.max(s, axis=1, keepdims=True))
    a = e / jnp.sum(e, axis=1, keepdims=True)
    return jnp.sum((a @ (x @ p["v"]) - y) ** 2)


def rnn_loss(p, xs, y):
    h = np.zeros(3)
    for t in range(xs.shape[0]):
        h = np.tanh(p["W"] @ h + p["U"] @ xs[t])
    return np.sum((h - y) ** 2)


def rnn_loss_jax(p, xs, y):
    h = jnp.zeros(3)
    for t in range(xs.shape[0]):
        h = jnp.tanh(p["W"] @ h + p["U"] @ xs[t])
    return jnp.sum((h - y) ** 2)


# ---------------------------------------------------------------- softmax, logsumexp, losses

def softmax_xent(params, x, label):
    logits = x @ params["W"] + params["b"]
    m = np.max(logits)
    logp = logits - m - np.log(np.sum(np.exp(logits - m)))
    return -np.sum(label * logp)


def softmax_xent_jax(params, x, label):
    logits = x @ params["W"] + params["b"]
    m = jnp.max(logits)
    logp = logits - m - jnp.log(jnp.sum(jnp.exp(logits - m)))
    return -jnp.sum(label * logp)


def xent_unpacked(params, x, label):
    W, b = params["W"], params["b"]
    logits = x @ W + b
    p = np.exp(logits) / np.sum(np.exp(logits))
    return -np.sum(label * np.log(p))


def xent_unpacked_jax(params, x, label):
    W, b = params["W"], params["b"]
    logits = x @ W + b
    p = jnp.exp(logits) / jnp.sum(jnp.exp(logits))
    return -jnp.sum(label * jnp.log(p))


def logsumexp(x):
    m = np.max(x)
    return m + np.log(np.sum(np.exp(x - m)))


def logsumexp_jax(x):
    m = jnp.max(x)
    return m + jnp.log(jnp.sum(jnp.exp(x - m)))


def softmax_entropy(x):
    e = np.exp(x - np.max(x))
    p = e / np.sum(e)
    return -np.sum(p * np.log(p))


def softmax_entropy_jax(x):
    e = jnp.exp(x - jnp.max(x))
    p = e / jnp.sum(e)
    return -jnp.sum(p * jnp.log(p))


def kl_softmax(x):
    p = np.exp(x) / np.sum(np.exp(x))
    q = np.exp(-x) / np.sum(np.exp(-x))
    return np.sum(p * (np.log(p) - np.log(q)))


def kl_softmax_jax(x):
    p = jnp.exp(x) / jnp.sum(jnp.exp(x))
    q = jnp.exp(-x) / jnp.sum(jnp.exp(-x))
    return jnp.sum(p * (jnp.log(p) - jnp.log(q)))


def logistic_loss(w, x, y):
    return np.log1p(np.exp(-y * np.dot(w, x)))


def logistic_loss_jax(w, x, y):
    return jnp.log1p(jnp.exp(-y * jnp.dot(w, x)))


def sigmoid_bce(w, x, y):
    p = 1.0 / (1.0 + np.exp(-np.dot(w, x)))
    t = 0.5 * (y + 1.0)
    return -(t * np.log(p) + (1.0 - t) * np.log(1.0 - p))


def sigmoid_bce_jax(w, x, y):
    p = 1.0 / (1.0 + jnp.exp(-jnp.dot(w, x)))
    t = 0.5 * (y + 1.0)
    return -(t * jnp.log(p) + (1.0 - t) * jnp.log(1.0 - p))


def huber(params, x, y):
    r = x @ params["W"] + params["b"] - y
    a = np.abs(r)
    return np.sum(np.where(a < 0.5, 0.5 * r * r, 0.5 * (a - 0.25)))


def huber_jax(params, x, y):
    r = x @ params["W"] + params["b"] - y
    a = jnp.abs(r)
    return jnp.sum(jnp.where(a < 0.5, 0.5 * r * r, 0.5 * (a - 0.25)))


def leaky_relu_loss(params, x, y):
    z = x @ params["W"] + params["b"]
    h = np.where(z > 0, z, 0.1 * z)
    return np.sum((h - y) ** 2)


def leaky_relu_loss_jax(params, x, y):
    z = x @ params["W"] + params["b"]
    h = jnp.where(z > 0, z, 0.1 * z)
    return jnp.sum((h - y) ** 2)


def clipped_loss(params, x, y):
    pred = np.clip(x @ params["W"] + params["b"], -0.6, 0.6)
    return np.sum((pred - y) ** 2)


def clipped_loss_jax(params, x, y):
    pred = jnp.clip(x @ params["W"] + params["b"], -0.6, 0.6)
    return jnp.sum((pred - y) ** 2)


def cosine_similarity(w, x, y):
    return np.dot(w, x) / (np.linalg.norm(w) * np.linalg.norm(x)) * y


def cosine_similarity_jax(w, x, y):
    return jnp.dot(w, x) / (jnp.linalg.norm(w) * jnp.linalg.norm(x)) * y


def mixture_nll(p, x):
    logw = p["logit"] - logsumexp(p["logit"])
    comp = logw - 0.5 * (x - p["mu"]) ** 2
    return -logsumexp(comp)


def mixture_nll_jax(p, x):
    logw = p["logit"] - logsumexp_jax(p["logit"])
    comp = logw - 0.5 * (x - p["mu"]) ** 2
    return -logsumexp_jax(comp)


# ---------------------------------------------------------------- molecular dynamics

def lj_cutoff(pos):
    e = 0.0
    for i in range(pos.shape[0]):
        for j in range(i + 1, pos.shape[0]):
            d = pos[i] - pos[j]
            r2 = np.sum(d * d)
            if r2 < 2.25:
                inv6 = 1.0 / r2 ** 3
                e += 4.0 * (inv6 * inv6 - inv6)
    return e


def lj_cutoff_jax(pos):
    e = 0.0
    for i in range(pos.shape[0]):
        for j in range(i + 1, pos.shape[0]):
            d = pos[i] - pos[j]
            r2 = jnp.sum(d * d)
            inv6 = 1.0 / r2 ** 3
            e += jnp.where(r2 < 2.25, 4.0 * (inv6 * inv6 - inv6), 0.0)
    return e


def lj_params(p, pos):
    e = 0.0
    for i in range(pos.shape[0]):
        for j in range(i + 1, pos.shape[0]):
            d = pos[i] - pos[j]
            s6 = (p["sigma"] ** 2 / np.sum(d * d)) ** 3
            e += 4.0 * p["eps"] * (s6 * s6 - s6)
    return e


def lj_params_jax(p, pos):
    e = 0.0
    for i in range(pos.shape[0]):
        for j in range(i + 1, pos.shape[0]):
            d = pos[i] - pos[j]
            s6 = (p["sigma"] ** 2 / jnp.sum(d * d)) ** 3
            e += 4.0 * p["eps"] * (s6 * s6 - s6)
    return e


def harmonic_bonds(pos, bonds, k, r0):
    e = 0.0
    for n in range(bonds.shape[0]):
        d = pos[bonds[n, 0]] - pos[bonds[n, 1]]
        r = np.sqrt(np.sum(d * d))
        e += 0.5 * k * (r - r0) ** 2
    return e


def harmonic_bonds_jax(pos, bonds, k, r0):
    e = 0.0
    for n in range(bonds.shape[0]):
        d = pos[bonds[n, 0]] - pos[bonds[n, 1]]
        r = jnp.sqrt(jnp.sum(d * d))
        e += 0.5 * k * (r - r0) ** 2
    return e


def morse_pairs(pos):
    e = 0.0
    for i in range(pos.shape[0]):
        for j in range(i + 1, pos.shape[0]):
            r = np.linalg.norm(pos[i] - pos[j])
            e += (1.0 - np.exp(-1.5 * (r - 1.1))) ** 2
    return e


def morse_pairs_jax(pos):
    e = 0.0
    for i in range(pos.shape[0]):
        for j in range(i + 1, pos.shape[0]):
            r = jnp.linalg.norm(pos[i] - pos[j])
            e += (1.0 - jnp.exp(-1.5 * (r - 1.1))) ** 2
    return e


def soft_coulomb(pos):
    e = 0.0
    n = pos.shape[0]
    for i in range(n):
        for j in range(n):
            if i != j:
                d = pos[i] - pos[j]
                e += 0.5 / np.sqrt(np.sum(d * d) + 0.1)
    return e


def soft_coulomb_jax(pos):
    e = 0.0
    n = pos.shape[0]
    for i in range(n):
        for j in range(n):
            if i != j:
                d = pos[i] - pos[j]
                e += 0.5 / jnp.sqrt(jnp.sum(d * d) + 0.1)
    return e


def spring_chain(pos):
    d = pos[1:] - pos[:-1]
    r = np.sqrt(np.sum(d * d, axis=1))
    return np.sum((r - 1.0) ** 2)


def spring_chain_jax(pos):
    d = pos[1:] - pos[:-1]
    r = jnp.sqrt(jnp.sum(d * d, axis=1))
    return jnp.sum((r - 1.0) ** 2)


def bond_angles(pos):
    e = 0.0
    for i in range(1, pos.shape[0] - 1):
        a = pos[i - 1] - pos[i]
        b = pos[i + 1] - pos[i]
        c = np.sum(a * b) / np.sqrt(np.sum(a * a) * np.sum(b * b))
        e += (c + 0.5) ** 2
    return e


def bond_angles_jax(pos):
    e = 0.0
    for i in range(1, pos.shape[0] - 1):
        a = pos[i - 1] - pos[i]
        b = pos[i + 1] - pos[i]
        c = jnp.sum(a * b) / jnp.sqrt(jnp.sum(a * a) * jnp.sum(b * b))
        e += (c + 0.5) ** 2
    return e


def verlet_final_energy(x):
    q = x
    v = np.zeros_like(x)
    for _ in range(4):
        v = v - 0.05 * np.sin(q)
        q = q + 0.1 * v
        v = v - 0.05 * np.sin(q)
    return np.sum(0.5 * v * v - np.cos(q))


def verlet_final_energy_jax(x):
    q = x
    v = jnp.zeros_like(x)
    for _ in range(4):
        v = v - 0.05 * jnp.sin(q)
        q = q + 0.1 * v
        v = v - 0.05 * jnp.sin(q)
    return jnp.sum(0.5 * v * v - jnp.cos(q))


# ---------------------------------------------------------------- Newton steps

def newton_sqrt(a, x0):
    x = a + x0
    for _ in range(5):
        x = 0.5 * (x + a / x)
    return x


def newton_sqrt_jax(a, x0):
    x = a + x0
    for _ in range(5):
        x = 0.5 * (x + a / x)
    return x


def newton_step_loss(x):
    g = np.sin(x) + 0.5 * x
    h = np.cos(x) + 0.5
    x_new = x - g / (h + 2.0)
    return np.sum(x_new ** 2)


def newton_step_loss_jax(x):
    g = jnp.sin(x) + 0.5 * x
    h = jnp.cos(x) + 0.5
    x_new = x - g / (h + 2.0)
    return jnp.sum(x_new ** 2)


def newton_linear_solve(A, b):
    M = A @ A.T + 3.0 * np.eye(3)
    x = np.linalg.solve(M, b)
    return np.sum(x * x)


def newton_linear_solve_jax(A, b):
    M = A @ A.T + 3.0 * jnp.eye(3)
    x = jnp.linalg.solve(M, b)
    return jnp.sum(x * x)


def rosenbrock(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def rosenbrock_jax(x):
    return jnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def gradient_descent_unrolled(x):
    for _ in range(3):
        x = x - 0.1 * (x ** 3 - x)
    return np.sum(x ** 2)


def gradient_descent_unrolled_jax(x):
    for _ in range(3):
        x = x - 0.1 * (x ** 3 - x)
    return jnp.sum(x ** 2)


# ---------------------------------------------------------------- RL losses

def log_softmax_rows(logits):
    m = np.max(logits, axis=1, keepdims=True)
    return logits - m - np.log(np.sum(np.exp(logits - m), axis=1, keepdims=True))


def log_softmax_rows_jax(logits):
    m = jnp.max(logits, axis=1, keepdims=True)
    return logits - m - jnp.log(jnp.sum(jnp.exp(logits - m), axis=1, keepdims=True))


def reinforce(params, obs, actions, returns):
    logp = log_softmax_rows(obs @ params["W"] + params["b"])
    return -np.mean(np.sum(logp * actions, axis=1) * returns)


def reinforce_jax(params, obs, actions, returns):
    logp = log_softmax_rows_jax(obs @ params["W"] + params["b"])
    return -jnp.mean(jnp.sum(logp * actions, axis=1) * returns)


def reinforce_baseline(params, obs, actions, returns):
    values = obs @ params["v"]
    adv = stop_gradient(returns - values)
    logp = log_softmax_rows(obs @ params["W"] + params["b"])
    policy = -np.mean(np.sum(logp * actions, axis=1) * adv)
    return policy + 0.5 * np.mean((returns - values) ** 2)


def reinforce_baseline_jax(params, obs, actions, returns):
    values = obs @ params["v"]
    adv = jax.lax.stop_gradient(returns - values)
    logp = log_softmax_rows_jax(obs @ params["W"] + params["b"])
    policy = -jnp.mean(jnp.sum(logp * actions, axis=1) * adv)
    return policy + 0.5 * jnp.mean((returns - values) ** 2)


def entropy_regularized_pg(params, obs, actions, returns):
    logp = log_softmax_rows(obs @ params["W"] + params["b"])
    entropy = -np.sum(np.exp(logp) * logp, axis=1)
    return -np.mean(np.sum(logp * actions, axis=1) * returns + 0.01 * entropy)


def entropy_regularized_pg_jax(params, obs, actions, returns):
    logp = log_softmax_rows_jax(obs @ params["W"] + params["b"])
    entropy = -jnp.sum(jnp.exp(logp) * logp, axis=1)
    return -jnp.mean(jnp.sum(logp * actions, axis=1) * returns + 0.01 * entropy)


def ppo_clip(params, obs, actions, adv, logp_old):
    logp = np.sum(log_softmax_rows(obs @ params["W"] + params["b"]) * actions, axis=1)
    ratio = np.exp(logp - logp_old)
    return -np.mean(np.minimum(ratio * adv, np.clip(ratio, 0.8, 1.2) * adv))


def ppo_clip_jax(params, obs, actions, adv, logp_old):
    logp = jnp.sum(log_softmax_rows_jax(obs @ params["W"] + params["b"]) * actions, axis=1)
    ratio = jnp.exp(logp - logp_old)
    return -jnp.mean(jnp.minimum(ratio * adv, jnp.clip(ratio, 0.8, 1.2) * adv))


def td0_semi_gradient(w, phi, r, phi_next):
    target = stop_gradient(r + 0.9 * (phi_next @ w))
    return 0.5 * np.sum((target - phi @ w) ** 2)


def td0_semi_gradient_jax(w, phi, r, phi_next):
    target = jax.lax.stop_gradient(r + 0.9 * (phi_next @ w))
    return 0.5 * jnp.sum((target - phi @ w) ** 2)


def td0_residual(w, phi, r, phi_next):
    delta = r + 0.9 * (phi_next @ w) - phi @ w
    return 0.5 * np.sum(delta ** 2)


def td0_residual_jax(w, phi, r, phi_next):
    delta = r + 0.9 * (phi_next @ w) - phi @ w
    return 0.5 * jnp.sum(delta ** 2)


def td_lambda(w, phi, rewards):
    v = phi @ w
    T = rewards.shape[0]
    g = v[T]
    loss = 0.0
    for t in range(T - 1, -1, -1):
        g = rewards[t] + 0.9 * (0.2 * v[t + 1] + 0.8 * g)
        loss += (stop_gradient(g) - v[t]) ** 2
    return loss


def td_lambda_jax(w, phi, rewards):
    v = phi @ w
    T = rewards.shape[0]
    g = v[T]
    loss = 0.0
    for t in range(T - 1, -1, -1):
        g = rewards[t] + 0.9 * (0.2 * v[t + 1] + 0.8 * g)
        loss += (jax.lax.stop_gradient(g) - v[t]) ** 2
    return loss


def discounted_returns_fit(w, phi, rewards):
    T = rewards.shape[0]
    ret = np.zeros(T)
    acc = 0.0
    for t in range(T - 1, -1, -1):
        acc = rewards[t] + 0.9 * acc
        ret[t] = acc
    return np.sum((phi[:T] @ w - ret) ** 2)


def discounted_returns_fit_jax(w, phi, rewards):
    T = rewards.shape[0]
    ret = jnp.zeros(T)
    acc = 0.0
    for t in range(T - 1, -1, -1):
        acc = rewards[t] + 0.9 * acc
        ret = ret.at[t].set(acc)
    return jnp.sum((phi[:T] @ w - ret) ** 2)


def q_learning(W, obs, actions, rewards, obs_next):
    q = np.sum((obs @ W) * actions, axis=1)
    target = stop_gradient(rewards + 0.9 * np.max(obs_next @ W, axis=1))
    return np.mean((target - q) ** 2)


def q_learning_jax(W, obs, actions, rewards, obs_next):
    q = jnp.sum((obs @ W) * actions, axis=1)
    target = jax.lax.stop_gradient(rewards + 0.9 * jnp.max(obs_next @ W, axis=1))
    return jnp.mean((target - q) ** 2)


# ---------------------------------------------------------------- loops, early return, writes

def while_sum_squares(x, n):
    i = 0
    s = 0.0
    while i < n:
        s += x[i] * x[i]
        i += 1
    return s


def while_sum_squares_jax(x, n):
    i = 0
    s = 0.0
    while i < n:
        s += x[i] * x[i]
        i += 1
    return s


def for_break(x, n):
    s = 0.0
    for i in range(x.shape[0]):
        if i >= n:
            break
        s += np.sin(x[i]) * x[i]
    return s


def for_break_jax(x, n):
    s = 0.0
    for i in range(x.shape[0]):
        if i >= n:
            break
        s += jnp.sin(x[i]) * x[i]
    return s


def early_return(x, n):
    if n > 2:
        return np.sum(x ** 3)
    return np.sum(x)


def early_return_jax(x, n):
    if n > 2:
        return jnp.sum(x ** 3)
    return jnp.sum(x)


def early_return_in_loop(x, n):
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i] * x[i]
        if i == n:
            return s * 2.0
    return s


def early_return_in_loop_jax(x, n):
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i] * x[i]
        if i == n:
            return s * 2.0
    return s


def horner(c, x, y):
    acc = np.zeros_like(x)
    for k in range(c.shape[0]):
        acc = acc * x + c[k]
    return np.sum((acc - y) ** 2)


def horner_jax(c, x, y):
    acc = jnp.zeros_like(x)
    for k in range(c.shape[0]):
        acc = acc * x + c[k]
    return jnp.sum((acc - y) ** 2)


def inplace_products(x):
    y = np.zeros_like(x)
    for i in range(1, x.shape[0]):
        y[i] = x[i] * x[i - 1]
    return np.sum(y * y)


def inplace_products_jax(x):
    y = jnp.zeros_like(x)
    for i in range(1, x.shape[0]):
        y = y.at[i].set(x[i] * x[i - 1])
    return jnp.sum(y * y)


def inplace_cumsum(x):
    c = x.copy()
    for i in range(1, x.shape[0]):
        c[i] = c[i - 1] + x[i]
    return np.sum(np.sin(c))


def inplace_cumsum_jax(x):
    c = jnp.array(x)
    for i in range(1, x.shape[0]):
        c = c.at[i].set(c[i - 1] + x[i])
    return jnp.sum(jnp.sin(c))


def inplace_slices(x):
    n = x.shape[0]
    y = np.zeros(2 * n)
    y[:n] = np.sin(x)
    y[n:] = np.cos(x) * x
    return np.sum(y * np.arange(2 * n))


def inplace_slices_jax(x):
    n = x.shape[0]
    y = jnp.zeros(2 * n)
    y = y.at[:n].set(jnp.sin(x))
    y = y.at[n:].set(jnp.cos(x) * x)
    return jnp.sum(y * jnp.arange(2 * n))


def inplace_accumulate(x):
    y = np.ones_like(x)
    for i in range(x.shape[0]):
        y[i] *= np.exp(0.3 * x[i])
        y[i] += x[i] ** 2
    return np.sum(y ** 2)


def inplace_accumulate_jax(x):
    y = jnp.ones_like(x)
    for i in range(x.shape[0]):
        y = y.at[i].multiply(jnp.exp(0.3 * x[i]))
        y = y.at[i].add(x[i] ** 2)
    return jnp.sum(y ** 2)


def inplace_matrix_rows(A, x):
    M = np.zeros((3, 3))
    for i in range(3):
        M[i, :] = np.tanh(A[i] * x)
    return np.sum(M @ x)


def inplace_matrix_rows_jax(A, x):
    M = jnp.zeros((3, 3))
    for i in range(3):
        M = M.at[i, :].set(jnp.tanh(A[i] * x))
    return jnp.sum(M @ x)


def conv1d(w, x, y):
    k = w.shape[0]
    out = np.zeros(x.shape[0] - k + 1)
    for i in range(out.shape[0]):
        out[i] = np.sum(w * x[i:i + k])
    return np.sum((out - y) ** 2)


def conv1d_jax(w, x, y):
    k = w.shape[0]
    out = jnp.zeros(x.shape[0] - k + 1)
    for i in range(out.shape[0]):
        out = out.at[i].set(jnp.sum(w * x[i:i + k]))
    return jnp.sum((out - y) ** 2)


def quadratic_form(A, x):
    return x @ (A @ A.T) @ x + np.sum(np.sin(A))


def quadratic_form_jax(A, x):
    return x @ (A @ A.T) @ x + jnp.sum(jnp.sin(A))


def branch_on_data(w, x, y):
    if y > 0:
        return np.sum(np.tanh(w * x))
    return np.sum(w * w * x)


def branch_on_data_jax(w, x, y):
    if y > 0:
        return jnp.sum(jnp.tanh(w * x))
    return jnp.sum(w * w * x)


def power_iteration(A, x):
    v = x
    for _ in range(3):
        v = A @ v
        v = v / np.linalg.norm(v)
    return v @ A @ v


def power_iteration_jax(A, x):
    v = x
    for _ in range(3):
        v = A @ v
        v = v / jnp.linalg.norm(v)
    return v @ A @ v


# ---------------------------------------------------------------- stop_gradient, frozen

def reinforce_baseline_frozen(params, fixed, obs, actions, returns):
    adv = returns - obs @ fixed["v"]
    logp = log_softmax_rows(obs @ params["W"] + params["b"])
    policy = -np.mean(np.sum(logp * actions, axis=1) * adv)
    return policy + 0.5 * np.mean((returns - obs @ params["v"]) ** 2)


def td0_semi_gradient_frozen(w, fixed, phi, r, phi_next):
    return 0.5 * np.sum((r + 0.9 * (phi_next @ fixed) - phi @ w) ** 2)


def td_lambda_frozen(w, fixed, phi, rewards):
    v, v0 = phi @ w, phi @ fixed
    T = rewards.shape[0]
    g = v0[T]
    loss = 0.0
    for t in range(T - 1, -1, -1):
        g = rewards[t] + 0.9 * (0.2 * v0[t + 1] + 0.8 * g)
        loss += (g - v[t]) ** 2
    return loss


def q_learning_frozen(W, fixed, obs, actions, rewards, obs_next):
    target = rewards + 0.9 * np.max(obs_next @ fixed, axis=1)
    return np.mean((target - np.sum((obs @ W) * actions, axis=1)) ** 2)


# ================================================================ the corpus

def _case(fn, make, **kw):
    return Case(fn.__name__, fn, globals()[fn.__name__ + "_jax"], make, **kw)


CASES = [
    # pytree parameters
    _case(linear_mse, regression),
    _case(unpacked_mse, regression_tuple),
    _case(namedtuple_mse, regression_namedtuple),
    _case(dataclass_mse, regression_dataclass),
    _case(mlp_layers, two_layers),
    _case(mlp_layer_dicts, two_layer_dicts),
    _case(mlp_linear_head, two_layers),
    _case(swish_mlp, two_layer_dicts),
    _case(nested_autoencoder, nested_params),
    _case(l2_regularized, regression_tuple),
    _case(tree_map_scaled, regression),
    _case(tree_map_penalty, regression),
    _case(scalar_tuple_fit, scalar_pair),
    _case(gaussian_nll, gauss_args, batched=(1,)),
    _case(gaussian_nll_dataclass, gauss_dataclass_args, batched=(1,)),
    _case(layernorm_loss, layernorm_args),
    _case(attention_loss, attention_args, hessian=False),
    _case(rnn_loss, rnn_args, hessian=False),   # hessian crashes: see the report
    # softmax, logsumexp, losses
    _case(softmax_xent, classify),
    _case(xent_unpacked, classify),
    _case(logsumexp, vector, batched=None),
    _case(softmax_entropy, vector, batched=None),
    _case(kl_softmax, vector, batched=None),
    _case(logistic_loss, logistic),
    _case(sigmoid_bce, logistic),
    _case(huber, regression),
    _case(leaky_relu_loss, regression),
    _case(clipped_loss, regression),
    _case(cosine_similarity, logistic),
    _case(mixture_nll, mixture_args, batched=(1,)),
    # molecular dynamics
    _case(lj_cutoff, positions, batched=None),
    _case(lj_params, lj_args, batched=(1,)),
    _case(harmonic_bonds, bonded, batched=None),
    _case(morse_pairs, positions, batched=None),
    _case(soft_coulomb, positions, batched=None, hessian=False),
    _case(spring_chain, chain, batched=None),
    _case(bond_angles, positions, batched=None),
    _case(verlet_final_energy, vector, batched=None),
    # Newton steps and optimisation
    _case(newton_sqrt, positive, batched=(1,)),
    _case(newton_step_loss, vector, batched=None),
    _case(newton_linear_solve, matrix_args, batched=(1,)),
    _case(rosenbrock, vector, batched=None),
    _case(gradient_descent_unrolled, vector, batched=None),
    _case(power_iteration, matrix_args, batched=(1,)),
    _case(quadratic_form, matrix_args, batched=(1,)),
    # RL losses
    _case(reinforce, trajectory, batched=(1, 2, 3)),
    _case(reinforce_baseline, trajectory_baseline, batched=(1, 2, 3), hessian=False,
          frozen=reinforce_baseline_frozen),
    _case(entropy_regularized_pg, trajectory, batched=(1, 2, 3)),
    _case(ppo_clip, ppo_args, batched=(1, 2, 3, 4)),
    _case(td0_semi_gradient, td_args, batched=(1, 2, 3), hessian=False,
          frozen=td0_semi_gradient_frozen),
    _case(td0_residual, td_args, batched=(1, 2, 3)),
    _case(td_lambda, td_lambda_args, batched=(1, 2), hessian=False, frozen=td_lambda_frozen),
    _case(discounted_returns_fit, td_lambda_args, batched=(1, 2)),
    _case(q_learning, q_args, batched=(1, 2, 3, 4), hessian=False, frozen=q_learning_frozen),
    # loops, early return, in-place writes
    _case(while_sum_squares, vector_and_int, batched=None),
    _case(for_break, vector_and_int, batched=None),
    _case(early_return, vector_and_int, batched=None),
    _case(early_return_in_loop, vector_and_int, batched=None),
    _case(horner, logistic, batched=None),
    _case(inplace_products, vector, batched=None),
    _case(inplace_cumsum, vector, batched=None),
    _case(inplace_slices, vector, batched=None),
    _case(inplace_accumulate, vector, batched=None),
    _case(inplace_matrix_rows, matrix_args, batched=(1,)),
    _case(conv1d, conv_args),
    _case(branch_on_data, logistic, batched=None),
]
