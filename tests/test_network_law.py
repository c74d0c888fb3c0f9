"""The law of a network's first block and of layer 2 (docs/extensions.md §8.7): the MLP's equivalent against the
conjugate-kernel law of Fan & Wang (2020) solved independently, the neurons' Hermite data against closed forms, the
constants of the norms against the hand derivation, and the laws against the real network's Monte Carlo."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import sympy as sp
from scipy.integrate import quad
from scipy.stats import ks_2samp

import gemhsa_sym as gs
from gemhsa_sym.cli import main
from gemhsa_sym.export.exact import from_tree, tree
from gemhsa_sym.laws.resolve import law_of
from gemhsa_sym.layer.hermite import neuron_levels
from gemhsa_sym.layer.network import description_from_dict
from gemhsa_sym.layer.network_equivalent import COLLAPSED_LEVELS, network_equivalent


def _silverstein(z: complex, nodes: np.ndarray, weights: np.ndarray, c: float) -> complex:
    """m(z) = int dnu(t) / (t (1 - c - c z m) - z): the Stieltjes transform (convention 1/(lambda - z)) of the sample
    covariance of N = p / c samples with population law nu (Silverstein), by damped fixed-point iteration."""
    m = -1 / z
    for _ in range(50_000):
        new = np.sum(weights / (nodes * (1 - c - c * z * m) - z))
        if abs(new - m) < 1e-15:
            return new
        m = (m + new) / 2
    raise AssertionError("the fixed point did not settle")


def _shifted_mp(b2: float, ratio: float, points: int = 400) -> tuple[np.ndarray, np.ndarray]:
    """Nodes and weights of nu = (1 - b^2) + b^2 mu_0, mu_0 the Marchenko-Pastur law of X X^T / d (ratio n / d): its atom
    at 0 and its density, integrated in theta (t = centre + radius cos theta) by the midpoint rule."""
    low, high = (1 - ratio**0.5) ** 2, (1 + ratio**0.5) ** 2
    theta = (np.arange(points) + 0.5) * np.pi / points
    t = (low + high) / 2 + (high - low) / 2 * np.cos(theta)
    weights = ((high - low) / 2) ** 2 * np.sin(theta) ** 2 / (2 * np.pi * ratio * t) * (np.pi / points)
    nodes = 1 - b2 + b2 * t
    if ratio > 1:
        nodes, weights = np.append(nodes, 1 - b2), np.append(weights, 1 - 1 / ratio)
    return nodes, weights


@pytest.mark.parametrize("activation", ["relu", "tanh", "gelu"])
def test_the_hidden_layer_is_the_conjugate_kernel_of_fan_and_wang(activation: str) -> None:
    """phi(X W) of tokens X (n x d) and W (d x f), by its equivalent mu_1 X W + mu_* Z with the package's Hermite data,
    against Fan & Wang's conjugate kernel (1/f) s(XW) s(XW)^T -> MP(n/f) boxtimes ((1 - b^2) + b^2 MP(n/d)), s = (phi -
    mu_0)/sqrt(V) and b = mu_1/sqrt(V), solved by Silverstein's equation: m(w) at three points to 1e-10."""
    n, d, f = gs.Dim("n"), gs.Dim("d"), gs.Dim("f")
    rd, rf = sp.Rational(1, 2), sp.Rational(3, 2)
    (mu0, mu1, sigma2), = neuron_levels(activation, sp.Integer(1), sp.Integer(0)).data
    X, W, Z = gs.Gaussian("X", n, d), gs.Gaussian("W", d, f, scale=1 / rd), gs.Gaussian("Z", n, f)
    law = gs.law(mu1 * X * W + sp.sqrt(sigma2) * Z, ratios={n: 1, d: rd, f: rf})
    variance = float(mu1**2 + sigma2)
    nodes, weights = _shifted_mp(float(mu1**2) / variance, float(1 / rd))
    c, scale = float(1 / rf), variance * float(rf)  # the engine's law: Y^T Y (f x f) = V (f / n) s^T s / f
    for w in (1 + 1j, 0.3 + 0.2j, 2 + 0.1j):
        kernel = _silverstein(w / scale, nodes, weights, c)
        features = c * kernel - (1 - c) / (w / scale)  # the f x f Gram: the kernel's eigenvalues and f - n zeros
        assert abs(-features / scale - complex(law.stieltjes(w))) < 1e-10


