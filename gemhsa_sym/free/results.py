"""Value types of a law's answers and the limits of what the engine computes (docs/solving.md §3.9, §3.10).

Imports nothing else from the package, so that every stage can use them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import mpmath
import numpy as np
import sympy as sp

__all__ = ["MAX_DPS", "WORK_DPS", "Atom", "Edge", "check_dps"]

#: Most digits the engine gives (edges, m(w), densities); fewer are printed from at least WORK_DPS.
MAX_DPS = 100
WORK_DPS = 16


def check_dps(dps: Any) -> int:
    """``dps`` as an int in 1..MAX_DPS; ValueError naming dps and the range otherwise."""
    if isinstance(dps, bool) or not isinstance(dps, (int, np.integer)) or not 1 <= dps <= MAX_DPS:
        raise ValueError(f"dps: digits must be an integer from 1 to {MAX_DPS}, got {dps!r}")
    return int(dps)



@dataclass(frozen=True)
class Atom:
    """A point mass; ``exact`` is a rational when the numeric mass was identified with one."""

    location: float
    mass: float
    error: float
    exact: sp.Rational | None = None


@dataclass(frozen=True)
class Edge:
    """A support edge: ``side`` is 'lower' or 'upper'; ``hard`` for an edge at 0 where the density diverges.

    ``refined`` is False when the fold refinement failed and the edge comes from
    bisection of the density's sign change in double precision (about 1e-12).
    ``digits``: the significant digits of ``location``, those its repr prints.
    """

    location: mpmath.mpf
    side: str
    hard: bool = False
    refined: bool = True
    digits: int = 15

    def __float__(self) -> float:
        return float(self.location)

    def __repr__(self) -> str:
        return (f"Edge(location={mpmath.nstr(self.location, self.digits)}, side={self.side!r}, "
                f"hard={self.hard}, refined={self.refined})")
