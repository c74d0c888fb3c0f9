"""Value types of a law's answers, and the constants that define them (docs/solving.md §3.9, §3.10).

One definition of each threshold, of the probe points and of the bound above the support,
shared by every stage; the module imports nothing else from the package.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import mpmath
import numpy as np
import sympy as sp

__all__ = [
    "ATOM_DECADES", "ATOM_THRESHOLD", "MAX_DPS", "NEAR_ZERO", "PROBE_POINTS", "ROOT_ROUNDING", "SCAN_POINTS",
    "SUPPORT_THRESHOLD", "WORK_DPS", "Atom", "Candidate", "Edge", "EdgeClassification", "check_dps", "probe_points", "top_of",
]

#: Most digits the engine gives (edges, m(w), densities); fewer are printed from at least WORK_DPS.
MAX_DPS = 100
WORK_DPS = 16
#: Density below this over the scale counts as zero: outside the support (scan, discriminant roots, scale check).
SUPPORT_THRESHOLD = 1e-8
#: Below this times the scale, the support scan tolerates points that fail verification (a hard edge).
NEAR_ZERO = 1e-8
#: Largest relative rounding error of m from the root of P(m, w) in double precision; points above it
#: are solved with the Dyson system instead.
ROOT_ROUNDING = 1e-12
#: Atoms lighter than this are not resolved (the estimate near a hard edge is not more accurate).
ATOM_THRESHOLD = 1e-6
#: Fewest decades down the imaginary axis for the atom's extrapolation.
ATOM_DECADES = 6
#: Points of the graded grid used to locate the support.
SCAN_POINTS = 1500
#: Generic points of the upper half plane, in units of a law's size: where reductions are
#: checked and where the elimination picks its factor.
PROBE_POINTS: tuple[complex, ...] = (0.37 + 0.61j, 1.13 + 0.29j, -0.71 + 0.47j, 0.52 + 0.11j)

Side = Literal["lower", "upper"]
EdgeMethod = Literal["fold", "bisection", "discriminant", "polynomial"]
AtomMethod = Literal["descent", "extrapolation", "polynomial", "exact"]


def top_of(scale: float) -> float:
    """Where every descent starts: far above the support of a law of this scale (m ~ 1/w there)."""
    return 8.0 * scale + 8.0


def probe_points(unit: float, count: int = len(PROBE_POINTS)) -> np.ndarray:
    """The first ``count`` of :data:`PROBE_POINTS` times ``unit``."""
    return unit * np.array(PROBE_POINTS[:count])


def check_dps(dps: Any) -> int:
    """``dps`` as an int in 1..MAX_DPS; ValueError naming dps and the range otherwise."""
    if isinstance(dps, bool) or not isinstance(dps, (int, np.integer)) or not 1 <= dps <= MAX_DPS:
        raise ValueError(f"dps: digits must be an integer from 1 to {MAX_DPS}, got {dps!r}")
    return int(dps)


@dataclass(frozen=True)
class Atom:
    """A point mass; ``exact`` is a rational when the numeric mass was identified with one.

    ``method``: 'descent' (a(y) = Re(iy m(iy)) followed down the imaginary axis until it
    settles), 'extrapolation' (its limit extrapolated over the last decades, near a strong
    hard edge), 'polynomial' (from P(m, w)), or 'exact' (a law known in closed form).
    """

    location: float
    mass: float
    error: float
    exact: sp.Rational | None = None
    method: AtomMethod = "descent"


@dataclass(frozen=True)
class Edge:
    """A support edge: ``side`` is 'lower' or 'upper'; ``hard`` for an edge at 0 where the density diverges.

    ``method``: 'fold' (the extremum of x on the real solution curve, refined in mpmath),
    'discriminant' (a classified real root of the discriminant of P), or 'bisection' (the
    density's sign change in double precision, about 12 digits, where the fold refinement
    failed; then ``refined`` is False). ``digits``: the significant digits of ``location``,
    those its repr prints.
    """

    location: mpmath.mpf
    side: Side
    hard: bool = False
    refined: bool = True
    digits: int = 15
    method: EdgeMethod = "fold"

    def __float__(self) -> float:
        return float(self.location)

    def __repr__(self) -> str:
        return (f"Edge(location={mpmath.nstr(self.location, self.digits)}, side={self.side!r}, "
                f"hard={self.hard}, refined={self.refined}, method={self.method!r})")


@dataclass(frozen=True)
class Candidate:
    """A real root of the discriminant (or leading coefficient) and its classification.

    ``kind`` is 'lower edge', 'upper edge', 'cusp', 'outside' or 'inside'
    (the last two are not edges); ``density`` the density just left and
    right of it.
    """

    location: mpmath.mpf
    kind: str
    density: tuple[float, float]

    @property
    def is_edge(self) -> bool:
        return self.kind.endswith("edge")


@dataclass(frozen=True)
class EdgeClassification:
    """Candidates in increasing order; the true edges, cusps and interior gaps among them."""

    candidates: tuple[Candidate, ...]
    edges: tuple[Edge, ...]
    cusps: tuple[mpmath.mpf, ...]
    gaps: tuple[tuple[mpmath.mpf, mpmath.mpf], ...]
    discriminant: sp.Expr
