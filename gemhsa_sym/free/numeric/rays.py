"""Rays towards 0: the physical branch along w = r d for decreasing r (docs/solving.md §3.5, §3.7).

Used for the atom at 0 (the imaginary axis) and for contour masses near a hard edge (arcs of
rays). Rays into the upper half plane stay where m is analytic, so a deep ray costs one
path, not one descent per target.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
from threadpoolctl import threadpool_limits

from gemhsa_sym.free.numeric.descent import DESCENT_RATIO, descend, fixed_point_start, herglotz, newton_solve
from gemhsa_sym.free.numeric.systems import DOUBLE, Equations

__all__ = ["follow_rays"]


def _power_law(s0: np.ndarray, g0: np.ndarray, s1: np.ndarray, g1: np.ndarray, s2: np.ndarray) -> np.ndarray:
    """g at s2 from g ~ c s^p through (s0, g0), (s1, g1), componentwise. Towards 0 the
    solutions follow power laws (an atom: g ~ a/w), which the previous point as a start
    misses by the factor 5 of one step. Components whose ratio is not moderate keep g1."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):  # the ratio's check below
        ratio = g1 / g0
        ratio = np.where(np.isfinite(ratio) & (np.abs(ratio) < 1e2) & (np.abs(ratio) > 1e-2), ratio, 1.0)
        t = (np.log(s1 / s2) / np.log(s0 / s1))[:, None]
    return g1 * ratio**t


def _ray_step(system: Equations, direction: np.ndarray, s0: np.ndarray, g0: np.ndarray, s1: np.ndarray, g1: np.ndarray, s2: np.ndarray, tol: float) -> tuple[np.ndarray, np.ndarray]:
    """From w = direction * s1 (solution g1, the point before at s0 with g0) to s2.

    Newton from the power-law start p is accepted only if its first step is at most a
    tenth of the change p - g1 it predicted (the power law explained the change; a poor
    extrapolation is not trusted). The other rays take the plain step from g1, split
    where it fails (:func:`descend`).
    """
    start = _power_law(s0, g0, s1, g1, s2)
    change = np.max(np.abs(start - g1), axis=-1) / (1 + np.max(np.abs(start), axis=-1))
    new, ok = newton_solve(system, direction * s2, start, tol, maxit=12, first_step=np.minimum(0.5, 0.1 * change), residual_tol=1e-14)
    ok &= herglotz(new[:, system.output])
    if not ok.all():
        bad = ~ok
        new[bad], ok[bad] = descend(system, np.zeros(bad.sum(), dtype=complex), direction[bad], s1[bad], s2[bad], g1[bad], tol)
    return new, ok


def follow_rays(system: Equations, directions: np.ndarray, radii: np.ndarray, g0: np.ndarray | None = None, tol: float = 1e-12) -> Iterator[tuple[int, np.ndarray]]:
    """Yield (k, g) with g the physical solutions at w = radii[k] * directions (every ray at once),
    for decreasing radii, each ray continued inward from the one before (geometric steps).

    The start at radii[0] is g0 (already on the branch) or, without it, the fixed-point
    start (radii[0] must then be large). Rays into the upper half plane stay where m is
    analytic, so a deep ray costs one path, not one descent per target. Each step starts
    from the power law through the two points before it (:func:`_ray_step`). Stops at
    the first radius where some ray fails verification; the caller decides when it has
    seen enough.
    """
    if system.backend is not DOUBLE:
        raise TypeError("follow_rays runs in double precision")
    directions = np.atleast_1d(np.asarray(directions, dtype=complex))
    radii = np.asarray(radii, dtype=float)
    if radii.ndim != 1 or np.any(radii <= 0) or np.any(np.diff(radii) >= 0):
        raise ValueError("radii: expected a decreasing one-dimensional array of positive radii")
    if np.any(directions.imag < 0):
        raise ValueError("directions: rays must point into the closed upper half plane")
    s = np.full(len(directions), radii[0])
    with threadpool_limits(limits=1, user_api="blas"):
        g = fixed_point_start(system, radii[0] * directions, tol) if g0 is None else g0
        before: tuple[np.ndarray, np.ndarray] | None = None
        for k, target in enumerate(radii):
            while s[0] > target:
                nxt = np.maximum(s * DESCENT_RATIO, target)
                if before is None:
                    new, ok = descend(system, np.zeros(len(directions), dtype=complex), directions, s, nxt, g, tol)
                else:
                    new, ok = _ray_step(system, directions, *before, s, g, nxt, tol)
                if not ok.all():
                    return
                before, g, s = (s, g), new, nxt
            if not np.all(herglotz(g[:, system.output])):
                return
            yield k, g
