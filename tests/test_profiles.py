"""Variance profiles over positions: the discretised Dyson equation against closed forms, the exact
two-block model and Monte Carlo (docs/equations.md §2.9, docs/solving.md §3.11)."""

from __future__ import annotations

import math
from collections.abc import Generator

import numpy as np
import pytest
import sympy as sp
from scipy import integrate

from gemhsa_sym.free.expressions.matrices import Dim, Gaussian
from gemhsa_sym.free.positions.distribution_function import distribution, mass_below
from gemhsa_sym.free.positions.profiled_law import ProfiledModel, ProfileError, stieltjes
from gemhsa_sym.free.positions.profiles import Profile, Quadrature, T, U
from gemhsa_sym.laws.spectral import spectral_law

n, o = Dim("n"), Dim("o")
TRIANGULAR = Gaussian("T", n, n)


def triangular() -> ProfiledModel:
    """T with its upper triangle and diagonal iid N(0, 1/n): T^T T is the quasinilpotent DT operator's square."""
    return ProfiledModel(TRIANGULAR, {n: 1}, n, {TRIANGULAR: Profile(region="upper")})


def contour_moments(model: ProfiledModel, k: int, radius: float = 20.0, points: int = 64) -> np.ndarray:
    """m_j = (1 / 2 pi i) contour integral of m(w) w^j dw on |w| = radius (m real on the real axis, so the
    lower half circle is the conjugate of the upper one)."""
    angles = (np.arange(points) + 0.5) * np.pi / points
    w = radius * np.exp(1j * angles)
    m = stieltjes(model, w, tol=1e-12).m
    w, m = np.r_[w, w.conj()], np.r_[m, m.conj()]
    return np.array([np.mean(m * w ** (j + 1)).real for j in range(k + 1)])


def test_triangular_gaussian_moments_are_k_to_the_k_over_k_plus_one_factorial() -> None:
    """Dykema & Haagerup: E tr (T^T T)^k = k^k / (k + 1)!: 1/2, 2/3, 9/8, 32/15."""
    moments = contour_moments(triangular(), 5)
    exact = [k**k / math.factorial(k + 1) for k in range(6)]
    assert np.allclose(moments, exact, rtol=0, atol=1e-9), moments


def test_profile_constant_on_two_blocks_equals_the_exact_two_block_model() -> None:
    """X W with the columns of X scaled by 1/2 on the first half of d and by 3/2 on the second, against
    sqrt(1/2) X_1 W_1 + sqrt(3/2) X_2 W_2 of today's block machinery (the two-level token covariance)."""
    d, d1, d2 = Dim("d"), Dim("d1"), Dim("d2")
    X, W = Gaussian("X", n, d), Gaussian("W", d, o)
    half = sp.Rational(1, 2)
    model = ProfiledModel(X * W, {n: 1, d: 1, o: half}, d, {X: Profile(col=sp.Piecewise((half, U < half), (3 * half, True)))})
    X1, X2, W1, W2 = Gaussian("X1", n, d1), Gaussian("X2", n, d2), Gaussian("W1", d1, o), Gaussian("W2", d2, o)
    exact = spectral_law(sp.sqrt(half) * X1 * W1 + sp.sqrt(3 * half) * X2 * W2, {n: 1, d1: half, d2: half, o: half})
    w = np.array([0.3 + 0.2j, 1.0 + 0.01j, 2.5 + 1e-3j, 4.0 + 0.5j])
    values = stieltjes(model, w, tol=1e-12)
    assert np.max(np.abs(values.m - [complex(exact.stieltjes(x, dps=30)) for x in w])) < 1e-12
    assert np.all(values.error < 1e-12)


def test_mass_below_against_marchenko_pastur() -> None:
    """F(x) of the square Wishart (no profile) by the contour integral, against the integrated density."""
    X = Gaussian("X", n, o)
    model = ProfiledModel(X, {n: 1, o: 1}, n, {})
    for x in (0.5, 1.0, 3.0):
        exact = integrate.quad(lambda t: np.sqrt(t * (4 - t)) / (2 * np.pi * t), 0, x)[0]
        mass, error = mass_below(model, x)
        assert abs(mass - exact) < 1e-8 and error < 1e-9  # measured: 1e-10 to 2e-9


