"""Infinitely many heads (docs/extensions.md §8.5, docs/equations.md §2.10): the limit of the exchangeable system.

Independent references: the SymPy limit H -> oo of the exact moments of the finite-H system (symbolic in H,
computed without the limit), the value 8 + 3 e^2 of the second moment of mha at beta = 1 (docs/extensions.md
§8.5, a hand computation), Fuss–Catalan numbers and their equation w^2 m^3 - w m + 1 = 0 (the product of two
square Gaussians) for a score with mu_1 = 0, and the finite-H laws, whose m(w) must approach the limit's
like 1/H.
"""

from __future__ import annotations

import functools
import json

import numpy as np
import pytest
import sympy as sp

from gemhsa_sym.cli import main
from gemhsa_sym.free.equations.heads_limit import LimitError
from gemhsa_sym.laws.attention import BETA, AttentionLaw
from gemhsa_sym.layer.config import Config
from gemhsa_sym.layer.equivalent import MU1, SIGMA
from gemhsa_sym.layer.presets import PRESETS

H = sp.Symbol("H", positive=True, integer=True)


@functools.cache
def limit_law(name: str, **changes: str) -> AttentionLaw:
    return AttentionLaw(PRESETS[name].replace(**changes).with_heads("oo"))


def limit_of_moments(name: str, k: int, **changes: str) -> list[sp.Expr]:
    """lim_{H -> oo} of the exact moments of the H-head system (symbolic in H, at beta = 1)."""
    law = AttentionLaw(PRESETS[name].replace(**changes), heads=H, values={"H": 4})
    return [sp.limit(m.subs(BETA, 1), H, sp.oo) for m in law.moments(k, symbolic=True)]


def test_mha_second_moment_is_8_plus_3e2_and_below_every_finite_head_count() -> None:
    law = limit_law("mha")
    assert sp.simplify(law.moments(2)[1] - (8 + 3 * sp.E**2)) == 0
    finite = [float(AttentionLaw(PRESETS["mha"].with_heads(h)).moments(2)[1]) for h in (1, 2, 4, 8)]
    assert finite == pytest.approx([52.38, 41.27, 35.72, 32.94], abs=0.01)  # docs/extensions.md §8.5
    assert all(f > float(law.moments(2)[1]) for f in finite)


@pytest.mark.parametrize(("name", "changes"), [("mha", {}), ("mha", {"d_k": "1/2", "d_v": "1/2"}), ("residual", {})])
def test_moments_equal_the_limit_of_the_symbolic_head_moments(name: str, changes: dict[str, str]) -> None:
    law = limit_law(name, **changes)
    expected = limit_of_moments(name, 3, **changes)
    assert [sp.simplify(a - b) for a, b in zip(law.moments(3), expected)] == [0, 0, 0]


def test_symbolic_moments_in_beta_specialise() -> None:
    law = limit_law("mha")
    general = law.moments(2, symbolic=True)
    assert BETA in general[1].free_symbols
    assert [sp.simplify(g.subs(BETA, 1) - v) for g, v in zip(general, law.moments(2))] == [0, 0]


def test_score_without_linear_part_gives_sigma2_times_fuss_catalan() -> None:
    # mu_1 = 0 (square score, sigma^2 = 2): the limit is sigma^2 times the law of a product of two square
    # Gaussians, moments 1, 3, 12 and m(w) a root of w^2 m^3 - w m + 1 (scaled: sigma^2 w^2 m^3 - w m + 1).
    law = limit_law("mha", score="square")
    assert law.moments(3) == [2, 12, 96]
    generic = super(AttentionLaw, law).moments(3, symbolic=True)
    assert [sp.expand(g.subs(MU1, 0)) for g in generic] == [SIGMA**2, 3 * SIGMA**4, 12 * SIGMA**6]
    P = law.algebraic().specialised()
    m, w = sp.symbols("m w")
    assert sp.rem(sp.Poly(P.subs({sp.Symbol("m"): m, sp.Symbol("w"): w}), m, w),
                  sp.Poly(2 * w**2 * m**3 - w * m + 1, m, w)).is_zero


def test_finite_head_laws_approach_the_limit_like_one_over_h() -> None:
    w = np.array([2 + 1j, 20 + 2j])
    limit = limit_law("mha").stieltjes(w)
    gaps = [np.max(np.abs(AttentionLaw(PRESETS["mha"].with_heads(h)).stieltjes(w) - limit)) for h in (16, 64, 256)]
    ratios = [a / b for a, b in zip(gaps, gaps[1:])]
    assert ratios == pytest.approx([4, 4], rel=0.15)


