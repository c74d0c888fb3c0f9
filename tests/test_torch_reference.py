"""The sampler's softmax layer against PyTorch's attention, same weights, float64 (docs/verification.md §4.2)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import sympy as sp

from gemhsa_sym.layer.config import Config
from gemhsa_sym.layer.presets import PRESETS
from gemhsa_sym.layer.readings import Weights, draw_tokens, draw_weights, layer_output

torch = pytest.importorskip("torch")
F = torch.nn.functional

N = 64
#: d = 48 at n = 64: every preset's ratios scaled by 3/4.
SCALE = sp.Rational(3, 4)


def scaled(config: Config) -> Config:
    """``config`` with d, d_k, d_v, d_out scaled by 3/4 (n = 64 gives d = 48)."""
    ratios = config.ratios()
    return config.replace(**{key: ratios[key] * SCALE for key in ("d", "d_k", "d_v", "d_out")})


#: The presets of the attention layer's output with Gaussian tokens: torch's multi-head attention computes it.
CONFIGS = {name: scaled(config) for name, config in PRESETS.items()
           if config.target == "output" and config.tokens == "gaussian" and config.residual is None
           and not config.infinite_heads}
CONFIGS |= {
    "mha-beta": scaled(PRESETS["mha"].replace(beta="2.5")),
    "gqa-negative-beta": scaled(PRESETS["gqa"].replace(beta="-0.8")),
    "shared-q-and-kv": scaled(PRESETS["mqa"].replace(share_q=[[0, 3], [1, 2]], beta="1.3")),
    "tied-mqa": scaled(PRESETS["tied-kv"].replace(heads=4, d_k="1/4", d_v="1/4", share_k="all")),
    "correlated-gqa": scaled(
        PRESETS["correlated-kv"].replace(heads=4, d_k="1/4", d_v="1/4", share_k={"groups": 2}, rho="-0.3")
    ),
    "key-output-heads": scaled(PRESETS["key-output"].replace(heads=2, d_k="1/2", d_v="1/2", beta="0.6")),
    "causal-single-head": scaled(PRESETS["single-head"].replace(mask="causal")),
    "causal-gqa": scaled(PRESETS["gqa"].replace(mask="causal", beta="1.7")),
    "causal-tied-kv": scaled(PRESETS["tied-kv"].replace(mask="causal", beta="-0.9")),
}
#: Shapes outside torch's multi-head module (d_v != d_k, d_out != d, H d_k != d).
RECTANGULAR = {
    "rectangular": Config(n=N, d=48, d_k=16, d_v=8, d_out=40, heads=3, beta="0.7", share_q=[[0, 2], [1]]),
    "rectangular-tied": Config(n=N, d=40, d_k=12, d_out=56, heads=2, kv="tied", share_k="all", beta=2),
}


def draw(config: Config) -> tuple[np.ndarray, Weights, np.ndarray]:
    """Tokens, weights and the sampler's output Y for one draw at n = 64."""
    rng = np.random.default_rng(1)
    sizes = config.sizes(N)
    X = draw_tokens(sizes, rng)
    weights = draw_weights(config, sizes, rng)
    return X, weights, layer_output(config, weights, X)


def relative_error(Y: np.ndarray, reference: torch.Tensor) -> float:
    """||Y - reference|| / ||reference||."""
    reference = reference.numpy()
    return float(np.linalg.norm(Y - reference) / np.linalg.norm(reference))


def per_head_sdpa(config: Config, X: np.ndarray, weights: Weights) -> torch.Tensor:
    """sum_h sdpa(Q^h, K^h, V^h; scale = beta / sqrt(d_k), causal for a causal layer) W_O^h in torch float64."""
    x = torch.from_numpy(X)
    out = 0
    for h in range(config.heads):
        q, k, v = (x @ torch.from_numpy(p.head(h)) for p in (weights.query, weights.key, weights.value))
        scale = float(config.beta) / math.sqrt(q.shape[1])
        head = F.scaled_dot_product_attention(q[None], k[None], v[None], scale=scale, is_causal=config.mask == "causal")[0]
        out = out + head @ torch.from_numpy(weights.output[h])
    return out


