"""Configurations beyond the centred output (docs/extensions.md §8.1, §8.4): the attention matrix
itself and the residual stream, against values computed independently of the engine."""

from __future__ import annotations

import math

import numpy as np
import pytest
import sympy as sp

from gemhsa_sym.laws.attention import BETA, AttentionLaw
from gemhsa_sym.layer.config import Config
from gemhsa_sym.layer.presets import PRESETS

E = sp.E


def test_attention_matrix_mean_is_the_entry_variance() -> None:
    # docs/reference-values.md §9.6: mu_1^2 + sigma^2 = e^{beta^2} - 1 for softmax, any ratios.
    law = AttentionLaw(Config(target="attention", d="3/2", d_k="1/2"))
    assert sp.simplify(law.moments(1, symbolic=True)[0] - (sp.exp(BETA**2) - 1)) == 0
    assert law.moments(1) == [E - 1]
    assert AttentionLaw(Config(target="attention", beta="3/4")).moments(1)[0] == sp.exp(sp.Rational(9, 16)) - 1


@pytest.mark.parametrize("beta", ["1/2", "1", "3/2"])
def test_attention_matrix_edge_lies_beyond_the_iid_edge(beta: str) -> None:
    """The law is not Marchenko–Pastur: its bulk reaches beyond 4 (e^{beta^2} - 1), the edge of an
    iid matrix of the same entry variance (the claim of the predecessor paper)."""
    law = AttentionLaw(Config(target="attention", beta=beta))
    top = float(law.edges(16)[-1].location)
    variance = math.exp(float(sp.Rational(beta)) ** 2) - 1
    assert top > 4 * variance * 1.05
    mu2 = float(law.moments(2)[1])
    assert mu2 != pytest.approx(2 * variance**2, rel=1e-3)  # Marchenko–Pastur(1) of that variance has mu_2 = 2 v^2
    assert law.mass() == pytest.approx(1, abs=1e-9)


def test_attention_edge_sweep_draws_the_iid_edge_beside_the_law(tmp_path) -> None:
    pytest.importorskip("matplotlib")
    from gemhsa_sym.verification.plots import plot_sweep
    from gemhsa_sym.verification.sweep import sweep

    result = sweep(PRESETS["attention-matrix"], [("beta", ["0.1", "1.5"])], n=None)
    edges = [p.theory_value("top_edge") for p in result.points]
    assert all(e > 4 * math.expm1(b * b) for e, b in zip(edges, (0.1, 1.5)))  # the claim the plot shows
    plot_sweep(result, tmp_path / "edges.png")
    assert (tmp_path / "edges.png").stat().st_size > 10_000


def test_attention_matrix_rejects_output_side_fields() -> None:
    for bad, field in ((dict(heads=2, d_k="1/2"), "target"), (dict(d_out=2), "d_out"), (dict(kv="tied"), "kv"),
                       (dict(residual=1), "residual"), (dict(normalisation="none"), "target")):
        with pytest.raises(ValueError, match=f"^{field}: "):
            Config(target="attention", **bad)


@pytest.mark.parametrize(("alpha", "preset"), [("1", "single-head"), ("1/2", "mha"), ("2", "key-output")])
def test_residual_mean_adds_the_branch_scaled_by_alpha_squared(alpha: str, preset: str) -> None:
    # docs/reference-values.md §9.6: at unit ratios the cross terms vanish (W_O is centred), so the
    # mean is that of the tokens' law (1) plus alpha^2 times the mean of the output's law.
    base = AttentionLaw(PRESETS[preset])
    law = AttentionLaw(PRESETS[preset].replace(residual=alpha))
    a = sp.Rational(alpha)
    assert sp.simplify(law.moments(1)[0] - (1 + a**2 * base.moments(1)[0])) == 0
    edges = law.edges(16)
    assert float(edges[-1].location) > float(base.edges(16)[-1].location) * float(a**2)


def test_residual_needs_a_square_output() -> None:
    with pytest.raises(ValueError, match="^residual: "):
        Config(residual=1, d_out=2)


def test_residual_at_alpha_zero_is_marchenko_pastur() -> None:
    """alpha = 0 leaves the tokens: the law of X^T P X / n, Marchenko–Pastur with ratio d / n."""
    law = AttentionLaw(Config(residual=0, d="1/2"))
    c = 0.5
    assert law.moments(2) == [1, sp.Rational(3, 2)]  # 1 and 1 + c
    lo, hi = (1 - math.sqrt(c)) ** 2, (1 + math.sqrt(c)) ** 2
    np.testing.assert_allclose([float(e.location) for e in law.edges(20)], [lo, hi], rtol=1e-14)


