"""Distances and estimators between a law and samples, written against the law protocol
(docs/verification.md §4.3, docs/solving.md §3.15).

Every function asks the law what it answers: the KS distance runs over the points where its cdf is
answered (the whole line for a law of compact support, the grid of a law known on a range, with the
ends of the range compared too); the Wasserstein-1 distance needs the whole law.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from gemhsa_sym.laws.protocol import Law, NoAnswer

__all__ = ["HILL_FRACTION", "MIN_DRAWS", "QUANTILES", "ZERO_TOL", "clean", "empirical_ks", "empirical_w1", "hill", "mean_over_draws",
           "power_fit", "snaps", "two_sample", "theory_quantiles"]

#: Eigenvalues below this times the largest one are numerically zero (round-off of eigvalsh is ~1e-14).
ZERO_TOL = 1e-11
#: The top fraction of a sample that Hill's estimator of the tail exponent uses.
HILL_FRACTION = 0.01
#: The quantile levels every comparison gives.
QUANTILES: tuple[float, ...] = (0.1, 0.5, 0.9, 0.99)
#: Fewest draws for a standard error over draws: the standard deviation of k draws is itself uncertain by a
#: factor 1 +- 1/sqrt(2 (k - 1)), 35 % at k = 5 and 71 % at k = 2.
MIN_DRAWS = 5


def clean(eigenvalues: np.ndarray, snap: bool = True) -> np.ndarray:
    """Sorted eigenvalues, round-off negatives set to 0, and with ``snap`` the numerically zero ones too."""
    x = np.sort(np.asarray(eigenvalues, dtype=float), axis=None)
    cut = ZERO_TOL * max(float(x[-1]), 0.0) if snap else 0.0
    return np.where(x <= cut, 0.0, x)


def snaps(law: Law) -> bool:
    """Numerically zero eigenvalues are set to 0 when the law has an atom there."""
    return any(a.location == 0 and a.mass > 0 for a in law.atoms())


def empirical_ks(law: Law, samples: np.ndarray) -> float:
    """sup |F - F_n| over both sides of every jump, for the law's cdf F (atoms included), at the sample points
    where F is answered and at the ends of that range where it is not the whole line."""
    lo, hi, whole = law.quantile_bracket()
    x, counts = np.unique(clean(samples, snaps(law)), return_counts=True)
    right = np.cumsum(counts) / counts.sum()
    left = right - counts / counts.sum()
    if whole:
        F, F_left = law.cdf(x), law.cdf(np.nextafter(x, -np.inf))
        return float(max(np.max(np.abs(F - right)), np.max(np.abs(F_left - left))))
    inside = (x >= lo) & (x <= hi)
    F = np.asarray(law.cdf(x[inside]))  # a table of a continuous law: no jumps
    ends = np.asarray(law.cdf(np.array([lo, hi])))
    below = np.searchsorted(x, [lo, hi], side="right")
    observed = np.where(below > 0, right[np.maximum(below - 1, 0)], 0.0)
    return float(max(np.max(np.abs(ends - observed)), np.max(np.abs(F - right[inside]), initial=0.0),
                     np.max(np.abs(F - left[inside]), initial=0.0)))


def empirical_w1(law: Law, samples: np.ndarray) -> float:
    """∫ |F - F_n| dx, exact for a tabulated F (linear between its grid points); NoAnswer where the law's cdf is
    not answered on the whole line."""
    lo, hi, whole = law.quantile_bracket()
    if not whole:
        raise NoAnswer("cdf", f"the Wasserstein distance needs the cdf on the whole line; this law's is on [{lo:g}, {hi:g}]")
    x = clean(samples, snaps(law))
    grid = getattr(law, "grid", np.zeros(0))
    grid = np.union1d(np.union1d(grid, x), [a.location for a in law.atoms()])
    F = np.asarray(law.cdf(grid))
    F_next = np.asarray(law.cdf(np.nextafter(grid[1:], -np.inf)))
    Fn = np.searchsorted(x, grid, side="right") / x.size
    d0, d1, h = F[:-1] - Fn[:-1], F_next - Fn[:-1], np.diff(grid)
    same = d0 * d1 >= 0
    spread = np.where(same, 1.0, np.abs(d0) + np.abs(d1))
    piece = np.where(same, (np.abs(d0) + np.abs(d1)) / 2, (d0**2 + d1**2) / (2 * spread))
    tail = max(float(x[-1]) - float(grid[-1]), 0.0) * (1 - float(F[-1]))
    return float(np.sum(h * piece) + tail)


def two_sample(a: np.ndarray, b: np.ndarray, snap: bool = True) -> dict[str, float]:
    """KS and W1 between two sample sets."""
    from scipy import stats  # imported on use: scipy.stats costs half a second to import

    a, b = clean(a, snap), clean(b, snap)
    return {"ks": float(stats.ks_2samp(a, b, method="asymp").statistic), "w1": float(stats.wasserstein_distance(a, b))}


def hill(eigenvalues: np.ndarray, fraction: float = HILL_FRACTION) -> float:
    """Hill's estimator of kappa in P(lambda > x) ~ c x^-kappa over the top ``fraction`` of the sample."""
    x = np.sort(np.asarray(eigenvalues, dtype=float), axis=None)[::-1]
    k = max(2, int(x.size * fraction))
    return float(1 / np.mean(np.log(x[:k] / x[k])))


def theory_quantiles(law: Law, levels: tuple[float, ...] = QUANTILES) -> list[float | None]:
    """The law's quantile at each level, None where its cdf does not reach the level (a law known on a range)."""
    out: list[float | None] = []
    for q in levels:
        try:
            out.append(float(law.quantile(q)))
        except ValueError:
            out.append(None)
    return out


def mean_over_draws(per_draw: np.ndarray) -> tuple[float, float | None]:
    """The mean of a statistic over independent draws and its standard error (standard deviation over draws /
    sqrt(draws)); the error is None with fewer than :data:`MIN_DRAWS` draws, where it would not mean what it says."""
    values = np.asarray(per_draw, dtype=float)
    mean = float(values.mean())
    if values.size < MIN_DRAWS:
        return mean, None
    return mean, float(values.std(ddof=1) / np.sqrt(values.size))


def power_fit(n: Sequence[float], values: Sequence[float]) -> dict[str, float | int | None]:
    """The exponent a of values ~ C n^a by least squares in log-log, with its standard error from the fit's residuals
    (None from two points, which any power law fits exactly), and the number of points."""
    x, y = np.log(np.asarray(n, dtype=float)), np.log(np.asarray(values, dtype=float))
    if x.size < 3:
        return {"exponent": float(np.polyfit(x, y, 1)[0]), "error": None, "points": int(x.size)}
    coefficients, covariance = np.polyfit(x, y, 1, cov="unscaled")
    residual = y - np.polyval(coefficients, x)
    variance = float(residual @ residual) / (x.size - 2)
    return {"exponent": float(coefficients[0]), "error": float(np.sqrt(variance * covariance[0, 0])), "points": int(x.size)}
