"""Newton's method on either system of the compiled kernel (docs/solving.md §3.5).

One Newton solve at one point w (:func:`newton`), reading a :class:`~.kernel_tables.Tables`: the
linearisation F, J = dF/dg and dF/dw (:func:`linearise`; the Dyson system's sector inverses by
Gauss-Jordan, P and its derivatives by Horner), the step and the slope dg/dw = -J^{-1} dF/dw from
one elimination (:func:`.kernel_linalg.solve`, whose factors chord steps reuse), the continuity checks of :func:`.descent.newton_solve`, and the log-log predictor of
:func:`.descent.predict`. Compiled with numba and cached on disk; the driver's constants come in as
a :class:`Tolerances`. Sizes are relative to |m| for the root of P and to 1 + |g| for the Dyson
system.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numba import njit

from gemhsa_sym.free.numeric.kernel.linalg import Work, abs2, copy, fill, finite, invert, largest, resolve, solve
from gemhsa_sym.free.numeric.kernel.tables import POLYNOMIAL, Tables

__all__ = ["Tolerances", "at", "herglotz", "linearise", "newton", "offset", "predict", "rounds_well", "slope"]


class Tolerances(NamedTuple):
    """The driver's constants, in the order the kernel reads them (docs/solving.md §3.5)."""

    tol: float  # converged: Newton step <= tol (1 + |g|)
    residual_tol: float  # ... or |F|/S <= residual_tol (1 + |g|)
    polish: float  # one more step where the last exceeded polish (1 + |g|)
    contraction: float  # for the root of P, each step at most this times the one before ...
    noise: float  # ... unless below noise (1 + |g|)
    descent_ratio: float  # Im w shrinks by this per descent step ...
    fast_ratio: float  # ... or this once a step changed g by less than fast_change |g|
    fast_change: float
    first_step: float  # largest first Newton step of a descent step, relative to |g| (+ 1 for Dyson)
    far_step: float  # ... of a move along Im w = top
    max_power: float  # log-log tangent only for exponents |w g'/g| up to this
    max_splits: int  # deepest halving of one step
    early_floor: float  # the last solve is tried first from this times the floor
    trust: float  # largest error estimate of a marched start, relative to 1 + |g|
    herglotz: float  # Im m <= herglotz (1 + |m|)
    rounding: float  # largest relative error of a root of P from rounding, 10 eps S / (|P_m| |m|)
    substeps: int  # most equal steps a marched grid step is divided into
    march_log: float  # a marched start is the log-log tangent only where |x - x0| >= march_log |x0|
    rate_margin: float  # a marched solve stops after its full step where this times its predicted error is below polish
    recheck: int  # ... and takes its second step at least once in this many marched points



@njit(cache=True, _nrt=False)
def at(t: Tables, w: complex, wk: Work) -> None:
    """What depends on w alone: the coefficients of m^a in P, P_w and S (Horner in w), or M0 = A + w E."""
    if t.kind == POLYNOMIAL:
        aw = abs(w)
        for a in range(t.C.shape[0]):
            acc = 0j
            accs = 0.0
            for b in range(t.C.shape[1] - 1, -1, -1):
                acc = acc * w + t.C[a, b]
                accs = accs * aw + t.absC[a, b]
            accw = 0j
            for b in range(t.Cw.shape[1] - 1, -1, -1):
                accw = accw * w + t.Cw[a, b]
            wk.c[a], wk.cw[a], wk.s[a] = acc, accw, accs
    else:
        for q in range(t.A.size):
            wk.M0[q] = t.A[q] + w * t.E[q]


@njit(cache=True, _nrt=False)
def _values(wk: Work, m: complex) -> tuple[complex, complex, complex, float]:
    """P, P_m, P_w and S at m (Horner in m) at the w of the last :func:`at`."""
    P = 0j
    Pm = 0j
    Pw = 0j
    S = 0.0
    am = abs(m)
    for a in range(wk.c.size - 1, -1, -1):
        Pm = Pm * m + P
        P = P * m + wk.c[a]
        Pw = Pw * m + wk.cw[a]
        S = S * am + wk.s[a]
    return P, Pm, Pw, S


