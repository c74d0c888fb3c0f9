"""Monte Carlo checks of limiting laws of products of Gaussian matrices.

The eigenvalues of Y^T Y at finite N come from two sources: ``SpectralLaw.sample`` and
draws written here with bare numpy (so that a fault in ``sample`` cannot hide a fault in
the law). Dimensions: n = N, d = N/2, d_v = N/4 (reference ratios 1, 1/2, 1/4), entries
N(0, 1/N). Zero eigenvalues are kept, so the comparison is with the full law, atom
included. Expected moments are exact (planar pairings); at N = 2000 finite-size effects
on the KS distance are about 0.002.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
import sympy as sp

from gemhsa_sym.free.expressions.matrices import Dim, Gaussian
from gemhsa_sym.laws.spectral import spectral_law

R = sp.Rational
n, d, dv = Dim("n"), Dim("d"), Dim("d_v")
X, W1, W2, Z = Gaussian("X", n, d), Gaussian("W1", d, d), Gaussian("W2", d, dv), Gaussian("Z", n, n)
RATIOS = {n: 1, d: R(1, 2), dv: R(1, 4)}

#: name -> (polynomial, ratios, exact mu_1..mu_3, atom at zero, q / N)
CASES = {
    "X W1 X^T": (X @ W1 @ X.T, {n: 1, d: R(1, 2)}, (1 / 4, 3 / 8, 49 / 64), 0.5, 1.0),
    "X W1 X^T X W2": (X @ W1 @ X.T @ X @ W2, RATIOS, (3 / 8, 27 / 64, 5439 / 8192), 0.0, 0.25),
    "(X W1 X^T + Z/2) X W2": ((X @ W1 @ X.T + Z / 2) @ X @ W2, RATIOS, (1 / 2, 21 / 32, 2473 / 2048), 0.0, 0.25),
}
N_KS = 2000


@functools.cache
def law_of(name: str):
    Y, ratios, *_ = CASES[name]
    return spectral_law(Y, ratios)


def own_draws(name: str, N: int, draws: int, seed: int) -> np.ndarray:
    """Eigenvalues of Y^T Y (zeros included, sorted), one row per draw, with bare numpy."""
    rows = []
    for child in np.random.SeedSequence(seed).spawn(draws):
        rng = np.random.default_rng(child)
        x, w1, w2, z = (rng.standard_normal(shape) / np.sqrt(N) for shape in ((N, N // 2), (N // 2, N // 2), (N // 2, N // 4), (N, N)))
        a = x @ w1 @ x.T
        if name == "X W1 X^T":
            y = a
        elif name == "X W1 X^T X W2":
            y = a @ x @ w2
        else:
            y = (a + z / 2) @ x @ w2
        q = y.shape[1]
        ev = np.linalg.eigvalsh(y.T @ y if y.shape[0] >= q else y @ y.T)
        rows.append(np.sort(np.concatenate([np.zeros(q - ev.size), ev])))
    return np.array(rows)


def clean(ev: np.ndarray) -> np.ndarray:
    """Flatten, and set the numerically zero eigenvalues (rank deficiency) to exactly 0."""
    ev = np.sort(ev.ravel())
    ev[ev < 1e-9 * ev[-1]] = 0.0
    return ev


def ks_distance(cdf, atom: float, samples: np.ndarray) -> float:
    """sup_x |F(x) - F_N(x)| for a law with an atom at 0 and a continuous part, exactly."""
    x = clean(samples)
    values, counts = np.unique(x, return_counts=True)
    right = np.cumsum(counts) / x.size  # F_N(v)
    left = right - counts / x.size  # F_N(v-)
    F = np.asarray(cdf(values), dtype=float)
    F_left = F - atom * (values == 0)
    return float(max(np.max(np.abs(F - right)), np.max(np.abs(F_left - left))))


def two_sample_ks(a: np.ndarray, b: np.ndarray) -> float:
    a, b = clean(a), clean(b)
    grid = np.union1d(a, b)
    Fa = np.searchsorted(a, grid, side="right") / a.size
    Fb = np.searchsorted(b, grid, side="right") / b.size
    return float(np.max(np.abs(Fa - Fb)))


def sample_moments(ev: np.ndarray, k: int = 3) -> np.ndarray:
    ev = clean(ev)
    return np.array([np.mean(ev**j) for j in range(1, k + 1)])


def assert_moments_close(ev: np.ndarray, want, rel: float) -> None:
    """Draw-averaged mu_1..mu_3 within ``rel`` of ``want`` plus three standard errors.

    The standard error is estimated from the spread between draws. Real Gaussian matrices
    have O(1/N) corrections to the moments: for X W1 X^T X W2 at N = 2000 the mean of
    mu_3 is about 1% above its limit (2% at N = 1000), and one draw scatters by 3%.
    """
    per_draw = np.array([sample_moments(row) for row in ev])
    mean = per_draw.mean(axis=0)
    se = per_draw.std(axis=0, ddof=1) / np.sqrt(len(per_draw))
    want = np.asarray(want, dtype=float)
    assert np.all(np.abs(mean - want) <= rel * np.abs(want) + 3 * se), (mean, want, se)


# ---------------------------------------------------------------------------------------
# fast: the sampler itself
# ---------------------------------------------------------------------------------------


def test_sample_refuses_sizes_that_are_not_integers():
    with pytest.raises(ValueError, match="N"):
        law_of("X W1 X^T X W2").sample(402)


@pytest.mark.parametrize("name", list(CASES))
def test_sample_structure_and_seeds(name):
    law = law_of(name)
    atom, q = CASES[name][3], CASES[name][4]
    ev = law.sample(200, seed=3, draws=2)
    assert ev.shape == (2, int(q * 200))
    assert np.all(np.diff(ev, axis=1) >= 0)
    zeros = np.sum(clean(ev[0]) == 0)
    assert zeros == round(atom * q * 200)
    assert np.array_equal(ev, law.sample(200, seed=3, draws=2))
    assert not np.array_equal(ev[0], law.sample(200, seed=4)[0])
    assert not np.array_equal(ev[0], ev[1])


#: (N, draws) and the bound on the two-sample KS distance between independent sets of
#: draws: over 6-10 seed pairs it was at most 0.0062 (X W1 X^T) and 0.0125 (the others).
FAST_MC = {"X W1 X^T": (400, 4, 0.012), "X W1 X^T X W2": (800, 4, 0.025), "(X W1 X^T + Z/2) X W2": (800, 4, 0.025)}


@pytest.mark.parametrize("name", list(CASES))
def test_sample_agrees_with_independent_draws(name):
    N, draws, bound = FAST_MC[name]
    ours = own_draws(name, N, draws=draws, seed=11)
    theirs = law_of(name).sample(N, seed=12, draws=draws)
    assert two_sample_ks(ours, theirs) <= bound
    assert_moments_close(ours, CASES[name][2], rel=0.05)
    assert_moments_close(theirs, CASES[name][2], rel=0.05)


# ---------------------------------------------------------------------------------------
# the law against samples at N = 2000 (about 45 s for the six cases)
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("source", ["sample", "numpy"])
@pytest.mark.parametrize("name", list(CASES))
def test_law_against_monte_carlo(name, source):
    law = law_of(name)
    draws = 4 if CASES[name][4] == 1 else 8  # 4000 nonzero eigenvalues in all
    if source == "sample":
        ev = law.sample(N_KS, seed=2024, draws=draws)
    else:
        ev = own_draws(name, N_KS, draws=draws, seed=2025)
    assert_moments_close(ev, CASES[name][2], rel=0.01)
    assert_moments_close(ev, law.numeric_moments(3), rel=0.01)
    atom = sum(a.mass for a in law.atoms())
    assert atom == pytest.approx(CASES[name][3], abs=1e-10)
    assert law.mass() == pytest.approx(1, abs=1e-10)
    assert ks_distance(law.cdf, atom, ev) <= 0.004


def test_square_plus_quadratic_term():
    """Y = X + X^T X, X n x n: the density diverges at 0 like x^(-0.6), so fast that double
    precision loses the branch below about 1e-12 of the scale; the support scan, the contour
    masses and the atom use the decades it reaches. Mean of Y^T Y: 1 + 2 = 1 + the second
    moment of MP(1); the law against bare numpy draws at N = 1000 (4000 eigenvalues)."""
    Xs = Gaussian("X", n, n)
    law = spectral_law(Xs + Xs.T @ Xs, {n: 1})
    assert law.moments(1) == [3]
    assert law.atoms() == []
    lo, hi = law.edges(dps=16)
    assert lo.hard and float(lo.location) == 0
    assert law.mass() == pytest.approx(1, abs=1e-8)
    rows = []
    for child in np.random.SeedSequence(7).spawn(4):
        x = np.random.default_rng(child).standard_normal((1000, 1000)) / np.sqrt(1000)
        y = x + x.T @ x
        rows.append(np.linalg.eigvalsh(y.T @ y))
    ev = np.array(rows)
    assert_moments_close(ev, [float(v) for v in law.moments(3)], rel=0.02)
    assert ks_distance(law.cdf, 0.0, ev) <= 0.005
    assert float(hi.location) == pytest.approx(ev.max(), rel=0.02)
