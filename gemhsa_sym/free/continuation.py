"""Drivers: Newton with tolerances, and continuation of the physical branch.

The physical solution is the one with g_tt = m(w) ~ 1/w at infinity
(docs/solving.md §3.5). It is analytic in the upper half plane, so following it along
a path inside that half plane by Newton steps small enough to stay in the
basin of the previous point never changes branch. Every target w = x + iy
is reached from x + i*top (where a fixed-point iteration started from
M^{-1} at g = 0 converges to the branch) by geometric descent of the
imaginary part (by 100x instead of 5x once g has become linear in Im w), each
step started from the tangent in log-log coordinates (exact for the power laws
1/w at infinity and a/w at an atom); a step whose Newton iteration does not
converge quickly, whose first step is too large, whose steps stop contracting
or that lands on Im m > 0 is split in two.
Real targets (y = 0) are reached by one last Newton solve at y = 0, tried
from 1e9 times the floor and, where that fails the continuity check (near
edges), from the floor; every accepted point is then checked: converged,
continuous with the point above it, and Herglotz (Im m <= 0). Many targets
on one ray towards 0 (the atom at zero, contour masses near a hard edge)
are reached in one path along the ray (:func:`follow_rays`), each step
started from the power law through the two points before it.

A grid of many real targets is solved by descent on a coarse subgrid only;
the points between are started from the cubic Hermite interpolant of the
verified points around them (values and dg/dx from the implicit function
theorem) and accepted only where Newton lands within the interpolant's own
error estimate; the rest (near edges) descend like any other target.

The root of the minimal polynomial P(m, w) (:class:`~.polynomial_system.PolynomialSystem`),
once the elimination has found it, is followed by the same steps compiled, point by point
(:mod:`.root_kernel`, with this module's tolerances): started from the Dyson solution at
x + i*top, with the continuity checks relative to |m|, and real targets marched along their
grid from the tangent at the last verified point instead of interpolated in rounds.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from threadpoolctl import threadpool_limits

from .numeric import DOUBLE, Equations, newton_iterates
from .polynomial_system import PolynomialSystem
from .results import ROOT_ROUNDING
from .root_kernel import Tolerances, follow_roots

#: A system the drivers follow: the Dyson system, or the minimal polynomial of m.
System = Equations

__all__ = ["Branch", "BranchError", "RaysFailed", "descend", "fixed_point_start", "follow_branch", "herglotz", "newton_solve", "predict"]

#: Ratio between successive imaginary parts on the descent ...
DESCENT_RATIO = 0.2
#: ... and after a step that changed g by less than FAST_CHANGE |g| (relative: at large |w|,
#: m ~ 1/w is small and changes by the step's factor in a step of any size): g is then
#: linear in Im w on the scale of Im w, far from any edge or atom.
FAST_RATIO = 0.01
FAST_CHANGE = 1e-3
#: Deepest halving of one descent step before a point is declared failed.
MAX_SPLITS = 12
#: Largest first Newton step of a descent step, relative to 1 + |g| (to |m| for the root of P).
FIRST_STEP = 0.25
#: The log-log tangent is used for components whose exponent w g'/g is at most this.
MAX_POWER = 8.0
#: Largest first Newton step (relative to 1 + |g|) from one far start to another.
FAR_STEP = 1e-3
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
#: Im m <= HERGLOTZ (1 + |m|) where Im w >= 0 (the Herglotz sign, to rounding).
HERGLOTZ = 1e-7
#: Continuation Newton on the root of P: each step at most this times the one before (1/2
#: at a double root), unless both are below NOISE (1 + |g|), the rounding level near an edge.
CONTRACTION = 0.75
NOISE = 1e-6
#: Converged points whose last Newton step exceeded POLISH (1 + |g|) take one more step
#: (quadratic convergence: after a smaller one the error is at the rounding level).
POLISH = 1e-14


class BranchError(RuntimeError):
    """The physical branch could not be followed or verified at some points."""


class RaysFailed(BranchError):
    """Rays towards 0 failed verification below ``radius``."""

    def __init__(self, radius: float) -> None:
        super().__init__(f"rays towards 0 failed verification below |w| = {radius:.3e}")
        self.radius = float(radius)


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
    system: System,
    w: np.ndarray,
    g0: np.ndarray,
    tol: float,
    maxit: int = 30,
    first_step: float | np.ndarray | None = None,
    residual_tol: float = 0.0,
) -> tuple[np.ndarray, np.ndarray]:
    """Newton from g0 at each w; ok where the step fell below tol*(1+|g|) within maxit.

    With ``first_step`` (a number or one per point), a point whose first Newton step
    exceeds first_step*(1+|g0|) (first_step*|g0| for a system with ``relative`` steps)
    is rejected: it was not in the basin of the previous point (continuity check).
    For a system with ``relative`` steps (the root of P), so is a point whose steps
    stop contracting (a step above CONTRACTION times the one before, while both exceed
    NOISE (1+|g|)): Newton then wanders between roots even if it ends on one.
    With ``residual_tol``, a point whose residual fell below residual_tol*(1+|g|)
    also counts as converged: near a double root (a support edge) the step
    stagnates at about the square root of the working precision.
    """
    be = system.backend
    g = g0.copy()
    ok = np.zeros(len(w), dtype=bool)
    active = np.arange(len(w))
    scale0 = (0 if system.relative else 1) + np.max(be.abs(g0), axis=-1).astype(float) if g0.shape[-1] else np.ones(len(w))
    if first_step is not None:
        scale0 = scale0 * first_step
    last = np.full(len(w), np.inf)
    it = 0
    while active.size and it < maxit:
        gi, step, resid = next(newton_iterates(system, w[active], g[active]))
        step, resid = step.astype(float), resid.astype(float)
        finite = np.all(np.isfinite(gi.astype(complex)), axis=-1)
        size = 1 + np.max(be.abs(gi), axis=-1).astype(float) if gi.shape[-1] else np.ones(len(active))
        if first_step is not None:
            if it == 0:
                finite &= step <= scale0[active]
            if system.relative:
                finite &= (step <= CONTRACTION * last[active]) | (step <= NOISE * size)
        g[active[finite]] = gi[finite]
        last[active] = step
        done = finite & ((step <= tol * size) | (resid <= residual_tol * size))
        ok[active[done]] = True
        active = active[finite & ~done]
        it += 1
    # one more step at machine precision, where the last step was not already at that level
    if be is DOUBLE and np.any(polish := ok & (last > POLISH * (1 + np.max(np.abs(g), axis=-1, initial=0.0)))):
        idx = np.nonzero(polish)[0]
        gi, _, _ = next(newton_iterates(system, w[idx], g[idx]))
        good = np.all(np.isfinite(gi), axis=-1)
        g[idx[good]] = gi[good]
    return g, ok


def fixed_point_start(system: System, w: np.ndarray, tol: float) -> np.ndarray:
    """Iterate g <- R(g, w) from g = 0 at large |w|, then polish with Newton; a polynomial
    system starts from m of its anchor's solution (the root of P that is m)."""
    if system.anchor is not None:  # a system that does not prefer the physical root starts from its anchor's
        g = fixed_point_start(system.anchor, w, tol)[:, [system.anchor.output]]
        g, ok = newton_solve(system, w, g, tol, first_step=1e-8)
        if not np.all(ok):
            raise BranchError("the Dyson solution at large |w| is not a simple root of P(m, w)")
        return g
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