def test_polynomial_and_its_edges_agree_with_the_continuation() -> None:
    law = limit_law("mha")
    elimination = law.algebraic()
    assert (elimination.degree_m, elimination.degree_w) == (9, 6)
    fold = [e.location for e in law.edges(dps=30)]
    discriminant = [e.location for e in law.edges(dps=30, method="discriminant")]
    assert [abs(a - b) for a, b in zip(fold, discriminant)] == pytest.approx([0, 0], abs=1e-25)
    assert law.support()[0][1] == pytest.approx(27.886262910984, rel=1e-9)


def test_a_law_without_limit_is_refused_with_its_growth() -> None:
    with pytest.raises(ValueError, match=r"^heads: .*no limit as H grows: its moments M_1 \.\. M_3 grow like H\^1, H\^2, H\^3"):
        limit_law("tied-kv")
    from gemhsa_sym.laws.spectral import SpectralLaw
    from gemhsa_sym.layer.equivalent import gaussian_equivalent

    ge = gaussian_equivalent(PRESETS["tied-kv"].with_heads("oo"))
    with pytest.raises(LimitError):  # the engine's own error, which the attention law turns into a refusal naming the field
        SpectralLaw(ge.model, ge.ratios, ge.values)


def test_configuration_fields() -> None:
    config = PRESETS["heads-infinite"]
    assert config.infinite_heads and config.d_k is None and config.summary().startswith("H=oo; d=n; d_k=d/H; d_v=d/H")
    assert config.with_heads(40).d_k == sp.Rational(1, 40) and PRESETS["mha"].with_heads("oo") == config.replace(name="mha")
    assert Config(heads="oo", d_k="1/2").d_k == sp.Rational(1, 2)
    with pytest.raises(ValueError, match=r"^share_k: infinitely many heads share a matrix per head or by all"):
        PRESETS["gqa"].with_heads("oo")
    with pytest.raises(ValueError, match=r"^heads: infinitely many heads are built for target = 'output'"):
        Config(heads="oo", target="attention")
    with pytest.raises(ValueError, match=r"^heads: infinitely many heads are built for mask = 'none', got 'causal'; a causal "
                                         r"law is the two-point equation written head by head"):
        Config(heads="oo", mask="causal")
    with pytest.raises(ValueError, match=r"^heads: infinitely many heads \('oo'\) have a law but no finite sample"):
        config.sizes(1000)
    assert AttentionLaw(config.replace(beta=0)).moments(2) == [0, 0]  # Y = 0 at every H: the point mass at 0


def test_cli_derive_sample_and_verify(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["derive", "mha", "--heads", "oo", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["moments"][1]["exact"] == "8 + 3*exp(2)" and report["config"]["heads"] == "oo"
    assert main(["sample", "heads-infinite", "--n", "200"]) == 2
    assert "heads: infinitely many heads ('oo') have a law but no finite sample" in capsys.readouterr().err
    assert main(["verify", "heads-infinite", "--n", "200"]) == 2
    assert "sample_heads: infinitely many heads cannot be drawn" in capsys.readouterr().err
    assert main(["verify", "mha", "--n", "200", "--sample-heads", "8"]) == 2
    assert "sample_heads: only for a configuration with infinitely many heads" in capsys.readouterr().err
    assert main(["verify", "heads-infinite", "--n", "400", "--draws", "1", "--sample-heads", "20", "--json", "--quiet"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["drawn"]["config"]["heads"] == 20 and result["drawn"]["config"]["d_k"] == "1/20"
    # GE samples of 20 heads against the limit: the law's own change from 20 heads (KS between the two laws
    # about 0.02 here) on top of the floor
    assert result["ks"]["theory_ge"] < 0.06


def test_sweep_over_heads_ends_at_the_limit(tmp_path) -> None:
    pytest.importorskip("matplotlib")
    from gemhsa_sym.verification.plots import plot_sweep
    from gemhsa_sym.verification.sweep import sweep

    result = sweep(PRESETS["mha"], [("heads", ["4", "oo"])], n=None)
    four, limit = (p.theory_value("top_edge") for p in result.points)
    assert limit == pytest.approx(27.886262910984, rel=1e-9) and four > limit
    with pytest.raises(ValueError, match=r"^heads: infinitely many heads \('oo'\) have a law but no finite sample"):
        sweep(PRESETS["mha"], [("heads", ["oo"])], n=200, theory=False)
    plot_sweep(result, tmp_path / "heads.png")
    assert (tmp_path / "heads.png").stat().st_size > 10_000