def test_neuron_levels_have_the_closed_forms_of_relu() -> None:
    """Without bias: mu_0 = 1/sqrt(2 pi), mu_1 = 1/2, mu_*^2 = 1/4 - 1/(2 pi), exactly. With a bias b of variance 1/4 at
    input variance 3/4 (s = sqrt 3 / 2): E relu(b + s g) = b Phi(b/s) + s phi(b/s), E g relu(b + s g) = s Phi(b/s),
    E relu^2 = (b^2 + s^2) Phi(b/s) + b s phi(b/s), at every Gauss-Hermite node; the weights sum to 1 exactly."""
    (mu0, mu1, sigma2), = neuron_levels("relu", sp.Integer(1), sp.Integer(0)).data
    assert sp.simplify(mu0 - 1 / sp.sqrt(2 * sp.pi)) == 0 and mu1 == sp.Rational(1, 2)
    assert sp.simplify(sigma2 - (sp.Rational(1, 4) - 1 / (2 * sp.pi))) == 0
    levels = neuron_levels("relu", sp.Rational(3, 4), sp.Rational(1, 4))
    assert sum(levels.weights) == 1 and len(levels.weights) == 8
    nodes, _ = np.polynomial.hermite_e.hermegauss(8)
    s = math.sqrt(3) / 2
    for node, (m0, m1, var) in zip(nodes, levels.data):
        b = node / 2
        cdf, pdf = 0.5 * math.erfc(-b / s / math.sqrt(2)), math.exp(-((b / s) ** 2) / 2) / math.sqrt(2 * math.pi)
        first, gain = b * cdf + s * pdf, s * cdf
        second = (b * b + s * s) * cdf + b * s * pdf
        assert abs(float(m0) - first) < 1e-13 and abs(float(m1) - gain) < 1e-13
        assert abs(float(var) - (second - first**2 - gain**2)) < 1e-13


def test_the_norms_divide_by_the_constants_derived_by_hand() -> None:
    """One head at unit ratios, beta = alpha = 1: the stream's mean m_R = 1 + e, the common vector's kappa = 1; after a
    pre-norm the law is the residual stream's, moment for moment; after a post-norm it is that law over 2 + e, so its
    mean is (1 + e) / (2 + e)."""
    residual = gs.law(gs.load("residual"))
    pre = law_of(description_from_dict({"residual": 1, "norm": "rms", "layers": 2, "target": "layer:1"}))
    post = law_of(description_from_dict({"residual": 1, "norm": "layer", "norm_position": "post"}))
    assert [sp.simplify(a - b) for a, b in zip(pre.moments(3), residual.moments(3))] == [0, 0, 0]
    assert sp.simplify(post.moments(1)[0] - (1 + sp.E) / (2 + sp.E)) == 0
    assert sp.simplify(post.moments(2)[0 + 1] - residual.moments(2)[1] / (2 + sp.E) ** 2) == 0
    constants = network_equivalent(post.source).constants
    assert constants["m_R"] == 1 + sp.E and constants["kappa"] == 1


#: Two post-LN layers, attention only, one head, beta = alpha = 1: a stack that collapses after layer 2.
POST = {"residual": 1, "norm": "layer", "norm_position": "post", "layers": 2}


