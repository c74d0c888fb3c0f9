"""The law of a polynomial whose Gaussians carry variance profiles (docs/solving.md §3.11).

:class:`ProfiledModel` holds the polynomial, the ratios, the positional dimension group and the
profiles; :meth:`ProfiledModel.system` discretises its Dyson equation (:mod:`.profiles`) at a level
of :data:`LEVELS`, each with about twice the nodes of the one before (for a polynomial whose only
positional part is its deterministic diagonals, docs/equations.md §2.12, a level of
:data:`NORMAL_LEVELS`, Gauss-Hermite rules in the diagonals' standard Gaussian). :meth:`ProfiledModel.levels`
yields m(w) level after level (as does any :class:`LeveledModel`, such as the masked scores of
:mod:`.two_point`); the driver :func:`stieltjes` keeps each point's m at the first level where it
differs from the previous level's by at most ``tol`` (1 + |m|), asks the next levels for the other
points only, and reports that difference as the achieved error beside every value; a request that
the last level cannot meet is refused with the error it reached. Densities are -Im m(x + i0) / pi;
the distribution function comes from one contour integral (mass up to a point, atoms included) and
the density integrated from there, so it needs no moment: the laws of singular profiles (the causal
layer) have none.
"""

from __future__ import annotations

import functools
from collections.abc import Generator, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
from scipy import interpolate
from sympy.matrices.expressions import MatrixExpr

from gemhsa_sym.free.expressions.matrices import Diagonal, Dim, Gaussian, diagonals_of, dims_of, gaussians_of, is_polynomial
from gemhsa_sym.free.expressions.pencil import Pencil, linearise
from gemhsa_sym.free.numeric.continuation import follow_branch
from gemhsa_sym.free.numeric.descent import BranchError
from gemhsa_sym.free.numeric.systems import NumericSystem
from gemhsa_sym.free.positions.profiles import Profile, Quadrature, profiled_system
from gemhsa_sym.parse import to_number
from gemhsa_sym.progress import note, stage

__all__ = ["LEVELS", "NORMAL_LEVELS", "ProfileError", "LeveledModel", "ProfiledModel", "ProfiledValues", "Distribution", "stieltjes",
           "between_points", "density", "distribution", "far_mean", "integrated"]

#: (Gauss-Legendre order per panel, octaves of geometric grading towards t = 0) of each level.
LEVELS: tuple[tuple[int, int], ...] = ((4, 8), (6, 16), (8, 24), (10, 32))
#: Gauss-Hermite nodes of each level of a model whose positions carry only deterministic diagonals.
NORMAL_LEVELS: tuple[int, ...] = (8, 16, 32, 64)
#: Heights tried for the fixed-point start (the discretised norm grows like the deepest node's variance).
START_HEIGHTS: tuple[float, ...] = tuple(10.0 ** k for k in range(2, 18, 2))
#: Steps of the fixed-point iteration allowed at a start height.
FIXED_POINT_STEPS = 100
#: Gauss-Legendre nodes per decade of the angle on the arc of the contour integral of the distribution function.
ARC_NODES = 8
#: Bisections of a grid interval across which the density falls to 0 (:func:`_edges_refined`); below EDGE_LEVEL times
#: its largest value the density counts as 0.
EDGE_BISECTIONS, EDGE_LEVEL = 12, 1e-12
#: Bisection steps of a quantile inside its grid interval (the interval in log x shrinks to 2^-50 of its width).
QUANTILE_STEPS = 50


class ProfileError(ArithmeticError):
    """The discretisation did not reach the requested tolerance at its last level."""


