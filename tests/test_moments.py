"""Exact moments from the Dyson system's power series in 1/w (gemhsa_sym.free.equations.series).

Expected values come from outside the engine: Narayana polynomials (Marchenko–Pastur),
Fuss–Catalan numbers (products of square Gaussians), the planar-pairing counts of
docs/reference-values.md §9.2, the closed form of the single-head mean (docs/model.md §1.5:
2 beta^2 + sigma^2), and
the engine's own numeric contour integral of m(w), which shares nothing with the series
but the equations.
"""

from __future__ import annotations

import functools

import pytest
import sympy as sp

from gemhsa_sym.free.equations.series import moment_series
from gemhsa_sym.free.expressions.matrices import Dim, Gaussian, dims_of
from gemhsa_sym.free.expressions.pencil import linearise
from gemhsa_sym.free.expressions.system import dyson_system
from gemhsa_sym.laws.attention import BETA, AttentionLaw
from gemhsa_sym.laws.spectral import spectral_law
from gemhsa_sym.layer.equivalent import MU1, SIGMA
from gemhsa_sym.layer.presets import PRESETS

R = sp.Rational
n, d, D, m_, dv = Dim("n"), Dim("d"), Dim("D"), Dim("m"), Dim("d_v")
RATIOS = {n: 1, d: R(1, 2), D: 2, m_: R(3, 4), dv: R(1, 4)}
X, XD = Gaussian("X", n, d), Gaussian("X", n, D)
W, W1, W2, Z = Gaussian("W", d, m_), Gaussian("W_1", d, d), Gaussian("W_2", d, dv), Gaussian("Z", n, n)


def narayana(k: int, c: sp.Expr) -> sp.Expr:
    """k-th moment of Marchenko–Pastur with ratio c: sum_j N(k, j) c^(j-1)."""
    return sp.expand(sum(sp.binomial(k, j) * sp.binomial(k, j - 1) / k * c ** (j - 1) for j in range(1, k + 1)))


def fuss_catalan(p: int, k: int) -> int:
    """k-th moment of (X_1 ... X_p)^T (X_1 ... X_p) for square X_i: binom((p+1)k, k)/(pk + 1)."""
    return sp.binomial((p + 1) * k, k) // (p * k + 1)


def test_marchenko_pastur_with_a_symbolic_ratio() -> None:
    c = sp.Symbol("c", positive=True)
    got = moment_series(dyson_system(linearise(X), {n: 1, d: c}), 6)
    assert got == [narayana(k, c) for k in range(1, 7)]


def test_scaled_marchenko_pastur_and_its_atom() -> None:
    """X (n x D), entries of variance s/N: moments s^k times Narayana's in D/n."""
    s = sp.Symbol("s", positive=True)
    law = spectral_law(Gaussian("X", n, D, scale=s), {n: 1, D: 3})
    assert law.moments(4, symbolic=True) == [sp.expand(s**k * narayana(k, sp.S(3))) for k in range(1, 5)]


@pytest.mark.parametrize("p", [2, 3, 4])
def test_products_of_square_gaussians_give_fuss_catalan(p: int) -> None:
    Y = Gaussian("X1", n, n)
    for j in range(2, p + 1):
        Y = Y @ Gaussian(f"X{j}", n, n)
    assert moment_series(dyson_system(linearise(Y), {n: 1}), 5) == [fuss_catalan(p, k) for k in range(1, 6)]


@pytest.mark.parametrize(
    "Y, want",
    [
        (X, (1, R(3, 2), R(11, 4))),
        (XD, (1, 3, 11)),
        (X @ W, (R(1, 2), R(13, 16), R(223, 128))),
        (X @ W1 @ X.T, (R(1, 4), R(3, 8), R(49, 64))),
        (X @ W1 @ X.T @ X @ W2, (R(3, 8), R(27, 64), R(5439, 8192))),
        ((X @ W1 @ X.T + Z / 2) @ X @ W2, (R(1, 2), R(21, 32), R(2473, 2048))),
    ],
    ids=["i", "i'", "ii", "iii", "iv", "v"],
)
def test_reference_moments(Y, want) -> None:
    assert moment_series(dyson_system(linearise(Y), {k: RATIOS[k] for k in dims_of(Y)}), 3) == list(want)


def test_a_matrix_used_twice_with_its_transpose() -> None:
    """Y = X X^T (n x n, X n x d): moments of (X X^T)^2 are MP moments of even order."""
    c = R(1, 2)
    got = moment_series(dyson_system(linearise(X @ X.T), {n: 1, d: c}), 3)
    # eigenvalues of (X X^T)^2 on n: those of X^T X (ratio c, weight c) squared, plus zeros
    assert got == [c * narayana(2 * k, c) for k in range(1, 4)]


@functools.cache
def single_head():
    return AttentionLaw(PRESETS["single-head"])


def test_single_head_mean_is_two_beta_squared_plus_sigma_squared() -> None:
    law = single_head()
    assert law.moments(1, symbolic=True)[0] == sp.expand(2 * BETA**2 + (sp.exp(BETA**2) - 1 - BETA**2))
    assert law.moments(1)[0] == sp.E  # beta = 1: 2 + (e - 2)
    generic = super(type(law), law).moments(1, symbolic=True)[0]  # in the Hermite coefficients
    assert generic == 2 * MU1**2 + SIGMA**2


def test_exact_moments_agree_with_the_contour_integral_of_m() -> None:
    law = single_head()
    exact = [float(sp.N(v, 30)) for v in law.moments(3)]
    numeric = law.numeric_moments(3, points=1024)
    assert numeric == pytest.approx(exact, rel=1e-12)


def test_heads_stay_symbolic_and_specialise_to_the_explicit_counts() -> None:
    H = sp.Symbol("H", positive=True, integer=True)
    symbolic = AttentionLaw(PRESETS["mha"], heads=H, values={"H": 4})
    general = symbolic.moments(2, symbolic=True)
    assert H in general[1].free_symbols
    assert [sp.simplify(v.subs(H, 1) - w) for v, w in zip(general, single_head().moments(2, symbolic=True))] == [0, 0]
    four = AttentionLaw(PRESETS["mha"])
    assert [sp.simplify(v.subs({H: 4, BETA: 1}) - w) for v, w in zip(general, four.moments(2))] == [0, 0]
