"""The real network of docs/extensions.md §8.7, drawn: tokens, then every layer's weights, then the blocks.

Each layer's attention is its :class:`~gemhsa_sym.layer.readings.AttentionLayer`'s softmax output (the layer's
configuration without its residual weight, so the same sharing, value and output rules, score and mask); the
block adds the stream, the norms and the MLP. Everything is float64 numpy, in the sampler's units (tokens N(0, 1)).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gemhsa_sym.layer.network import Network
from gemhsa_sym.layer.readings import AttentionLayer, Weights, layer_of
from gemhsa_sym.layer.scores import ACTIVATIONS

__all__ = ["BlockWeights", "draw_block_weights", "draw_network", "network_bytes", "network_outputs", "token_norm"]


@dataclass(frozen=True, eq=False)
class BlockWeights:
    """One layer's weights: its attention's, and the MLP's W1 (d x d_ff, N(0, 1/d)) and W2 (d_ff x d, N(0, 1/d_ff)),
    None without MLP."""

    attention: Weights
    w1: np.ndarray | None
    w2: np.ndarray | None


def _attention_layer(network: Network) -> AttentionLayer:
    """The attention of every layer: the network's layer without its residual weight."""
    return layer_of(network.layer.replace(residual=None))


def draw_block_weights(network: Network, sizes: dict[str, int], rng: np.random.Generator) -> list[BlockWeights]:
    """Every layer's weights from ``rng``, layer by layer: the attention's (:meth:`AttentionLayer.draw_weights`), then
    W1 and W2."""
    attention, out = _attention_layer(network), []
    for _ in range(network.layers):
        weights = attention.draw_weights(sizes, rng)
        w1 = w2 = None
        if network.d_ff is not None:
            d, d_ff = sizes["d"], sizes["d_ff"]
            w1 = rng.normal(0.0, d**-0.5, (d, d_ff))
            w2 = rng.normal(0.0, d_ff**-0.5, (d_ff, d))
        out.append(BlockWeights(weights, w1, w2))
    return out


def token_norm(norm: str, X: np.ndarray) -> np.ndarray:
    """N(X) row by row over the features: ``layer`` centres each row and divides it by its RMS, ``rms`` divides it by its
    RMS, ``none`` leaves it (no eps, no affine map; docs/extensions.md §8.7)."""
    if norm == "none":
        return X
    if norm == "layer":
        X = X - X.mean(axis=1, keepdims=True)
    return X / np.sqrt(np.mean(X * X, axis=1, keepdims=True))


def _mhsa(network: Network, weights: Weights, X: np.ndarray) -> np.ndarray:
    """The attention output sum_h A^h V^h W_O^h of these tokens, with ``attention = "centred"`` less sum_h M V^h W_O^h,
    M = 11^T/n, or for a causal mask the causal average (row i: 1/i on the keys j <= i)."""
    Y = _attention_layer(network).output(weights, X, "softmax")
    if network.attention == "centred":
        for h, w_o in enumerate(weights.output):
            v = X @ weights.value.head(h)
            if network.layer.mask_rule.causal:
                average = np.cumsum(v, axis=0) / np.arange(1, len(X) + 1)[:, None]
            else:
                average = np.broadcast_to(v.mean(axis=0), v.shape)
            Y -= average @ w_o
    return Y


def network_outputs(network: Network, weights: list[BlockWeights], X: np.ndarray) -> list[np.ndarray]:
    """Every layer's output (n x d), in the sampler's units: the blocks of docs/extensions.md §8.7 applied in turn."""
    alpha, scale = float(network.layer.residual), np.sqrt(len(X))
    phi, norm = ACTIVATIONS[network.activation].numeric, network.norm
    outputs = []
    for block in weights:
        pre = network.norm_position == "pre"
        U = X + (alpha * scale) * _mhsa(network, block.attention, token_norm(norm, X) if pre else X)
        if not pre:
            U = token_norm(norm, U)
        if block.w1 is not None:
            hidden = phi((token_norm(norm, U) if pre else U) @ block.w1)
            U = U + float(network.alpha_mlp) * (hidden @ block.w2)
            if not pre:
                U = token_norm(norm, U)
        outputs.append(U)
        X = U
    return outputs


def draw_network(network: Network, sizes: dict[str, int], rng: np.random.Generator, layers: int | None = None) -> list[np.ndarray]:
    """One draw from ``rng``: the tokens (the layer's token rule), every layer's weights, then the outputs of the first
    ``layers`` blocks (all by default)."""
    X = layer_of(network.layer).draw_tokens(sizes, rng)
    weights = draw_block_weights(network, sizes, rng)
    return network_outputs(network, weights if layers is None else weights[:layers], X)


def network_bytes(network: Network, sizes: dict[str, int]) -> int:
    """An upper estimate of one draw's memory (docs/conventions.md §6.8): every layer's weights and output, one
    layer's attention draw (the n x n scores of a head, twice, and the values), the MLP's hidden layer and the
    eigensolver's work."""
    n, d, d_k, d_v = (sizes[k] for k in ("n", "d", "d_k", "d_v"))
    heads, d_ff = network.layer.heads, sizes.get("d_ff", 0)
    per_layer = heads * (3 * d * d_k + 2 * d_v * d) + 2 * d * d_ff + n * d
    work = 3 * n * n + 2 * n * (d_ff + heads * (2 * d_k + d_v)) + 4 * n * d + 4 * min(n, d) ** 2
    return 8 * (network.layers * per_layer + work)

