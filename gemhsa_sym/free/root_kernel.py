"""Compiled continuation of the root of P(m, w) = 0, one point at a time (docs/solving.md §3.6).

The drivers of :mod:`.continuation` follow the physical root of P through batched numpy
rounds; on a real grid of a thousand points the rounds, not the arithmetic, cost the time.
Here the same steps run compiled (numba, cached on disk), point by point:

- **descent** of one target from x + i*top down to its own Im w: the log-log tangent start,
  Newton with its first step bounded and its steps required to contract, a step split in two
  where it fails, lands on Im m > 0 or does not converge, then the last solve from EARLY times
  the floor and, failing that, from the floor (docs/solving.md §3.5);
- **march** along a sorted real grid: each point starts from the log-log tangent at the last
  verified point, its error estimated by the distance to the tangent from the point before that
  (the two differ by about 3/2 h^2 m'', the first's error by h^2 m''/2); it is tried where the
  estimate is at most TRUST (1 + |m|), and accepted where Newton lands within twice the estimate,
  Im m <= 0, and, where m is real (outside the support), dm/dx < 0, as m = int rho(t)/(x - t) dt
  requires (the other real root that meets m at an edge increases there). Points that fail
  descend, and the march goes on from them.

A root is returned with ok only where it also rounds well (its relative error from rounding,
10 eps S / (|P_m| |m|), at most the caller's limit). Every tolerance and constant comes from the caller (the driver owns them, as a
:class:`Tolerances`); this module only iterates. Far starts at height top come from one anchor,
the Dyson solution that identifies the physical root, moved along the line Im w = top from the
last far start (a step split in two where it fails). A point that cannot be followed is
returned with ok False.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numba import njit

__all__ = ["Tolerances", "follow_roots"]


class Tolerances(NamedTuple):
    """The driver's constants, in the order the kernel reads them (docs/solving.md §3.5)."""

    tol: float  # converged: Newton step <= tol (1 + |m|)
    residual_tol: float  # ... or |P|/S <= residual_tol (1 + |m|)
    polish: float  # one more step where the last exceeded polish (1 + |m|)
    contraction: float  # each step at most this times the one before ...
    noise: float  # ... unless below noise (1 + |m|)
    descent_ratio: float  # Im w shrinks by this per descent step ...
    fast_ratio: float  # ... or this once a step changed m by less than fast_change |m|
    fast_change: float
    first_step: float  # largest first Newton step of a descent step, relative to |m|
    far_step: float  # ... of a move along Im w = top
    max_power: float  # log-log tangent only for exponents |w m'/m| up to this
    max_splits: int  # deepest halving of one step
    early_floor: float  # the last solve is tried first from this times the floor
    trust: float  # largest error estimate of a marched start, relative to 1 + |m|
    herglotz: float  # Im m <= herglotz (1 + |m|)
    rounding: float  # largest relative error of the root from rounding, 10 eps S / (|P_m| |m|)


@njit(cache=True)
def _coefficients(C: np.ndarray, Cw: np.ndarray, absC: np.ndarray, w: complex,
                  c: np.ndarray, cw: np.ndarray, s: np.ndarray) -> None:
    """The coefficients of m^a in P, P_w and S at w (Horner in w)."""
    aw = abs(w)
    for a in range(C.shape[0]):
        acc = 0j
        accs = 0.0
        for b in range(C.shape[1] - 1, -1, -1):
            acc = acc * w + C[a, b]
            accs = accs * aw + absC[a, b]
        accw = 0j
        for b in range(Cw.shape[1] - 1, -1, -1):
            accw = accw * w + Cw[a, b]
        c[a], cw[a], s[a] = acc, accw, accs


@njit(cache=True)
def _values(c: np.ndarray, cw: np.ndarray, s: np.ndarray, m: complex) -> tuple[complex, complex, complex, float]:
    """P, P_m, P_w and S at m (Horner in m)."""
    P = 0j
    Pm = 0j
    Pw = 0j
    S = 0.0
    am = abs(m)
    for a in range(c.size - 1, -1, -1):
        Pm = Pm * m + P
        P = P * m + c[a]
        Pw = Pw * m + cw[a]
        S = S * am + s[a]
    return P, Pm, Pw, S