def multi_head_module(config: Config, X: np.ndarray, weights: Weights) -> torch.Tensor:
    """torch's multi-head attention forward with the weights packed as its projections.

    Its head width is d / H and its scale 1 / sqrt(d / H); beta goes into W_Q. A causal layer passes the
    boolean mask that hides the keys j > i from query i.
    """
    heads = config.heads
    stack = lambda p: torch.from_numpy(np.concatenate([p.head(h) for h in range(heads)], axis=1))  # noqa: E731
    in_proj = torch.cat([stack(weights.query) * float(config.beta), stack(weights.key), stack(weights.value)], 1)
    out_proj = torch.from_numpy(np.concatenate(weights.output))
    x = torch.from_numpy(X)[:, None, :]
    hidden = torch.ones(len(X), len(X), dtype=torch.bool).triu(1) if config.mask == "causal" else None
    out, _ = F.multi_head_attention_forward(
        x, x, x, x.shape[-1], heads, in_proj.T.contiguous(), None, None, None, False, 0.0,
        out_proj.T.contiguous(), None, training=False, need_weights=False, attn_mask=hidden,
    )
    return out[:, 0, :]


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_against_scaled_dot_product_attention(name: str) -> None:
    config = CONFIGS[name]
    X, weights, Y = draw(config)
    assert relative_error(Y, per_head_sdpa(config, X, weights)) < 1e-10


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_against_multi_head_attention_module(name: str) -> None:
    config = CONFIGS[name]
    assert config.heads * config.d_k == config.d == config.d_out and config.d_v == config.d_k
    X, weights, Y = draw(config)
    assert relative_error(Y, multi_head_module(config, X, weights)) < 1e-10


@pytest.mark.parametrize("name", sorted(RECTANGULAR))
def test_rectangular_shapes(name: str) -> None:
    config = RECTANGULAR[name]
    X, weights, Y = draw(config)
    assert Y.shape == (N, config.sizes()["d_out"])
    assert relative_error(Y, per_head_sdpa(config, X, weights)) < 1e-10


@pytest.mark.parametrize(("preset", "alpha"), [("single-head", "1"), ("mha", "1/2"), ("key-output", "2")])
def test_residual_stream_against_multi_head_attention_module(preset: str, alpha: str) -> None:
    """R / sqrt(n) = X / sqrt(n) + alpha Y with Y torch's multi-head attention (docs/extensions.md §8.4)."""
    config = scaled(PRESETS[preset]).replace(residual=alpha)
    X, weights, R = draw(config)
    reference = torch.from_numpy(X) / math.sqrt(N) + float(sp.Rational(alpha)) * multi_head_module(config, X, weights)
    assert relative_error(R, reference) < 1e-10


