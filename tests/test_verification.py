"""Comparison statistics of theory against samples, on an exact law (docs/reference-values.md §9.2, case i′)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import integrate
from verification_helpers import mp_law

from gemhsa_sym.laws.tabulated import TabulatedLaw
from gemhsa_sym.verification.compare import compare
from gemhsa_sym.verification.distances import empirical_ks, empirical_w1


@pytest.fixture(scope="module")
def law_and_theory():
    law = mp_law()
    return law, law.tabulate()


@pytest.fixture(scope="module")
def draws(law_and_theory) -> dict[str, np.ndarray]:
    law, _ = law_and_theory
    return {name: law.sample(150, seed=seed, draws=2) for seed, name in enumerate(("softmax", "ge", "floor"))}


def test_summary_matches_reference_values(law_and_theory) -> None:
    # docs/reference-values.md §9.2, case i′: moments 1, 3, 11, atom 1/2; edges 2 (1 -+ 1/sqrt 2)^2.
    _, theory = law_and_theory
    assert np.allclose([float(m) for m in theory.moments(3)], [1, 3, 11], rtol=1e-8)
    assert [str(a.exact) for a in theory.atoms()] == ["1/2"]
    assert np.allclose([float(e) for e in theory.edges()], [2 * (1 - 2**-0.5) ** 2, 2 * (1 + 2**-0.5) ** 2])


def test_table_reproduces_the_law(law_and_theory) -> None:
    law, theory = law_and_theory
    x = np.linspace(-0.1, 6.5, 301)
    assert np.max(np.abs(theory.cdf(x) - law.cdf(x))) < 1e-6
    q = np.array([0.2, 0.5, 0.6, 0.9, 0.999])
    assert np.allclose(theory.quantile(q), law.quantile(q), atol=1e-5)
    xd = np.linspace(0.3, 5.5, 200)
    assert np.allclose(theory.density(xd), law.density(xd), rtol=1e-3, atol=1e-4)
    again = TabulatedLaw.from_json_dict(theory.to_json_dict())
    assert np.array_equal(again.cdf(x), theory.cdf(x)) and again.probes == theory.probes


def test_ks_and_w1_against_direct_computation(law_and_theory, draws) -> None:
    # KS: both sides of every jump of the empirical CDF against law.cdf; W1: quadrature of |F - F_n|.
    law, theory = law_and_theory
    x = np.sort(np.where(draws["softmax"].ravel() < 1e-11 * draws["softmax"].max(), 0.0, draws["softmax"].ravel()))
    u, counts = np.unique(x, return_counts=True)
    right = np.cumsum(counts) / x.size
    F = law.cdf(u)
    ks = max(np.max(np.abs(F - right)), np.max(np.abs(np.where(u > 0, F, 0.0) - (right - counts / x.size))))
    assert abs(empirical_ks(theory, draws["softmax"]) - ks) < 1e-6
    grid = np.linspace(0, 7, 400_001)
    gap = np.abs(law.cdf(grid) - np.searchsorted(x, grid, side="right") / x.size)
    assert abs(empirical_w1(theory, draws["softmax"]) - integrate.trapezoid(gap, grid)) < 2e-4


def test_distances_separate_a_wrong_law(law_and_theory, draws) -> None:
    _, theory = law_and_theory
    right, wrong = draws["softmax"], 1.25 * draws["softmax"]
    assert empirical_ks(theory, right) < 0.03 and empirical_ks(theory, wrong) > max(0.04, 3 * empirical_ks(theory, right))
    assert empirical_w1(theory, wrong) > 3 * empirical_w1(theory, right)


def test_compare_reports_outliers_atoms_and_moments(law_and_theory, draws) -> None:
    _, theory = law_and_theory
    samples = dict(draws)
    planted = samples["softmax"].copy()
    planted[0, -2:] = [9.0, 12.5]  # two eigenvalues far above the top edge 5.83
    samples["softmax"] = np.sort(planted, axis=1)
    c = compare(theory, samples, 150)
    assert c.outliers["softmax"]["above_top"] == c.outliers["ge"]["above_top"] + 2
    assert c.outliers["softmax"]["max"] == 12.5 and c.outliers["softmax"]["largest"][:2] == [12.5, 9.0]
    assert c.atoms["ge"]["fraction"] == 0.5 and abs(c.atoms["ge"]["theory_fraction"] - 0.5) < 1e-9
    mean = np.mean(draws["ge"], axis=1)
    first = c.moments["ge"][0]
    assert first["samples"] == pytest.approx(mean.mean()) and first["se"] is None and first["z"] is None  # 2 draws: no error bar
    top = c.edges["ge"][-1]
    assert top["side"] == "upper" and top["bulk_extreme"] == pytest.approx(draws["ge"].max())
    assert 0 < c.floor["ks"] < 0.1 and c.ks["theory_ge"] < 0.05


def test_error_bars_need_five_draws_and_exponents_three_points() -> None:
    """A standard error over draws is given from 5 draws on (the sd of k draws is uncertain by 1/sqrt(2 (k - 1))), and a
    fitted exponent of n has an error only from three n on (any power law fits two points)."""
    from gemhsa_sym.verification.distances import MIN_DRAWS, mean_over_draws, power_fit

    values = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    assert MIN_DRAWS == 5 and mean_over_draws(values[:4]) == (2.5, None)
    assert mean_over_draws(values) == pytest.approx((3.0, values.std(ddof=1) / 5**0.5))
    n = np.array([500.0, 1000.0, 2000.0, 4000.0])
    exact = power_fit(n, 3 * n**-0.5)
    assert exact["exponent"] == pytest.approx(-0.5) and exact["error"] == pytest.approx(0, abs=1e-12) and exact["points"] == 4
    noisy = power_fit(n, 3 * n**-0.5 * np.array([1.1, 0.9, 1.05, 0.95]))
    slope = np.polyfit(np.log(n), np.log(3 * n**-0.5 * np.array([1.1, 0.9, 1.05, 0.95])), 1)[0]
    assert noisy["exponent"] == pytest.approx(slope) and 0.01 < noisy["error"] < 0.2
    assert power_fit(n[:2], [0.02, 0.01])["error"] is None
