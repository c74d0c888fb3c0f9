"""Deterministic diagonals over positions (docs/equations.md §2.12): the pencil, the Dyson equation on Gauss-Hermite rules
against Silverstein's equation solved by adaptive quadrature, and the refusals of the scalar paths."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import sympy as sp
from scipy import integrate

from gemhsa_sym.free.expressions.matrices import NORMAL, Diagonal, Dim, Gaussian
from gemhsa_sym.free.expressions.pencil import linearise
from gemhsa_sym.free.expressions.system import dyson_system
from gemhsa_sym.free.positions.profiled_law import ProfiledModel, stieltjes
from gemhsa_sym.free.positions.profiles import Profile

n, d = Dim("n"), Dim("d")
X, Z, W = Gaussian("X", n, d), Gaussian("Z", n, n), Gaussian("W", d, d)
SPREAD = 0.35
LOGNORMAL = Diagonal("D", n, sp.exp(sp.Rational(7, 20) * NORMAL - sp.Rational(49, 800)))  # mean 1, log-sd 0.35
POINTS = np.array([0.5 + 0.5j, 1.0 + 0.1j, 2.0 + 0.05j, 3j])


def silverstein(z: complex, spread: float = SPREAD, c: float = 0.5) -> complex:
    """m(z) = (1/d) tr (X^T D^2 X - z)^-1 for X (n x d, entries N(0, 1/n), d = c n) and D = exp(spread g - spread^2 / 2):
    m = 1 / (-z + E[tau / (1 + tau c m)]), tau = D^2 (Silverstein & Bai 1995), the expectation by adaptive quadrature over
    g and the fixed point damped."""
    def tau(g: float) -> float:
        return float(np.exp(2 * (spread * g - spread**2 / 2)))

    m = -1 / z
    for _ in range(2000):
        def part(g: float, which: int, m: complex = m) -> float:
            value = tau(g) / (1 + tau(g) * c * m) * np.exp(-g * g / 2) / np.sqrt(2 * np.pi)
            return value.imag if which else value.real

        mean = sum((1j if k else 1) * integrate.quad(part, -12, 12, args=(k,), epsabs=1e-14, epsrel=1e-13, limit=200)[0]
                   for k in (0, 1))
        new = 1 / (-z + mean)
        if abs(new - m) < 1e-14:
            return new
        m = (m + new) / 2
    raise AssertionError("the fixed point did not converge")


def test_the_pencil_of_a_polynomial_with_diagonals_is_checked_on_random_instances() -> None:
    Y = (X * W * X.T * LOGNORMAL + Z * LOGNORMAL) * X * W / 2 + LOGNORMAL * X
    pencil = linearise(Y, diagonals=True)
    pencil.check()
    assert sum(c.diagonal == LOGNORMAL for c in pencil.constants) == 3
    with pytest.raises(AssertionError, match="differs"):
        dataclasses.replace(pencil, polynomial=Y + LOGNORMAL * X / 1000).check()


def test_the_law_of_a_diagonal_times_a_gaussian_is_silversteins() -> None:
    """Y = D X with lognormal D: Y^T Y = sum_i D_i^2 x_i x_i^T, whose m(w) solves Silverstein's equation (engine m(w) is
    tr (w - Y^T Y)^-1, the negative of Silverstein's m(z))."""
    values = stieltjes(ProfiledModel(LOGNORMAL * X, {n: 1, d: sp.Rational(1, 2)}, n, {}), POINTS, tol=1e-4)
    reference = -np.array([silverstein(z) for z in POINTS])
    assert np.max(np.abs(values.m - reference)) < 1e-6
    assert np.all(np.abs(values.m - reference) <= values.error)  # the level-to-level change bounds the true error here


def test_the_mean_of_a_diagonal_model_is_the_mean_of_its_square() -> None:
    """(1/d) tr X^T D^2 X = E D^2 = exp(spread^2): read from m(w) = 1/w + mu_1/w^2 + O(w^-3) far out on the imaginary
    axis (the next term is 1e-6 of the mean there)."""
    w = np.array([1e3j])
    m = stieltjes(ProfiledModel(LOGNORMAL * X, {n: 1, d: sp.Rational(1, 2)}, n, {}), w, tol=1e-10).m
    mean = float(((m * w - 1) * w).real[0])
    assert mean == pytest.approx(np.exp(SPREAD**2), rel=1e-5)


def test_scalar_paths_refuse_diagonals() -> None:
    with pytest.raises(TypeError, match="not a polynomial"):
        linearise(LOGNORMAL * X)
    with pytest.raises(ValueError, match="positional one"):
        dyson_system(linearise(LOGNORMAL * X, diagonals=True), {n: 1, d: 1})


@pytest.mark.parametrize("make, message", [
    (lambda: Diagonal("D", n, sp.Symbol("t")), "standard Gaussian g only"),
    (lambda: ProfiledModel(Z * LOGNORMAL * X * W, {n: 1, d: 1}, n, {Z: Profile(region="lower")}),
     "no profile may vary"),
    (lambda: ProfiledModel(LOGNORMAL * X, {n: 1, d: 1}, d, {}), "lies over n"),
])
def test_bad_diagonals_are_refused(make, message: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError, match=message):
        make()
