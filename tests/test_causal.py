"""The causal layer (docs/extensions.md §8.6): configuration, the law of its noise as a variance profile
against Monte Carlo of the real layer and its Gaussian equivalent, and what is refused."""

from __future__ import annotations

import numpy as np
import pytest

from gemhsa_sym.cli import main
from gemhsa_sym.free.positions.profiled_law import ProfiledValues, stieltjes
from gemhsa_sym.laws.causal import causal_model, causal_report
from gemhsa_sym.layer.config import Config
from gemhsa_sym.layer.equivalent import gaussian_equivalent
from gemhsa_sym.sampling.sampler import sample

SQUARE = Config(mask="causal", score="square")
POINTS = np.array([0.2 + 0.5j, 1 + 1j, 5 + 2j, 20 + 5j])


def test_mask_is_a_validated_field_that_round_trips() -> None:
    assert Config().mask == "none" and "mask" not in Config().to_dict()
    assert Config.from_dict(SQUARE.to_dict()) == SQUARE and SQUARE.to_dict()["mask"] == "causal"
    with pytest.raises(ValueError, match="^mask: unknown option"):
        Config(mask="sliding")
    with pytest.raises(ValueError, match="^mask: a causal layer"):
        Config(mask="causal", normalisation="none")
    assert Config(mask="causal", target="attention").spectral_object.startswith("eigenvalues of n (A - C)^T (A - C)")
    for tokens in ({"tokens": "orthonormal"}, {"tokens": "covariance", "token_covariance": {"values": ["1/2", "3/2"],
                                                                                            "weights": ["1/2", "1/2"]}}):
        with pytest.raises(ValueError, match="^tokens: the causal attention matrix is derived for Gaussian tokens"):
            Config(mask="causal", target="attention", **tokens)


def test_causal_layer_has_no_polynomial_and_orthonormal_tokens_have_no_law() -> None:
    with pytest.raises(NotImplementedError, match="^mask: the Gaussian equivalent of a causal layer"):
        gaussian_equivalent(Config(mask="causal"))
    with pytest.raises(NotImplementedError, match="^tokens: the two-point equation"):
        causal_model(Config(mask="causal", tokens="orthonormal"))


def test_square_score_law_is_the_profiled_noise() -> None:
    model = causal_model(SQUARE)
    assert str(model.polynomial) == "sqrt(2)*Z*X*W_V*W_O"
    (Z, profile), = model.profiles.items()
    assert str(Z) == "Z" and profile.region == "lower" and str(profile.row) == "t**(-2)"
    heads = causal_model(SQUARE.with_heads(2))
    assert len(heads.profiles) == 2 and all(p == profile for p in heads.profiles.values())


@pytest.fixture(scope="module")
def law() -> ProfiledValues:
    """m(w) of the square-score causal law at :data:`POINTS`."""
    return stieltjes(causal_model(SQUARE), POINTS, tol=1e-6)


@pytest.mark.parametrize("model", ["ge", "softmax"])
def test_square_score_law_against_monte_carlo(model: str, law: ProfiledValues) -> None:
    """m(w) of the law against the mean of 1 / (w - lambda) over the draws of the real causal layer and of its
    Gaussian equivalent at n = 1000 (measured: 0.0062 and 0.0025; the law without the mask is 0.1 away)."""
    assert np.all(law.error <= 1e-6 * (1 + np.abs(law.m)))
    eigenvalues = sample(SQUARE, 1000, draws=2, seed=3, model=model).pooled
    empirical = np.array([np.mean(1 / (w - eigenvalues)) for w in POINTS])
    assert np.max(np.abs(empirical - law.m)) < 0.01
    bidirectional = sample(SQUARE.replace(mask="none"), 1000, draws=1, seed=3, model=model).pooled
    assert np.max(np.abs(np.array([np.mean(1 / (w - bidirectional)) for w in POINTS]) - law.m)) > 0.05