def _far_start(system: System, w: np.ndarray, tol: float, anchor: tuple[complex, np.ndarray] | None = None) -> np.ndarray:
    """The physical solutions at targets far out (|w| >= top), continued from ``anchor`` (w0, g0),
    a solution far out near them (default: the fixed-point start at the target nearest their
    mean), by one Newton solve from its log-log tangent (m changes by about |dw| / |w|^2;
    first step at most FAR_STEP (1 + |g|)); targets where that fails take a fixed-point
    start of their own."""
    if anchor is None:
        k = int(np.argmin(np.abs(w - w.mean())))
        anchor = (complex(w[k]), fixed_point_start(system, w[[k]], tol)[0])
    w0, g0 = anchor
    start = predict(system, np.full(len(w), w0), w, np.repeat(g0[None, :], len(w), axis=0))
    g, ok = newton_solve(system, w, start, tol, first_step=FAR_STEP)
    if not np.all(ok):
        g[~ok] = fixed_point_start(system, w[~ok], tol)
    return g


def herglotz(m: np.ndarray) -> np.ndarray:
    """Im m(w) <= 0 wherever Im w >= 0 (to rounding)."""
    return m.imag <= HERGLOTZ * (1 + np.abs(m))


def predict(system: System, w0: np.ndarray, w1: np.ndarray, g: np.ndarray) -> np.ndarray:
    """g at w1 from the tangent at w0 in log-log coordinates, componentwise: g (w1/w0)^p with
    p = w g'/g and g' = -J^{-1} dF/dw (exact for the power laws at infinity, 1/w, and at an
    atom, a/w); components with |p| > MAX_POWER (g near 0) take the plain tangent g + g' (w1 - w0)."""
    dg = _tangent(system, w0, g)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        p = w0[:, None] * dg / g
        power = g * np.exp(p * np.log(w1 / w0)[:, None])
    line = g + dg * (w1 - w0)[:, None]
    start = np.where(np.isfinite(power) & (np.abs(p) <= MAX_POWER), power, line)
    return np.where(np.isfinite(start), start, g)


