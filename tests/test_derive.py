"""Laws of the MHSA presets against closed forms and the Monte Carlo facts of docs/reference-values.md §9.4."""

from __future__ import annotations

import functools
import itertools
import json

import numpy as np
import pytest
import sympy as sp
from scipy import integrate, stats

from gemhsa_sym.cli import main
from gemhsa_sym.laws.attention import AttentionLaw
from gemhsa_sym.laws.spectral import SpectralLaw
from gemhsa_sym.layer.config import Config
from gemhsa_sym.layer.equivalent import gaussian_equivalent
from gemhsa_sym.layer.presets import BIDIRECTIONAL_PRESETS, PRESETS

#: Points of the upper half plane where laws are compared through their Stieltjes transforms.
PROBES = np.array([0.05 + 0.02j, 0.7 + 0.3j, 3.0 + 1.0j, 20.0 + 5.0j, 60.0 + 0.5j])
#: Real points where densities of laws that must be equal are compared.
GRID = np.linspace(0.02, 45.0, 40)


@functools.cache
def law_of(name: str) -> AttentionLaw:
    """The law of a preset, or of ``heads-2`` (H = 2, d_k = d_v = d/2)."""
    return AttentionLaw(Config(heads=2, name=name) if name == "heads-2" else PRESETS[name])


@pytest.fixture(scope="module")
def mha() -> AttentionLaw:
    return law_of("mha")


def test_single_head_coefficients() -> None:
    # docs/model.md §1.5: softmax at beta = 1 has mu_1 = 1, sigma^2 = e - 2 (means: test_mean_of_every_preset).
    law = law_of("single-head")
    assert law.coefficients.mu1 == 1 and sp.simplify(law.coefficients.sigma2 - (sp.E - 2)) == 0


def assert_same_law(law: AttentionLaw, other: AttentionLaw) -> None:
    """Equal symbolic moments (in beta), and Stieltjes transforms and densities equal to 1e-10."""
    assert law.moments(3, symbolic=True) == other.moments(3, symbolic=True)
    assert np.max(np.abs(law.stieltjes(PROBES) - other.stieltjes(PROBES))) < 1e-10
    assert np.max(np.abs(law.density(GRID) - other.density(GRID))) < 1e-10


@pytest.mark.parametrize("name", ["mqa", "gqa"])
def test_key_value_sharing_keeps_the_law(mha, name: str) -> None:
    # docs/reference-values.md §9.4: K, V shared by all heads or in 2 groups leave the law unchanged.
    assert_same_law(law_of(name), mha)


def test_query_sharing_and_kv_dependence_change_the_law(mha) -> None:
    # docs/reference-values.md §9.4: Q sharing changes the law (second moment 47 vs 35).
    diff = np.abs(law_of("shared-q").stieltjes(PROBES) - mha.stieltjes(PROBES))
    assert np.max(diff) > 1e-3
    single = law_of("single-head").stieltjes(PROBES)
    for name in ("tied-kv", "correlated-kv"):
        assert np.max(np.abs(law_of(name).stieltjes(PROBES) - single)) > 1e-3, name


def test_key_built_output_keeps_the_law() -> None:
    # docs/reference-values.md §9.4: W_O^h = W_K^hT (rescaled) gives the law of independent W_O.
    assert_same_law(law_of("key-output"), law_of("single-head"))


@pytest.mark.parametrize("heads,groups", [(2, 1), pytest.param(4, 2, marks=pytest.mark.slow)])
def test_exchangeable_reduction_equals_explicit_heads(heads: int, groups: int) -> None:
    # The reduced system (size independent of H) against the head-by-head pencil.
    config = PRESETS["gqa"].replace(heads=heads, d_k="1/%d" % heads, d_v="1/%d" % heads, share_k={"groups": groups}, share_v={"groups": groups})
    ge = gaussian_equivalent(config)
    reduced = SpectralLaw(ge.model, ge.ratios, ge.values)
    explicit = SpectralLaw(ge.model.expand(), ge.ratios, ge.values)
    unreduced = SpectralLaw(ge.model, ge.ratios, ge.values, reduce=False)
    assert len(unreduced.system.unknowns) < len(SpectralLaw(ge.model.expand(), ge.ratios, ge.values, reduce=False).system.unknowns)
    assert np.max(np.abs(reduced.stieltjes(PROBES) - explicit.stieltjes(PROBES))) < 1e-10