@pytest.mark.parametrize(("model", "within"), [("ge", 0.002), ("softmax", 0.02)])
def test_square_score_attention_matrix_is_the_profiled_noise(model: str, within: float) -> None:
    """The causal attention matrix sqrt(n) (A - C) of the square score (mu_1 = 0, c_0 = 1): its equivalent is the noise
    sqrt(2) Z with the profile 1{u <= t} / t^2 (docs/equations.md §2.11); m(w) against two draws at n = 1000 (measured:
    0.0006 for the equivalent, 0.0118 for the real layer, 0.0043 at n = 2000)."""
    config = Config(mask="causal", score="square", target="attention")
    model_of_law = causal_model(config)
    assert str(model_of_law.polynomial) == "sqrt(2)*Z"
    m = stieltjes(model_of_law, POINTS, tol=1e-4).m
    eigenvalues = sample(config, 1000, draws=2, seed=0, model=model, progress=False).pooled
    assert np.max(np.abs(np.array([np.mean(1 / (w - eigenvalues)) for w in POINTS]) - m)) < within


def test_derive_refuses_a_causal_layer_without_a_law_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["derive", "single-head", "--set", "mask=causal", "--set", "tokens=orthonormal"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("gemhsa-sym: error: tokens: the two-point equation") and "\n" not in err


def test_causal_law_cache_reads_back_a_valid_entry_and_names_what_is_wrong_with_a_bad_one(tmp_path) -> None:
    """A table on disk (a Pareto(1) law tabulated on a log grid) comes back unchanged instead of being computed, and
    gives the law back; the validation names what is wrong with a changed one (the recomputation of a bad entry: the
    slow test below)."""
    from gemhsa_sym.free.positions.distribution_function import Distribution
    from gemhsa_sym.laws.causal_law import CausalLaw
    from gemhsa_sym.laws.positional import validated_distribution
    from gemhsa_sym.verification.theory import cache_file, store_table, theory_task

    x = np.geomspace(1.0, 1e4, 40)
    entry = {"config": SQUARE.to_dict(), "tol": 1e-3, "x": x.tolist(), "cdf": (1 - 1 / x).tolist(), "density": (x**-2).tolist(),
             "error": 1e-4, "level": 7, "nodes": 99}
    path = store_table(CausalLaw(SQUARE, Distribution(x, 1 - 1 / x, x**-2.0, 1e-4, 7, 99)).tabulate(), SQUARE, tmp_path)
    table = theory_task(SQUARE, True, str(tmp_path))
    law = CausalLaw.from_table(SQUARE, table).distribution()
    assert law.level == 7 and law.nodes == 99 and np.array_equal(law.cdf, 1 - 1 / x) and table.quantile(0.5) == pytest.approx(2, 0.01)
    for change, reason in (({"config": {}}, "another configuration"), ({"tol": 1e-6}, "another configuration"),
                           ({"x": entry["x"][::-1]}, "not increasing"), ({"density": [-1.0] * 40}, "density"),
                           ({"x": entry["x"][1:]}, "do not match"), ({"error": "1e-3; rm"}, "not a number"),
                           ({"level": True}, "not counts"), ({"cdf": [0.5] + [0.1] * 39}, "not a distribution function"),
                           ({"cdf": [float("nan")] * 40}, "not finite")):
        with pytest.raises(ValueError, match=reason):
            validated_distribution(entry | change, SQUARE, 1e-3)
    assert cache_file(tmp_path, SQUARE.replace(beta=2), True) != path


def test_verify_of_a_causal_layer_without_a_law_compares_the_samples_alone(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    """No law (orthonormal tokens): KS(softmax, GE) and the floor against n with their fitted exponents, and the
    reason, in the report."""
    import json

    assert main(["verify", "single-head", "--set", "mask=causal", "--set", "tokens=orthonormal", "--n", "100,200", "--draws", "1", "--json", "--quiet"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["theory"] is None and report["no_theory"].startswith("tokens: the two-point equation")
    assert [p["ks"] for p in report["by_n"]] == [None, None]
    assert {key for key in report["scaling"] if key.endswith("_exponent")} == {"ks_softmax_ge_exponent", "ks_floor_exponent"}
    assert all(0 < p["softmax_ge"]["ks"] < 0.2 and 0 < p["floor"]["ks"] < 0.2 for p in report["by_n"])
    assert main(["verify", "single-head", "--set", "mask=causal", "--set", "tokens=orthonormal", "--n", "100,200", "--draws", "1", "--quiet"]) == 0
    text = capsys.readouterr().out
    assert "theory   none: tokens: the two-point equation" in text and "fitted   ks_softmax_ge ~ n^" in text
    pytest.importorskip("matplotlib")
    figure = tmp_path / "causal.png"
    assert main(["verify", "single-head", "--set", "mask=causal", "--set", "tokens=orthonormal", "--n", "100", "--draws", "1", "--quiet", "--plot",
                 str(figure)]) == 0
    assert figure.stat().st_size > 10_000


@pytest.mark.slow
def test_square_score_report_quantiles_and_tail() -> None:
    """The report's quantiles against the pooled eigenvalues of the real layer at n = 2000, and the tail
    exponent near 1 (row i of the noise has variance n / i)."""
    report = causal_report(SQUARE)
    eigenvalues = sample(SQUARE, 2000, draws=2, seed=5, model="softmax").pooled
    for q, x in zip(report["quantiles"]["q"], report["quantiles"]["x"]):
        if x is not None:
            assert abs(np.mean(eigenvalues <= x) - q) < 0.02, (q, x)
    assert 0.8 < report["tail_exponent"] < 1.2


def test_ks_to_a_law_on_a_grid_and_hills_estimator_on_pareto_samples() -> None:
    """The comparisons of a law without moments: KS against a grid law agrees with scipy's one-sample KS where the
    grid covers the sample, and Hill's estimator recovers the exponent of a Pareto tail."""
    from scipy import stats

    from gemhsa_sym.free.positions.distribution_function import Distribution
    from gemhsa_sym.laws.causal_law import CausalLaw
    from gemhsa_sym.verification.distances import empirical_ks, hill

    x = np.geomspace(1.0, 1e8, 4000)
    law = Distribution(x, 1 - 1 / x, x**-2.0, 0.0, 0, 0)  # P(lambda > x) = 1 / x on [1, oo)
    samples = stats.pareto(1.0).rvs(size=20000, random_state=np.random.default_rng(2))
    samples = samples[samples < 1e8]
    table = CausalLaw(SQUARE, law).tabulate()
    assert abs(empirical_ks(table, samples) - stats.kstest(samples, stats.pareto(1.0).cdf).statistic) < 1e-3
    assert abs(hill(samples) - 1) < 0.15
    assert abs(law.tail_exponent() - 1) < 1e-9


@pytest.mark.slow
def test_verify_of_a_causal_layer_prints_quantiles_and_tails(tmp_path: pytest.TempPathFactory, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    figure, cache = tmp_path / "causal.png", tmp_path / "cache"
    arguments = ["verify", "single-head", "--set", "mask=causal", "--set", "score=square", "--n", "500", "--draws", "2", "--json",
                 "--cache", str(cache)]
    assert main([*arguments, "--plot", str(figure)]) == 0
    report = json.loads(capsys.readouterr().out)
    (point,) = report["by_n"]
    assert point["ks"]["theory_softmax"] < 0.02 and point["ks"]["theory_ge"] < 0.02
    assert 0.8 < report["theory"]["tail_exponent"] < 1.2 and figure.stat().st_size > 0 and report["no_theory"] is None
    (entry,) = cache.iterdir()  # a bad entry is recomputed, with a warning naming it, and replaced
    entry.write_text("{}")
    assert main(arguments) == 0
    out, err = capsys.readouterr()
    assert f"gemhsa-sym: warning: cache: {entry} is not a valid table" in err
    assert json.loads(out)["theory"] == report["theory"]
    assert json.loads(entry.read_text())["table"][0] == pytest.approx(0.2, abs=0.05)  # a fifth of the mass lies below 1e-4


def test_the_tail_exponent_is_withheld_where_the_discretisation_cuts_the_tail() -> None:
    """The square score's profiled law gives its exponent; softmax's masked scores give none, with the reason."""
    from gemhsa_sym.free.positions.distribution_function import Distribution
    from gemhsa_sym.laws.causal import UNRESOLVED_TAIL, causal_tail

    x = np.geomspace(1.0, 1e4, 40)
    pareto = Distribution(x, 1 - 1 / x, x**-2.0, 0.0, 0, 0)
    assert causal_tail(SQUARE, pareto) == pytest.approx(1.0)
    assert causal_tail(Config(mask="causal"), pareto) is None and "8 octaves" in UNRESOLVED_TAIL