def test_orthonormal_tokens_give_the_predecessor_papers_law() -> None:
    """Orthonormal tokens (n <= d): Q, K, V are iid Gaussian matrices. The attention matrix at
    n/d = 2/3, d_k/n = 1/2, beta = 1 has mean e - 1 and its top edge near 11, where Monte Carlo of
    its Gaussian equivalent puts the largest eigenvalue (docs/reference-values.md §9.6)."""
    law = AttentionLaw(Config(target="attention", tokens="orthonormal", d="3/2", d_k="1/2"))
    assert law.moments(1) == [E - 1]
    assert 10.5 < float(law.edges(16)[-1].location) < 11.5


@pytest.mark.parametrize(("preset", "extra"), [("single-head", 0), ("mqa", 0), ("tied-kv", 1), ("correlated-kv", sp.Rational(1, 4))])
def test_orthonormal_tokens_mean(preset: str, extra: sp.Expr) -> None:
    """E tr over W_O, then over Q, K, V (iid Gaussian), per entry: mu_1^2 E|S0 V|^2 / (n^2 d_v) + sigma^2
    = mu_1^2 (1 + rho^2 d_k / n) + sigma^2, since S0 K = Q K^T K / sqrt(d_k) has E tr((K^T K)^2) =
    n d_k (n + d_k + 1) and V = rho K + sqrt(1 - rho^2) V' (Gaussian tokens add mu_1^2 n / d from
    the tokens' own fluctuations). At unit ratios, mu_1 = 1: e - 1 plus rho^2."""
    law = AttentionLaw(PRESETS[preset].replace(tokens="orthonormal"))
    assert law.moments(1) == [E - 1 + extra]


def test_orthonormal_tokens_refuse_what_they_cannot_be() -> None:
    with pytest.raises(ValueError, match="^tokens: orthonormal tokens are n rows"):
        Config(tokens="orthonormal", d="1/2")
    with pytest.raises(ValueError, match="^tokens: with orthonormal tokens the output 'keys'"):
        PRESETS["key-output"].replace(tokens="orthonormal")
    with pytest.raises(ValueError, match="^tokens: the residual stream"):
        Config(tokens="orthonormal", residual=1)
    with pytest.raises(ValueError, match="^tokens: unknown option"):
        Config(tokens="uniform")


def test_one_level_token_covariance_is_the_plain_layer() -> None:
    """Sigma = I written as one block of weight 1 is the same layer: equal exact moments and edges."""
    plain = AttentionLaw(PRESETS["mha"])
    one = AttentionLaw(PRESETS["mha"].replace(tokens="covariance", token_covariance={"values": ["1"], "weights": ["1"]}))
    assert one.moments(3) == plain.moments(3)
    assert float(one.edges(16)[-1].location) == pytest.approx(float(plain.edges(16)[-1].location), rel=1e-13)


def test_sixteen_token_levels_are_the_two_they_repeat() -> None:
    """A covariance written as 16 blocks, alternately 1/2 and 3/2, is the two-level covariance: the same exact moments
    and upper edge from a pencil eight times larger."""
    two = {"values": ["1/2", "3/2"], "weights": ["1/2", "1/2"]}
    sixteen = {"values": ["1/2", "3/2"] * 8, "weights": ["1/16"] * 16}
    base = PRESETS["single-head"]
    coarse = AttentionLaw(base.replace(tokens="covariance", token_covariance=two))
    fine = AttentionLaw(base.replace(tokens="covariance", token_covariance=sixteen))
    assert fine.moments(3) == coarse.moments(3)
    assert float(fine.edges(16)[-1].location) == pytest.approx(float(coarse.edges(16)[-1].location), rel=1e-12)


def test_fifty_token_levels_have_the_mean_of_their_wishart() -> None:
    """Fifty levels 2k/50 (659 unknowns after the reductions): the exact mean is beta^2 s s_2 + s (e^{beta^2 s^2} - 1)
    with s, s_2 the first two moments of the spectrum. By hand: sigma^2 = e^{beta^2 s^2} - 1 - beta^2 s^2 times
    E |x|^2 = s for the noise, and (mu_1 / s)^2 = beta^2 times s (1/d) tr (X^T X / n)^2 = s (s_2 + s^2) (the second
    moment of the Wishart matrix X^T X / n) for the scores (docs/extensions.md §8.3)."""
    values = [sp.Rational(2 * k, 50) for k in range(1, 51)]
    fifty = {"values": [str(v) for v in values], "weights": ["1/50"] * 50}
    beta = sp.Rational(3, 4)
    law = AttentionLaw(PRESETS["single-head"].replace(tokens="covariance", token_covariance=fifty, beta=beta))
    s, s2 = sum(values) / 50, sum(v**2 for v in values) / 50
    assert sp.simplify(law.moments(1)[0] - (beta**2 * s * s2 + s * (sp.exp(beta**2 * s**2) - 1))) == 0


