"""Drivers: continuation of the physical branch to any targets (docs/solving.md §3.5).

Every target w = x + iy is reached from x + i*top by geometric descent of the imaginary part
(by 100x instead of 5x once g has become linear in Im w), in steps of :func:`.descent.descend`.
Real targets (y = 0) are reached by one last Newton solve at y = 0, tried
from 1e9 times the floor and, where that fails the continuity check (near
edges), from the floor; every accepted point is then checked: converged,
continuous with the point above it, and Herglotz (Im m <= 0). Many targets
on one ray towards 0 (the atom at zero, contour masses near a hard edge)
are reached in one path along the ray (:func:`.rays.follow_rays`), each step
started from the power law through the two points before it.

A grid of many real targets is solved by descent on a coarse subgrid only;
the points between are started from the cubic Hermite interpolant of the
verified points around them (values and dg/dx from the implicit function
theorem) and accepted only where Newton lands within the interpolant's own
error estimate; the rest (near edges) descend like any other target.

The root of the minimal polynomial P(m, w) (:class:`~.polynomial_system.PolynomialSystem`),
once the elimination has found it, is followed by the same steps compiled, point by point
(:mod:`.root_kernel`, with the tolerances of :mod:`.descent`): started from the Dyson solution at
x + i*top, with the continuity checks relative to |m|, and real targets marched along their
grid from the tangent at the last verified point instead of interpolated in rounds.
"""

from __future__ import annotations

import numpy as np
from threadpoolctl import threadpool_limits

from .descent import (
    CONTRACTION,
    DESCENT_RATIO,
    FAR_STEP,
    FAST_CHANGE,
    FAST_RATIO,
    FIRST_STEP,
    HERGLOTZ,
    MAX_POWER,
    MAX_SPLITS,
    NOISE,
    POLISH,
    Branch,
    System,
    descend,
    far_start,
    fixed_point_start,
    herglotz,
    newton_solve,
    tangent,
)
from .numeric import DOUBLE
from .polynomial_system import PolynomialSystem
from .results import ROOT_ROUNDING
from .root_kernel import Tolerances, follow_roots

__all__ = ["follow_branch"]

#: The last Newton solve onto a target below the floor is tried first from this multiple of it.
EARLY_FLOOR = 1e9
#: Real grids with at least this many points are refined from a coarse subgrid ...
GRID_MIN = 256
#: ... of this many points, solved by descent.
GRID_COARSE = 33
#: Largest error estimate (relative to 1 + |x g|) of an interpolated start that is tried.
GRID_TRUST = 3e-3
#: Rounds of interpolated starts between verified points; each gap shrinks towards the edges
#: it contains by a few points per round, so the points left then descend (in one batch).
GRID_ROUNDS = 6


def follow_branch(system: System, w: np.ndarray, top: float, floor: float | np.ndarray, tol: float = 1e-12,
                  seeds: Branch | None = None, start: tuple[complex, np.ndarray] | None = None) -> Branch:
    """The physical solution at targets w with Im w >= 0, by descent from Re w + i*top (double).

    Targets with Im w below ``floor`` (a number or one per target) are solved
    at Im w = floor first, then by one Newton solve at their own Im w (which
    may be 0), accepted only if the solution moved continuously (docs/solving.md
    §3.4: never a cold start near the real axis). ``seeds``, verified solutions of
    the same system at real points (a Branch of an earlier call), make real
    targets a grid whose points between seeds start from their interpolant
    (:func:`_follow_grid`) instead of descending. The root of P (a :class:`PolynomialSystem`) is
    followed compiled (:func:`_follow_roots`), where seeds are not needed. ``start`` (w0, g0): the
    physical solution at one point far out (Im w0 >= top) that every target is continued from
    (default: the fixed-point start above the targets' middle).
    """
    if system.backend is not DOUBLE:
        raise TypeError("follow_branch runs in double precision; refine its result with mpmath")
    w = np.atleast_1d(np.asarray(w, dtype=complex))
    if w.ndim != 1:
        raise ValueError("w: expected a one-dimensional array of targets")
    if np.any(w.imag < 0):
        raise ValueError("w: targets must lie in the closed upper half plane (use conjugation below it)")
    if isinstance(system, PolynomialSystem):
        return _follow_roots(system, w, top, np.broadcast_to(np.asarray(floor, dtype=float), w.shape), tol, start)
    # batches of small matrices: BLAS threads only add contention
    with threadpool_limits(limits=1, user_api="blas"):
        if (w.size >= GRID_MIN or seeds is not None) and np.all(w.imag == 0):
            return _follow_grid(system, w.real, top, np.broadcast_to(floor, w.shape), tol, seeds, start)
        return _follow(system, w, top, floor, tol, start)


