"""Networks of transformer blocks (docs/extensions.md §8.7): the description, the sampler against PyTorch's encoder
layer with the same weights in float64, the plain block against the residual stream, and the three depth regimes."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import sympy as sp

from gemhsa_sym.cli import main
from gemhsa_sym.laws.resolve import law_of
from gemhsa_sym.layer.config import Config
from gemhsa_sym.layer.network import Network, description_from_dict
from gemhsa_sym.layer.presets import read_input
from gemhsa_sym.layer.scores import ACTIVATIONS
from gemhsa_sym.sampling.network import BlockWeights, draw_block_weights, network_outputs
from gemhsa_sym.sampling.result import SampleResult
from gemhsa_sym.sampling.sampler import network_spectra, sample, spectrum
from gemhsa_sym.verification.depth import depth

torch = pytest.importorskip("torch")
F = torch.nn.functional

#: One block's fields at n = 40 (d = 24, two heads, d_ff = 30), with the variants torch's encoder layer is checked on.
BASE = dict(n=40, d=24, heads=2, residual="1/2", d_ff=30, alpha_mlp="3/4", layers=2)
VARIANTS = {
    "pre-layer-relu": dict(norm="layer"),
    "post-layer-relu": dict(norm="layer", norm_position="post"),
    "pre-rms-gelu": dict(norm="rms", activation="gelu"),
    "pre-layer-tanh-causal": dict(norm="layer", activation="tanh", mask="causal"),
    "post-rms-identity-causal": dict(norm="rms", norm_position="post", activation="identity", mask="causal", beta="3/2"),
    "no-norm-relu": dict(beta="-0.7"),
}
ACTIVATION = {"relu": F.relu, "gelu": F.gelu, "tanh": torch.tanh, "identity": lambda x: x}


def _norm(kind: str, d: int) -> torch.nn.Module:
    """PyTorch's norm of the network's: LayerNorm or RMSNorm without affine map and with eps = 0."""
    if kind == "layer":
        return torch.nn.LayerNorm(d, eps=0.0, elementwise_affine=False, bias=False, dtype=torch.float64)
    if kind == "rms":
        return torch.nn.RMSNorm(d, eps=0.0, elementwise_affine=False, dtype=torch.float64)
    return torch.nn.Identity()


def torch_block(network: Network, block: BlockWeights, n: int, d: int) -> torch.nn.Module:
    """``torch.nn.TransformerEncoderLayer`` with the block's weights: W_Q times beta, W_O times alpha sqrt(n), W2 times
    alpha_mlp (torch scales the scores by 1/sqrt(d / H) itself)."""
    layer, weights = network.layer, block.attention
    heads = range(layer.heads)
    encoder = torch.nn.TransformerEncoderLayer(
        d, layer.heads, dim_feedforward=block.w1.shape[1], dropout=0.0, activation=ACTIVATION[network.activation],
        batch_first=True, norm_first=network.norm_position == "pre", bias=False, dtype=torch.float64)
    in_proj = np.concatenate([np.concatenate([projection.head(h) for h in heads], axis=1)
                              for projection in (weights.query, weights.key, weights.value)], axis=1)
    in_proj[:, : d] *= float(layer.beta)
    out_proj = np.concatenate(weights.output, axis=0) * float(layer.residual) * np.sqrt(n)
    with torch.no_grad():
        encoder.self_attn.in_proj_weight.copy_(torch.from_numpy(in_proj.T))
        encoder.self_attn.out_proj.weight.copy_(torch.from_numpy(out_proj.T))
        encoder.linear1.weight.copy_(torch.from_numpy(block.w1.T))
        encoder.linear2.weight.copy_(torch.from_numpy(block.w2.T * float(network.alpha_mlp)))
    encoder.norm1, encoder.norm2 = _norm(network.norm, d), _norm(network.norm, d)
    return encoder


@pytest.mark.parametrize("name", list(VARIANTS))
def test_every_layer_equals_torch_encoder_layers(name: str) -> None:
    network = description_from_dict(BASE | VARIANTS[name])
    assert isinstance(network, Network)
    sizes = network.sizes()
    rng = np.random.default_rng(3)
    X = rng.standard_normal((sizes["n"], sizes["d"]))
    weights = draw_block_weights(network, sizes, rng)
    outputs = network_outputs(network, weights, X)
    causal = network.layer.mask_rule.causal
    mask = torch.nn.Transformer.generate_square_subsequent_mask(sizes["n"], dtype=torch.float64) if causal else None
    x = torch.from_numpy(X)[None]
    with torch.no_grad():
        for block, output in zip(weights, outputs, strict=True):
            x = torch_block(network, block, sizes["n"], sizes["d"])(x, src_mask=mask, is_causal=causal)
            assert np.abs(x[0].numpy() - output).max() <= 1e-10 * np.abs(output).max()
    assert len(outputs) == 2 and not np.allclose(outputs[0], outputs[1])


def test_centred_attention_subtracts_the_average_of_the_values() -> None:
    """attention = 'centred': A - 11^T/n (bidirectional) or A less the causal average, checked on a layer without MLP
    whose value and output weights are read back: the difference of the two outputs is alpha sqrt(n) M V W_O."""
    for mask in ("none", "causal"):
        spec = dict(n=30, d=12, heads=1, residual="1", layers=1, mask=mask)
        plain, centred = description_from_dict(spec), description_from_dict(spec | dict(attention="centred"))
        assert isinstance(plain, Config) and isinstance(centred, Network)
        sizes = centred.sizes()
        rng = np.random.default_rng(5)
        X = rng.standard_normal((sizes["n"], sizes["d"]))
        weights = draw_block_weights(centred, sizes, rng)
        values = X @ weights[0].attention.value.head(0)
        counts = np.arange(1, 31)[:, None] if mask == "causal" else 30
        average = (np.cumsum(values, axis=0) if mask == "causal" else values.sum(axis=0)) / counts
        expected = np.sqrt(30) * np.broadcast_to(average, values.shape) @ weights[0].attention.output[0]
        softmax = network_outputs(Network(plain, layers=1), weights, X)[0]
        assert np.allclose(softmax - network_outputs(centred, weights, X)[0], expected, atol=1e-12)


def test_one_plain_block_is_the_residual_stream() -> None:
    """A network of one block without norm, MLP or centring reads as its layer (whose law is the residual stream's),
    and its draws equal the layer's, seed for seed."""
    config = Config(heads=2, residual="1/2", beta="3/2")
    assert description_from_dict(config.to_dict() | {"layers": 1}) == config
    network = Network(config)
    assert network.plain
    drawn, direct = sample(network, n=60, draws=2, seed=4), sample(config, n=60, draws=2, seed=4)
    assert np.allclose(drawn.eigenvalues, direct.eigenvalues, rtol=1e-10, atol=1e-12)


def test_a_network_round_trips_and_reads_a_layer(tmp_path: Path) -> None:
    network = description_from_dict(BASE | dict(norm="rms", layers=3, target="layer:2", attention="centred"))
    assert isinstance(network, Network) and network.read_layer == 2
    path = tmp_path / "net.toml"
    path.write_text(network.to_toml(), encoding="utf-8")
    assert read_input(path) == network
    assert network.replace(layers=4).layers == 4 and network.replace(target="output").read_layer == 3
    second = network_spectra(network, network.sizes(), np.random.default_rng(1))
    rng = np.random.default_rng(1)
    X = rng.standard_normal((40, 24))
    outputs = network_outputs(network, draw_block_weights(network, network.sizes(), rng), X)
    assert len(outputs) == 3 and np.allclose(second, spectrum(outputs[1] / np.sqrt(40)), rtol=1e-12, atol=1e-12)


def test_a_sample_of_a_network_is_saved_and_read_back(tmp_path: Path) -> None:
    network = description_from_dict(BASE | dict(norm="layer"))
    result = sample(network, draws=2, seed=7)
    result.save_npz(tmp_path / "s.npz")
    back = SampleResult.load_npz(tmp_path / "s.npz")
    assert back.config == network and np.array_equal(back.eigenvalues, result.eigenvalues)
    assert back.sizes["d_ff"] == 30


@pytest.mark.parametrize(("changes", "message"), [
    ({"layers": 0}, "layers: need 1..64 layers"),
    ({"layers": "10**9"}, "layers: need 1..64 layers"),
    ({"layers": "1.5"}, "layers: expected an integer"),
    ({"norm": "batch"}, "norm: unknown option 'batch'"),
    ({"norm_position": "post"}, "norm_position: a position of the norm, given without one"),
    ({"activation": "swish"}, "activation: unknown option 'swish'"),
    ({"attention": "linear"}, "attention: unknown option 'linear'"),
    ({"d_ff": "-1"}, "d_ff: d_ff / n must be a rational"),
    ({"d_ff": "31/2"}, "d_ff: the layer is given in sizes (n = 40), so d_ff must be an integer size"),
    ({"d_ff": None, "alpha_mlp": 2}, "alpha_mlp: a field of the MLP, given without its width d_ff"),
    ({"alpha_mlp": "__import__('os')"}, "alpha_mlp: cannot read"),
    ({"target": "layer:3"}, "target: 'layer:3' is not a layer of this network (1..2)"),
    ({"target": "layer:x"}, "target: expected an integer"),
    ({"residual": None}, "residual: a block adds its attention branch"),
    ({"d_out": 12}, "residual: R = X + alpha sqrt(n) Y needs d_out == d"),
    ({"heads": "oo", "d": None, "n": 1, "d_ff": 1}, "heads: a network is drawn"),
    ({"normalisation": "none", "attention": "centred"}, "attention: 'centred' subtracts the rows' average"),
])
def test_bad_block_fields_name_the_field(changes: dict[str, object], message: str) -> None:
    data = {key: value for key, value in (BASE | changes).items() if value is not None}
    with pytest.raises(ValueError) as error:
        description_from_dict(data)
    assert str(error.value).startswith(message)


def test_a_deep_network_without_a_law_says_why(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    network = description_from_dict(BASE | dict(norm="layer"))
    with pytest.raises(NotImplementedError, match="heads: from layer 2 on each head's keys get weights of their own"):
        law_of(network)
    path = tmp_path / "net.toml"
    path.write_text(network.to_toml(), encoding="utf-8")
    for argv in (["derive", str(path)], ["verify", str(path), "--n", "40"], ["sample", str(path), "--model", "ge"]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "heads: from layer 2 on" in err
    assert main(["sample", str(path), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["config"]["layers"] == 2 and len(summary["moments"]) == 4


def test_the_three_depth_regimes() -> None:
    """One head, d_k = d = n, beta = alpha = alpha_mlp = 1, LayerNorm, ReLU MLP with d_ff = n, one draw at n = 300
    (docs/extensions.md §8.7): post-norm collapses layer by layer, pre-norm freezes after layer 2, pre-norm with
    centred attention keeps spreading."""
    means = {label: depth(description_from_dict(dict(n=300, heads=1, residual=1, layers=4, norm="layer", d_ff=300) | spec),
                          [300], laws=None).mean(300)
             for label, spec in {"post": dict(norm_position="post"), "pre": {}, "centred": dict(attention="centred")}.items()}
    post, pre, centred = means["post"], means["pre"], means["centred"]
    assert 0.5 < post[0] < 1 and post[1] < post[0] / 10 and all(post[k + 1] < post[k] / 50 for k in (1, 2))
    assert 3 < pre[0] < 5 and 5 < pre[1] < 8 and np.all(np.abs(np.diff(pre[1:])) < 0.01 * pre[1])
    assert 3 < centred[0] < 5 and all(centred[k + 1] > 1.6 * centred[k] for k in range(3))


def test_depth_tells_the_three_regimes_apart(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """gemhsa-sym depth at n = 150, 300, 600 (one draw): post-norm collapses from layer 2 with a rate in n that grows with
    depth, pre-norm freezes after layer 2, centred attention keeps changing; the law is beside every layer where the engine
    has it, for the layers shown (pre-norm: layer 2's at every later layer, within 10% of the real network's mean)."""
    base = dict(heads=1, residual=1, layers=4, norm="layer", d_ff=1)
    results = {label: depth(description_from_dict(base | spec), [150, 300, 600], laws=None)
               for label, spec in {"post": dict(norm_position="post"), "pre": {}, "centred": dict(attention="centred")}.items()}
    post = results["post"].verdicts()
    assert [v["verdict"] for v in post] == ["changing", "collapsed", "collapsed", "collapsed"]
    assert post[1]["rate"]["exponent"] > post[2]["rate"]["exponent"] > post[3]["rate"]["exponent"]
    assert results["post"].summary().startswith("collapsed from layer 2 on")
    assert [v["verdict"] for v in results["pre"].verdicts()] == ["changing", "changing", "frozen", "frozen"]
    assert [v["verdict"] for v in results["centred"].verdicts()] == ["changing"] * 4
    path = tmp_path / "deep.toml"  # attention only, alpha = 1/2: the layer-2 law of tests/test_network_law.py
    path.write_text(description_from_dict(dict(residual="1/2", layers=3, norm="layer")).to_toml(), encoding="utf-8")
    assert main(["depth", str(path), "--n", "100,200", "--layers", "2:3", "--json", "--plot", str(tmp_path / "d.png")]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["network"]["layers"] == 3 and len(report["verdicts"]) == 3 and (tmp_path / "d.png").is_file()
    first, second, third = report["theory"]  # the layers shown: 2 (the key-weighted law) and 3 (frozen: layer 2's)
    assert first["reason"] == "not asked" and second["top"] is None and third["mean"] == second["mean"]
    assert abs(second["mean"] - report["figures"]["200"]["layers"][1]["mean"]) < 0.1 * second["mean"]
    assert main(["depth", "single-head", "--n", "100"]) == 2
    assert capsys.readouterr().err.startswith("gemhsa-sym: error: config: single-head is one plain layer")


@pytest.mark.parametrize("name", list(ACTIVATIONS))
def test_each_activation_reads_the_same_three_ways(name: str) -> None:
    """The numpy, SymPy and torch forms of an activation agree (the sampler, the Hermite data and the torch backend)."""
    activation = ACTIVATIONS[name]
    x = np.array([-2.5, -0.3, 0.0, 0.7, 3.1])
    symbolic = np.array([float(activation.symbolic(sp.Float(v, 30))) for v in x])
    assert np.allclose(activation.numeric(x), symbolic, rtol=1e-14, atol=1e-15)
    assert np.allclose(activation.tensor(torch.from_numpy(x)).numpy(), symbolic, rtol=1e-14, atol=1e-15)