#: Means of the limiting laws at beta = 1, counted from planar pairings (unit ratios, W_O
#: integrated out first, so the mean is tau(M) with M = V^T X^T B^T B X V and
#: B = mu_1 X W_Q W_K^T X^T + sigma Z): the sigma^2 part gives sigma^2; the mu_1^2 part
#: gives tau((X^T X)^2) = 2 from the pairing (V, V), (W_K, W_K), (W_Q, W_Q). Tied values
#: (V = W_K) add the second non-crossing pairing of the four W_K, worth 1; correlated
#: ones add rho^2 times it. Across heads the blocks of W_O are independent, so sharing
#: does not change the mean, and W_O = W_K^T adds no non-crossing pairing.
#: mu_1 = 1, sigma^2 = e - 2, so 2 mu_1^2 + sigma^2 = e.
#: docs/reference-values.md §9.5, §9.6: e for the output at unit ratios; e - 1 (the entry variance) for the
#: attention matrix; 1 + e for the residual stream; e + 1/4 for the two-level token covariance.
EXACT_MEANS = {name: sp.E for name in PRESETS} | {
    "tied-kv": sp.E + 1, "correlated-kv": sp.E + sp.Rational(1, 4), "attention-matrix": sp.E - 1,
    "attention-orthonormal": sp.E - 1, "residual": 1 + sp.E, "tokens-two-level": sp.E + sp.Rational(1, 4)}


@pytest.mark.parametrize("name", BIDIRECTIONAL_PRESETS)
def test_mean_of_every_preset(name: str) -> None:
    assert sp.simplify(law_of(name).moments(1)[0] - EXACT_MEANS[name]) == 0


#: docs/reference-values.md §9.4, Gaussian-equivalent samples at n = d = d_out = 1000, beta = 1, 6 draws:
#: second moment (mean over draws).
REFERENCE_SECOND_MOMENTS = {
    "single-head": 52.8,
    "heads-2": 40.8,
    "mha": 35.7,
    "heads-8": 32.7,
    "mqa": 35.7,
    "gqa": 35.7,
    "shared-q": 47.3,
    "tied-kv": 109.9,
    "correlated-kv": 66.0,
    "key-output": 52.9,
}
#: One draw's second moment varies by 2.6 % (measured, tests/test_sampler.py), so a mean of
#: 6 draws by 1.06 %; 3 of those and 1 % for the finite size n = 1000.
SECOND_MOMENT_TOLERANCE = 0.042


@pytest.mark.parametrize("name", list(REFERENCE_SECOND_MOMENTS))
def test_second_moment_matches_monte_carlo(name: str) -> None:
    second = float(law_of(name).moments(2)[1])
    assert second == pytest.approx(REFERENCE_SECOND_MOMENTS[name], rel=SECOND_MOMENT_TOLERANCE)


def test_law_narrows_as_heads_grow() -> None:
    # H d_k = d fixed: second moments about 52.5, 40.5, 35.4, 32.6 for H = 1, 2, 4, 8
    # (docs/reference-values.md §9.4), while the mean stays e.
    seconds = [law_of(name).moments(2)[1] for name in ("single-head", "heads-2", "mha", "heads-8")]
    assert all(a > b for a, b in itertools.pairwise(seconds))