def _follow_roots(system: PolynomialSystem, w: np.ndarray, top: float, floor: np.ndarray, tol: float,
                  start: tuple[complex, np.ndarray] | None) -> Branch:
    """:func:`follow_branch` for the root of P, compiled (:func:`.root_kernel.follow_roots`): the
    targets sorted by Re w (real ones are marched along that order), continued from ``start`` or
    the physical solution above their middle; ok also requires the root to round well (relative
    error at most ROOT_ROUNDING)."""
    order = np.argsort(w.real, kind="stable")
    if start is None:
        middle = (w.real.min() + w.real.max()) / 2 + 1j * max(top, float(np.max(w.imag)))
        start = (middle, fixed_point_start(system, np.array([middle]), tol)[0])
    k = Tolerances(tol, 1e-14, POLISH, CONTRACTION, NOISE, DESCENT_RATIO, FAST_RATIO, FAST_CHANGE, FIRST_STEP, FAR_STEP,
                   MAX_POWER, MAX_SPLITS, EARLY_FLOOR, GRID_TRUST, HERGLOTZ, ROOT_ROUNDING)
    m, ok = follow_roots(system.coefficients, np.ascontiguousarray(w.real[order]), np.ascontiguousarray(w.imag[order]),
                         np.ascontiguousarray(floor[order], dtype=float), float(top), complex(start[0]), complex(start[1][0]), k)
    g = np.empty((w.size, 1), dtype=complex)
    done = np.empty(w.size, dtype=bool)
    g[order, 0], done[order] = m, ok
    return Branch(w=w, g=g, ok=done, output=0)


def _follow(system: System, w: np.ndarray, top: float, floor: float | np.ndarray, tol: float, anchor: tuple[complex, np.ndarray] | None = None) -> Branch:
    """The body of :func:`follow_branch` on validated targets (``anchor``: see :func:`.descent.far_start`).

    The last Newton solve down to Im w is tried first from EARLY_FLOOR times the floor;
    the points where it fails the continuity check (near edges) descend to the floor
    and try again from there.
    """
    re, im = w.real.copy(), w.imag.copy()
    y = np.maximum(top, im)
    g = far_start(system, re + 1j * y, tol, anchor)
    ok = np.ones(len(w), dtype=bool)
    pending = np.ones(len(w), dtype=bool)
    ratio = np.full(len(w), DESCENT_RATIO)
    for factor in (EARLY_FLOOR, 1.0):
        stop = np.maximum(im, floor * factor)
        while True:
            active = np.nonzero(pending & (y > stop))[0]
            if not active.size:
                break
            nxt = np.maximum(y[active] * ratio[active], stop[active])
            g_act, ok_act = descend(system, re[active], np.full(active.size, 1j), y[active], nxt, g[active], tol)
            change = np.max(np.abs(g_act - g[active]), axis=-1) / np.max(np.abs(g_act), axis=-1)
            ratio[active] = np.where(change < FAST_CHANGE, FAST_RATIO, DESCENT_RATIO)
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
    ok &= herglotz(m)
    return Branch(w=w, g=g, ok=ok, output=system.output)