@njit(cache=True, _nrt=False)
def linearise(t: Tables, wk: Work, g: np.ndarray, with_j: bool, with_w: bool) -> float:
    """F into wk.F (with ``with_j`` J into wk.J, with ``with_w`` dF/dw into wk.Fw) at g and the w of
    the last :func:`at`; returns the residual's scale S (1 for the Dyson system; inf where M is
    singular)."""
    if t.kind == POLYNOMIAL:
        P, Pm, Pw, S = _values(wk, g[0])
        wk.F[0] = P
        if with_j:
            wk.J[0] = Pm
        if with_w:
            wk.Fw[0] = Pw
        return S
    n = t.size
    for q in range(t.A.size):
        wk.M[q] = wk.M0[q]
    for q in range(t.c_unknown.size):
        wk.M[t.c_entry[q]] += t.c_value[q] * g[t.c_unknown[q]]
    for s in range(t.sizes.size):
        if not invert(wk.M, t.offsets[s], t.sizes[s], wk.R, wk.inverse):
            return np.inf
    for i in range(n):
        wk.F[i] = g[i]
    for q in range(t.t_unknown.size):
        wk.F[t.t_unknown[q]] -= t.t_value[q] * wk.R[t.t_entry[q]]
    if with_j:  # J is zero but where a term lands (work() makes it so), and 1 on its diagonal
        for q in range(t.j_target.size):
            wk.J[t.j_target[q]] = 0.0
        for i in range(n):
            wk.J[i * n + i] = 1.0
        for q in range(t.j_left.size):
            wk.J[t.j_target[q]] += t.j_value[q] * wk.R[t.j_left[q]] * wk.R[t.j_right[q]]
    if with_w:
        fill(wk.Fw, 0.0)
        for q in range(t.w_left.size):
            wk.Fw[t.w_target[q]] += t.w_value[q] * wk.R[t.w_left[q]] * wk.R[t.w_right[q]]
    return 1.0


@njit(cache=True, _nrt=False)
def offset(t: Tables) -> float:
    """The constant of the size a first step is measured against: |g| (root of P) or 1 + |g| (Dyson)."""
    return 0.0 if t.relative else 1.0


@njit(cache=True, _nrt=False)
def _newton_root(wk: Work, g0: np.ndarray, out: np.ndarray, first: float, maxit: int, k: Tolerances) -> bool:
    """:func:`newton` for the root of P, in scalars (the same steps and checks; the steps must
    contract): Newton on P(m) = 0 at the w of the last :func:`at`, dm/dw = -P_w / P_m into wk.dg.
    A Newton step on P costs a few tens of nanoseconds, so the vector version's bookkeeping
    would triple the cost of a grid."""
    m = g0[0]
    last = np.inf
    converged = False
    for it in range(maxit + 1):
        P, Pm, Pw, S = _values(wk, m)
        solved = Pm != 0
        if solved:
            wk.dg[0] = -Pw / Pm
            step = P / Pm
            size = abs(step)
            new = m - step
            solved = math.isfinite(new.real) and math.isfinite(new.imag)
        if converged:  # the polishing step, kept where it is finite
            out[0] = new if solved else m
            return True
        if not solved or it == maxit:
            return False
        scale = 1.0 + abs(new)
        if (it == 0 and size > first) or not (size <= k.contraction * last or size <= k.noise * scale):
            return False
        last, m = size, new
        converged = size <= k.tol * scale or abs(P) / S <= k.residual_tol * scale
        if converged and size <= k.polish * scale:
            out[0] = m
            return True
    return False