def test_cdf_of_a_density_diverging_almost_like_one_over_x() -> None:
    # single-head at beta = 1/2: rho ~ x^(-4/5) at 0 and about 9 % of the mass below 1e-7 b,
    # so the CDF near 0 comes from contour masses. The tail above x is checked by an
    # independent quadrature of the density (Gauss–Legendre panels in log x up to b/2, then
    # x = b - (b/2) v^2 across the square-root edge b), and the total mass is 1.
    law = AttentionLaw(PRESETS["single-head"].replace(beta="1/2"))
    top = float(law.edges(dps=16)[-1].location)
    assert law.mass() == pytest.approx(1, abs=1e-9)
    v, weights = np.polynomial.legendre.leggauss(64)
    v, weights = (v + 1) / 2, weights / 2
    for x in (9e-4, 0.05, 2.0):
        bounds = np.linspace(np.log(x), np.log(top / 2), 6)
        t = (bounds[:-1, None] + (bounds[1:] - bounds[:-1])[:, None] * v).ravel()
        dt = np.repeat(np.diff(bounds), len(v)) * np.tile(weights, len(bounds) - 1)
        upper = top - top / 2 * v**2
        points = np.concatenate([np.exp(t), upper])
        rho = law.density(points)
        tail = np.sum(rho[: t.size] * np.exp(t) * dt) + np.sum(rho[t.size :] * top * v * weights)
        assert law.cdf(x) == pytest.approx(1 - tail, abs=1e-10)


def test_mha_near_zero_matches_gaussian_equivalent_samples(mha) -> None:
    # No atom at zero: w m(w) at w = iy against the empirical transform of GE samples
    # (n = 800, 2 draws); the small quantiles of these samples do not move with n, so the
    # mass near 0 is continuous. Seen spread between draws: about 0.002 at y = 1e-3.
    from gemhsa_sym.sampling.sampler import sample

    ev = sample(PRESETS["mha"], n=800, draws=2, seed=5, model="ge", progress=False).pooled
    y = np.array([1e-3, 1e-2, 1e-1])
    theory = 1j * y * mha.stieltjes(1j * y)
    empirical = np.array([np.mean(1j * v / (1j * v - ev)) for v in y])
    assert np.max(np.abs(theory - empirical)) < 0.01


@pytest.mark.slow
def test_mha_has_no_atom(mha) -> None:
    # Ranks: sum of four rank-d/4 heads with independent value projections is full rank.
    assert mha.atoms() == []


def test_many_heads_keep_their_law() -> None:
    # The norm bound grows like H (its square is 1e15 times the top edge at H = 1e5), so the law's
    # scale is tightened to 1e3 sqrt(mu_2) after verification (docs/solving.md §3.10). Independent
    # checks: mu_2 = 8 + 3 e^2 + (2 + 2 e + 2 e^2) / H (docs/reference-values.md §9.5) from the
    # series, the contour integral of the continuation's m(w) against it, and the top edge between
    # its values at H = 1e4 (27.8888) and H = oo (below it, above 27.88).
    heads = 10**5
    law = AttentionLaw(PRESETS["mha"].with_heads(heads))
    e = sp.E
    assert sp.simplify(law.moments(2)[1] - (8 + 3 * e**2 + (2 + 2 * e + 2 * e**2) / heads)) == 0
    assert law.numeric_moments(2) == pytest.approx([float(e), float(law.moments(2)[1])], rel=1e-9)
    edges = law.edges(dps=16)
    assert [(x.side, x.hard) for x in edges] == [("lower", True), ("upper", False)]
    assert 27.88 < float(edges[1].location) < 27.8888
    assert law.scale < 1e5


def test_a_score_integrated_by_quadrature_gets_its_record(capsys: pytest.CaptureFixture[str]) -> None:
    """The sigmoid score has no closed form in beta: its record keeps the moments in mu_1 and sigma, at their values as
    decimals. One head at unit ratios has mean 2 mu_1^2 + sigma^2 (e for softmax), with mu_1 = 2 E[g s(g)] and
    sigma^2 = 4 E[s(g)^2] - 1 - mu_1^2 of the logistic s (E s(g) = 1/2) integrated here by scipy."""
    def gauss(f: object) -> float:
        return integrate.quad(lambda g: f(g) * stats.norm.pdf(g), -40, 40, epsabs=1e-14, epsrel=1e-13)[0]

    mu1 = 2 * gauss(lambda g: g / (1 + np.exp(-g)))
    sigma2 = 4 * gauss(lambda g: (1 / (1 + np.exp(-g))) ** 2) - 1 - mu1**2
    assert main(["derive", "single-head", "--set", "score=sigmoid", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["moments"][0]["symbolic"] == "2*mu_1**2 + sigma**2"
    assert abs(float(report["moments"][0]["exact"]) - (2 * mu1**2 + sigma2)) < 1e-10
