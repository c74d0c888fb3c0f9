"""Drivers: Newton with tolerances, and continuation of the physical branch.

The physical solution is the one with g_tt = m(w) ~ 1/w at infinity
(DESIGN §1.5). It is analytic in the upper half plane, so following it along
a path inside that half plane by Newton steps small enough to stay in the
basin of the previous point never changes branch. Every target w = x + iy
is reached from x + i*top (where a fixed-point iteration started from
M^{-1} at g = 0 converges to the branch) by geometric descent of the
imaginary part; a step whose Newton iteration does not converge quickly is
split in two. Real targets (y = 0) are reached by one last Newton solve at
y = 0, tried from 1e9 times the floor and, where that fails the continuity
check (near edges), from the floor; every accepted point is then checked:
converged, continuous with the point above it, and Herglotz (Im m <= 0).
Many targets on one ray towards 0 (the atom at zero, contour masses near a
hard edge) are reached in one path along the ray (:func:`follow_rays`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
from threadpoolctl import threadpool_limits

from .numeric import DOUBLE, NumericSystem, newton_iterates

__all__ = ["BranchError", "Branch", "newton_solve", "follow_branch", "follow_rays"]

#: Ratio between successive imaginary parts on the descent.
DESCENT_RATIO = 0.2
#: Deepest halving of one descent step before a point is declared failed.
MAX_SPLITS = 12
#: The last Newton solve onto a target below the floor is tried first from this multiple of it.
EARLY_FLOOR = 1e9


class BranchError(RuntimeError):
    """The physical branch could not be followed or verified at some points."""


@dataclass(frozen=True)
class Branch:
    """Solutions g at targets w; ``ok`` is False where verification failed."""

    w: np.ndarray
    g: np.ndarray
    ok: np.ndarray
    output: int

    @property
    def m(self) -> np.ndarray:
        """The Stieltjes transform m(w) = g_tt."""
        return self.g[:, self.output]


def newton_solve(
    system: NumericSystem,
    w: np.ndarray,
    g0: np.ndarray,
    tol: float,
    maxit: int = 30,
    first_step: float | None = None,
    residual_tol: float = 0.0,
) -> tuple[np.ndarray, np.ndarray]:
    """Newton from g0 at each w; ok where the step fell below tol*(1+|g|) within maxit.

    With ``first_step``, a point whose first Newton step exceeds first_step*(1+|g0|)
    is rejected: it was not in the basin of the previous point (continuity check).
    With ``residual_tol``, a point whose residual fell below residual_tol*(1+|g|)
    also counts as converged: near a double root (a support edge) the step
    stagnates at about the square root of the working precision.
    """
    be = system.backend
    g = g0.copy()
    ok = np.zeros(len(w), dtype=bool)
    active = np.arange(len(w))
    scale0 = 1 + np.max(be.abs(g0), axis=-1).astype(float) if g0.shape[-1] else np.ones(len(w))
    it = 0
    while active.size and it < maxit:
        gi, step, resid = next(newton_iterates(system, w[active], g[active]))
        step, resid = step.astype(float), resid.astype(float)
        finite = np.all(np.isfinite(gi.astype(complex)), axis=-1)
        if it == 0 and first_step is not None:
            finite &= step <= first_step * scale0[active]
        g[active[finite]] = gi[finite]
        size = 1 + np.max(be.abs(gi), axis=-1).astype(float) if gi.shape[-1] else np.ones(len(active))
        done = finite & ((step <= tol * size) | (resid <= residual_tol * size))
        ok[active[done]] = True
        active = active[finite & ~done]
        it += 1
    if be is DOUBLE and np.any(ok):  # one more step at machine precision
        idx = np.nonzero(ok)[0]
        gi, _, _ = next(newton_iterates(system, w[idx], g[idx]))
        good = np.all(np.isfinite(gi), axis=-1)
        g[idx[good]] = gi[good]
    return g, ok


def _fixed_point_start(system: NumericSystem, w: np.ndarray, tol: float) -> np.ndarray:
    """Iterate g <- R(g, w) from g = 0 at large |w|, then polish with Newton."""
    be = system.backend
    g = be.array(np.zeros((len(w), system.size)))
    for _ in range(200):
        new = system.readout(w, g)
        delta = np.max(be.abs(new - g), axis=-1).astype(float)
        g = new
        if np.all(delta < 1e-6 * (1 + np.max(be.abs(g), axis=-1).astype(float))):
            break
    g, ok = newton_solve(system, w, g, tol)
    if not np.all(ok):
        raise BranchError("the fixed-point start at large |w| did not converge; the system may be singular")
    return g


def _descend(system: NumericSystem, base: np.ndarray, direction: np.ndarray, s_from: np.ndarray, s_to: np.ndarray, g: np.ndarray, tol: float, depth: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """One step from w = base + direction * s_from to base + direction * s_to, split in two
    (geometric mean of s) where Newton fails."""
    g_new, ok = newton_solve(system, base + direction * s_to, g, tol, maxit=12, first_step=0.5, residual_tol=1e-14)
    bad = np.nonzero(~ok)[0]
    if bad.size and depth < MAX_SPLITS:
        mid = np.sqrt(s_from[bad] * s_to[bad])
        g_mid, ok_mid = _descend(system, base[bad], direction[bad], s_from[bad], mid, g[bad], tol, depth + 1)
        g_end, ok_end = _descend(system, base[bad], direction[bad], mid, s_to[bad], g_mid, tol, depth + 1)
        g_new[bad] = g_end
        ok[bad] = ok_mid & ok_end
    return g_new, ok


def follow_branch(system: NumericSystem, w: np.ndarray, top: float, floor: float | np.ndarray, tol: float = 1e-12) -> Branch:
    """The physical solution at targets w with Im w >= 0, by descent from Re w + i*top (double).

    Targets with Im w below ``floor`` (a number or one per target) are solved
    at Im w = floor first, then by one Newton solve at their own Im w (which
    may be 0), accepted only if the solution moved continuously (DESIGN §1.5
    pitfalls: never a cold start near the real axis).
    """
    if system.backend is not DOUBLE:
        raise TypeError("follow_branch runs in double precision; refine its result with mpmath")
    w = np.atleast_1d(np.asarray(w, dtype=complex))
    if w.ndim != 1:
        raise ValueError("w: expected a one-dimensional array of targets")
    if np.any(w.imag < 0):
        raise ValueError("w: targets must lie in the closed upper half plane (use conjugation below it)")
    # batches of small matrices: BLAS threads only add contention
    with threadpool_limits(limits=1, user_api="blas"):
        return _follow(system, w, top, floor, tol)


def _follow(system: NumericSystem, w: np.ndarray, top: float, floor: float | np.ndarray, tol: float) -> Branch:
    """The body of :func:`follow_branch` on validated targets.

    The last Newton solve down to Im w is tried first from EARLY_FLOOR times the floor;
    the points where it fails the continuity check (near edges) descend to the floor
    and try again from there.
    """
    re, im = w.real.copy(), w.imag.copy()
    y = np.maximum(top, im)
    g = _fixed_point_start(system, re + 1j * y, tol)
    ok = np.ones(len(w), dtype=bool)
    pending = np.ones(len(w), dtype=bool)
    for factor in (EARLY_FLOOR, 1.0):
        stop = np.maximum(im, floor * factor)
        while True:
            active = np.nonzero(pending & (y > stop))[0]
            if not active.size:
                break
            nxt = np.maximum(y[active] * DESCENT_RATIO, stop[active])
            g_act, ok_act = _descend(system, re[active], np.full(active.size, 1j), y[active], nxt, g[active], tol)
            g[active] = g_act
            ok[active] &= ok_act
            y[active] = np.where(ok_act, nxt, stop[active])  # failed points stop descending
        pending &= im < stop
        final = np.nonzero(pending & ok)[0]
        if final.size:
            g_fin, ok_fin = newton_solve(system, w[final], g[final], tol, maxit=60, first_step=1e-3, residual_tol=1e-14)
            g[final[ok_fin]] = g_fin[ok_fin]
            pending[final[ok_fin]] = False
    ok &= ~pending
    m = g[:, system.output]
    ok &= m.imag <= 1e-7 * (1 + np.abs(m))  # Herglotz: Im m(w) <= 0 for Im w >= 0
    return Branch(w=w, g=g, ok=ok, output=system.output)


def follow_rays(system: NumericSystem, directions: np.ndarray, radii: np.ndarray, g0: np.ndarray | None = None, tol: float = 1e-12) -> Iterator[tuple[int, np.ndarray]]:
    """Yield (k, g) with g the physical solutions at w = radii[k] * directions (every ray at once),
    for decreasing radii, each ray continued inward from the one before (geometric steps).

    The start at radii[0] is g0 (already on the branch) or, without it, the fixed-point
    start (radii[0] must then be large). Rays into the upper half plane stay where m is
    analytic, so a deep ray costs one path, not one descent per target. Stops at the first
    radius where some ray fails verification; the caller decides when it has seen enough.
    """
    if system.backend is not DOUBLE:
        raise TypeError("follow_rays runs in double precision")
    directions = np.atleast_1d(np.asarray(directions, dtype=complex))
    radii = np.asarray(radii, dtype=float)
    if radii.ndim != 1 or np.any(radii <= 0) or np.any(np.diff(radii) >= 0):
        raise ValueError("radii: expected a decreasing one-dimensional array of positive radii")
    if np.any(directions.imag < 0):
        raise ValueError("directions: rays must point into the closed upper half plane")
    base, s = np.zeros(len(directions), dtype=complex), np.full(len(directions), radii[0])
    with threadpool_limits(limits=1, user_api="blas"):
        g = _fixed_point_start(system, radii[0] * directions, tol) if g0 is None else g0
        for k, target in enumerate(radii):
            while s[0] > target:
                nxt = np.maximum(s * DESCENT_RATIO, target)
                g, ok = _descend(system, base, directions, s, nxt, g, tol)
                if not ok.all():
                    return
                s = nxt
            m = g[:, system.output]
            if np.any(m.imag > 1e-7 * (1 + np.abs(m))):  # Herglotz
                return
            yield k, g