@dataclass(frozen=True, eq=False)
class ProfiledModel:
    """A polynomial in Gaussian matrices, some with variance profiles over the positions of ``positions``.

    ``breaks`` are positions where a profile jumps (added as panel edges, so that the quadrature
    stays exact for piecewise polynomial integrands). The polynomial may hold deterministic diagonals over the
    positions (:class:`~gemhsa_sym.free.expressions.matrices.Diagonal`); then no profile may vary with the position,
    and the levels are Gauss-Hermite rules (:data:`NORMAL_LEVELS`).
    """

    polynomial: MatrixExpr
    ratios: Mapping[Dim, Any]
    positions: Dim
    profiles: Mapping[Gaussian, Profile]
    breaks: tuple[float, ...] = ()
    _systems: dict[int, NumericSystem] = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not is_polynomial(self.polynomial, diagonals=True):
            raise ValueError(f"polynomial: not a polynomial in Gaussian matrices: {self.polynomial}")
        dims = {str(d) for d in dims_of(self.polynomial)}
        if str(self.positions) not in dims:
            raise ValueError(f"positions: {self.positions} is not a dimension group of the polynomial")
        used = set(gaussians_of(self.polynomial))
        for X in self.profiles:
            if X not in used:
                raise ValueError(f"profiles: {X} is not a matrix of the polynomial")
        ratios = {d: to_number(v, f"ratios.{d}") for d, v in self.ratios.items()}
        if any(not v.is_positive for v in ratios.values()):
            raise ValueError("ratios: every size ratio must be positive")
        object.__setattr__(self, "ratios", ratios)
        if any(not 0 < b < 1 for b in self.breaks):
            raise ValueError("breaks: positions of jumps lie strictly between 0 and 1")
        for D in self.diagonals:
            if str(D.rows) != str(self.positions):
                raise ValueError(f"positions: the diagonal {D.name} lies over {D.rows}, not over the positions {self.positions}")
        if self.diagonals and (self.breaks or any(p.positional_rows or p.positional_cols for p in self.profiles.values())):
            raise ValueError("profiles: a model with deterministic diagonals is solved on Gauss-Hermite rules in the standard "
                             "Gaussian of their entries, where no profile may vary with the position")

    @functools.cached_property
    def diagonals(self) -> tuple[Diagonal, ...]:
        """The deterministic diagonals of the polynomial."""
        return diagonals_of(self.polynomial)

    @property
    def level_count(self) -> int:
        """How many levels of discretisation there are."""
        return len(NORMAL_LEVELS if self.diagonals else LEVELS)

    @functools.cached_property
    def pencil(self) -> Pencil:
        """The linear pencil of the polynomial (docs/equations.md §2.2)."""
        return linearise(self.polynomial, diagonals=True)

    def quadrature(self, level: int) -> Quadrature:
        """The nodes of ``level`` (:data:`LEVELS`, or :data:`NORMAL_LEVELS` for a model with diagonals)."""
        if self.diagonals:
            return Quadrature.normal(NORMAL_LEVELS[level])
        order, octaves = LEVELS[level]
        return Quadrature.graded(1, octaves, order, self.breaks)

    def system(self, level: int) -> NumericSystem:
        """The discretised Dyson system at ``level`` (built once)."""
        if level not in self._systems:
            self._systems[level] = profiled_system(self.pencil, self.ratios, self.positions, self.profiles,
                                                   self.quadrature(level))
        return self._systems[level]

    def levels(self, w: np.ndarray, floor: float | np.ndarray) -> Generator[tuple[int, int, np.ndarray], np.ndarray | None, None]:
        """(level, nodes, m(w)) for every level in turn, every point solved (a mask sent is not needed: a level costs
        seconds); BranchError where a point fails verification."""
        for level in range(self.level_count):
            system = self.system(level)
            branch = follow_branch(system, w, max(start_height(system), 10 * float(np.max(np.abs(w)))), floor)
            if not np.all(branch.ok):
                bad = w[~branch.ok]
                raise BranchError(f"m(w) failed verification at {bad.size} point(s), e.g. w = {bad[0]:.6g}, level {level}")
            yield level, self.quadrature(level).size, branch.m


@dataclass(frozen=True)
class ProfiledValues:
    """m(w) at the targets, the achieved error (the change from the level before), the level and its nodes."""

    w: np.ndarray
    m: np.ndarray
    error: np.ndarray
    level: int
    nodes: int


