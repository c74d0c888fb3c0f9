"""One suite of law properties over every kind of law (docs/solving.md §3.15): spectral laws, a
polynomial's law, the causal laws of the library and the tables of all of them answer one protocol."""

from __future__ import annotations

import functools
import math

import numpy as np
import pytest
from scipy import stats

import gemhsa_sym as gs
from gemhsa_sym.laws.protocol import QUERIES

#: Arguments of the queries that take one.
ARGUMENTS = {"cdf": (1.0,), "ccdf": (1.0,), "quantile": (0.5,), "density": (1.0,), "stieltjes": (2 + 1j,),
             "sample": (40,), "moments": (2,)}
NAMES = ("mha", "tied-kv", "causal-single-head", "causal-mha", "product")


@functools.lru_cache(maxsize=None)
def law_named(name: str) -> gs.Law:
    if name == "product":  # docs/reference-values.md §9.3
        p, N1, N2 = gs.Dim("p"), gs.Dim("N1"), gs.Dim("N2")
        X1, X2 = gs.Gaussian("X1", p, N1, scale="1/2"), gs.Gaussian("X2", p, N2, scale="1/4")
        return gs.law(X2.T @ X1, ratios={p: 1, N1: 2, N2: 4})
    return gs.law(name)


def laws() -> list[tuple[str, bool]]:
    return [(name, table) for name in NAMES for table in (False, True)]


def get(name: str, table: bool) -> gs.Law:
    law = law_named(name)
    return law.tabulate() if table else law


@pytest.mark.parametrize(("name", "table"), laws())
def test_every_query_answers_or_says_why(name: str, table: bool) -> None:
    law = get(name, table)
    methods, reasons = law.methods(), law.reasons()
    assert set(methods) | set(reasons) == set(QUERIES) and not set(methods) & set(reasons), sorted(set(QUERIES) - set(methods) - set(reasons))
    for query in QUERIES:
        assert law.answers(query) == (query in methods)
        if query in ("record", "to_latex") and law.answers(query):
            continue  # exercised by the export tests
        call = getattr(law, query)
        if law.answers(query):
            call(*ARGUMENTS.get(query, ()))
        else:
            with pytest.raises(gs.NoAnswer) as caught:
                call(*ARGUMENTS.get(query, ()))
            assert caught.value.reason == reasons[query] and caught.value.query == query


@pytest.mark.parametrize(("name", "table"), laws())
def test_cdf_is_a_distribution_function_and_quantile_inverts_it(name: str, table: bool) -> None:
    law = get(name, table)
    lo, hi, whole = law.quantile_bracket()
    x = np.geomspace(max(lo, 1e-3), hi, 200) if not whole else np.linspace(lo - 1, hi + 1, 400)
    F = np.asarray(law.cdf(x))
    slack = law.achieved_error() + 1e-9  # F is within its achieved error of a distribution function
    assert np.all(np.diff(F) >= -1e-12) and F.min() >= -slack and F.max() <= 1 + slack
    assert np.allclose(law.ccdf(x), 1 - F)
    levels = np.linspace(F[0] + 1e-3, F[-1] - 1e-3, 9)
    q = law.quantile(levels)
    assert np.all(np.asarray(law.cdf(q)) >= levels - 1e-9)
    assert np.all(np.asarray(law.cdf(np.asarray(q) * (1 - 1e-6) - 1e-12)) <= levels + 1e-6)
    if whole:
        assert law.quantile(1.0) == pytest.approx(max(b for _, b in law.support()))
        assert abs(float(law.cdf(hi)) - 1) <= max(law.achieved_error(), 1e-9) + 1e-9


@pytest.mark.parametrize(("name", "table"), laws())
def test_bad_points_are_refused_naming_the_parameter(name: str, table: bool) -> None:
    law = get(name, table)
    with pytest.raises(ValueError, match="^q: "):
        law.quantile(1.5)
    with pytest.raises(ValueError, match="^q: "):
        law.quantile(float("nan"))
    with pytest.raises(ValueError, match="^x: "):
        law.cdf(float("nan"))
    with pytest.raises(TypeError, match="^x: "):
        law.cdf(["1"])


def test_a_causal_preset_and_a_bidirectional_one_answer_the_same_calls() -> None:
    causal, mha = gs.law("causal-single-head"), gs.law("mha")
    assert type(causal).__name__ == "CausalLaw" and type(mha).__name__ == "AttentionLaw"
    assert "AttentionLaw(" in repr(mha)
    for law in (causal, mha):
        assert 0 < law.cdf(1.0) < 1 and law.quantile(law.cdf(1.0)) == pytest.approx(1.0, rel=1e-6)
        assert law.achieved_error() < 0.01 and law.atoms() == [] if law is causal else True
    assert math.isinf(mha.tail_exponent()) and causal.support() == [(0.0, math.inf)]
    with pytest.raises(gs.NoAnswer, match="heavy tail"):
        causal.moments(1)


def test_to_scipy_gives_a_distribution_scipy_tools_read() -> None:
    law = law_named("product")
    dist = law.to_scipy()
    assert dist.cdf(1.0) == pytest.approx(law.cdf(1.0))
    assert dist.mean() == pytest.approx(0.5) and dist.moment(2) == pytest.approx(7 / 8)
    assert dist.ppf(0.75) == pytest.approx(law.quantile(0.75))
    p, N = gs.Dim("p"), gs.Dim("N")
    mp = gs.law(gs.Gaussian("X", p, N), ratios={p: 1, N: "1/2"})  # Marchenko–Pastur, no atom: mean 1, mu_2 = 3/2
    draws = mp.sample(400, seed=3, draws=10).ravel()
    assert stats.ks_1samp(draws, mp.to_scipy().cdf).statistic < 0.05  # 10 x 200 eigenvalues of the law itself
    assert mp.to_scipy().moment(2) == pytest.approx(1.5)
    if hasattr(stats, "make_distribution"):
        made = stats.make_distribution(dist)()
        assert made.cdf(1.0) == pytest.approx(law.cdf(1.0))
    with pytest.raises(gs.NoAnswer, match="^to_scipy: "):
        law_named("causal-single-head").to_scipy()


def test_a_table_reads_back_from_json_and_validates() -> None:
    from gemhsa_sym.laws.tabulated import TabulatedLaw, validated

    for name in ("mha", "causal-single-head"):
        table = law_named(name).tabulate()
        back = validated(table.to_json_dict(), table.source, True)
        assert isinstance(back, TabulatedLaw) and back.methods() == table.methods()
        assert back.quantile(0.5) == table.quantile(0.5)
        broken = table.to_json_dict() | {"table": [1.0] * len(table.grid)}
        with pytest.raises(ValueError):
            validated(broken | {"error": -1.0}, table.source, True)