@njit(cache=True)
def _newton(c: np.ndarray, cw: np.ndarray, s: np.ndarray, m: complex, first: float, maxit: int,
            k: Tolerances) -> tuple[complex, bool]:
    """Newton on P from m: ok where a step fell below tol (1 + |m|) (or |P|/S below residual_tol
    (1 + |m|)) within maxit, the first step was at most ``first`` and the steps kept contracting."""
    last = np.inf
    for it in range(maxit):
        P, Pm, _, S = _values(c, cw, s, m)
        step = P / Pm if Pm != 0 else complex(np.nan)
        size = abs(step)
        new = m - step
        scale = 1.0 + abs(new)
        if not (math.isfinite(new.real) and math.isfinite(new.imag)):
            return m, False
        if (it == 0 and size > first) or not (size <= k.contraction * last or size <= k.noise * scale):
            return m, False
        last, m = size, new
        if size <= k.tol * scale or abs(P) / S <= k.residual_tol * scale:
            if size > k.polish * scale:
                P, Pm, _, _ = _values(c, cw, s, m)
                if Pm != 0:
                    again = m - P / Pm
                    if math.isfinite(again.real) and math.isfinite(again.imag):
                        m = again
            return m, True
    return m, False


@njit(cache=True)
def _slope(c: np.ndarray, cw: np.ndarray, s: np.ndarray, m: complex) -> complex:
    """dm/dw = -P_w / P_m at a root m (implicit function theorem)."""
    _, Pm, Pw, _ = _values(c, cw, s, m)
    return -Pw / Pm


@njit(cache=True)
def _rounds_well(c: np.ndarray, cw: np.ndarray, s: np.ndarray, m: complex, limit: float) -> bool:
    """The evaluation's backward error over the root's sensitivity, 10 eps S / (|P_m| |m|), is at
    most ``limit`` (it is large next to an atom, where P cancels between huge terms, and at a
    double root)."""
    _, Pm, _, S = _values(c, cw, s, m)
    return 10 * np.finfo(np.float64).eps * S <= limit * abs(Pm) * abs(m)


@njit(cache=True)
def _predict(w0: complex, m0: complex, dm: complex, w1: complex, max_power: float) -> complex:
    """m at w1 from the tangent at w0 in log-log coordinates, m0 (w1/w0)^p with p = w0 m'/m0 (the
    plain tangent where |p| > max_power or the power is not finite), as descent.predict."""
    line = m0 + dm * (w1 - w0)
    if m0 == 0 or w0 == 0:
        return line
    p = w0 * dm / m0
    if abs(p) > max_power:
        return line
    power = m0 * np.exp(p * np.log(w1 / w0))
    return power if (math.isfinite(power.real) and math.isfinite(power.imag)) else line


@njit(cache=True)
def _move(C: np.ndarray, Cw: np.ndarray, absC: np.ndarray, base: complex, direction: complex,
          s_from: float, s_to: float, m: complex, first_step: float, geometric: bool, k: Tolerances,
          c: np.ndarray, cw: np.ndarray, s: np.ndarray) -> tuple[complex, bool]:
    """m from base + direction s_from to base + direction s_to: the log-log tangent start, Newton
    (first step at most first_step |m|, 12 iterations), Im m <= herglotz (1 + |m|); a step that
    fails is split in two (geometric mean of s when ``geometric``, else the midpoint), at most
    max_splits deep, the second half tried only where the first held."""
    targets = np.empty(k.max_splits + 1)
    depths = np.empty(k.max_splits + 1, dtype=np.int64)
    targets[0], depths[0] = s_to, 0
    top = 0
    here = s_from
    while top >= 0:
        there, depth = targets[top], depths[top]
        w0, w1 = base + direction * here, base + direction * there
        _coefficients(C, Cw, absC, w0, c, cw, s)
        start = _predict(w0, m, _slope(c, cw, s, m), w1, k.max_power)
        _coefficients(C, Cw, absC, w1, c, cw, s)
        new, ok = _newton(c, cw, s, start, first_step * abs(start), 12, k)
        if ok and new.imag <= k.herglotz * (1.0 + abs(new)):
            here, m = there, new
            top -= 1
        elif depth < k.max_splits:
            top += 1
            targets[top] = math.sqrt(here * there) if geometric else 0.5 * (here + there)
            depths[top] = depth + 1
        else:
            return m, False
    return m, True


@njit(cache=True)
def _descend(C: np.ndarray, Cw: np.ndarray, absC: np.ndarray, x: float, y: float, height: float,
             m: complex, floor: float, k: Tolerances, c: np.ndarray, cw: np.ndarray, s: np.ndarray) -> tuple[complex, bool]:
    """m at x + i y from its value m at x + i height (height >= y), by descent of Im w; the last
    solve onto y from early_floor times the floor, then from the floor (docs/solving.md §3.5)."""
    ratio = k.descent_ratio
    for factor in (k.early_floor, 1.0):
        stop = max(y, floor * factor)
        while height > stop:
            nxt = max(height * ratio, stop)
            new, ok = _move(C, Cw, absC, x, 1j, height, nxt, m, k.first_step, True, k, c, cw, s)
            if not ok:
                return m, False
            ratio = k.fast_ratio if abs(new - m) < k.fast_change * abs(new) else k.descent_ratio
            m, height = new, nxt
        if y >= stop:
            return m, True
        _coefficients(C, Cw, absC, complex(x, y), c, cw, s)
        final, ok = _newton(c, cw, s, m, 1e-3 * abs(m), 60, k)
        if ok:
            return final, final.imag <= k.herglotz * (1.0 + abs(final))
    return m, False


