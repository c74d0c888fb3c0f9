"""Polynomial model files in ``derive``, ``verify`` and ``sweep`` (docs/exports.md §5.4).

Expected values come from outside the engine: the edges of MP(1/2) ⊠ MP(1/4) are the positive
roots of the discriminant of the cubic of docs/reference-values.md §9.3 (computed here with
SymPy); the moments of Marchenko–Pastur with ratio c are Narayana polynomials and its edges
(1 ± sqrt c)^2; the first two moments of a product of free Wishart matrices follow from
freeness (E[AB] = E[A] E[B], E[(AB)^2] = E[A^2] E[B]^2 + E[A]^2 E[B^2] - E[A]^2 E[B]^2).
The Monte Carlo samples are checked against the polynomial's own sampler with the same seed.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import numpy as np
import pytest
import sympy as sp

from gemhsa_sym.cli import main
from gemhsa_sym.export.document import document as build_document
from gemhsa_sym.export.record import record_from_json
from gemhsa_sym.laws.polynomial import ModelLaw
from gemhsa_sym.layer.config import Config
from gemhsa_sym.layer.polynomial_model import PolynomialModel
from gemhsa_sym.layer.presets import load_input, read_input
from gemhsa_sym.library.catalogue import verification
from gemhsa_sym.verification.compare import verify

LIBRARY = Path(__file__).resolve().parent.parent / "derivations"
WISHART = str(LIBRARY / "wishart-product.toml")
MP = str(LIBRARY / "marchenko-pastur.toml")


def product_edges() -> list[sp.Float]:
    """Edges of MP(1/2) ⊠ MP(1/4): roots z > 0 of the discriminant in G of
    -G^3 z^2/8 + G^2 z/2 + G (z - 3/8) + 1 (docs/reference-values.md §9.3)."""
    G, z = sp.symbols("G z")
    discriminant = sp.discriminant(sp.Poly(-G**3 * z**2 / 8 + G**2 * z / 2 + G * (z - sp.Rational(3, 8)) + 1, G))
    return [sp.N(r, 30) for r in sp.Poly(discriminant, z).real_roots() if r > 0]


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict:
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_a_model_file_is_told_from_a_configuration(tmp_path: Path) -> None:
    model = load_input(WISHART)
    assert isinstance(model, PolynomialModel) and model.name == "wishart-product"
    assert model.data["gaussians"]["X1"] == {"rows": "p", "cols": "N1", "scale": "1/2"}
    assert PolynomialModel(model.to_dict(), model.name) == model
    assert isinstance(load_input("mha"), Config) and isinstance(read_input(LIBRARY / "mha.toml"), Config)
    with pytest.raises(ValueError, match="^config: a polynomial model"):
        Config.from_toml(Path(WISHART))
    assert model.replace(**{"dimensions.N2": "0.5"}).data["dimensions"]["N2"] == "1/2"
    for field in ("heads", "dimensions.q", "gaussians.X1.rows"):
        with pytest.raises(ValueError, match=f"^{field}: not a field of this polynomial model"):
            model.replace(**{field: "2"})


def test_derive_a_model_file_prints_the_product_law(capsys: pytest.CaptureFixture[str]) -> None:
    low, high = product_edges()
    assert main(["derive", WISHART]) == 0  # a new derivation: the folds refined on P
    text = capsys.readouterr().out
    assert f"edge (lower, hard, polynomial): {str(low)[:27]}" in text or f"edge (lower, polynomial): {str(low)[:27]}" in text
    assert f"edge (upper, polynomial): {str(high)[:26]}" in text and "--edges discriminant classifies" in text
    assert main(["derive", WISHART, "--edges", "discriminant"]) == 0
    text = capsys.readouterr().out
    assert f"edge (lower, discriminant): {str(low)[:27]}" in text
    assert f"edge (upper, discriminant): {str(high)[:26]}" in text
    assert "atom at 0: mass 0.5 = 1/2" in text and "configuration: wishart-product" in text
    assert "coefficients" not in text


def test_derive_json_and_latex_of_a_model_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    latex = tmp_path / "product.tex"
    data = run_json(capsys, "derive", WISHART, "--latex", str(latex), "--grid", "0.5:3:3", "--edges", "discriminant")
    assert {"name", "model", "ratios", "moments", "polynomial", "edges", "atoms", "latex", "timing", "density"} <= set(data)
    assert "config" not in data and "coefficients" not in data
    assert data["name"] == "wishart-product"
    # p x p product: mean 1, second moment 1 + 1/2 + 1/4; halved on the N1 = 2p side
    assert [m["exact"] for m in data["moments"]] == ["1/2", "7/8", "63/32"]
    for edge, expected in zip(data["edges"], product_edges()):
        assert abs(sp.Float(edge["location"], 30) - expected) < 1e-25
    assert [(a["location"], a["exact"]) for a in data["atoms"]] == [(0.0, "1/2")]
    assert all(r > 0 for r in data["density"]["density"])
    document = latex.read_text()
    assert document.startswith(r"\documentclass") and r"\end{document}" in document
    # the same record and document as the committed derivations library
    committed = json.loads((LIBRARY / "wishart-product.json").read_text())
    assert {k: v for k, v in data.items() if k not in ("timing", "density")} == committed
    # (the library's document adds the Monte Carlo of its verification record, which derive does not draw)
    assert document == build_document(record_from_json(committed))
    assert (LIBRARY / "wishart-product.tex").read_text() == build_document(record_from_json(committed),
                                                                            verification(LIBRARY / "wishart-product.toml"))


def test_derive_set_changes_a_ratio(capsys: pytest.CaptureFixture[str]) -> None:
    data = run_json(capsys, "derive", MP, "--set", "dimensions.d=1/4")
    # Marchenko–Pastur with c = 1/4: edges (1 -+ 1/2)^2, moments 1, 1 + c, 1 + 3c + c^2
    assert [float(e["location"]) for e in data["edges"]] == pytest.approx([0.25, 2.25], abs=1e-25)
    assert [m["exact"] for m in data["moments"]] == ["1", "5/4", "29/16"]


def test_verify_a_model_file(capsys: pytest.CaptureFixture[str]) -> None:
    data = run_json(capsys, "verify", MP, "--n", "200", "--draws", "2", "--seed", "1", "--quiet")
    # 2 draws of 100 eigenvalues: iid samples would give KS ~ 0.06; eigenvalues repel, measured 0.018
    assert set(data["ks"]) == {"theory_polynomial"} and data["ks"]["theory_polynomial"] < 0.05
    assert data["floor"]["ks"] < 0.05 and data["softmax_ge"] is None
    assert data["config"] == {"polynomial": "X", "dimensions": {"n": "1", "d": "1/2"},
                              "gaussians": {"X": {"rows": "n", "cols": "d", "scale": "1"}}}
    moments = data["moments"]["polynomial"]
    assert [m["exact"] for m in moments] == ["1", "3/2", "11/4", "45/8"]  # Narayana, c = 1/2
    # the samples are the polynomial's own sampler's with the same seed: draw i from child i of SeedSequence(1)
    own = ModelLaw(load_input(MP)).sample(200, seed=1, draws=2)
    assert [m["samples"] for m in moments] == pytest.approx([np.mean(own**k) for k in range(1, 5)], rel=1e-12)
    edges = [e["location"] for e in data["edges"]["polynomial"]]
    assert edges == pytest.approx([(1 - np.sqrt(0.5)) ** 2, (1 + np.sqrt(0.5)) ** 2], rel=1e-12)
    assert {"polynomial_s", "floor_s", "total_s"} <= set(data["timing"])


def test_verify_a_model_at_several_n_does_not_depend_on_jobs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    runs = []
    for jobs in ("1", "2"):
        data = run_json(capsys, "verify", WISHART, "--n", "50,100", "--draws", "2", "--jobs", jobs, "--quiet",
                        "--cache", str(tmp_path / "cache"))
        for record in (data, *data["by_n"]):
            record.pop("timing")
        runs.append(data)
    assert runs[0] == runs[1]
    assert len(list((tmp_path / "cache").glob("theory-*.json"))) == 1
    scaling = runs[0]["scaling"]
    assert scaling["n"] == [50, 100] and "ks_softmax_ge" not in scaling
    assert {"ks_theory_polynomial", "ks_floor", "outliers_polynomial", "ks_theory_polynomial_exponent"} <= set(scaling)
    # the atom 1/2 at 0 (N1 = 2p): half the eigenvalues are numerically zero
    assert runs[0]["atoms"]["polynomial"]["fraction"] == 0.5


def test_verify_text_report_of_a_model_file(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["verify", MP, "--n", "100", "--draws", "2", "--quiet"]) == 0
    text = capsys.readouterr().out
    for needle in ("config   marchenko-pastur: Y = X", "theory-MC", "floor (MC-MC)", "M_4", "upper edge", "outliers MC"):
        assert needle in text
    assert "softmax" not in text


def test_plots_of_a_model_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("matplotlib")
    assert main(["verify", MP, "--n", "100", "--draws", "1", "--quiet", "--plot", str(tmp_path / "v.png")]) == 0
    assert main(["sweep", MP, "--vary", "dimensions.d=1/4,1/2", "--n", "100", "--draws", "1", "--quiet",
                 "--plot", str(tmp_path / "s.png")]) == 0
    assert (tmp_path / "v.png").read_bytes()[:4] == b"\x89PNG" and (tmp_path / "s.png").read_bytes()[:4] == b"\x89PNG"


def test_sweep_a_dimension_ratio(capsys: pytest.CaptureFixture[str]) -> None:
    data = run_json(capsys, "sweep", WISHART, "--vary", "dimensions.N2=1:4:4", "--n", "100", "--draws", "3", "--quiet")
    assert data["parameters"] == ["dimensions.N2"] and len(data["points"]) == 4
    for point, ratio in zip(data["points"], (1, 2, 3, 4)):
        assert point["values"] == {"dimensions.N2": str(ratio)} and point["config"]["dimensions"]["N2"] == str(ratio)
        # freeness: A = X1 X1^T has mean 1 and E[A^2] = 3/2, B = X2 X2^T mean N2/4 and E[B^2] = (N2/4)^2 (1 + 1/N2);
        # Y^T Y is N1 x N1 = 2p x 2p, so its moments are half those of AB
        b = sp.Rational(ratio, 4)
        mu1, mu2 = b / 2, (sp.Rational(3, 2) * b**2 + b**2 * (1 + sp.Rational(1, ratio)) - b**2) / 2
        assert point["theory"]["exact"][:2] == [str(mu1), str(mu2)]
        assert set(point["mc"]) == {"polynomial"}
        mean = point["mc"]["polynomial"]["M_1"]["mean"]
        assert abs(mean - float(mu1)) < 0.03 * float(mu1)  # per-draw sd 1.5 % at n = 100 (200 draws): 3.4 sd for 3 draws


def test_sweep_a_gaussian_scale_without_monte_carlo(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sweep", WISHART, "--vary", "gaussians.X1.scale=1/4,1/2", "--no-mc"]) == 0
    text = capsys.readouterr().out
    # the mean M_1 = p N2 s1 s2 = 4 s1 / 4 = s1; each point's model printed with the ratios and scales it used
    for scale, mean in (("1/4", "0.25"), ("1/2", "0.5")):
        assert re.search(rf"gaussians.X1.scale={scale}\n  that is Y = X2.T \* X1; [^\n]*scale {scale}[^\n]*\n  M_1 +theory {mean}\b", text), text


@pytest.mark.parametrize("argv, option", [
    (("derive", WISHART, "--heads", "2"), "--heads"),
    (("derive", WISHART, "--beta", "2"), "--beta"),
    (("verify", MP, "--backend", "torch"), "--backend"),
    (("verify", MP, "--device", "cuda", "--backend", "torch"), "--backend"),
    (("verify", MP, "--device", "cuda"), "--device"),
    (("sweep", MP, "--vary", "dimensions.d=1,2", "--beta", "1"), "--beta"),
    (("sweep", MP, "--vary", "dimensions.d=1,2", "--backend", "torch"), "--backend"),
])
def test_attention_only_options_are_refused(argv: tuple[str, ...], option: str, capsys: pytest.CaptureFixture[str]) -> None:
    start = time.perf_counter()
    assert main(list(argv)) == 2
    out, err = capsys.readouterr()
    assert time.perf_counter() - start < 5 and out == ""
    assert err.splitlines() == [f"gemhsa-sym: error: {option}: only for an attention configuration; {argv[1]} is a polynomial model"]


def test_attention_fields_are_refused_for_a_model(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sweep", MP, "--vary", "beta=1,2"]) == 2
    assert capsys.readouterr().err.startswith("gemhsa-sym: error: beta: not a field of this polynomial model; give dimensions.NAME")
    assert main(["sample", MP]) == 2
    assert "is a polynomial model file, not an attention configuration" in capsys.readouterr().err
    with pytest.raises(ValueError, match="^backend: a polynomial model is drawn by its own sampler"):
        verify(load_input(MP), [100], backend="torch", device="cpu")
    with pytest.raises(ValueError, match="^n: ratio \\* n must be a positive integer for d"):
        verify(load_input(MP), [101])

