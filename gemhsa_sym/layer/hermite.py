"""Gaussian-equivalence (Hermite) data of a score function or an activation (docs/model.md §1.5, §1.6).

For g ~ N(0, 1) and a score f at inverse temperature beta, the attention
matrix is replaced by ``c_0 1 1^T + mu_1 S0 + sigma Z`` with

- ``"row"`` (A = rownorm(f(beta S0))): F = f(beta g) / E f(beta g),
  c_0 = 1, mu_1 = E[g F], sigma^2 = E F^2 - 1 - mu_1^2;
- ``"none"`` (A = f(beta S0) / n): F = f(beta g),
  c_0 = E F, mu_1 = E[g F], sigma^2 = E F^2 - c_0^2 - mu_1^2;
  an MLP's activation phi at an input of standard deviation beta has these data (docs/extensions.md §8.7).

Closed forms come from SymPy: every Gaussian mean is reduced to derivatives
of the half-line moment generating functions E[exp(a g) 1{g > 0}] and
E[exp(a g) 1{g < 0}], which SymPy integrates against the Gaussian density.
This covers f(beta g) that are, on each half-line, sums of polynomials times
exponentials of g (exp, polynomials, ReLU through Max or Piecewise). Any
other score (sigmoid, softplus) is integrated by mpmath quadrature at a
numeric beta, verified at two working precisions, and marked inexact.
Derivations run once per (score, normalisation, sign of beta) with a symbolic
beta; numbers are substituted afterwards, and all results are cached.

An MLP whose input carries a common vector gives each neuron a Gaussian bias b: its neurons are put in Gauss-Hermite
levels of b, each with the data of phi(b + sqrt(v) g) (:func:`neuron_levels`, docs/extensions.md §8.7).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from numbers import Real
from typing import Any

import mpmath
import numpy as np
import sympy as sp

from gemhsa_sym.layer.scores import elementwise
from gemhsa_sym.parse import to_number

__all__ = ["HermiteData", "MLP_LEVELS", "NORMALISATIONS", "NeuronLevels", "hermite_data", "neuron_levels"]

NORMALISATIONS = ("row", "none")

_A = sp.Dummy("a", real=True)
_HALF_LINES: dict[str, tuple[sp.Symbol, sp.Expr, sp.Expr]] = {
    "pos": (sp.Dummy("g", positive=True), sp.S.Zero, sp.oo),
    "neg": (sp.Dummy("g", negative=True), -sp.oo, sp.S.Zero),
}
_G = sp.Dummy("g", real=True)
_BETA_BY_SIGN: dict[str, sp.Expr] = {
    "positive": sp.Dummy("beta", positive=True),
    "negative": sp.Dummy("beta", negative=True),
    "real": sp.Dummy("beta", real=True),
    "zero": sp.S.Zero,
}
_SHORT_DECIMAL_DIGITS = 12
_GUARD_DIGITS = 10
_MAX_GUARD_DIGITS = 80
_RESCALINGS = 4
_SMALL = mpmath.mpf("1e-5")


@dataclass(frozen=True)
class HermiteData:
    """Hermite data (c_0, mu_1, sigma^2) of a score at inverse temperature beta.

    ``exact`` is True when the values are closed forms (exact in beta; a
    Float beta gives Floats), False when they come from quadrature (SymPy
    Floats with the requested digits). See docs/model.md §1.5.
    """

    score: str
    normalisation: str
    beta: sp.Expr
    c0: sp.Expr
    mu1: sp.Expr
    sigma2: sp.Expr
    exact: bool

    def numeric(self, dps: int = 15) -> tuple[float, float, float]:
        """(c_0, mu_1, sigma^2) as floats, evaluated with ``dps`` digits."""
        if self.beta.free_symbols:
            raise ValueError(f"beta: {self.beta} is symbolic; substitute a number with subs() first")
        c0, mu1, sigma2 = (float(sp.N(v, dps)) for v in (self.c0, self.mu1, self.sigma2))
        return c0, mu1, sigma2

    def subs(self, beta_value: Any) -> HermiteData:
        """The same data with the number ``beta_value`` for the symbolic beta."""
        if not self.beta.free_symbols:
            raise ValueError(f"beta: already numeric ({self.beta}); nothing to substitute")
        value = _as_beta(beta_value)
        if value.free_symbols:
            raise ValueError(f"beta: subs needs a number, got {value}")
        return hermite_data(self.score, value, self.normalisation)

    def as_dict(self) -> dict[str, Any]:
        """JSON-able form: expressions as strings, floats when beta is numeric."""
        values = None
        if not self.beta.free_symbols:
            c0, mu1, sigma2 = self.numeric()
            values = {"beta": float(sp.N(self.beta)), "c0": c0, "mu1": mu1, "sigma2": sigma2}
        return {
            "score": self.score,
            "normalisation": self.normalisation,
            "beta": str(self.beta),
            "c0": str(self.c0),
            "mu1": str(self.mu1),
            "sigma2": str(self.sigma2),
            "exact": self.exact,
            "values": values,
        }


def hermite_data(score: str, beta: Any, normalisation: str = "row", dps: int = 30) -> HermiteData:
    """Hermite data of ``score`` at inverse temperature ``beta`` (docs/model.md §1.6).

    ``beta`` is a number (int, float, str, Rational, SymPy number) or a SymPy
    expression; a symbolic beta of unknown sign is taken to be real. Floats
    with a short decimal form become exact Rationals (0.5 -> 1/2). ``dps``
    is the number of digits of quadrature results and of closed forms
    evaluated at a Float beta. Results are cached.
    """
    elementwise(score)
    if normalisation not in NORMALISATIONS:
        raise ValueError(
            f"normalisation: unknown normalisation {normalisation!r}; choose one of {', '.join(NORMALISATIONS)}"
        )
    if isinstance(dps, bool) or not isinstance(dps, int) or dps < 1:
        raise ValueError(f"dps: need a positive integer number of digits, got {dps!r}")
    return _hermite_data(score, _as_beta(beta), normalisation, dps)


def _as_beta(beta: Any) -> sp.Expr:
    """beta as a finite real SymPy expression; ValueError naming beta otherwise."""
    if isinstance(beta, bool):
        raise ValueError(f"beta: need a number or SymPy expression, got {beta!r}")
    if isinstance(beta, float):
        if not math.isfinite(beta):
            raise ValueError(f"beta: must be finite, got {beta!r}")
        text = repr(float(beta))
        digits = text.split("e")[0].replace("-", "").replace(".", "").strip("0")
        value: sp.Expr = sp.Rational(text) if len(digits) <= _SHORT_DECIMAL_DIGITS else sp.Float(beta)
    elif isinstance(beta, Fraction):
        value = sp.Rational(beta.numerator, beta.denominator)
    elif isinstance(beta, sp.Basic) and not isinstance(beta, sp.Expr):
        raise ValueError(f"beta: need a number or SymPy expression, got {beta!r}")
    elif isinstance(beta, (str, int, sp.Expr)):
        value = to_number(beta, "beta")
    elif isinstance(beta, Real):
        value = to_number(float(beta), "beta")
    else:
        raise ValueError(f"beta: need a number or SymPy expression, got {type(beta).__name__}")
    if not isinstance(value, sp.Expr) or value.has(sp.nan, sp.zoo, sp.oo, -sp.oo) or value.is_finite is False:
        raise ValueError(f"beta: must be finite, got {beta!r}")
    if value.is_real is False or (not value.free_symbols and value.is_real is not True):
        raise ValueError(f"beta: must be real, got {beta!r}")
    return value


def _sign_class(beta: sp.Expr) -> str:
    """Which dummy beta the derivation uses: the sign of beta when known, else real."""
    if beta.is_zero:
        return "zero"
    if beta.is_positive:
        return "positive"
    if beta.is_negative:
        return "negative"
    return "real"


@lru_cache(maxsize=None)
def _hermite_data(score: str, beta: sp.Expr, normalisation: str, dps: int) -> HermiteData:
    """Cached body of :func:`hermite_data` on validated arguments."""
    sign = _sign_class(beta)
    derived = _closed_form(score, normalisation, sign)
    if derived is None:
        if beta.free_symbols:
            raise ValueError(
                f"beta: no closed form found for score {score!r} at symbolic beta = {beta}"
                + ("; declaring its sign (positive=True) may help" if sign == "real" else "")
                + "; give a number to integrate by quadrature"
            )
        c0, mu1, sigma2 = _quadrature(score, beta, normalisation, dps)
        exact = False
    else:
        dummy = _BETA_BY_SIGN[sign]
        if beta.has(sp.Float):
            m0, c0, mu1, sigma2 = (v.evalf(dps, subs={dummy: beta}) for v in derived)
        else:
            m0, c0, mu1, sigma2 = (v.xreplace({dummy: beta}) for v in derived)
        if normalisation == "row" and m0.is_zero:
            raise ValueError(
                f"beta: E f(beta g) = 0 for score {score!r} at beta = {beta}; row normalisation is undefined"
            )
        exact = True
    if sigma2.is_negative:
        raise ValueError(f"score: {score!r} gives sigma^2 = {sigma2} < 0 at beta = {beta}; not a valid score")
    return HermiteData(score, normalisation, beta, c0, mu1, sigma2, exact)


@lru_cache(maxsize=None)
def _closed_form(
    score: str, normalisation: str, sign: str
) -> tuple[sp.Expr, sp.Expr, sp.Expr, sp.Expr] | None:
    """(E f, c_0, mu_1, sigma^2) in the dummy beta of ``sign``, or None without a closed form."""
    f = elementwise(score).symbolic(_BETA_BY_SIGN[sign] * _G)
    moments = [_gaussian_mean(h) for h in (f, _G * f, f**2)]
    if any(m is None for m in moments):
        return None
    m0, m1, m2 = moments
    if normalisation == "row":
        c0, mu1, second = sp.S.One, m1 / m0, m2 / m0**2
    else:
        c0, mu1, second = m0, m1, m2
    return m0, c0, _tidy(mu1), _tidy(second - c0**2 - mu1**2)


def _tidy(expr: sp.Expr) -> sp.Expr:
    """Light normal form of a closed form (combine exponentials, cancel fractions)."""
    return sp.factor_terms(sp.cancel(sp.powsimp(sp.expand(expr))))


def _gaussian_mean(h: sp.Expr) -> sp.Expr | None:
    """E h(g) in closed form, or None when h is not elementary on each half-line."""
    total = sp.S.Zero
    for half, (x, _, _) in _HALF_LINES.items():
        part = _half_line_mean(h.xreplace({_G: x}), half)
        if part is None:
            return None
        total += part
    return sp.powsimp(sp.expand(total))


def _half_line_mean(h: sp.Expr, half: str) -> sp.Expr | None:
    """E[h(g) 1{g in half}] for h a sum of c g^k exp(a g + b); None otherwise."""
    x = _HALF_LINES[half][0]
    total = sp.S.Zero
    for term in sp.Add.make_args(sp.expand(h)):
        coeff, k, rate = sp.S.One, 0, sp.S.Zero
        for factor in sp.Mul.make_args(term):
            if not factor.has(x):
                coeff *= factor
            elif factor == x:
                k += 1
            elif factor.is_Pow and factor.base == x and factor.exp.is_Integer and factor.exp > 0:
                k += int(factor.exp)
            elif isinstance(factor, sp.exp) and not (factor.args[0] / x).has(x):
                rate += factor.args[0] / x  # expand has split exp(a g + b) into exp(a g) exp(b)
            else:
                return None
        total += coeff * _mgf_derivative(half, k).xreplace({_A: rate})
    return total


@lru_cache(maxsize=None)
def _mgf_derivative(half: str, k: int) -> sp.Expr:
    """d^k/da^k of E[exp(a g) 1{g in half}], integrated by SymPy for k = 0."""
    if k == 0:
        x, lower, upper = _HALF_LINES[half]
        density = sp.exp(-(x**2) / 2) / sp.sqrt(2 * sp.pi)
        return sp.expand(sp.integrate(sp.exp(_A * x) * density, (x, lower, upper), conds="none"))
    return sp.expand(sp.diff(_mgf_derivative(half, k - 1), _A))


def _quadrature(score: str, beta: sp.Expr, normalisation: str, dps: int) -> tuple[sp.Float, sp.Float, sp.Float]:
    """(c_0, mu_1, sigma^2) by mpmath quadrature, verified to ``dps`` significant digits.

    The guard digits double until two consecutive working precisions agree,
    since the cancellation in F - c_0 - mu_1 g costs digits at small beta.
    """
    f = sp.lambdify((_G, _A), elementwise(score).symbolic(_A * _G), modules="mpmath")
    guard = _GUARD_DIGITS
    previous = _quadrature_at(f, beta, normalisation, dps + guard)
    while guard < _MAX_GUARD_DIGITS:
        guard *= 2
        current = _quadrature_at(f, beta, normalisation, dps + guard)
        with mpmath.workdps(dps + guard):
            tolerance = mpmath.mpf(10) ** -dps
            if all(abs(a - b) <= tolerance * abs(b) for a, b in zip(previous, current)):
                c0, mu1, sigma2 = (sp.Float(v, dps) for v in current)
                return c0, mu1, sigma2
        previous = current
    raise ArithmeticError(
        f"quadrature for score {score!r} at beta = {beta} did not settle to {dps} digits "
        f"with up to {_MAX_GUARD_DIGITS} guard digits; try a smaller dps"
    )


def _quadrature_at(
    f: Any, beta: sp.Expr, normalisation: str, wdps: int
) -> tuple[mpmath.mpf, mpmath.mpf, mpmath.mpf]:
    """(c_0, mu_1, sigma^2) at working precision ``wdps``; sigma^2 = E (F - c_0 - mu_1 g)^2 >= 0."""
    with mpmath.workdps(wdps):
        b = mpmath.mpf(str(sp.N(beta, wdps + 5)))
        weight = 1 / mpmath.sqrt(2 * mpmath.pi)
        nodes: dict[mpmath.mpf, tuple[mpmath.mpf, mpmath.mpf]] = {}

        def score_and_density(t: mpmath.mpf) -> tuple[mpmath.mpf, mpmath.mpf]:
            # the integrals share their quadrature nodes: evaluate f once per node
            if t not in nodes:
                nodes[t] = (f(t, b), weight * mpmath.exp(-t * t / 2))
            return nodes[t]

        def weighted(h: Any, scale: mpmath.mpf) -> mpmath.mpf:
            def integrand(t: mpmath.mpf) -> mpmath.mpf:
                value, density = score_and_density(t)
                return h(t, value) * density / scale

            return scale * mpmath.quad(integrand, [-mpmath.inf, 0, mpmath.inf])

        def mean(h: Any) -> mpmath.mpf:
            # quad stops on an absolute error of 10^-wdps, which leaves dps + 5 digits
            # only for results above 10^-5: integrate smaller ones again at their scale
            scale = mpmath.mpf(1)
            result = weighted(h, scale)
            for _ in range(_RESCALINGS):
                if result == 0 or abs(result) >= scale * _SMALL:
                    break
                scale = abs(result)
                result = weighted(h, scale)
            return result

        m0 = mean(lambda t, v: v)
        if normalisation == "row" and m0 == 0:
            raise ValueError(f"beta: E f(beta g) = 0 at beta = {beta}; row normalisation is undefined")
        scale, c0 = (m0, mpmath.mpf(1)) if normalisation == "row" else (mpmath.mpf(1), m0)
        mu1 = mean(lambda t, v: t * v / scale)
        sigma2 = mean(lambda t, v: (v / scale - c0 - mu1 * t) ** 2)
        return +c0, +mu1, +sigma2


#: Gauss-Hermite levels of the neurons' bias where the MLP's input carries a common vector.
MLP_LEVELS = 8
_X = sp.Symbol("x", real=True)


@dataclass(frozen=True)
class NeuronLevels:
    """The MLP's neurons in levels of their bias b ~ N(0, bias variance) (Gauss-Hermite nodes and weights, one level
    without bias): per level its weight and the Hermite data (mu_0, mu_1 per unit of a standard Gaussian, mu_*^2) of
    phi(b + sqrt(v) g); ``common`` = E_b mu_0(b)^2, the squared size per entry of the common vector mu_0(b)^T W_2."""

    activation: str
    variance: sp.Expr
    bias_variance: sp.Expr
    weights: tuple[sp.Expr, ...]
    data: tuple[tuple[sp.Expr, sp.Expr, sp.Expr], ...]

    @property
    def common(self) -> sp.Expr:
        """E_b mu_0(b)^2."""
        return sum(w * mu0**2 for w, (mu0, _, _) in zip(self.weights, self.data))


def neuron_levels(activation: str, variance: sp.Expr, bias_variance: sp.Expr, levels: int = MLP_LEVELS) -> NeuronLevels:
    """:class:`NeuronLevels` of phi at input variance ``variance`` and bias variance ``bias_variance``: one exact level
    (:func:`~gemhsa_sym.layer.hermite.hermite_data`) without bias, else ``levels`` Gauss-Hermite nodes, each by mpmath
    quadrature at 30 digits. ``variance = 0`` is the limit of an input that vanishes against the bias (a collapsed
    stream): per node (phi(b), phi'(b), 0), mu_1 then the slope per unit of the input; nodes of equal slope (relu's, the
    identity's) are one level, whose mu_0 is the root mean square of their phi(b), so that ``common`` stays E phi(b)^2."""
    if variance == 0:
        nodes, weights = np.polynomial.hermite_e.hermegauss(levels)
        phi = elementwise(activation).symbolic(_X)
        merged: dict[sp.Expr, list[sp.Expr]] = {}
        for share, node in zip(_shares(weights), nodes):
            b = sp.Float(float(node), 30) * sp.sqrt(bias_variance)
            level = merged.setdefault(sp.N(sp.diff(phi, _X).subs(_X, b), 30), [sp.Integer(0), sp.Integer(0)])
            level[0], level[1] = level[0] + share, level[1] + share * sp.N(phi.subs(_X, b), 30) ** 2
        return NeuronLevels(activation, variance, bias_variance, tuple(w for w, _ in merged.values()),
                            tuple((sp.sqrt(square / w), slope, sp.Integer(0)) for slope, (w, square) in merged.items()))
    if bias_variance == 0:
        data = hermite_data(activation, sp.sqrt(variance), "none")
        return NeuronLevels(activation, variance, bias_variance, (sp.Integer(1),), ((data.c0, data.mu1, data.sigma2),))
    nodes, weights = np.polynomial.hermite_e.hermegauss(levels)
    f = sp.lambdify(_X, elementwise(activation).symbolic(_X), modules="mpmath")
    out = []
    with mpmath.workdps(30):
        sd, spread = mpmath.sqrt(mpmath.mpf(str(sp.N(variance, 40)))), mpmath.sqrt(mpmath.mpf(str(sp.N(bias_variance, 40))))
        for node in nodes:
            b = spread * mpmath.mpf(float(node))
            split = [-mpmath.inf, -b / sd, mpmath.inf]  # where phi's argument crosses 0 (the kink of relu)

            def mean(h: Callable[[mpmath.mpf, mpmath.mpf], mpmath.mpf], b: mpmath.mpf = b) -> mpmath.mpf:
                return mpmath.quad(lambda g: h(g, f(b + sd * g)) * mpmath.npdf(g), split)

            mu0, mu1 = mean(lambda g, v: v), mean(lambda g, v: g * v)
            out.append(tuple(sp.Float(x, 30) for x in (mu0, mu1, mean(lambda g, v: v * v) - mu0**2 - mu1**2)))
    return NeuronLevels(activation, variance, bias_variance, _shares(weights), tuple(out))


def _shares(weights: np.ndarray) -> tuple[sp.Rational, ...]:
    """Gauss-Hermite ``weights`` as exact rationals of 15 digits that sum to 1."""
    shares = [sp.Rational(float(w / weights.sum())).limit_denominator(10**15) for w in weights[1:]]
    return (1 - sum(shares), *shares)