@njit(cache=True)
def _march_start(x: float, prev: np.ndarray, xs: np.ndarray, m: np.ndarray, dm: np.ndarray, max_power: float) -> tuple[complex, float]:
    """The marched start at x from the last verified real point prev[0] (its log-log tangent) and
    its error estimate, the distance to the tangent from the point before, prev[1]; inf where
    there are not two."""
    if prev[0] < 0 or prev[1] < 0:
        return 0j, np.inf
    a, b = prev[0], prev[1]
    p1 = _predict(complex(xs[a]), m[a], dm[a], complex(x), max_power)
    p2 = _predict(complex(xs[b]), m[b], dm[b], complex(x), max_power)
    return p1, abs(p1 - p2)


@njit(cache=True)
def _far(C: np.ndarray, Cw: np.ndarray, absC: np.ndarray, w0: complex, m0: complex, w1: complex, k: Tolerances,
         c: np.ndarray, cw: np.ndarray, s: np.ndarray) -> tuple[complex, bool]:
    """m at w1 from its value at w0, both far above the support: up or down at Re w0 to Im w1,
    then along Im w = Im w1 (first steps at most far_step |m|)."""
    m, ok = m0, True
    if w0.imag != w1.imag:
        m, ok = _move(C, Cw, absC, complex(w0.real, 0.0), 1j, w0.imag, w1.imag, m, k.far_step, True, k, c, cw, s)
    if ok and w0.real != w1.real:
        m, ok = _move(C, Cw, absC, complex(0.0, w1.imag), 1.0 + 0j, w0.real, w1.real, m, k.far_step, False, k, c, cw, s)
    return m, ok


@njit(cache=True)
def follow_roots(C: np.ndarray, x: np.ndarray, y: np.ndarray, floor: np.ndarray, top: float,
                 anchor_w: complex, anchor_m: complex, k: Tolerances) -> tuple[np.ndarray, np.ndarray]:
    """The physical root of P(m, w) = sum C[a, b] m^a w^b at targets x + i y (y >= 0), and ok where
    it was followed and rounds well; real targets (y = 0) must come sorted by x and are marched from the largest
    (module docstring), the others descend. (anchor_w, anchor_m): the physical root at one point
    with Im w >= top."""
    n = x.size
    A, B = C.shape
    absC = np.abs(C)
    Cw = np.zeros((A, max(B - 1, 1)), dtype=np.complex128)
    for b in range(1, B):
        Cw[:, b - 1] = b * C[:, b]
    c = np.empty(A, dtype=np.complex128)
    cw = np.empty(A, dtype=np.complex128)
    s = np.empty(A)
    m = np.zeros(n, dtype=np.complex128)
    dm = np.zeros(n, dtype=np.complex128)
    ok = np.zeros(n, dtype=np.bool_)
    far_w, far_m = anchor_w, anchor_m  # the last far start
    prev = np.full(2, -1, dtype=np.int64)  # the last two verified real points of the march
    for j in range(n - 1, -1, -1):
        real = y[j] == 0
        if real:
            start, err = _march_start(x[j], prev, x, m, dm, k.max_power)
            if err <= k.trust * (1.0 + abs(start)):
                _coefficients(C, Cw, absC, complex(x[j]), c, cw, s)
                new, good = _newton(c, cw, s, start, k.trust * abs(start), 8, k)
                slope = _slope(c, cw, s, new)
                good = good and abs(new - start) <= 2.0 * err + 1e-12 * (1.0 + abs(new))
                good = good and new.imag <= k.herglotz * (1.0 + abs(new))
                good = good and (abs(new.imag) > 1e-12 * abs(new) or slope.real < 0)
                if good:
                    m[j], dm[j], ok[j] = new, slope, _rounds_well(c, cw, s, new, k.rounding)
                    prev[1], prev[0] = prev[0], j
                    continue
        height = max(top, y[j])
        far, moved = _far(C, Cw, absC, far_w, far_m, complex(x[j], height), k, c, cw, s)
        if not moved:
            continue
        far_w, far_m = complex(x[j], height), far
        new, good = _descend(C, Cw, absC, x[j], y[j], height, far, floor[j], k, c, cw, s)
        if good:
            _coefficients(C, Cw, absC, complex(x[j], y[j]), c, cw, s)
            m[j], ok[j] = new, _rounds_well(c, cw, s, new, k.rounding)
            if real:
                dm[j] = _slope(c, cw, s, new)
                prev[1], prev[0] = prev[0], j
    return m, ok
