"""The distribution function of a law known by m(w) level by level (docs/solving.md §3.11).

The mass up to the grid's first point is one contour integral of m(w) along a half circle (atoms included), and the
density -Im m(x + i0) / pi is integrated in log x from there, so no moment is needed: the laws of singular profiles
(the causal layer) have none. The half circle and the grid are solved together (:func:`.profiled_law.stieltjes`),
each point to the tolerance, or each by its weight in F within a budget of F's error.
"""

from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import interpolate

from gemhsa_sym.free.numeric.descent import BranchError
from gemhsa_sym.free.positions.profiled_law import LeveledModel, ProfileError, stieltjes
from gemhsa_sym.progress import stage

__all__ = ["ARC_NODES", "Distribution", "between_points", "distribution", "integrated", "mass_below"]

#: Gauss-Legendre nodes per decade of the angle on the arc of the contour integral of the distribution function.
ARC_NODES = 8
#: Bisections of a grid interval across which the density falls to 0 (:func:`_edges_refined`); below EDGE_LEVEL times
#: its largest value the density counts as 0.
EDGE_BISECTIONS, EDGE_LEVEL = 12, 1e-12
#: Bisection steps of a quantile inside its grid interval (the interval in log x shrinks to 2^-50 of its width).
QUANTILE_STEPS = 50


@dataclass(frozen=True)
class _HalfCircle:
    """The path of :func:`mass_below` up to x: its nodes w, the weights dw of m there, and the length below the nodes."""

    x: float
    w: np.ndarray
    dw: np.ndarray
    below: float

    @classmethod
    def up_to(cls, x: float) -> _HalfCircle:
        """The half circle in the upper half plane from -a to x (a = max(1, x)), the angle from x in log theta
        (Gauss-Legendre, :data:`ARC_NODES` per decade) down to the distance 1e-3 x from x (an angle of at most 1e-6)."""
        if not x > 0:
            raise ValueError(f"x: the mass below a point is asked at positive points, got {x}")
        a = max(1.0, x)
        centre, radius = (x - a) / 2, (x + a) / 2
        low = np.log(min(1e-6, 1e-3 * x / radius))
        edges = np.linspace(low, np.log(np.pi), max(2, int(np.ceil((np.log(np.pi) - low) / np.log(10)))) + 1)
        nodes, weights = np.polynomial.legendre.leggauss(ARC_NODES)
        half = np.diff(edges)[:, None] / 2
        theta = np.exp((edges[:-1, None] + half * (nodes + 1)).ravel())
        # the path runs from -a (theta = pi) to x (theta = 0): F = (1/pi) Im int_0^pi m w'(theta) dtheta
        dw = 1j * radius * np.exp(1j * theta) * theta * (half * weights).ravel()
        dw[0] += 1j * radius * np.exp(low)  # theta below the nodes: m there is m at the first node, to first order
        return cls(x, centre + radius * np.exp(1j * theta), dw, radius * np.exp(low))

    def mass(self, m: np.ndarray, error: np.ndarray) -> tuple[float, float]:
        """The mass and its achieved error from m and its errors at the nodes: below the nodes m is taken constant,
        which m, varying on the scale of x there, misses by about |m| below^2 / (pi x) in F, added to the error."""
        constant = abs(m[0]) * self.below**2 / (np.pi * self.x)
        return float(np.sum(m * self.dw).imag / np.pi), float(np.sum(error * np.abs(self.dw)) / np.pi) + constant


def mass_below(model: LeveledModel, x: float, tol: float = 1e-6) -> tuple[float, float]:
    """The mass of [0, x] (atoms included) and its achieved error: F(x) = -(1/pi) Im int m(w) dw along the half circle
    of :class:`_HalfCircle`, where m is analytic but at x, every node to ``tol`` (docs/solving.md §3.11)."""
    path = _HalfCircle.up_to(x)
    values = stieltjes(model, path.w, tol, floor=path.w.imag / 2)  # every point reached by descent
    return path.mass(values.m, values.error)


