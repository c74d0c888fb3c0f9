"""Compiled continuation of the physical branch, one point at a time (docs/solving.md §3.5).

One kernel (numba, cached on disk) follows either system the drivers know, read from its
:class:`Tables`: the reduced Dyson system g = R(g, w) (:func:`dyson_tables`) or the root of the
minimal polynomial P(m, w) (:func:`polynomial_tables`). On a real grid of a thousand points,
batched numpy rounds would cost more in calls than in arithmetic; here each point takes the steps
of docs/solving.md §3.5 compiled:

- **descent** of one target from x + i*top down to its own Im w: the log-log tangent start,
  Newton with its first step bounded (and, for the root of P, its steps required to contract),
  a step split in two where it fails, lands on Im m > 0 or does not converge, then the last
  solve from EARLY times the floor and, failing that, from the floor;
- **march** along a sorted real grid: each point starts from the log-log tangent at the last
  verified point, its error estimated by the distance to the tangent from the point before that
  (the two differ by about 3/2 h^2 g'', the first's error by h^2 g''/2); it is tried where the
  estimate is at most TRUST (1 + |g|), and accepted where Newton lands within twice the estimate,
  Im m <= 0, and, where m is real (outside the support), dm/dx < 0, as m = int rho(t)/(x - t) dt
  requires (another real solution that meets m at an edge increases there). Points that fail
  descend, and the march goes on from them.

Far starts at height top come from one anchor, the physical solution at one point far out, moved
along the line Im w = top from the last far start (a step split in two where it fails; the Dyson
system falls back on its fixed-point iteration from g = 0). A root of P is returned with ok only
where it also rounds well (its relative error from rounding, 10 eps S / (|P_m| |m|), at most the
caller's limit). Every tolerance comes from the caller (the driver owns them, as a
:class:`Tolerances`); this module only iterates. Sizes are relative to |m| for the root of P and
to 1 + |g| for the Dyson system, as in :func:`.descent.newton_solve`.

The steps above Newton (moves, descent, far starts, the fixed point, the march start) are inlined
into :func:`follow` instead of compiled on their own: LLVM optimises every callee again inside
each caller, and this halves the first compile (about 25 s, then cached).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numba import njit

__all__ = ["Tables", "Tolerances", "dyson_tables", "follow", "polynomial_tables"]

#: The kinds of system a :class:`Tables` holds.
POLYNOMIAL = 0
DYSON = 1


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


class Tables(NamedTuple):
    """A system as the kernel reads it; the arrays of the other kind are empty.

    The root of P (kind POLYNOMIAL): P(m, w) = sum C[a, b] m^a w^b, Cw the coefficients of P_w,
    absC = |C|. The Dyson system (kind DYSON): sector s is the k x k block at offsets[s] of the
    flat arrays, M = A + w E + sum g_j C_j; each table entry q adds value[q] * (factors) to a target:
    M[c_entry] += c_value g[c_unknown]; R[t_unknown] += t_value M^{-1}[t_entry];
    J[j_target] += j_value M^{-1}[j_left] M^{-1}[j_right] (J flat, row-major, plus the identity);
    dF/dw[w_target] += w_value M^{-1}[w_left] M^{-1}[w_right] (docs/solving.md §3.1). ``active``: the
    unknowns that enter some M (the others' columns of J are those of the identity, so Newton solves
    for the active ones first), ``passive`` the rest.
    """

    kind: int
    size: int
    output: int
    relative: bool
    C: np.ndarray
    Cw: np.ndarray
    absC: np.ndarray
    sizes: np.ndarray
    offsets: np.ndarray
    A: np.ndarray
    E: np.ndarray
    c_unknown: np.ndarray
    c_entry: np.ndarray
    c_value: np.ndarray
    t_unknown: np.ndarray
    t_entry: np.ndarray
    t_value: np.ndarray
    j_left: np.ndarray
    j_right: np.ndarray
    j_value: np.ndarray
    j_target: np.ndarray
    w_left: np.ndarray
    w_right: np.ndarray
    w_value: np.ndarray
    w_target: np.ndarray
    active: np.ndarray
    passive: np.ndarray


def _ints(values: object = ()) -> np.ndarray:
    return np.ascontiguousarray(np.asarray(values, dtype=np.int64).ravel())


def _complexes(values: object = ()) -> np.ndarray:
    return np.ascontiguousarray(np.asarray(values, dtype=np.complex128).ravel())


def polynomial_tables(C: np.ndarray) -> Tables:
    """The root of P(m, w) = sum C[a, b] m^a w^b (one unknown, sizes relative to |m|)."""
    C = np.ascontiguousarray(C, dtype=np.complex128)
    A, B = C.shape
    Cw = np.zeros((A, max(B - 1, 1)), dtype=np.complex128)
    Cw[:, : B - 1] = C[:, 1:] * np.arange(1, B)
    none, empty = _ints(), _complexes()
    return Tables(POLYNOMIAL, 1, 0, True, C, Cw, np.abs(C), none, _ints([0]), empty, empty,
                  none, none, empty, none, none, empty, none, none, empty, none, none, none, empty, none, _ints([0]), none)


def dyson_tables(A: list[np.ndarray], E: list[np.ndarray], C: list[np.ndarray], T: list[np.ndarray], output: int,
                 jacobian: list[tuple[np.ndarray, ...]], slope: list[tuple[np.ndarray, ...]]) -> Tables:
    """The Dyson system with arrays A, E (k x k), C, T (n x k x k) per sector; ``jacobian`` and ``slope``
    per sector: the terms (left, right, value, target) of J and dF/dw, positions flat within the sector."""
    sizes = _ints([a.shape[-1] for a in A])
    offsets = _ints(np.r_[0, np.cumsum(sizes**2)])
    n = C[0].shape[0]

    def entries(X: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        unknown, entry, value = [], [], []
        for s, x in enumerate(X):
            j, a, b = np.nonzero(x)
            unknown.append(j), entry.append(offsets[s] + a * sizes[s] + b), value.append(x[j, a, b])
        return _ints(np.concatenate(unknown)), _ints(np.concatenate(entry)), _complexes(np.concatenate(value))

    def pairs(terms: list[tuple[np.ndarray, ...]]) -> tuple[np.ndarray, ...]:
        left, right, value, target = (np.concatenate([t[i] + (offsets[s] if i < 2 else 0) for s, t in enumerate(terms)])
                                      for i in range(4))
        return _ints(left), _ints(right), _complexes(value), _ints(target)

    none = np.zeros((0, 0), dtype=np.complex128)
    c_terms = entries(C)
    active = np.isin(np.arange(n), c_terms[0])
    return Tables(DYSON, n, int(output), False, none, none, np.zeros((0, 0)), sizes, offsets,
                  _complexes(np.concatenate([a.ravel() for a in A])), _complexes(np.concatenate([e.ravel() for e in E])),
                  *c_terms, *entries(T), *pairs(jacobian), *pairs(slope), _ints(np.flatnonzero(active)),
                  _ints(np.flatnonzero(~active)))


class _Work(NamedTuple):
    """Buffers of one follow: P's coefficients in m at the current w (c, cw, s), M = A + w E (M0),
    M and its inverse by sectors, F, dF/dw, J (flat), the Newton step and the slope dg/dw that solve
    J x = F and J x = -dF/dw, and the elimination tableaux of M's blocks and of J's active part."""

    c: np.ndarray
    cw: np.ndarray
    s: np.ndarray
    M0: np.ndarray
    M: np.ndarray
    R: np.ndarray
    F: np.ndarray
    Fw: np.ndarray
    J: np.ndarray
    step: np.ndarray
    dg: np.ndarray
    inverse: np.ndarray
    system: np.ndarray


@njit(cache=True)
def _work(t: Tables) -> _Work:
    """Buffers for ``t``."""
    n = t.size
    A = t.C.shape[0]
    k = 1
    for s in range(t.sizes.size):
        k = max(k, t.sizes[s])
    flat = t.A.size
    na = t.active.size
    return _Work(np.empty(A, dtype=np.complex128), np.empty(A, dtype=np.complex128), np.empty(A),
                 np.empty(flat, dtype=np.complex128), np.empty(flat, dtype=np.complex128), np.empty(flat, dtype=np.complex128),
                 np.empty(n, dtype=np.complex128), np.zeros(n, dtype=np.complex128), np.empty(n * n, dtype=np.complex128),
                 np.empty(n, dtype=np.complex128), np.empty(n, dtype=np.complex128), np.empty((k, 2 * k), dtype=np.complex128),
                 np.empty((na, na + 2), dtype=np.complex128))


@njit(cache=True)
def _at(t: Tables, w: complex, wk: _Work) -> None:
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


@njit(cache=True)
def _values(wk: _Work, m: complex) -> tuple[complex, complex, complex, float]:
    """P, P_m, P_w and S at m (Horner in m) at the w of the last :func:`_at`."""
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


@njit(cache=True)
def _invert(M: np.ndarray, o: int, k: int, R: np.ndarray, a: np.ndarray) -> bool:
    """R[o:o+k*k] = the inverse of the k x k block M[o:o+k*k] (Gauss-Jordan, partial pivoting);
    False where it is singular."""
    if k == 1:
        if M[o] == 0:
            return False
        R[o] = 1.0 / M[o]
        return True
    for i in range(k):
        for j in range(k):
            a[i, j] = M[o + i * k + j]
            a[i, k + j] = 1.0 if i == j else 0.0
    for col in range(k):
        p = col
        best = abs(a[col, col])
        for r in range(col + 1, k):
            if abs(a[r, col]) > best:
                best, p = abs(a[r, col]), r
        if best == 0:
            return False
        if p != col:
            for j in range(2 * k):
                a[col, j], a[p, j] = a[p, j], a[col, j]
        pivot = 1.0 / a[col, col]
        for j in range(col, 2 * k):
            a[col, j] *= pivot
        for r in range(k):
            f = a[r, col]
            if r != col and f != 0:
                for j in range(col, 2 * k):
                    a[r, j] -= f * a[col, j]
    for i in range(k):
        for j in range(k):
            R[o + i * k + j] = a[i, k + j]
    return True


@njit(cache=True)
def _solve(t: Tables, wk: _Work, slope: bool) -> bool:
    """The Newton step J^{-1} F into wk.step and, with ``slope``, dg/dw = -J^{-1} dF/dw into wk.dg
    (Gaussian elimination with partial pivoting on the active unknowns, then the passive ones, whose
    columns of J are the identity's); False where J is singular."""
    n, na = t.size, t.active.size
    r = 2 if slope else 1
    if n == 1:
        if wk.J[0] == 0:
            return False
        wk.step[0] = wk.F[0] / wk.J[0]
        wk.dg[0] = -wk.Fw[0] / wk.J[0]
        return True
    a = wk.system
    for i in range(na):
        row = t.active[i]
        for j in range(na):
            a[i, j] = wk.J[row * n + t.active[j]]
        a[i, na], a[i, na + 1] = wk.F[row], wk.Fw[row]
    for col in range(na):
        p = col
        best = a[col, col].real ** 2 + a[col, col].imag ** 2
        for i in range(col + 1, na):
            size = a[i, col].real ** 2 + a[i, col].imag ** 2
            if size > best:
                best, p = size, i
        if best == 0:
            return False
        if p != col:
            for j in range(col, na + r):
                a[col, j], a[p, j] = a[p, j], a[col, j]
        pivot = 1.0 / a[col, col]
        a[col, col] = pivot  # kept as its reciprocal for the back substitution
        for i in range(col + 1, na):
            f = a[i, col] * pivot
            if f != 0:
                for j in range(col + 1, na + r):
                    a[i, j] -= f * a[col, j]
    for c in range(r):
        out = wk.step if c == 0 else wk.dg
        for i in range(na - 1, -1, -1):
            acc = a[i, na + c]
            for j in range(i + 1, na):
                acc -= a[i, j] * out[t.active[j]]
            out[t.active[i]] = acc * a[i, i]
        for q in range(t.passive.size):
            row = t.passive[q]
            acc = wk.F[row] if c == 0 else wk.Fw[row]
            for j in range(na):
                acc -= wk.J[row * n + t.active[j]] * out[t.active[j]]
            out[row] = acc
    if slope:
        for j in range(n):
            wk.dg[j] = -wk.dg[j]
    return True


@njit(cache=True)
def _linearise(t: Tables, wk: _Work, g: np.ndarray, with_w: bool) -> float:
    """F into wk.F, J into wk.J (and dF/dw into wk.Fw with ``with_w``) at g and the w of the last
    :func:`_at`; returns the residual's scale S (1 for the Dyson system; inf where M is singular)."""
    if t.kind == POLYNOMIAL:
        P, Pm, Pw, S = _values(wk, g[0])
        wk.F[0], wk.J[0], wk.Fw[0] = P, Pm, Pw
        return S
    n = t.size
    for q in range(t.A.size):
        wk.M[q] = wk.M0[q]
    for q in range(t.c_unknown.size):
        wk.M[t.c_entry[q]] += t.c_value[q] * g[t.c_unknown[q]]
    for s in range(t.sizes.size):
        if not _invert(wk.M, t.offsets[s], t.sizes[s], wk.R, wk.inverse):
            return np.inf
    for i in range(n):
        wk.F[i] = g[i]
    for q in range(t.t_unknown.size):
        wk.F[t.t_unknown[q]] -= t.t_value[q] * wk.R[t.t_entry[q]]
    wk.J[:] = 0
    for i in range(n):
        wk.J[i * n + i] = 1.0
    for q in range(t.j_left.size):
        wk.J[t.j_target[q]] += t.j_value[q] * wk.R[t.j_left[q]] * wk.R[t.j_right[q]]
    if with_w:
        wk.Fw[:] = 0
        for q in range(t.w_left.size):
            wk.Fw[t.w_target[q]] += t.w_value[q] * wk.R[t.w_left[q]] * wk.R[t.w_right[q]]
    return 1.0


@njit(cache=True)
def _largest(g: np.ndarray) -> float:
    """max |g_j|."""
    out = 0.0
    for j in range(g.size):
        out = max(out, abs(g[j]))
    return out


@njit(cache=True)
def _finite(g: np.ndarray) -> bool:
    for j in range(g.size):
        if not (math.isfinite(g[j].real) and math.isfinite(g[j].imag)):
            return False
    return True


@njit(cache=True)
def _base(t: Tables) -> float:
    """The constant of the size a first step is measured against: |g| (root of P) or 1 + |g| (Dyson)."""
    return 0.0 if t.relative else 1.0


@njit(cache=True)
def _newton_root(wk: _Work, g0: np.ndarray, out: np.ndarray, first: float, maxit: int, k: Tolerances) -> bool:
    """:func:`_newton` for the root of P, in scalars (the same steps and checks; the steps must
    contract): Newton on P(m) = 0 at the w of the last :func:`_at`, dm/dw = -P_w / P_m into wk.dg.
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


@njit(cache=True)
def _newton(t: Tables, wk: _Work, g0: np.ndarray, out: np.ndarray, first: float, maxit: int, k: Tolerances) -> bool:
    """Newton from g0 at the w of the last :func:`_at`, into out: ok where a step fell below
    tol (1 + |g|) (or |F|/S below residual_tol (1 + |g|)) within maxit, the first step was at most
    ``first`` and, for the root of P, the steps kept contracting; one more step where the last
    exceeded polish (1 + |g|). wk.dg is then dg/dw from the last linearisation (at most one step
    from the root)."""
    if t.kind == POLYNOMIAL:
        return _newton_root(wk, g0, out, first, maxit, k)
    n = t.size
    out[:] = g0
    last = np.inf
    converged = False
    for it in range(maxit + 1):
        S = _linearise(t, wk, out, True)
        solved = S < np.inf and _solve(t, wk, True)
        if solved:
            size = _largest(wk.step)
            resid = _largest(wk.F)
            for j in range(n):
                wk.step[j] = out[j] - wk.step[j]
            solved = _finite(wk.step)
        if converged:  # the polishing step, kept where it is finite
            if solved:
                out[:] = wk.step
            return True
        if not solved or it == maxit:
            return False
        scale = 1.0 + _largest(wk.step)
        if it == 0 and size > first:
            return False
        if t.relative and not (size <= k.contraction * last or size <= k.noise * scale):
            return False
        last = size
        out[:] = wk.step
        converged = size <= k.tol * scale or resid / S <= k.residual_tol * scale
        if converged and size <= k.polish * scale:
            return True
    return False


@njit(cache=True)
def _slope(t: Tables, wk: _Work, g: np.ndarray, dg: np.ndarray) -> bool:
    """dg/dw = -J^{-1} dF/dw at a solution g and the w of the last :func:`_at`, into dg (implicit
    function theorem)."""
    if not (_linearise(t, wk, g, True) < np.inf and _solve(t, wk, True)):
        return False
    dg[:] = wk.dg
    return True


@njit(cache=True)
def _herglotz(t: Tables, g: np.ndarray, k: Tolerances) -> bool:
    """Im m <= herglotz (1 + |m|)."""
    m = g[t.output]
    return m.imag <= k.herglotz * (1.0 + abs(m))


@njit(cache=True)
def _rounds_well(t: Tables, wk: _Work, g: np.ndarray, limit: float) -> bool:
    """For the root of P, at the w of the last :func:`_at`: the evaluation's backward error over the
    root's sensitivity, 10 eps S / (|P_m| |m|), is at most ``limit`` (large next to an atom, where P
    cancels between huge terms, and at a double root). Always for the Dyson system."""
    if t.kind != POLYNOMIAL:
        return True
    _, Pm, _, S = _values(wk, g[0])
    return 10 * np.finfo(np.float64).eps * S <= limit * abs(Pm) * abs(g[0])


@njit(cache=True)
def _predict(w0: complex, g0: np.ndarray, dg: np.ndarray, w1: complex, max_power: float, out: np.ndarray) -> None:
    """g at w1 from the tangent at w0 in log-log coordinates, componentwise: g0 (w1/w0)^p with
    p = w0 g'/g0 (the plain tangent where |p| > max_power or the power is not finite; g0 where
    neither is finite), as :func:`.descent.predict`."""
    log = np.log(w1 / w0) if w0 != 0 else complex(np.nan)
    for j in range(g0.size):
        line = g0[j] + dg[j] * (w1 - w0)
        value = line
        if g0[j] != 0 and w0 != 0:
            p = w0 * dg[j] / g0[j]
            if abs(p) <= max_power:
                power = g0[j] * np.exp(p * log)
                if math.isfinite(power.real) and math.isfinite(power.imag):
                    value = power
        out[j] = value if (math.isfinite(value.real) and math.isfinite(value.imag)) else g0[j]


@njit(cache=True, inline="always")
def _move(t: Tables, wk: _Work, base: complex, direction: complex, s_from: float, s_to: float, g: np.ndarray,
          dg: np.ndarray, first_step: float, geometric: bool, k: Tolerances) -> bool:
    """g and its slope dg (given at base + direction s_from) moved to base + direction s_to, in place:
    the log-log tangent start, Newton (first step at most first_step times the size of the start, 12
    iterations), Im m <= herglotz (1 + |m|); a step that fails is split in two (geometric mean of s
    when ``geometric``, else the midpoint), at most max_splits deep, the second half tried only where
    the first held."""
    n = t.size
    targets = np.empty(k.max_splits + 1)
    depths = np.empty(k.max_splits + 1, dtype=np.int64)
    targets[0], depths[0] = s_to, 0
    top = 0
    here = s_from
    start = np.empty(n, dtype=np.complex128)
    new = np.empty(n, dtype=np.complex128)
    while top >= 0:
        there, depth = targets[top], depths[top]
        w1 = base + direction * there
        _predict(base + direction * here, g, dg, w1, k.max_power, start)
        _at(t, w1, wk)
        if _newton(t, wk, start, new, first_step * (_base(t) + _largest(start)), 12, k) and _herglotz(t, new, k):
            here = there
            g[:] = new
            dg[:] = wk.dg
            top -= 1
        elif depth < k.max_splits:
            top += 1
            targets[top] = math.sqrt(here * there) if geometric else 0.5 * (here + there)
            depths[top] = depth + 1
        else:
            return False
    return True


@njit(cache=True, inline="always")
def _descend(t: Tables, wk: _Work, x: float, y: float, height: float, g: np.ndarray, dg: np.ndarray, floor: float,
             k: Tolerances) -> bool:
    """g and its slope dg moved from x + i height down to x + i y (height >= y) by descent of Im w, in
    place; the last solve onto y from early_floor times the floor, then from the floor (docs/solving.md §3.5)."""
    ratio = k.descent_ratio
    before = np.empty(t.size, dtype=np.complex128)
    new = np.empty(t.size, dtype=np.complex128)
    for factor in (k.early_floor, 1.0):
        stop = max(y, floor * factor)
        while height > stop:
            nxt = max(height * ratio, stop)
            before[:] = g
            if not _move(t, wk, complex(x), 1j, height, nxt, g, dg, k.first_step, True, k):
                return False
            change = 0.0
            for j in range(t.size):
                change = max(change, abs(g[j] - before[j]))
            ratio = k.fast_ratio if change < k.fast_change * _largest(g) else k.descent_ratio
            height = nxt
        if y >= stop:
            return True
        _at(t, complex(x, y), wk)
        if _newton(t, wk, g, new, 1e-3 * (_base(t) + _largest(g)), 60, k):
            g[:] = new
            dg[:] = wk.dg
            return _herglotz(t, new, k)
    return False


@njit(cache=True, inline="always")
def _fixed_point(t: Tables, wk: _Work, w: complex, k: Tolerances, g: np.ndarray, dg: np.ndarray) -> bool:
    """The Dyson system's physical solution at w far out and its slope, into g and dg: g <- R(g, w)
    from g = 0 (200 iterations at most), polished by Newton (as :func:`.descent.fixed_point_start`);
    False for the root of P."""
    if t.kind == POLYNOMIAL:
        return False
    start = np.zeros(t.size, dtype=np.complex128)
    _at(t, w, wk)
    for _ in range(200):
        if not _linearise(t, wk, start, False) < np.inf:
            return False
        delta = _largest(wk.F)
        for j in range(t.size):
            start[j] -= wk.F[j]  # R(g) = g - F(g)
        if delta < 1e-6 * (1.0 + _largest(start)):
            break
    if not _newton(t, wk, start, g, np.inf, 30, k):
        return False
    dg[:] = wk.dg
    return True


@njit(cache=True, inline="always")
def _far(t: Tables, wk: _Work, w0: complex, w1: complex, g: np.ndarray, dg: np.ndarray, k: Tolerances) -> bool:
    """g and its slope dg moved from w0 to w1, both far above the support, in place: up or down at
    Re w0 to Im w1, then along Im w = Im w1 (first steps at most far_step times the size of g)."""
    for leg in range(2):
        vertical = leg == 0
        if (w0.imag != w1.imag) if vertical else (w0.real != w1.real):
            base, direction = (complex(w0.real, 0.0), 1j) if vertical else (complex(0.0, w1.imag), 1.0 + 0j)
            s_from, s_to = (w0.imag, w1.imag) if vertical else (w0.real, w1.real)
            if not _move(t, wk, base, direction, s_from, s_to, g, dg, k.far_step, vertical, k):
                return False
    return True


@njit(cache=True, inline="always")
def _march_start(x: float, prev: np.ndarray, xs: np.ndarray, G: np.ndarray, DG: np.ndarray, max_power: float,
                 start: np.ndarray, other: np.ndarray) -> float:
    """The marched start at x from the last verified real point prev[0] (its log-log tangent), into
    start, and its error estimate, the distance to the tangent from the point before, prev[1]; inf
    where there are not two."""
    if prev[0] < 0 or prev[1] < 0:
        return np.inf
    a, b = prev[0], prev[1]
    _predict(complex(xs[a]), G[a], DG[a], complex(x), max_power, start)
    _predict(complex(xs[b]), G[b], DG[b], complex(x), max_power, other)
    err = 0.0
    for j in range(start.size):
        err = max(err, abs(start[j] - other[j]))
    return err


@njit(cache=True)
def follow(t: Tables, x: np.ndarray, y: np.ndarray, floor: np.ndarray, top: float, anchor_w: complex,
           anchor_g: np.ndarray, k: Tolerances) -> tuple[np.ndarray, np.ndarray]:
    """The physical solution at targets x + i y (y >= 0), and ok where it was followed (and, for a
    root of P, rounds well); real targets (y = 0) must come sorted by x and are marched from the
    largest (module docstring), the others descend. (anchor_w, anchor_g): the physical solution at
    one point with Im w >= top."""
    N, n = x.size, t.size
    wk = _work(t)
    G = np.zeros((N, n), dtype=np.complex128)
    DG = np.zeros((N, n), dtype=np.complex128)
    ok = np.zeros(N, dtype=np.bool_)
    far_w, far_g, far_dg = anchor_w, anchor_g.copy(), np.zeros(n, dtype=np.complex128)  # the last far start
    _at(t, anchor_w, wk)
    if not _slope(t, wk, far_g, far_dg):
        return G, ok
    g = np.empty(n, dtype=np.complex128)
    dg = np.empty(n, dtype=np.complex128)
    start = np.empty(n, dtype=np.complex128)
    other = np.empty(n, dtype=np.complex128)
    prev = np.full(2, -1, dtype=np.int64)  # the last two verified real points of the march
    for j in range(N - 1, -1, -1):
        real = y[j] == 0
        if real:
            err = _march_start(x[j], prev, x, G, DG, k.max_power, start, other)
            if err <= k.trust * (1.0 + _largest(start)):
                _at(t, complex(x[j]), wk)
                good = _newton(t, wk, start, g, k.trust * (_base(t) + _largest(start)), 8, k)
                if good:
                    gap = 0.0
                    for i in range(n):
                        gap = max(gap, abs(g[i] - start[i]))
                    m = g[t.output]
                    good = gap <= 2.0 * err + 1e-12 * (1.0 + _largest(g)) and _herglotz(t, g, k)
                    good = good and (abs(m.imag) > 1e-12 * abs(m) or wk.dg[t.output].real < 0)
                if good:
                    G[j], DG[j], ok[j] = g, wk.dg, _rounds_well(t, wk, g, k.rounding)
                    prev[1], prev[0] = prev[0], j
                    continue
        height = max(top, y[j])
        g[:], dg[:] = far_g, far_dg
        moved = _far(t, wk, far_w, complex(x[j], height), g, dg, k)
        if not moved:
            moved = _fixed_point(t, wk, complex(x[j], height), k, g, dg)
        if not moved:
            continue
        far_w = complex(x[j], height)
        far_g[:], far_dg[:] = g, dg
        if _descend(t, wk, x[j], y[j], height, g, dg, floor[j], k):
            _at(t, complex(x[j], y[j]), wk)
            G[j], DG[j], ok[j] = g, dg, _rounds_well(t, wk, g, k.rounding)
            if real:
                prev[1], prev[0] = prev[0], j
    return G, ok
