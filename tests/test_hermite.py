"""Tests of the Hermite data of score functions (docs/model.md §1.5, §1.6).

Closed forms are checked against quadratures written here from scratch
(scipy, Gauss-Hermite, Gauss-Legendre), never against the formulas they should produce.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable

import numpy as np
import pytest
import sympy as sp
from numpy.polynomial.hermite_e import hermegauss
from numpy.polynomial.legendre import leggauss
from scipy import integrate, special

from gemhsa_sym.layer import scores
from gemhsa_sym.layer.hermite import HermiteData, hermite_data

BETA = sp.Symbol("beta", positive=True)
CUTOFF = 14.0  # the Gaussian weight beyond |g| = 14 is below 1e-42
NODES, WEIGHTS = hermegauss(150)
WEIGHTS = WEIGHTS / math.sqrt(2 * math.pi)
HALF_NODES, HALF_WEIGHTS = leggauss(200)


def gauss_mean(h: Callable[[np.ndarray], np.ndarray]) -> float:
    """E h(g), g ~ N(0, 1), by a 150-point Gauss-Hermite rule (exact for polynomials of degree < 300)."""
    return float(np.sum(WEIGHTS * h(NODES)))


def half_line_mean(h: Callable[[np.ndarray], np.ndarray]) -> float:
    """E h(g) by a 200-point Gauss-Legendre rule on [-14, 0] and on [0, 14] (h smooth on each)."""
    total = 0.0
    for sign in (-1.0, 1.0):
        t = sign * CUTOFF * (HALF_NODES + 1) / 2
        total += CUTOFF / 2 * float(np.sum(HALF_WEIGHTS * h(t) * np.exp(-t * t / 2)))
    return total / math.sqrt(2 * math.pi)


def scipy_mean(h: Callable[[float], float]) -> float:
    """E h(g), g ~ N(0, 1), by adaptive quadrature on [-14, 0] and [0, 14]."""
    density = lambda t: h(t) * math.exp(-t * t / 2) / math.sqrt(2 * math.pi)  # noqa: E731
    options = {"epsabs": 1e-14, "epsrel": 1e-13, "limit": 200}
    return sum(integrate.quad(density, a, b, **options)[0] for a, b in ((-CUTOFF, 0), (0, CUTOFF)))


def reference(
    mean: Callable[[Callable], float], f: Callable, normalisation: str
) -> tuple[float, float, float]:
    """(c_0, mu_1, sigma^2) of f from the definitions of docs/model.md §1.5, integrated by ``mean``.

    sigma^2 = E F^2 - c_0^2 - mu_1^2 is integrated as E (F - c_0 - mu_1 g)^2 (equal,
    since E F = c_0 and E[g F] = mu_1), which keeps its relative accuracy when small.
    """
    m0 = mean(f)
    scale, c0 = (m0, 1.0) if normalisation == "row" else (1.0, m0)
    mu1 = mean(lambda t: t * f(t) / scale)
    sigma2 = mean(lambda t: (f(t) / scale - c0 - mu1 * t) ** 2)
    return c0, mu1, sigma2


# softmax: mu_1 = beta, sigma^2 = e^{beta^2} - 1 - beta^2, exactly


@pytest.mark.parametrize("beta", [BETA, sp.Symbol("t"), sp.Rational(1, 2), 1, 0.5, "3/2", -1])
def test_softmax_is_exact(beta: object) -> None:
    data = hermite_data("softmax", beta)
    b = sp.Rational(repr(beta)) if isinstance(beta, float) else sp.sympify(beta)
    assert data.exact
    assert data.c0 == 1
    assert sp.simplify(data.mu1 - b) == 0
    assert sp.simplify(data.sigma2 - (sp.exp(b**2) - 1 - b**2)) == 0


def test_softmax_numeric_beta_is_substituted_exactly() -> None:
    assert hermite_data("softmax", 1).sigma2 == sp.E - 2
    assert hermite_data("softmax", sp.Rational(1, 2)).mu1 == sp.Rational(1, 2)


def test_softmax_agrees_with_quadrature() -> None:
    c0, mu1, sigma2 = reference(gauss_mean, lambda t: np.exp(0.7 * t), "row")
    assert hermite_data("softmax", 0.7).numeric() == pytest.approx((c0, mu1, sigma2), rel=1e-12)


# sigmoid: no closed form, mpmath quadrature


@pytest.mark.parametrize("normalisation", ["row", "none"])
def test_sigmoid_matches_independent_quadrature(normalisation: str) -> None:
    data = hermite_data("sigmoid", 1, normalisation)
    assert not data.exact
    by_scipy = reference(scipy_mean, lambda t: special.expit(t), normalisation)
    by_gauss = reference(gauss_mean, lambda t: special.expit(t), normalisation)
    for ours, a, b in zip(data.numeric(), by_scipy, by_gauss):
        assert abs(ours - a) < 1e-12
        assert abs(ours - b) < 1e-12
    assert data.numeric()[2] == pytest.approx(by_gauss[2], rel=1e-11)


def test_sigmoid_mu1_matches_monte_carlo() -> None:
    rng = np.random.default_rng(np.random.SeedSequence(20240611))
    g = rng.standard_normal(10**6)
    samples = g * special.expit(g) / 0.5  # E sigmoid(g) = 1/2 since sigmoid(s) + sigmoid(-s) = 1
    standard_error = samples.std(ddof=1) / math.sqrt(samples.size)
    _, mu1, _ = hermite_data("sigmoid", 1).numeric()
    assert abs(samples.mean() - mu1) < 5 * standard_error


def test_sigmoid_digits_are_correct() -> None:
    low = hermite_data("sigmoid", 1, dps=30)
    high = hermite_data("sigmoid", 1, dps=50)
    for a, b in zip((low.mu1, low.sigma2), (high.mu1, high.sigma2)):
        assert isinstance(a, sp.Float) and len(str(a).lstrip("-0.").replace(".", "")) >= 30  # 30 digits
        assert abs(a - b) <= sp.Float("1e-29", 50) * abs(b)


def sigmoid_series(beta: sp.Rational, order: int = 14) -> tuple[sp.Expr, sp.Expr]:
    """(mu_1, sigma^2) of row-normalised sigmoid from the Taylor series of F = 1 + tanh(beta g / 2).

    Exact up to O(beta^order); Gaussian moments E g^k = (k - 1)!! for even k.
    """
    b, g = sp.symbols("b g")
    F = 1 + sp.tanh(b * g / 2).series(b, 0, order).removeO()

    def moment(p: sp.Expr) -> sp.Expr:
        return sum(c * (sp.factorial2(k - 1) if k % 2 == 0 else 0) for (k,), c in sp.Poly(p, g).terms())

    mu1 = moment(g * F)
    sigma2 = moment(sp.expand(F**2)) - 1 - mu1**2
    return mu1.subs(b, beta), sigma2.subs(b, beta)


@pytest.mark.parametrize(
    "exponent, dps", [(6, 15), pytest.param(12, 15, marks=pytest.mark.slow), pytest.param(12, 30, marks=pytest.mark.slow)]
)
def test_sigmoid_small_beta_keeps_relative_accuracy(exponent: int, dps: int) -> None:
    # sigma^2 ~ beta^6 / 96: F - c_0 - mu_1 g cancels about 3 * exponent digits
    beta = sp.Rational(1, 10**exponent)
    data = hermite_data("sigmoid", beta, dps=dps)
    mu1, sigma2 = sigmoid_series(beta)
    assert abs(data.mu1 / mu1 - 1) < sp.Float(10) ** (1 - dps)
    assert abs(data.sigma2 / sigma2 - 1) < sp.Float(10) ** (1 - dps)


def test_symbolic_beta_without_closed_form_is_refused() -> None:
    with pytest.raises(ValueError, match="beta"):
        hermite_data("sigmoid", BETA)


# unnormalised exp: c_0 = e^{beta^2/2}, mu_1 = beta e^{beta^2/2}, sigma^2 = e^{2 beta^2} - (1 + beta^2) e^{beta^2}


@pytest.mark.parametrize("beta", [0.5, 1.0, 1.5])
def test_unnormalised_exp_matches_quadrature(beta: float) -> None:
    data = hermite_data("exp", beta, "none")
    assert data.exact
    expected = reference(scipy_mean, lambda t: math.exp(beta * t), "none")
    assert data.numeric() == pytest.approx(expected, rel=1e-11)
    assert hermite_data("exp", BETA, "none").subs(beta).numeric() == pytest.approx(expected, rel=1e-11)


# ReLU and polynomial scores: closed forms against Gauss rules. ReLU's kink at 0 defeats a
# Gauss-Hermite rule (1.5 % error at 150 nodes), so ReLU uses Gauss-Legendre on each half-line.


@pytest.mark.parametrize("normalisation", ["row", "none"])
@pytest.mark.parametrize("beta", [0.5, 2, -1.5])
def test_relu_matches_quadrature(normalisation: str, beta: float) -> None:
    data = hermite_data("relu", beta, normalisation)
    assert data.exact
    expected = reference(scipy_mean, lambda t: max(beta * t, 0.0), normalisation)
    assert data.numeric() == pytest.approx(expected, rel=1e-12, abs=1e-14)
    assert data.numeric() == pytest.approx(
        reference(half_line_mean, lambda t: np.maximum(beta * t, 0.0), normalisation), rel=1e-12, abs=1e-14
    )


def test_relu_symbolic_beta() -> None:
    data = hermite_data("relu", BETA, "none")
    assert data.exact and data.beta == BETA
    assert data.subs(2).numeric() == pytest.approx(
        reference(scipy_mean, lambda t: max(2 * t, 0.0), "none"), rel=1e-12
    )


@pytest.mark.parametrize("score, f", [("quadratic", lambda s: 1 + s + s * s / 2), ("square", lambda s: s * s)])
@pytest.mark.parametrize("normalisation", ["row", "none"])
@pytest.mark.parametrize("beta", [BETA, 0.75, -2])
def test_polynomial_matches_gauss_hermite(
    score: str, f: Callable[[np.ndarray], np.ndarray], normalisation: str, beta: object
) -> None:
    data = hermite_data(score, beta, normalisation)
    assert data.exact
    value = 1.3 if beta is BETA else float(beta)  # type: ignore[arg-type]
    if beta is BETA:
        data = data.subs(value)
    expected = reference(gauss_mean, lambda t: f(value * t), normalisation)
    assert data.numeric() == pytest.approx(expected, rel=1e-12, abs=1e-14)


# scores given by users: read from the registry, closed form or quadrature as they allow


@pytest.mark.parametrize(
    "score, exact",
    [
        (scores.Score("test_sech", lambda s: 1 / sp.cosh(s), lambda s: 1 / np.cosh(s)), False),
        (scores.Score("test_shifted_exp", lambda s: sp.exp(s + 1) + s**2, lambda s: np.exp(s + 1) + s**2), True),
    ],
)
@pytest.mark.parametrize("normalisation", ["row", "none"])
def test_user_scores(monkeypatch: pytest.MonkeyPatch, score: scores.Score, exact: bool, normalisation: str) -> None:
    monkeypatch.setitem(scores.SCORES, score.name, score)
    data = hermite_data(score.name, 0.8, normalisation)
    assert data.exact is exact
    expected = reference(gauss_mean, lambda t: score.numeric(0.8 * t), normalisation)
    assert data.numeric() == pytest.approx(expected, rel=1e-12, abs=1e-14)


# beta handling, caching, outputs


def test_beta_conversion() -> None:
    assert hermite_data("softmax", 0.5).beta == sp.Rational(1, 2)
    assert hermite_data("softmax", 1.5).beta == sp.Rational(3, 2)
    assert isinstance(hermite_data("softmax", 1 / 3).beta, sp.Float)
    assert hermite_data("softmax", "0.25").beta == sp.Rational(1, 4)
    assert hermite_data("softmax", np.float64(0.25)).beta == sp.Rational(1, 4)


def test_float_beta_keeps_digits() -> None:
    beta = 1 / 3
    data = hermite_data("softmax", beta, "none", dps=40)
    assert data.exact
    mu1 = sp.Rational(beta) * sp.exp(sp.Rational(beta) ** 2 / 2)
    assert abs(data.mu1 - mu1.evalf(40)) < sp.Float("1e-38", 40)


def test_results_are_cached() -> None:
    assert hermite_data("softmax", 1) is hermite_data("softmax", 1)
    assert hermite_data("sigmoid", 1) is hermite_data("sigmoid", 1)


def test_subs_and_numeric() -> None:
    symbolic = hermite_data("softmax", BETA)
    with pytest.raises(ValueError, match="beta"):
        symbolic.numeric()
    assert symbolic.subs(1) == hermite_data("softmax", 1)
    with pytest.raises(ValueError, match="beta"):
        hermite_data("softmax", 1).subs(2)
    with pytest.raises(ValueError, match="beta"):
        symbolic.subs(sp.Symbol("x"))


def test_as_dict_is_json() -> None:
    numeric = json.loads(json.dumps(hermite_data("softmax", 1).as_dict()))
    assert numeric["sigma2"] == "-2 + E"
    assert numeric["values"]["sigma2"] == pytest.approx(math.e - 2)
    assert numeric["exact"] is True
    symbolic = json.loads(json.dumps(hermite_data("softmax", BETA).as_dict()))
    assert symbolic["values"] is None
    assert sp.sympify(symbolic["mu1"], locals={"beta": BETA}) == BETA
    assert json.loads(json.dumps(hermite_data("sigmoid", 1).as_dict()))["exact"] is False


def test_zero_beta() -> None:
    assert hermite_data("sigmoid", 0).numeric() == (1.0, 0.0, 0.0)
    with pytest.raises(ValueError, match="beta"):
        hermite_data("relu", 0)


@pytest.mark.parametrize(
    "kwargs, field",
    [
        ({"score": "nope", "beta": 1}, "score"),
        ({"score": "softmax", "beta": 1, "normalisation": "column"}, "normalisation"),
        ({"score": "softmax", "beta": float("inf")}, "beta"),
        ({"score": "softmax", "beta": float("nan")}, "beta"),
        ({"score": "softmax", "beta": sp.oo}, "beta"),
        ({"score": "softmax", "beta": sp.zoo}, "beta"),
        ({"score": "softmax", "beta": "1 +"}, "beta"),
        ({"score": "softmax", "beta": sp.I}, "beta"),
        ({"score": "softmax", "beta": [1]}, "beta"),
        ({"score": "softmax", "beta": 1, "dps": 0}, "dps"),
    ],
)
def test_bad_input_names_the_field(kwargs: dict, field: str) -> None:
    with pytest.raises(ValueError, match=f"^{field}:"):
        hermite_data(**kwargs)


def test_dataclass_is_frozen() -> None:
    data = hermite_data("softmax", 1)
    assert isinstance(data, HermiteData)
    with pytest.raises(AttributeError):
        data.mu1 = 0  # type: ignore[misc]