def _cubic(x0: np.ndarray, u0: np.ndarray, d0: np.ndarray, x1: np.ndarray, u1: np.ndarray, d1: np.ndarray, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The cubic Hermite interpolant of (u, du/dx) at x0, x1, evaluated at x (inside or just
    outside [x0, x1]), and its distance to the tangent line at the nearer end (the
    interpolant's error estimate: h^2 against h^4 where the data are smooth)."""
    H = (x1 - x0)[:, None]
    t = (x - x0)[:, None] / H
    line = (1 - t) * u0 + t * u1
    cubic = line + t * (1 - t) * ((1 - t) * (H * d0 - (u1 - u0)) - t * (H * d1 - (u1 - u0)))
    near0 = (t <= 0.5)
    tangent = np.where(near0, u0 + d0 * (x - x0)[:, None], u1 + d1 * (x - x1)[:, None])
    return cubic, np.max(np.abs(cubic - tangent), axis=-1)


def _follow_grid(system: System, x: np.ndarray, top: float, floor: np.ndarray, tol: float, seeds: Branch | None = None,
                 start: tuple[complex, np.ndarray] | None = None) -> Branch:
    """:func:`follow_branch` on a real grid: descent on GRID_COARSE points (or the verified real
    ``seeds`` instead, merged into the grid), then interpolation.

    A point c between verified neighbours i < c < j starts from the cubic Hermite
    interpolant of u = x g and du/dx = g + x dg/dx (dg/dx = -J^{-1} dF/dw) at i and j;
    u rather than g, so that an atom at zero (g ~ a/x) does not spoil it. Its distance
    e to the tangent line at the nearer end estimates its error (h^2 against h^4 where
    the data are smooth; an edge inside the gap makes it large). The start is tried if
    e <= GRID_TRUST (1 + |u|) and accepted if Newton converges to g with |x g - u| <= e
    (the root found is the one the interpolant points at) and Im m <= 0. Every point
    of every gap is tried at once, in GRID_ROUNDS rounds (a gap that shrank is tried
    again from its new ends, one where no point passed is left); points left over (next
    to edges, where the estimate grows) descend like any other target, in one batch.
    """
    use = np.zeros(0, dtype=bool) if seeds is None else seeds.ok & (seeds.w.imag == 0)
    seeded = np.zeros(0) if seeds is None else seeds.w.real[use]
    xs, inverse = np.unique(np.concatenate([x, seeded]), return_inverse=True)
    fl = np.full(xs.size, np.inf)
    np.minimum.at(fl, inverse[: x.size], floor)
    n, size = xs.size, system.size
    g = np.zeros((n, size), dtype=complex)
    du = np.zeros((n, size), dtype=complex)
    known = np.zeros(n, dtype=bool)

    def verified(idx: np.ndarray, sol: np.ndarray) -> None:
        g[idx], known[idx] = sol, True
        du[idx] = sol + xs[idx, None] * tangent(system, xs[idx] + 0j, sol)

    anchor = start
    if seeds is None:
        coarse = np.unique(np.round(np.linspace(0, n - 1, min(n, GRID_COARSE))).astype(int))
        if anchor is None:
            middle = (xs[0] + xs[-1]) / 2 + 1j * top
            anchor = (middle, fixed_point_start(system, np.array([middle]), tol)[0])  # far above the grid
        br = _follow(system, xs[coarse] + 0j, top, fl[coarse], tol, anchor)
        g[coarse] = br.g
        verified(coarse[br.ok], br.g[br.ok])
    else:
        coarse = inverse[x.size:]
        verified(coarse, seeds.g[use])
    stuck: set[int] = set()  # gaps (by left end) none of whose points was verified
    for _ in range(GRID_ROUNDS):
        K = np.flatnonzero(known)
        gaps = np.flatnonzero((K[1:] - K[:-1] >= 2) & ~np.isin(K[:-1], np.fromiter(stuck, dtype=int, count=len(stuck))))
        inner = K[gaps + 1] - K[gaps] - 1  # every point inside the gaps
        if not inner.sum():
            break
        a, b = np.repeat(K[gaps], inner), np.repeat(K[gaps + 1], inner)
        c = a + 1 + np.arange(a.size) - np.repeat(np.cumsum(inner) - inner, inner)
        u = xs[:, None] * g
        pred, err = _cubic(xs[a], u[a], du[a], xs[b], u[b], du[b], xs[c])
        tried = np.flatnonzero(err <= GRID_TRUST * (1 + np.max(np.abs(pred), axis=-1)))  # NaN: not tried
        start = pred[tried] / xs[c[tried], None]
        sol, conv = newton_solve(system, xs[c[tried]] + 0j, start, tol, maxit=8, first_step=GRID_TRUST, residual_tol=1e-14)
        m = sol[:, system.output]
        near = np.max(np.abs(xs[c[tried], None] * sol - pred[tried]), axis=-1) <= err[tried]
        good = conv & near & herglotz(m)
        verified(c[tried[good]], sol[good])
        stuck |= set(K[gaps].tolist()) - set(a[tried[good]].tolist())
    rest = np.setdiff1d(np.flatnonzero(~known), coarse)
    ok = known.copy()
    if rest.size:
        br = _follow(system, xs[rest] + 0j, top, fl[rest], tol, anchor)
        g[rest], ok[rest] = br.g, br.ok
    target = inverse[: x.size]
    return Branch(w=x + 0j, g=g[target], ok=ok[target], output=system.output)