def start_height(system: NumericSystem) -> float:
    """The lowest of :data:`START_HEIGHTS` at which the fixed-point iteration g <- R(g, w) from 0 converges
    by itself at w = i top (to 1e-12 in :data:`FIXED_POINT_STEPS` steps): there it reaches the physical
    solution (docs/solving.md §3.5), which a Newton polish of an unconverged iterate need not."""
    for top in START_HEIGHTS:
        w = np.array([1j * top])
        g = np.zeros((1, system.size), dtype=complex)
        for _ in range(FIXED_POINT_STEPS):
            new = system.readout(w, g)
            done = np.max(np.abs(new - g)) <= 1e-12 * (1 + np.max(np.abs(new)))
            g = new
            if done:
                return top
    raise BranchError(f"the fixed-point iteration did not converge up to Im w = {START_HEIGHTS[-1]:g}")


class LeveledModel(Protocol):
    """A law computed on ever finer discretisations: :class:`ProfiledModel`, and the masked scores of
    :class:`~.two_point_solver.MaskedScoresModel`."""

    def levels(self, w: np.ndarray, floor: float | np.ndarray) -> Generator[tuple[int, int, np.ndarray], np.ndarray | None, None]:
        """(level, nodes, m(w)) for every level in turn (``floor``: the height of the drivers' last step); a boolean
        mask sent to the generator names the points the next levels must solve (the others may be left as they are)."""
        ...


def stieltjes(model: LeveledModel, w: Any, tol: float = 1e-6, floor: float | np.ndarray = 1e-4) -> ProfiledValues:
    """m(w) on the upper half plane to ``tol`` (1 + |m|) in the level-to-level change (module docstring): each point
    keeps the value of its first level within ``tol``, and the levels after it are asked (by ``send``) for the points
    still above; ``level`` and ``nodes`` are those of the last level a point needed."""
    w = np.atleast_1d(np.asarray(w, dtype=complex))
    if not tol > 0:
        raise ValueError(f"tol: must be positive, got {tol}")
    previous, error, nodes = None, np.full(w.shape, np.inf), 0
    active = np.ones(w.shape, dtype=bool)
    levels = model.levels(w, floor)
    while True:
        try:
            level, nodes, m = next(levels) if previous is None else levels.send(active.copy())
        except StopIteration:
            break
        except MemoryError as exc:  # the next level does not fit: the last one reached is the answer's bound
            if previous is None:
                raise
            worst = float(np.max(error / (1 + np.abs(previous))))
            raise ProfileError(f"tol: m(w) changed by {worst:.2e} (1 + |m|) at {nodes} nodes, above {tol:g}, and {exc}") from None
        if previous is not None:
            m = np.where(active, m, previous)
            error = np.where(active, np.abs(m - previous), error)
            active = error > tol * (1 + np.abs(m))
            note(f"level {level} ({nodes} nodes): m(w) within {tol:g} (1 + |m|) of the level before at "
                 f"{w.size - int(active.sum())} of {w.size} points")
            if not np.any(active):
                return ProfiledValues(w, m, error, level, nodes)
        else:
            note(f"level {level} ({nodes} nodes) solved at {w.size} points")
        previous = m
    worst = float(np.max(error / (1 + np.abs(previous))))
    raise ProfileError(f"tol: the last level ({nodes} nodes) changed m(w) by {worst:.2e} (1 + |m|), above {tol:g}")


def far_mean(model: LeveledModel, scale: float) -> float:
    """The law's mean from m(w) far out: Re((m w - 1) w) at w = i y is mu_1 - mu_3 / y^2 + O(y^-4), extrapolated over y
    and 2y, y = 1e4 ``scale`` (a size of the law), m solved to 1e-12."""
    y = 1e4 * scale
    w = np.array([1j * y, 2j * y])
    first = ((stieltjes(model, w, 1e-12).m * w - 1) * w).real
    return float((4 * first[1] - first[0]) / 3)