def test_a_large_covariance_says_at_once_what_it_does_not_try() -> None:
    """Eight distinct levels leave 113 unknowns after the reductions: more than the elimination and the minimal system
    are tried for, which the law says without running out their time limits (docs/solving.md §3.2)."""
    eight = {"values": [f"{k}/4" for k in range(1, 9)], "weights": ["1/8"] * 8}
    law = AttentionLaw(PRESETS["single-head"].replace(tokens="covariance", token_covariance=eight))
    assert law.algebraic().reason.startswith("not attempted: the reduced system has 113 unknowns")
    with pytest.raises(ValueError, match="not sought: the reduced system has 113 unknowns"):
        law.minimal()


def test_token_covariance_rescales_the_scores() -> None:
    """Sigma = lambda I: the scores have standard deviation lambda, the Hermite data are those of beta lambda,
    and the law is that of the plain layer at beta lambda with every eigenvalue times lambda (X -> sqrt(lambda) X,
    and V = X W_V carries one more sqrt(lambda))."""
    lam = sp.Rational(3, 2)
    scaled = AttentionLaw(PRESETS["single-head"].replace(tokens="covariance", token_covariance={"values": [str(lam)], "weights": ["1"]}))
    plain = AttentionLaw(PRESETS["single-head"].replace(beta=lam))
    assert [sp.simplify(a - lam**k * b) == 0 for k, (a, b) in enumerate(zip(scaled.moments(3), plain.moments(3)), 1)] == [True] * 3


def test_token_covariance_refuses_what_it_cannot_be() -> None:
    with pytest.raises(ValueError, match="^token_covariance: the weights must sum to 1"):
        Config(tokens="covariance", token_covariance={"values": ["1", "2"], "weights": ["1/2", "1/4"]})
    with pytest.raises(ValueError, match="^token_covariance: tokens = 'covariance' needs"):
        Config(tokens="covariance")
    with pytest.raises(ValueError, match="^token_covariance: only used with"):
        Config(token_covariance={"values": ["1"], "weights": ["1"]})
    with pytest.raises(ValueError, match="^token_covariance: value and weight 0 must be positive"):
        Config(tokens="covariance", token_covariance={"values": ["-1"], "weights": ["1"]})
    with pytest.raises(ValueError, match="^tokens: with a token covariance"):
        PRESETS["key-output"].replace(tokens="covariance", token_covariance={"values": ["1"], "weights": ["1"]})
    with pytest.raises(ValueError, match="^token_covariance: weight 0"):
        Config(tokens="covariance", token_covariance={"values": ["1", "2"], "weights": ["1/3", "2/3"]}).sizes(10)


MONTE_CARLO = {
    "attention matrix": Config(target="attention"),
    "attention, orthonormal tokens": Config(target="attention", tokens="orthonormal"),
    "residual stream": PRESETS["single-head"].replace(residual=1),
    "two-level covariance": PRESETS["single-head"].replace(
        tokens="covariance", token_covariance={"values": ["1/2", "3/2"], "weights": ["1/2", "1/2"]}),
    "mqa, orthonormal tokens": PRESETS["mqa"].replace(tokens="orthonormal"),
}


def _ks(law: object, samples: np.ndarray) -> float:
    x = np.sort(samples)
    F = law.cdf(x)
    return float(max(np.max(np.arange(1, x.size + 1) / x.size - F), np.max(F - np.arange(x.size) / x.size)))


@pytest.mark.parametrize("name", list(MONTE_CARLO))
def test_sampler_draws_the_law_of_the_equations(name: str) -> None:
    """The sampler's Gaussian-equivalent draws (the polynomial's own realisation on the real layer's tokens
    and weights) against the law: KS within the Monte Carlo floor measured beside it (two independent
    sample sets) plus 0.01 at n = 400, two draws each, and the mean within 3 standard errors."""
    from scipy import stats

    from gemhsa_sym.sampling.sampler import sample

    config = MONTE_CARLO[name]
    law = AttentionLaw(config)
    ge = sample(config, n=400, draws=2, seed=1, model="ge", progress=False)
    other = sample(config, n=400, draws=2, seed=2, model="ge", progress=False)
    floor = stats.ks_2samp(ge.pooled, other.pooled, method="asymp").statistic
    assert _ks(law, ge.pooled) <= floor + 0.01
    means = np.concatenate([ge.eigenvalues.mean(axis=1), other.eigenvalues.mean(axis=1)])
    assert abs(means.mean() - float(law.moments(1)[0])) <= 3 * means.std(ddof=1) / np.sqrt(means.size) + 1e-3