@pytest.mark.parametrize("tokens", ["gaussian", "orthonormal"])
def test_attention_matrix_against_torch_softmax(tokens: str) -> None:
    """sqrt(n) (A - J) with A = softmax(beta Q K^T / sqrt(d_k)) by torch (docs/extensions.md §8.1)."""
    from gemhsa_sym.layer.readings import layer_of

    config = Config(n=N, d=N, d_k=N // 2, target="attention", tokens=tokens, beta="1.3")
    layer, rng = layer_of(config), np.random.default_rng(4)
    sizes = config.sizes()
    X = layer.draw_tokens(sizes, rng)
    weights = layer.draw_weights(sizes, rng)
    M = layer.output(weights, X)
    x = torch.from_numpy(X)
    q, k = x @ torch.from_numpy(weights.query.head(0)), x @ torch.from_numpy(weights.key.head(0))
    A = torch.softmax(1.3 * q @ k.T / math.sqrt(N // 2), dim=1)
    assert relative_error(M, math.sqrt(N) * (A - 1.0 / N)) < 1e-12
    if tokens == "orthonormal":
        np.testing.assert_allclose(X @ X.T, N * np.eye(N), atol=1e-10)


@pytest.mark.parametrize("model", ["softmax", "ge", "ge_without_uniform"])
def test_causal_attention_matrix_against_torch(model: str) -> None:
    """sqrt(n) (A - C) with A torch's softmax under the causal mask and C the causal average (row i: 1/i on j <= i), or
    for the equivalent A_ij = (c_0 + mu_1 S_ij + sigma Z_ij) / i on j <= i (docs/equations.md §2.11): with row
    normalisation c_0 = 1, so both equivalent readings are sqrt(n) (mu_1 S + sigma Z)_ij / i."""
    from gemhsa_sym.layer.readings import ge_coefficients, layer_of

    config = Config(n=N, d=N, d_k=N // 2, target="attention", mask="causal", beta="1.3")
    layer, rng = layer_of(config), np.random.default_rng(4)
    sizes = config.sizes()
    X = layer.draw_tokens(sizes, rng)
    weights = layer.draw_weights(sizes, rng)
    M = layer.output(weights, X, model, np.random.default_rng(3))
    x = torch.from_numpy(X)
    q, k = x @ torch.from_numpy(weights.query.head(0)), x @ torch.from_numpy(weights.key.head(0))
    rows = torch.arange(1, N + 1, dtype=torch.float64)[:, None]
    causal_average = torch.tril(torch.ones(N, N, dtype=torch.float64)) / rows
    if model == "softmax":
        mask = torch.ones(N, N, dtype=torch.bool).tril()
        A = torch.softmax((1.3 * q @ k.T / math.sqrt(N // 2)).masked_fill(~mask, -math.inf), dim=1)
    else:
        c0, mu1, sigma = ge_coefficients(config)
        assert c0 == 1.0
        noise = torch.from_numpy(np.random.default_rng(3).standard_normal((N, N)))
        A = torch.tril(c0 + mu1 * q @ k.T / math.sqrt(N // 2) + sigma * noise) / rows
    assert relative_error(M, math.sqrt(N) * (A - causal_average)) < 1e-12


@pytest.mark.parametrize("name", ["causal-single-head", "causal-gqa"])
@pytest.mark.parametrize("model", ["ge", "ge_without_uniform"])
def test_causal_gaussian_equivalent_draw(name: str, model: str) -> None:
    """The causal Gaussian-equivalent draw is sum_h A^h V^h W_O^h with A^h_ij = (c_0 + mu_1 S^h_ij + sigma Z^h_ij) / i
    below the diagonal and 0 above, Z^h the next n x n normals of the draw's generator, and without c_0 the reading
    ``ge_without_uniform`` (docs/extensions.md §8.6), which a bidirectional layer refuses."""
    from gemhsa_sym.layer.readings import ge_coefficients, layer_of

    config = CONFIGS[name]
    layer, rng = layer_of(config), np.random.default_rng(9)
    sizes = config.sizes(N)
    X = layer.draw_tokens(sizes, rng)
    weights = layer.draw_weights(sizes, rng)
    Y = layer.output(weights, X, model, np.random.default_rng(3))
    c0, mu1, sigma = ge_coefficients(config)
    c0 *= model == "ge"
    noise, x = np.random.default_rng(3), torch.from_numpy(X)
    reference = 0
    for h in range(config.heads):
        q, k, v = (x @ torch.from_numpy(p.head(h)) for p in (weights.query, weights.key, weights.value))
        bracket = c0 + mu1 * q @ k.T / math.sqrt(q.shape[1]) + sigma * torch.from_numpy(noise.standard_normal((N, N)))
        A = torch.tril(bracket) / torch.arange(1, N + 1, dtype=torch.float64)[:, None]
        reference = reference + A @ v @ torch.from_numpy(weights.output[h])
    assert relative_error(Y, reference) < 1e-12
    bidirectional = layer_of(config.replace(mask="none"))
    with pytest.raises(ValueError, match="model: 'ge_without_uniform' does not read this layer"):
        bidirectional.output(weights, X, "ge_without_uniform", np.random.default_rng(3))
