"""Support, edges and the atom at zero, as functions of a solver (docs/solving.md §3.7).

- The atom at 0: a(y) = Re(iy m(iy)) followed down the imaginary axis (:func:`atom_at_zero`).
- The support: a logarithmic pass finds the top, a grid graded towards 0 finds the
  intervals where the density exceeds SUPPORT_THRESHOLD / scale (:func:`scan_support`).
- The edges: folds of the real solution curve (:func:`.fold.fold_edge`), or bisection of
  the density's sign change where the fold refinement fails (:func:`fold_edges`).
All of them follow the Dyson system of the solver, whatever its value method.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import mpmath
import numpy as np
import sympy as sp

from gemhsa_sym.free.numeric.descent import BranchError
from gemhsa_sym.free.numeric.fold import fold_edge
from gemhsa_sym.free.numeric.rays import follow_rays
from gemhsa_sym.free.numeric.results import ATOM_DECADES, ATOM_THRESHOLD, NEAR_ZERO, SCAN_POINTS, SUPPORT_THRESHOLD, Atom, Edge, Side
from gemhsa_sym.laws.solver import BranchSolver

__all__ = ["SupportScan", "atom_at_zero", "fold_edges", "power_law_limit", "scan_support", "top_of_support"]


def power_law_limit(a: np.ndarray) -> tuple[float, float]:
    """The limit of a_k = A + C r^k (0 < r < 1: a(y) at y decreasing by decades, near a hard edge)
    by Aitken's delta-squared on the last three decades, and its change from the triple before
    as the error; BranchError when fewer than ATOM_DECADES decades or no geometric decay."""
    if len(a) < ATOM_DECADES:
        raise BranchError(f"atom at zero: the continuation down the imaginary axis failed after {len(a)} decades")
    d = np.diff(a[-4:])
    r = d[1:] / d[:-1]
    if not np.all((r > 0) & (r < 0.95)):
        raise BranchError("atom at zero: the continuation down the imaginary axis failed early, before a(y) settled")
    limits = a[-2:] - d[1:] ** 2 / (d[1:] - d[:-1])
    return float(limits[-1]), float(abs(limits[-1] - limits[-2]))


def atom_at_zero(solver: BranchSolver) -> Atom | None:
    """mu({0}) = lim_{y->0} a(y), a(y) = Re(iy m(iy)) = int y^2/(y^2 + l^2) dmu(l), followed down
    the imaginary axis towards 1e-60 * scale (in double precision, until the system becomes
    too ill-conditioned).

    a(y) decreases to the atom, so the descent stops as soon as a(y) < ATOM_THRESHOLD.
    The continuous part contributes O(y) without mass near 0 and a power of y near
    a hard edge, while rounding grows as the system becomes ill-conditioned: of the
    estimates below 1e-13 * scale, the one that changed least over its decade is
    kept, and that change is the error reported. Where double precision loses the
    branch before that (a strongly divergent hard edge), the limit of a(y) = atom + C y^alpha
    is extrapolated over the last decades (:func:`power_law_limit`). An estimate within ten
    times its error of zero is no atom.
    """
    ys = np.concatenate([[solver.top], solver.scale * 10.0 ** -np.arange(2, 61)])
    a = []
    for k, g in follow_rays(solver.dyson, np.array([1j]), ys):
        if k == 0:
            continue
        a.append(float(np.real(1j * ys[k] * g[0, solver.output])))
        if a[-1] < ATOM_THRESHOLD:  # a(y) bounds the atom from above
            return None
        if k > 14 and abs(a[-1] - a[-2]) < 1e-15:
            break
    if len(a) < 14:
        mass, err = power_law_limit(np.array(a))
        method = "extrapolation"
    else:
        change = np.abs(np.diff(a))[12:]  # change into decade k + 13, k >= 0
        best = 13 + int(np.argmin(change))
        mass, err = a[best], float(change[best - 13])
        method = "descent"
    if mass < ATOM_THRESHOLD + 10 * err:  # not resolved from zero within the estimate's accuracy
        return None
    frac = Fraction(mass).limit_denominator(10_000)
    exact = sp.Rational(frac.numerator, frac.denominator) if abs(float(frac) - mass) <= max(10 * err, 1e-12) else None
    if exact == 0:  # the estimate is still decaying: no atom within its accuracy
        return None
    return Atom(0.0, mass, err, exact, method)


@dataclass(frozen=True)
class SupportScan:
    """Density and Dyson solutions on a grid graded towards 0 up to just above the support, and the
    runs (first, last, touches a hard edge at 0) of grid points inside the support."""

    x: np.ndarray
    rho: np.ndarray
    g: np.ndarray
    intervals: tuple[tuple[int, int, bool], ...]
    top: float


def top_of_support(solver: BranchSolver) -> float:
    """A point just above the support, from a logarithmic pass up to the norm bound."""
    coarse = solver.scale * np.logspace(-14, 0.01, 300)
    g, ok = solver.followed(coarse.astype(complex), dyson=True)
    if not np.all(ok[coarse > NEAR_ZERO * solver.scale]):  # below, a hard edge can defeat double precision
        raise BranchError(f"the physical branch failed verification at {np.sum(~ok)} point(s) of the support scan, "
                          f"e.g. x = {coarse[~ok][-3:]}")
    inside = np.nonzero(ok & (-g[:, solver.output].imag > SUPPORT_THRESHOLD / solver.scale))[0]
    return float(coarse[min(inside[-1] + 1, len(coarse) - 1)]) if inside.size else solver.scale


def scan_support(solver: BranchSolver, top: float) -> SupportScan:
    """The :class:`SupportScan` of the solver's law on a grid graded towards 0 over [0, 1.02 top],
    ``top`` just above the support (:func:`top_of_support`)."""
    x = 1.02 * top * (np.arange(1, SCAN_POINTS + 1) / SCAN_POINTS) ** 2
    g = solver.branch(x.astype(complex), dyson=True)
    rho = np.maximum(-g[:, solver.output].imag / np.pi, 0.0)
    inside = rho > SUPPORT_THRESHOLD / solver.scale
    runs, start = [], None
    for i, flag in enumerate(inside):
        if flag and start is None:
            start = i
        if not flag and start is not None:
            runs.append((start, i - 1))
            start = None
    if start is not None:
        raise BranchError("the density does not vanish at the norm bound: the scan range is wrong")
    near = x[0] * np.logspace(-6, -2, 5)
    hard = bool(runs and runs[0][0] == 0 and solver.density_near_zero(near) > SUPPORT_THRESHOLD / solver.scale)
    return SupportScan(x, rho, g, tuple((a, b, hard and k == 0) for k, (a, b) in enumerate(runs)), top)


def _edge(solver: BranchSolver, x_out: float, g_out: np.ndarray, x_in: float, side: Side, dps: int) -> Edge:
    """The fold refinement of an edge, or bisection of the density when it fails."""
    try:
        with mpmath.workdps(dps):
            return Edge(+fold_edge(solver.dyson, solver.mp, x_out, g_out, x_in, dps), side, digits=dps)
    except (BranchError, ZeroDivisionError, np.linalg.LinAlgError):
        lo, hi = x_out, x_in
        for _ in range(60):
            mid = (lo + hi) / 2
            g = solver.branch(np.array([mid + 0j]), dyson=True)
            if -g[0, solver.output].imag / np.pi > SUPPORT_THRESHOLD / solver.scale:
                hi = mid
            else:
                lo = mid
        return Edge(mpmath.mpf((lo + hi) / 2), side, refined=False, digits=min(12, dps), method="bisection")


def fold_edges(solver: BranchSolver, scan: SupportScan, dps: int) -> list[Edge]:
    """Support edges in increasing order, lower and upper alternating, to ``dps`` digits."""
    x, g = scan.x, scan.g
    found: list[Edge] = []
    for a, b, hard in scan.intervals:
        if hard:
            found.append(Edge(mpmath.mpf(0), "lower", hard=True))
        elif a == 0:
            # a soft lower edge below the first scan point: zoom in on a geometric grid
            xs = x[0] * np.logspace(-10, 0, 201)
            gs = solver.branch(xs.astype(complex), dyson=True)
            rs = -gs[:, solver.output].imag / np.pi
            outside = np.nonzero(rs <= SUPPORT_THRESHOLD / solver.scale)[0]
            if not outside.size or outside[-1] == len(xs) - 1:
                raise BranchError("the lower support edge near 0 could not be bracketed")
            k = outside[-1]
            found.append(_edge(solver, xs[k], gs[k], xs[k + 1], "lower", dps))
        else:
            found.append(_edge(solver, x[a - 1], g[a - 1], x[a], "lower", dps))
        found.append(_edge(solver, x[b + 1], g[b + 1], x[b], "upper", dps))
    return found