def test_the_distribution_function_is_within_its_achieved_error_across_an_edge() -> None:
    """The square Wishart on 16 points per decade from 0.01 to 10, its edge at 4 between two points (which the grid
    gains bisection points around): F at the points, between them (the cubic matching F and the density) and at its
    quantiles within the achieved error, which the integration rule's estimate makes honest (the trapezoidal rule on the
    grid alone is off by 1.5e-3 there)."""
    model = ProfiledModel(Gaussian("X", n, o), {n: 1, o: 1}, n, {})
    x = np.geomspace(0.01, 10, 49)
    law = distribution(model, x)

    def exact(t: float) -> float:
        return integrate.quad(lambda u: np.sqrt(u * (4 - u)) / (2 * np.pi * u), 0, min(t, 4.0))[0]

    points = np.r_[x, np.sqrt(x[1:] * x[:-1]), np.linspace(3.5, 4.5, 101)]
    worst = max(abs(float(law.at(t)[0]) - exact(t)) for t in points)
    quantiles = max(abs(exact(float(law.quantile(q)[0])) - q) for q in (0.1, 0.5, 0.9, 0.99, 0.999))
    assert max(worst, quantiles) <= law.error < 1e-3, (worst, quantiles, law.error)  # measured: 5.0e-5, 2.4e-5, 2.9e-4
    assert set(x) <= set(law.x) and np.all(np.diff(law.cdf) >= 0) and abs(law.cdf[-1] - 1) <= law.error


def test_triangular_law_against_monte_carlo() -> None:
    """The distribution of T^T T against eigenvalues of triangular Gaussian matrices at n = 600: KS within
    the Monte Carlo scale, all mass in [0, e], the mean 1/2."""
    law = distribution(triangular(), np.geomspace(0.02, math.e, 256), tol=1e-4)
    assert abs(law.cdf[-1] - 1) < 1e-3  # the trapezoidal rule on the grid
    rng = np.random.default_rng(np.random.SeedSequence(7))
    size = 600
    samples = np.concatenate([np.linalg.eigvalsh(t.T @ t) for t in
                              (np.triu(rng.standard_normal((size, size))) / np.sqrt(size) for _ in range(3))])
    inside = (samples > law.x[0]) & (samples < law.x[-1])
    cdf = np.interp(samples[inside], law.x, law.cdf)
    empirical = (np.searchsorted(np.sort(samples), samples[inside], side="right")) / samples.size
    assert np.max(np.abs(cdf - empirical)) < 0.02
    assert abs(samples.mean() - 0.5) < 0.01 and samples.max() < math.e + 0.3


def test_quadrature_is_exact_for_panel_polynomials() -> None:
    q = Quadrature.graded(2, 6, 5, breaks=(0.3,))
    f = lambda u: 3 * u**2 - u + 2  # noqa: E731
    assert np.allclose(q.lower @ f(q.nodes), q.nodes**3 - q.nodes**2 / 2 + 2 * q.nodes, atol=1e-13)
    assert np.allclose(q.upper @ f(q.nodes), 2.5 - (q.nodes**3 - q.nodes**2 / 2 + 2 * q.nodes), atol=1e-13)
    assert 0.3 in q.edges