@dataclass(frozen=True)
class Distribution:
    """The distribution function on a grid: points x, F(x), the density, the achieved error of F (the
    level-to-level change of the mass below x[0] plus that of the density, integrated, plus the integration rule's),
    the level and nodes. Between grid points F is the cubic in log x that matches F and its slope x rho at both ends
    (:meth:`at`), kept between the two values."""

    x: np.ndarray
    cdf: np.ndarray
    density: np.ndarray
    error: float
    level: int
    nodes: int

    def at(self, x: Any) -> np.ndarray:
        """F at points inside the grid (:func:`between_points`); ValueError outside it."""
        x = np.atleast_1d(np.asarray(x, dtype=float))
        if np.any(x < self.x[0]) or np.any(x > self.x[-1]):
            raise ValueError(f"x: the grid covers [{self.x[0]:g}, {self.x[-1]:g}]")
        return between_points(self.x, self.cdf, self.density, x)

    def quantile(self, q: Any) -> np.ndarray:
        """x with F(x) = q (:meth:`at`, by bisection in log x inside the grid interval that brackets q); ValueError
        outside the grid."""
        q = np.atleast_1d(np.asarray(q, dtype=float))
        if np.any(q < self.cdf[0]) or np.any(q > self.cdf[-1]):
            raise ValueError(f"q: the grid covers F from {self.cdf[0]:.4g} to {self.cdf[-1]:.4g}; widen it")
        rising = np.maximum.accumulate(self.cdf)
        k = np.clip(np.searchsorted(rising, q) - 1, 0, len(self.x) - 2)
        low, high = np.log(self.x[k]), np.log(self.x[k + 1])
        for _ in range(QUANTILE_STEPS):
            mid = (low + high) / 2
            below = self.at(np.exp(mid)) < q
            low, high = np.where(below, mid, low), np.where(below, high, mid)
        return np.exp((low + high) / 2)

    def covered_quantiles(self, qs: Any) -> list[float | None]:
        """:meth:`quantile` of each q, None where the grid does not reach it."""
        return [float(self.quantile(q)[0]) if self.cdf[0] <= q <= self.cdf[-1] else None for q in qs]

    def tail_exponent(self, fraction: float = 0.2) -> float:
        """kappa in P(lambda > x) ~ c x^-kappa: from the log-log slope -(kappa + 1) of the density over the top
        ``fraction`` of the grid (the density keeps its relative accuracy where 1 - F falls below F's error)."""
        k = max(2, int(len(self.x) * fraction))
        return float(-np.polyfit(np.log(self.x[-k:]), np.log(self.density[-k:]), 1)[0] - 1)


def between_points(grid: np.ndarray, cdf: np.ndarray, density: np.ndarray, x: np.ndarray) -> np.ndarray:
    """A distribution function tabulated with its density on a positive grid, at points ``x`` inside it: the cubic in
    log x that matches F and its slope x rho at the two grid points around each, kept between their two values."""
    k = np.clip(np.searchsorted(grid, x) - 1, 0, len(grid) - 2)
    spline = interpolate.CubicHermiteSpline(np.log(grid), cdf, grid * density)
    low, high = np.minimum(cdf[k], cdf[k + 1]), np.maximum(cdf[k], cdf[k + 1])
    return np.clip(spline(np.log(x)), low, high)


def _cumulative(s: np.ndarray, f: np.ndarray) -> np.ndarray:
    """int_{s_0}^{s_k} f at every point, by the monotone cubic (PCHIP) through the points: the integral of a non-negative
    f never decreases, and where f is smooth it is within 1e-7 of the exact one on 32 points per decade."""
    antiderivative = interpolate.PchipInterpolator(s, f).antiderivative()
    return antiderivative(s) - antiderivative(s[0])


def integrated(s: np.ndarray, f: np.ndarray) -> tuple[np.ndarray, float]:
    """int_{s_0}^{s_k} f ds at every point (:func:`_cumulative`) and the rule's error: the largest change from the same
    rule on every other point (Richardson's estimate, which holds also where f has an edge between points and the rule
    converges more slowly)."""
    full = _cumulative(s, f)
    coarse = np.unique(np.r_[np.arange(0, s.size, 2), s.size - 1])
    if coarse.size < 4:
        return full, float(np.max(np.abs(full)))
    return full, float(np.max(np.abs(full[coarse] - _cumulative(s[coarse], f[coarse]))))


