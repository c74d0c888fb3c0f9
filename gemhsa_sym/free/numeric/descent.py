"""Newton with tolerances, and the steps of the descent along the physical branch (docs/solving.md §3.4–3.5).

The physical solution is the one with g_tt = m(w) ~ 1/w at infinity. Far out (|w| >= top) it is
the limit of the fixed-point iteration g <- R(g, w) from g = 0 (:func:`fixed_point_start`). Below,
it is followed by steps (:func:`descend`), each started from the tangent in log-log coordinates
(:func:`predict`: exact for the power laws 1/w at infinity and a/w at an atom); a step whose
Newton iteration does not converge quickly, whose first step is too large, whose steps stop
contracting or that lands on Im m > 0 (:func:`herglotz`) is split in two. :func:`newton_solve`
owns the tolerances of every batched Newton solve, the continuity checks included. These batched
steps serve the rays (:mod:`.rays`) and every back end; the driver of :mod:`.continuation` runs
the same steps compiled (:mod:`.branch_kernel`) with the constants defined here.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gemhsa_sym.free.numeric.systems import DOUBLE, Equations, newton_iterates

#: A system the drivers follow: the Dyson system, or the minimal polynomial of m.
System = Equations

__all__ = ["Branch", "BranchError", "RaysFailed", "descend", "fixed_point_start", "herglotz", "newton_solve",
           "predict", "tangent"]

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


def herglotz(m: np.ndarray) -> np.ndarray:
    """Im m(w) <= 0 wherever Im w >= 0 (to rounding)."""
    return m.imag <= HERGLOTZ * (1 + np.abs(m))


def predict(system: System, w0: np.ndarray, w1: np.ndarray, g: np.ndarray) -> np.ndarray:
    """g at w1 from the tangent at w0 in log-log coordinates, componentwise: g (w1/w0)^p with
    p = w g'/g and g' = -J^{-1} dF/dw (exact for the power laws at infinity, 1/w, and at an
    atom, a/w); components with |p| > MAX_POWER (g near 0) take the plain tangent g + g' (w1 - w0)."""
    dg = tangent(system, w0, g)
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


def tangent(system: System, w: np.ndarray, g: np.ndarray) -> np.ndarray:
    """dg/dw = -J^{-1} dF/dw at solutions g (implicit function theorem)."""
    _, J, Fw = system.linearisation(w, g)
    return -system.backend.solve(J, Fw)