@njit(cache=True, _nrt=False)
def newton(t: Tables, wk: Work, g0: np.ndarray, out: np.ndarray, first: float, maxit: int, k: Tolerances,
           chord: bool) -> bool:
    """Newton from g0 at the w of the last :func:`at`, into out: ok where a step fell below
    tol (1 + |g|) (or |F|/S below residual_tol (1 + |g|)) within maxit, the first step was at most
    ``first`` and, for the root of P, the steps kept contracting; one more step where the last
    exceeded polish (1 + |g|). wk.dg is then dg/dw from the last linearisation (at most one step
    from the root). With ``chord`` (the Dyson system), J is linearised and factored at g0 alone and
    every later step reuses its factors (the chord method, docs/solving.md §3.5), each required to
    contract as the root of P's must, and the polishing step is skipped where the error a step leaves, its size times its
    ratio to the step before, is below polish; wk.dg is then dg/dw at g0. The first (full) step of a chord solve leaves
    an error of about K size^2 (Newton's quadratic convergence); where wk.rate[0], a bound on K from an earlier solve,
    puts rate_margin times that error below polish (1 + |g|), the solve stops after it; where a second step is taken,
    wk.rate[0] becomes the K it measures, that step's size over the first's square (docs/solving.md §3.5)."""
    if t.kind == POLYNOMIAL:
        return _newton_root(wk, g0, out, first, maxit, k)
    n = t.size
    copy(g0, out)
    last = np.inf
    converged = False
    for it in range(maxit + 1):
        full = it == 0 or not chord
        S = linearise(t, wk, out, full, full)
        solved = S < np.inf
        if solved and full:
            solved = solve(t, wk, True)
        elif solved:
            resolve(t, wk)
        if solved:
            size = largest(wk.step)
            resid = largest(wk.F)
            for j in range(n):
                wk.step[j] = out[j] - wk.step[j]
            solved = finite(wk.step)
            if chord and it == 1:
                wk.rate[0] = size / (last * last) if last > 0 else np.inf
        if converged:  # the polishing step, kept where it is finite
            if solved:
                copy(wk.step, out)
            return True
        if not solved or it == maxit:
            return False
        scale = 1.0 + largest(wk.step)
        if it == 0 and size > first:
            return False
        if (t.relative or not full) and not (size <= k.contraction * last or size <= k.noise * scale):
            return False
        if chord and it == 0 and k.rate_margin * wk.rate[0] * size * size <= k.polish * scale:
            copy(wk.step, out)
            return True
        # a chord step leaves about its contraction (size / last) times itself
        polished = size <= k.polish * scale if full else size * size <= k.polish * scale * last
        last = size
        copy(wk.step, out)
        converged = size <= k.tol * scale or resid / S <= k.residual_tol * scale
        if converged and polished:
            return True
    return False


@njit(cache=True, _nrt=False)
def slope(t: Tables, wk: Work, g: np.ndarray, dg: np.ndarray) -> bool:
    """dg/dw = -J^{-1} dF/dw at a solution g and the w of the last :func:`at`, into dg (implicit
    function theorem)."""
    if not (linearise(t, wk, g, True, True) < np.inf and solve(t, wk, True)):
        return False
    copy(wk.dg, dg)
    return True


@njit(cache=True, _nrt=False)
def herglotz(t: Tables, g: np.ndarray, k: Tolerances) -> bool:
    """Im m <= herglotz (1 + |m|)."""
    m = g[t.output]
    return m.imag <= k.herglotz * (1.0 + abs(m))


@njit(cache=True, _nrt=False)
def rounds_well(t: Tables, wk: Work, g: np.ndarray, limit: float) -> bool:
    """For the root of P, at the w of the last :func:`at`: the evaluation's backward error over the
    root's sensitivity, 10 eps S / (|P_m| |m|), is at most ``limit`` (large next to an atom, where P
    cancels between huge terms, and at a double root). Always for the Dyson system."""
    if t.kind != POLYNOMIAL:
        return True
    _, Pm, _, S = _values(wk, g[0])
    return 10 * np.finfo(np.float64).eps * S <= limit * abs(Pm) * abs(g[0])


@njit(cache=True, _nrt=False)
def predict(w0: complex, g0: np.ndarray, dg: np.ndarray, w1: complex, max_power: float, min_log: float,
            out: np.ndarray) -> None:
    """g at w1 from the tangent at w0 in log-log coordinates, componentwise: g0 (w1/w0)^p with
    p = w0 g'/g0 (the plain tangent where |p| > max_power or the power is not finite; g0 where
    neither is finite), as :func:`.descent.predict`; the plain tangent for every component where the
    step is below min_log |w0| (the two agree to second order in the step, and the plain one costs
    no logarithm and no complex exponential)."""
    power_law = w0 != 0 and not abs2(w1 - w0) < min_log * min_log * abs2(w0)
    log = np.log(w1 / w0) if power_law else 0j
    for j in range(g0.size):
        line = g0[j] + dg[j] * (w1 - w0)
        value = line
        if power_law and g0[j] != 0:
            p = w0 * dg[j] / g0[j]
            if abs2(p) <= max_power * max_power:
                power = g0[j] * np.exp(p * log)
                if math.isfinite(power.real) and math.isfinite(power.imag):
                    value = power
        out[j] = value if (math.isfinite(value.real) and math.isfinite(value.imag)) else g0[j]