def _edges_refined(model: LeveledModel, x: np.ndarray, rho: np.ndarray, error: np.ndarray,
                   tol: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The points, densities and level changes of the grid with points added inside every interval across which the
    density falls to 0 or rises from it (an edge of the support, or the end of a light tail), by :data:`EDGE_BISECTIONS`
    bisections of where it does: an integration rule resolves a square-root edge only to h^1.5, so it is given a short
    interval. A bisection whose point fails verification or its tolerance ends them (the rule's estimate keeps the error
    honest)."""
    zero = rho <= EDGE_LEVEL * np.max(rho)
    crossing = np.flatnonzero(zero[1:] != zero[:-1])
    low, high, outside = np.log(x[crossing]), np.log(x[crossing + 1]), zero[crossing]
    points, densities, changes = [x], [rho], [error]
    with stage(f"{EDGE_BISECTIONS} bisections of the {crossing.size} grid intervals across an edge") if crossing.size else nullcontext():
        for _ in range(EDGE_BISECTIONS if crossing.size else 0):
            mid = np.exp((low + high) / 2)
            try:
                values = stieltjes(model, mid + 0j, tol, floor=1e-6 * mid)
            except (BranchError, ProfileError):
                break
            found = np.maximum(-values.m.imag / np.pi, 0.0)
            points.append(mid)
            densities.append(found)
            changes.append(values.error)
            below = (found <= EDGE_LEVEL * np.max(rho)) == outside  # the transition lies above the midpoint
            low, high = np.where(below, np.log(mid), low), np.where(below, high, np.log(mid))
    order = np.argsort(np.concatenate(points))
    return np.concatenate(points)[order], np.concatenate(densities)[order], np.concatenate(changes)[order]


def distribution(model: LeveledModel, x: Any, tol: float = 1e-6, weighted: bool = False) -> Distribution:
    """F on an increasing grid of positive points, with points added inside the intervals across an edge
    (:func:`_edges_refined`): the mass up to x[0] (:func:`mass_below`'s half circle) and the density on the grid
    solved together, then the density integrated in log x (:func:`integrated`, whose error estimate joins the achieved
    error). Every point is solved to ``tol`` (1 + |m|); with ``weighted``, ``tol`` bounds instead the part of F's
    achieved error that the levels leave, each point weighted by its share of F (|dw| / pi on the half circle, the
    trapezoid's x ds / pi on the grid; :func:`.profiled_law.stieltjes`), the points bisecting an edge still each to
    ``tol`` (1 + |m|)."""
    x = np.asarray(x, dtype=float)
    if x.ndim != 1 or x.size < 2 or np.any(np.diff(x) <= 0) or x[0] <= 0:
        raise ValueError("x: expected an increasing grid of positive points")
    path = _HalfCircle.up_to(float(x[0]))
    with stage(f"F({x[0]:.3g}) on the half circle up to it and the density at {x.size} points up to {x[-1]:.3g}, "
               "level by level"):
        values = stieltjes(model, np.r_[path.w, x + 0j], tol, floor=np.r_[path.w.imag / 2, 1e-6 * x],
                           weight=np.r_[np.abs(path.dw) / np.pi, _shares(x)] if weighted else None)
    arc = path.w.size
    start, error = path.mass(values.m[:arc], values.error[:arc])
    rho = np.maximum(-values.m[arc:].imag / np.pi, 0.0)  # far out in a light tail, rounding leaves -1e-50 where it is 0
    fine, density, change = _edges_refined(model, x, rho, values.error[arc:], tol)
    mass, rule = integrated(np.log(fine), fine * density)
    error += float(np.sum(_shares(fine) * change)) + rule
    return Distribution(fine, start + mass, density, error, values.level, values.nodes)


def _shares(x: np.ndarray) -> np.ndarray:
    """How much of F each point's m carries on a grid: the trapezoid's weight in log x times x / pi (F = int x rho d log x,
    rho = -Im m / pi)."""
    gaps = np.diff(np.log(x))
    return x * (np.r_[0.0, gaps] + np.r_[gaps, 0.0]) / (2 * np.pi)