def descend(system: System, base: np.ndarray, direction: np.ndarray, s_from: np.ndarray, s_to: np.ndarray, g: np.ndarray, tol: float, depth: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """One step from w = base + direction * s_from to base + direction * s_to, started from the
    log-log tangent (:func:`predict`) and split in two (geometric mean of s) where Newton
    fails, or its first step exceeds FIRST_STEP (1 + |g|) (for the root of P: FIRST_STEP |m|),
    or Im m > 0; the second half is not tried where the first failed (a point that cannot be
    followed costs 2 MAX_SPLITS solves, not 2^MAX_SPLITS)."""
    w_to = base + direction * s_to
    start = predict(system, base + direction * s_from, w_to, g)
    g_new, ok = newton_solve(system, w_to, start, tol, maxit=12, first_step=FIRST_STEP, residual_tol=1e-14)
    ok &= herglotz(g_new[:, system.output])
    bad = np.nonzero(~ok)[0]
    if bad.size and depth < MAX_SPLITS:
        mid = np.sqrt(s_from[bad] * s_to[bad])
        g_mid, ok_mid = descend(system, base[bad], direction[bad], s_from[bad], mid, g[bad], tol, depth + 1)
        g_new[bad], ok[bad] = g_mid, False
        on = bad[ok_mid]  # the second half only where the first one held
        if on.size:
            g_new[on], ok[on] = descend(system, base[on], direction[on], mid[ok_mid], s_to[on], g_mid[ok_mid], tol, depth + 1)
    return g_new, ok


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
    """The body of :func:`follow_branch` on validated targets (``anchor``: see :func:`_far_start`).

    The last Newton solve down to Im w is tried first from EARLY_FLOOR times the floor;
    the points where it fails the continuity check (near edges) descend to the floor
    and try again from there.
    """
    re, im = w.real.copy(), w.imag.copy()
    y = np.maximum(top, im)
    g = _far_start(system, re + 1j * y, tol, anchor)
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


def _tangent(system: System, w: np.ndarray, g: np.ndarray) -> np.ndarray:
    """dg/dw = -J^{-1} dF/dw at solutions g (implicit function theorem)."""
    _, J, Fw = system.linearisation(w, g)
    return -system.backend.solve(J, Fw)


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
        du[idx] = sol + xs[idx, None] * _tangent(system, xs[idx] + 0j, sol)

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