def density(model: LeveledModel, x: Any, tol: float = 1e-6) -> ProfiledValues:
    """m(x + i0) at real points (``m.imag`` = -pi times the density), to ``tol`` as :func:`stieltjes`."""
    x = np.atleast_1d(np.asarray(x, dtype=float))
    return stieltjes(model, x + 0j, tol, floor=1e-6 * (1 + np.abs(x)))


def mass_below(model: LeveledModel, x: float, tol: float = 1e-6) -> tuple[float, float]:
    """The mass of [0, x] (atoms included) and its achieved error: F(x) = -(1/pi) Im int m(w) dw along the
    half circle in the upper half plane from -a to x (a = max(1, x)), where m is analytic but at x. The
    angle from x is integrated in log theta (Gauss-Legendre, :data:`ARC_NODES` per decade) down to the
    distance 1e-3 x from x (an angle of at most 1e-6); below, m is taken constant (its value at the first
    node), which m, varying on the scale of x there, misses by about |m| (1e-3 x)^2 / (pi x) in F: that
    is added to the achieved error (docs/solving.md §3.11)."""
    if not x > 0:
        raise ValueError(f"x: the mass below a point is asked at positive points, got {x}")
    a = max(1.0, x)
    centre, radius = (x - a) / 2, (x + a) / 2
    low = np.log(min(1e-6, 1e-3 * x / radius))
    edges = np.linspace(low, np.log(np.pi), max(2, int(np.ceil((np.log(np.pi) - low) / np.log(10)))) + 1)
    nodes, weights = np.polynomial.legendre.leggauss(ARC_NODES)
    half = np.diff(edges)[:, None] / 2
    s = (edges[:-1, None] + half * (nodes + 1)).ravel()
    ds = (half * weights).ravel()
    theta = np.exp(s)
    points = centre + radius * np.exp(1j * theta)
    values = stieltjes(model, points, tol, floor=points.imag / 2)  # every point reached by descent
    # the path runs from -a (theta = pi) to x (theta = 0): F = (1/pi) Im int_0^pi m w'(theta) dtheta
    dw = 1j * radius * np.exp(1j * theta) * theta * ds
    dw[0] += 1j * radius * np.exp(low)  # theta below the nodes: m there is m at the first node, to first order
    mass = float(np.sum(values.m * dw).imag / np.pi)
    constant = abs(values.m[0]) * (radius * np.exp(low)) ** 2 / (np.pi * x)
    return mass, float(np.sum(values.error * np.abs(dw)) / np.pi) + constant


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


def distribution(model: LeveledModel, x: Any, tol: float = 1e-6) -> Distribution:
    """F on an increasing grid of positive points, with points added inside the intervals across an edge
    (:func:`_edges_refined`): the mass up to x[0] by :func:`mass_below`, then the density integrated in log x
    (:func:`integrated`, whose error estimate joins the achieved error)."""
    x = np.asarray(x, dtype=float)
    if x.ndim != 1 or x.size < 2 or np.any(np.diff(x) <= 0) or x[0] <= 0:
        raise ValueError("x: expected an increasing grid of positive points")
    with stage(f"F({x[0]:.3g}): m(w) on the half circle up to it, level by level"):
        start, error = mass_below(model, float(x[0]), tol)
    with stage(f"the density at {x.size} points up to {x[-1]:.3g}, level by level, and bisections of its edges"):
        values = stieltjes(model, x + 0j, tol, floor=1e-6 * x)
        rho = np.maximum(-values.m.imag / np.pi, 0.0)  # far out in a light tail, rounding leaves -1e-50 where it is 0
        fine, density, change = _edges_refined(model, x, rho, values.error, tol)
    s = np.log(fine)
    mass, rule = integrated(s, fine * density)
    df = fine * change / np.pi  # the level-to-level change of the density in log x
    error += float(np.sum(np.diff(s) * (df[1:] + df[:-1]) / 2)) + rule
    return Distribution(fine, start + mass, density, error, values.level, values.nodes)