def test_a_post_norm_stack_collapses_to_a_law_of_n_times_its_eigenvalues() -> None:
    """After layer l >= 2 of a post-norm stack the object is n^(l - 1) times the eigenvalues (docs/extensions.md §8.7):
    the common vector of layer 2 has alpha^2 kappa_1 n per entry, kappa_1 = 1 / (2 + e) the first block's (alpha = 1:
    m_R = 1 + e, kappa = 1, over s_1^2 = 2 + e), that of every later layer alpha^2 n. At n = 400 (4 draws each) the real
    network's spectrum after layers 2 and 3, each draw over its median, has the shape of the equivalent's draws (KS 0.009
    and 0.011), which a plain layer 1 does not have (0.06); the medians agree within their scale's spread between draws
    (relative sd about sqrt(10 / n) after layer 2, two more factors after layer 3)."""
    network = description_from_dict(POST)
    assert network.collapse == 1 and network.spectral_object.startswith("n times the eigenvalues of out^T P out / n")
    assert [description_from_dict(POST | change).collapse for change in
            ({"layers": 3, "target": "layer:1"}, {"layers": 3}, {"attention": "centred"}, {"norm_position": "pre"})] == [0, 2, 0, 0]
    constants = network_equivalent(network.replace(layers=3)).constants
    assert sp.simplify(constants["K (layer 2)"] - 1 / (2 + sp.E)) == 0 and sp.simplify(constants["m_1"] - (1 + sp.E) / (2 + sp.E)) == 0
    assert constants["K (layer 3)"] == 1

    def shape(spectra: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        return np.concatenate([s / np.median(s) for s in spectra]), np.array([np.median(s) for s in spectra])

    first, _ = shape(gs.sample(network.replace(layers=1), 400, draws=4, seed=4, reading="ge").eigenvalues)
    for layers, factors in ((2, 10), (3, 14)):
        stack = network.replace(layers=layers)
        real, medians = shape(gs.sample(stack, 400, draws=4, seed=3).eigenvalues)
        ge, ge_medians = shape(gs.sample(stack, 400, draws=4, seed=4, reading="ge").eigenvalues)
        assert ks_2samp(real, ge).statistic < 0.025 < 0.045 < ks_2samp(real, first).statistic
        assert abs(medians.mean() / ge_medians.mean() - 1) < 3 * math.sqrt(factors / 400 / 4)


def test_slopes_on_a_collapsed_stream() -> None:
    """neuron_levels at input variance 0 (a collapsed stream): levels of the slope phi'(b), without noise; relu's are
    two, half the neurons at slope 1 and half at 0, with E relu(b)^2 = 1/2; the identity's one; GELU's 16 give E phi'(b)
    and E phi'(b)^2 as scipy's quadrature does, within 1e-12 and 3e-5 (docs/extensions.md §8.7)."""
    relu = neuron_levels("relu", sp.Integer(0), sp.Integer(1))
    assert [float(slope) for _, slope, _ in relu.data] == [0.0, 1.0] and all(var == 0 for _, _, var in relu.data)
    assert [abs(w - sp.Rational(1, 2)) < 1e-14 for w in relu.weights] == [True, True] and abs(relu.common - 0.5) < 1e-14
    assert len(neuron_levels("identity", sp.Integer(0), sp.Integer(1)).weights) == 1
    gelu = neuron_levels("gelu", sp.Integer(0), sp.Integer(1), COLLAPSED_LEVELS)

    def slope(x: float) -> float:
        return 0.5 * math.erfc(-x / math.sqrt(2)) + x * math.exp(-x * x / 2) / math.sqrt(2 * math.pi)

    for power, tol in ((1, 1e-12), (2, 3e-5)):
        exact = quad(lambda x: slope(x) ** power * math.exp(-x * x / 2) / math.sqrt(2 * math.pi), -np.inf, np.inf)[0]
        assert abs(float(sum(w * s**power for w, (_, s, _) in zip(gelu.weights, gelu.data))) - exact) < tol


@pytest.mark.slow
def test_centred_attention_after_a_post_norm_block_against_the_real_network() -> None:
    """Two post-LN layers with centred attention: no common vector, so no collapse; layer 2's stream over the exact mean of
    its law (mean 1, second moment 16.109; about 50 s) against the real network at n = 1000 and 2000 (2 draws, seed 0):
    KS within the floor + 0.002 at n = 2000 (measured 0.0032 against 0.00175) and shrinking; the equivalent's draws
    within the floor + 0.002 (0.0021, 0.0014)."""
    result = gs.verify(description_from_dict(POST | {"attention": "centred"}), [1000, 2000], draws=2, seed=0)
    small, large = result.comparisons
    assert large.ks["theory_softmax"] <= large.floor["ks"] + 0.002 and large.ks["theory_softmax"] < small.ks["theory_softmax"]
    assert all(c.ks["theory_ge"] <= c.floor["ks"] + 0.002 for c in result.comparisons)


@pytest.mark.slow
@pytest.mark.parametrize("change", [{}, {"d_ff": 1, "activation": "relu"}, {"layers": 3}],
                         ids=["attention", "relu-mlp", "layer-3"])
def test_the_collapsed_law_against_the_real_network(change: dict[str, object]) -> None:
    """The law of n^(l - 1) times the eigenvalues after layer l (20 to 70 s) at n = 1000 and 2000 (2 draws, seed 0): the
    equivalent's draws within the floor + 0.002, and the real network within 0.01 at n = 2000 (measured 0.0023, 0.0055
    and 0.0061), its distance dominated by the common vector's size, which moves between draws like n^-1/2."""
    result = gs.verify(description_from_dict(POST | change), [1000, 2000], draws=2, seed=0)
    assert all(c.ks["theory_ge"] <= c.floor["ks"] + 0.002 for c in result.comparisons)
    assert result.comparisons[-1].ks["theory_softmax"] < 0.01


#: Networks whose first block's law is checked against the real network: the pre-LN block with a ReLU MLP (the
#: neurons' bias levels), and a post-RMSNorm block with a GELU MLP after centred attention.
MONTE_CARLO = {
    "pre-ln-relu-mlp": {"heads": 2, "residual": 1, "norm": "layer", "d_ff": 2},
    "post-rms-gelu-centred": {"residual": "1/2", "norm": "rms", "norm_position": "post", "d_ff": 1, "activation": "gelu",
                              "attention": "centred"},
}


@pytest.mark.parametrize("name", list(MONTE_CARLO))
def test_the_first_block_law_against_the_real_network(name: str) -> None:
    """At n = 1000 (2 draws, seed 0): KS between the law and the real network within the floor (two independent sets of
    the equivalent) + 0.006, and between the law and its equivalent's own draws within the floor + 0.004."""
    network = description_from_dict(MONTE_CARLO[name])
    result = gs.verify(network, [1000], draws=2, seed=0)
    comparison, = result.comparisons
    floor = comparison.floor["ks"]
    assert comparison.ks["theory_softmax"] <= floor + 0.006, comparison.ks
    assert comparison.ks["theory_ge"] <= floor + 0.004, comparison.ks


#: Two pre-LayerNorm attention-only layers, one head, d = d_k = d_v = n, beta = 1.
STACK = {"residual": "1/2", "norm": "layer", "layers": 2}


def test_the_law_after_layer_two_against_the_real_network() -> None:
    """Layer 2's keys are weighted (lognormal, the column term of the common vector): at n = 1000 (2 draws, seed 0) KS between
    the law and the real two-layer network within the floor + 0.003 (measured 0.0043 against 0.003), and between the law
    and its equivalent's draws (which realise the key weights) within the floor + 0.002; the mean by the contour integral
    equals the one read far out."""
    network = description_from_dict(STACK)
    law = law_of(network)
    assert law.equivalent.key_weights and law.answers("moments") and not law.answers("edges")
    assert law.moments(1)[0] == pytest.approx(law.mean, rel=1e-9)
    result = gs.verify(network, [1000], draws=2, seed=0)
    comparison, = result.comparisons
    floor = comparison.floor["ks"]
    assert comparison.ks["theory_softmax"] <= floor + 0.003, comparison.ks
    assert comparison.ks["theory_ge"] <= floor + 0.002, comparison.ks


def test_pre_norm_layers_after_the_second_add_nothing_centred() -> None:
    """With plain softmax the common vector has size sqrt(n) per entry after layer 2 and fills every later pre-normed
    branch: the law after layer 4 is layer 2's (the freeze of docs/extensions.md §8.7), and layer 2's MLP is left out."""
    two, four = (network_equivalent(description_from_dict(STACK | {"d_ff": 1, "layers": layers})) for layers in (2, 4))
    assert two.polynomial == four.polynomial and two.key_weights
    assert any("frozen" in note for note in four.notes) and not any("frozen" in note for note in two.notes)
    assert any("MLP adds a common vector only" in note for note in two.notes)


def test_centred_attention_has_no_key_weights_and_a_spectral_law_after_layer_two() -> None:
    """Centred attention without an MLP leaves no common vector: layer 2's equivalent is a polynomial without key weights,
    whose law is spectral (exact moments)."""
    equivalent = network_equivalent(description_from_dict(STACK | {"attention": "centred"}))
    assert not equivalent.key_weights and equivalent.constants["kappa_1"] == 0
    assert not equivalent.polynomial.has(sp.Float)


#: Two pre-LayerNorm layers with centred attention and a ReLU MLP of width n: the first MLP's mean leaves a common vector.
CENTRED_RELU = {"residual": 1, "norm": "layer", "d_ff": 1, "attention": "centred", "layers": 2}


def test_centred_attention_with_a_relu_mlp_weights_layer_twos_keys_and_applies_its_mlp() -> None:
    """The first block's ReLU MLP leaves a common vector (kappa_1 = E relu^2 less the noise: 1/(2 pi) per entry), so layer 2
    weights its keys; its centred attention adds the key-weighted average of the values to that vector, kappa_2 = kappa_1 +
    alpha^2 (e^{tau^2} - 1) m_1 / s^2 by hand, and its MLP acts on the stream whose mean m_2 the positional equation gives."""
    equivalent = network_equivalent(description_from_dict(CENTRED_RELU))
    c = equivalent.constants
    assert equivalent.key_weights and c["kappa_1"] == 1 / (2 * sp.pi)
    assert sp.simplify(c["kappa_2"] - (c["kappa_1"] + (sp.exp(c["tau^2 (layer 2)"]) - 1) * c["m_1"] / c["s^2 (layer 2)"])) == 0
    assert isinstance(c["m_2"], sp.Float) and c["m_1"] < c["m_2"]
    names = {str(g) for g in equivalent.polynomial.atoms(sp.MatrixSymbol)}
    assert {"W_{1,2}^{(1)}", "W_{2,2}^{(1)}", "D_{2}"} <= names


@pytest.mark.slow
def test_centred_attention_with_a_relu_mlp_against_the_real_network() -> None:
    """The law after layer 2 (about 40 s) against the real network at n = 1000 and 2000 (2 draws, seed 0): KS within the
    floor + 0.002 at n = 2000 (measured 0.0036 against 0.00225) and shrinking; the equivalent's draws within the floor +
    0.002 of the law (0.0026, 0.0012)."""
    result = gs.verify(description_from_dict(CENTRED_RELU), [1000, 2000], draws=2, seed=0)
    small, large = result.comparisons
    assert large.ks["theory_softmax"] <= large.floor["ks"] + 0.002 and large.ks["theory_softmax"] < small.ks["theory_softmax"]
    assert all(c.ks["theory_ge"] <= c.floor["ks"] + 0.002 for c in result.comparisons)


@pytest.mark.parametrize(("changes", "message"), [
    ({"layers": 2, "norm_position": "post", "attention": "centred"}, "norm_position: with centred attention a post-norm"),
    ({"layers": 3, "norm_position": "post"}, "layers: with an MLP a collapsed post-norm stack"),
    ({"layers": 2, "heads": 2, "d_k": "1/2", "d_v": "1/2"}, "heads: from layer 2 on each head's keys"),
    ({"layers": 3, "attention": "centred"}, "layers: with centred attention and an MLP whose mean is not 0"),
    ({"layers": 2, "attention": "centred", "norm": "none"}, "norm: centred attention with an MLP"),
    ({"layers": 2, "norm": "none"}, "norm: without a norm, the common vector"),
    ({"mask": "causal"}, "mask: a causal layer's equivalent is no polynomial"),
    ({"kv": "tied"}, "kv: the common vector's size is derived"),
])
def test_what_has_no_law_says_why(changes: dict[str, object], message: str) -> None:
    network = description_from_dict({"residual": 1, "norm": "layer", "d_ff": 1} | changes)
    with pytest.raises(NotImplementedError) as error:
        law_of(network)
    assert str(error.value).startswith(message)


def test_derive_prints_the_law_of_a_block(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    network = description_from_dict({"residual": 1, "norm": "layer", "norm_position": "post"})
    path = tmp_path / "post.toml"
    path.write_text(network.to_toml(), encoding="utf-8")
    assert main(["derive", str(path), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert abs(report["moments"][0]["float"] - float((1 + sp.E) / (2 + sp.E))) < 1e-12
    assert "after layer 1 of 1 blocks" in report["statement"] and "kappa = 1" in report["statement"]
    stacked = tmp_path / "stack.toml"
    stacked.write_text(network.replace(layers=3, attention="centred").to_toml(), encoding="utf-8")
    assert main(["derive", str(stacked)]) == 2
    assert capsys.readouterr().err.startswith("gemhsa-sym: error: layers: with centred attention the law is derived up to")


def test_derive_prints_the_law_after_layer_two(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """derive of a network read after layer 2: the model with its key weights, the moments and quantiles in JSON, its
    document and record (a format that prints P(m, w) is refused with the reason before anything is solved); sweep gives
    its moments and no edge."""
    path = tmp_path / "stack.toml"
    path.write_text(description_from_dict(STACK).to_toml(), encoding="utf-8")
    assert main(["derive", str(path), "--export", f"sympy={tmp_path / 'stack.txt'}"]) == 2
    assert "export: sympy prints P(m, w)" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == [path]
    assert main(["derive", str(path), "--json", "--latex", str(tmp_path / "stack.tex"),
                 "--export", f"json={tmp_path / 'stack.json'}"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert "D_{2}" in report["model"] and report["key_weights"] and report["error"] < 1e-3
    assert report["moments"][0] == pytest.approx(law_of(description_from_dict(STACK)).mean, rel=1e-9)
    record = json.loads((tmp_path / "stack.json").read_text(encoding="utf-8"))
    assert record["kind"] == "key-weighted" and record["cdf"] == report["cdf"] and record["probes"]["nodes"] == 8
    assert r"\operatorname{diag}_j" in (tmp_path / "stack.tex").read_text(encoding="utf-8")
    assert main(["sweep", str(path), "--vary", "residual=1/2", "--no-mc"]) == 0  # a law without edges: theory none
    assert "top_edge   theory none" in capsys.readouterr().out


@pytest.mark.slow
def test_a_block_law_with_levels_is_written_and_checked_as_a_library_entry(tmp_path: Path) -> None:
    """A network's record (its moments as 30-digit decimals where the neurons are in levels) is written, read back and
    checked like any derivation of the library, and its document states the network."""
    (tmp_path / "block.toml").write_text(description_from_dict({"residual": 1, "norm": "layer", "d_ff": 1}).to_toml(),
                                         encoding="utf-8")
    assert main(["derivations", "--write", "--dir", str(tmp_path)]) == 0
    record = json.loads((tmp_path / "block.json").read_text(encoding="utf-8"))
    assert abs(float(record["moments"][0]["exact"]) - record["moments"][0]["float"]) < 1e-13
    assert "after layer 1 of 1 blocks" in (tmp_path / "block.tex").read_text(encoding="utf-8")
    assert main(["derivations", "--check", "--dir", str(tmp_path)]) == 0


def test_moments_of_levels_are_decimals_that_a_record_keeps() -> None:
    """With the neurons in levels the law's moments are 30-digit decimals (their exact rationals run to hundreds of
    digits), kept by an exact record's tree and read back to their digits; an exact equivalent keeps its closed forms."""
    levels = law_of(description_from_dict({"residual": 1, "norm": "layer", "d_ff": 1}))
    mean, second = levels.moments(2)
    assert isinstance(mean, sp.Float) and abs(float(mean) - 4.00255339428564) < 1e-12
    assert all(abs(from_tree(tree(m)) - m) < 1e-27 * abs(m) for m in (mean, second))
    exact = law_of(description_from_dict({"residual": 1, "norm": "layer", "d_ff": 1, "attention": "centred"}))
    assert not exact.moments(1)[0].has(sp.Float)


def test_stack_2_is_read_from_its_library_record_and_a_changed_record_is_caught(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """derive stack-2 reads the law after layer 2 from the library's record (its table validated, the network that of
    the STACK law above); a changed quantile or probe is a difference for derivations --check, and a changed table is
    refused when read."""
    import shutil

    from gemhsa_sym.library.catalogue import LIBRARY, library_law

    law = library_law("stack-2")
    assert law is not None and law.found == "read from the library's record"
    assert law.source.to_dict() | {"name": None} == description_from_dict(STACK).to_dict() | {"name": None}
    assert main(["derive", "stack-2"]) == 0
    out = capsys.readouterr().out
    assert "read from the library's record" in out and "D_{2}" in out
    for suffix in (".toml", ".json", ".tex"):
        shutil.copy(LIBRARY / f"stack-2{suffix}", tmp_path / f"stack-2{suffix}")
    record = json.loads((tmp_path / "stack-2.json").read_text(encoding="utf-8"))
    record["quantiles"]["x"][1] *= 1.001
    record["probes"]["m"][0][1] *= 1.001
    (tmp_path / "stack-2.json").write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    assert main(["derivations", "--check", "--dir", str(tmp_path)]) == 1
    err = capsys.readouterr()
    assert "quantiles.x[1]" in err.out and "probes.m(0.2+0.5i)" in err.out
    record["cdf"]["F"][-1] = 1.5
    (tmp_path / "stack-2.json").write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match="not a distribution function"):
        library_law("stack-2", tmp_path)