@pytest.mark.parametrize(("kwargs", "message"), [
    (dict(region="diagonal"), "region"),
    (dict(row=1 / U), "row must be an expression in t"),
    (dict(col=T + U), "col must be an expression in u"),
])
def test_bad_profiles_are_refused(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Profile(**kwargs)


def test_profile_on_a_side_without_positions_is_refused() -> None:
    X = Gaussian("X", n, o)
    model = ProfiledModel(X, {n: 1, o: 1}, n, {X: Profile(col=U)})
    with pytest.raises(ValueError, match="not the positional group"):
        stieltjes(model, 1j)


def test_an_unreachable_tolerance_is_refused_with_the_error_reached() -> None:
    Z = Gaussian("Z", n, n)
    model = ProfiledModel(Z, {n: 1}, n, {Z: Profile(row=1 / T, region="lower")})
    with pytest.raises(ProfileError, match="changed m"):
        stieltjes(model, np.array([0.5 + 0.01j]), tol=1e-15)


def test_a_level_that_does_not_fit_in_memory_ends_the_refinement_with_the_error_reached(monkeypatch: pytest.MonkeyPatch) -> None:
    import gemhsa_sym.free.positions.profiles as profiles

    model = triangular()
    monkeypatch.setattr(profiles, "MAX_BYTES", profiles.system_bytes(model.pencil, n, model.quadrature(1).size) - 1)
    with pytest.raises(ProfileError, match="GiB"):
        stieltjes(model, np.array([1 + 1j]), tol=1e-12)
    with pytest.raises(MemoryError, match="^quadrature: 36 nodes"):
        monkeypatch.setattr(profiles, "MAX_BYTES", 1)
        stieltjes(triangular(), np.array([1 + 1j]))


class Tabulated:
    """A leveled model whose m at each level is a row of ``table`` (levels x points), recording the masks sent."""

    def __init__(self, table: list[list[float]]) -> None:
        self.table, self.sent = np.array(table, dtype=complex), []

    def levels(self, w: np.ndarray, floor: float | np.ndarray) -> Generator[tuple[int, int, np.ndarray, None], np.ndarray | None, None]:
        for level, row in enumerate(self.table):
            sent = yield level, 10 * (level + 1), row.copy(), None
            self.sent.append(np.array(sent))


def test_each_point_keeps_its_first_level_within_tolerance_and_only_the_rest_go_on() -> None:
    """Three points: within 1e-3 at level 1, within it at level 2 (its level 3 value is never used), never (refused);
    the masks sent name the points still above the tolerance."""
    first, second, never = [1.0, 1.0001, 5.0, 5.0], [1.0, 1.2, 1.2005, 9.0], [1.0, 2.0, 3.0, 4.0]
    model = Tabulated(np.array([first, second, never]).T.tolist())
    with pytest.raises(ProfileError, match="changed m"):
        stieltjes(model, np.array([1j, 2j, 3j]), tol=1e-3)
    assert [s.tolist() for s in model.sent] == [[True] * 3, [False, True, True], [False, False, True], [False, False, True]]
    values = stieltjes(Tabulated(np.array([first, second]).T.tolist()), np.array([1j, 2j]), tol=1e-3)
    assert values.m.real.tolist() == [1.0001, 1.2005] and values.level == 2 and values.nodes == 30
    assert values.error.tolist() == pytest.approx([1e-4, 5e-4])


class _Halving:
    """Levels whose m moves by c 2^-level towards 1 + 1j at each point (c given per point), with no error of their own:
    the driver's change from level to level is then c 2^-level exactly."""

    def __init__(self, c: np.ndarray, count: int = 7) -> None:
        self.c, self.count, self.solved = c, count, []

    def levels(self, w: np.ndarray, floor: float | np.ndarray) -> Generator[tuple[int, int, np.ndarray, None], np.ndarray | None, None]:
        active = np.ones(w.shape, dtype=bool)
        for level in range(self.count):
            self.solved.append(int(active.sum()))
            sent = yield level, level + 1, (1 + 1j) + self.c * 2.0**-level, None
            if sent is not None:
                active &= np.asarray(sent, dtype=bool)


def test_a_weighted_budget_refines_the_points_that_carry_the_sum() -> None:
    """stieltjes with weights (docs/solving.md §3.11): sum_i weight_i error_i stays within tol, the points of small weight
    stop at the first comparison while the heavy ones go on, and a budget the last level cannot meet is refused."""
    c = np.array([1.0, 1.0, 1.0, 1.0])
    weight = np.array([1e-6, 1e-6, 1.0, 1.0])
    model = _Halving(c)
    values = stieltjes(model, np.full(4, 1j), tol=0.05, weight=weight)
    assert float(np.sum(weight * values.error)) <= 0.05
    assert model.solved[:2] == [4, 4] and model.solved[2] == 2  # the light points kept their level-1 value
    assert np.allclose(values.error, [0.5, 0.5, 2.0**-6, 2.0**-6])  # the heavy ones: together within what is left
    unweighted = _Halving(c)
    stieltjes(unweighted, np.full(4, 1j), tol=0.05 / 3)  # every point to 0.0167 (1 + |m|) = 0.040: level 5 for all
    assert unweighted.solved == [4, 4, 4, 4, 4, 4]
    shared = _Halving(c[:3])  # parts 0.5, 0.5, 5 against the share 2/3: the heavy one alone goes on, until within 1
    assert np.allclose(stieltjes(shared, np.full(3, 1j), tol=2.0, weight=np.array([1.0, 1.0, 10.0])).error,
                       [0.5, 0.5, 2.0**-4])
    assert shared.solved == [3, 3, 1, 1, 1]
    uneven = _Halving(c[:2])  # parts 0.5 and 0.0005 at the first comparison: they fit in 0.6 together, so both stop
    assert np.allclose(stieltjes(uneven, np.full(2, 1j), tol=0.6, weight=np.array([1.0, 1e-3])).error, 0.5)
    assert uneven.solved == [2, 2]
    with pytest.raises(ProfileError, match="weighted change"):
        stieltjes(_Halving(c, count=6), np.full(4, 1j), tol=0.05, weight=weight)
    with pytest.raises(ValueError, match="weight"):
        stieltjes(_Halving(c), np.full(4, 1j), tol=0.05, weight=np.ones(3))
