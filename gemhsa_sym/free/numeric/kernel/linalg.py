"""The compiled kernel's buffers and linear algebra (docs/solving.md §3.5).

:class:`Work` holds the buffers of one follow; :func:`invert` inverts a sector of M (Gauss-Jordan),
:func:`solve` gives the Newton step and the slope dg/dw from one elimination on the unknowns that
enter some M (the others' columns of J are the identity's) and keeps its LU factors, which
:func:`resolve` reuses for chord steps; :func:`largest` and :func:`distance` are the sizes the
kernel compares. Compiled with numba and cached on disk.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numba import njit

from gemhsa_sym.free.numeric.kernel.tables import Tables

__all__ = ["Work", "abs2", "copy", "distance", "fill", "finite", "invert", "largest", "resolve", "solve", "work"]


class Work(NamedTuple):
    """Buffers of one follow: P's coefficients in m at the current w (c, cw, s), M = A + w E (M0),
    M and its inverse by sectors, F, dF/dw, J (flat), the Newton step and the slope dg/dw that solve
    J x = F and J x = -dF/dw, the elimination tableaux of M's blocks and of J's active part (which
    keeps J's LU factors for chord steps), the rows exchanged by that elimination, and the constant K
    of quadratic convergence that the last chord solve measured (:func:`.kernel_newton.newton`)."""

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
    pivots: np.ndarray
    rate: np.ndarray


@njit(cache=True)
def work(t: Tables) -> Work:
    """Buffers for ``t``."""
    n = t.size
    A = t.C.shape[0]
    k = 1
    for s in range(t.sizes.size):
        k = max(k, t.sizes[s])
    flat = t.A.size
    na = t.active.size
    return Work(np.empty(A, dtype=np.complex128), np.empty(A, dtype=np.complex128), np.empty(A),
                 np.empty(flat, dtype=np.complex128), np.empty(flat, dtype=np.complex128), np.empty(flat, dtype=np.complex128),
                 np.empty(n, dtype=np.complex128), np.zeros(n, dtype=np.complex128), np.zeros(n * n, dtype=np.complex128),
                 np.empty(n, dtype=np.complex128), np.empty(n, dtype=np.complex128), np.empty((k, 2 * k), dtype=np.complex128),
                 np.empty((na, na + 2), dtype=np.complex128), np.empty(na, dtype=np.int64), np.full(1, np.inf))


@njit(cache=True, _nrt=False, inline="always")
def abs2(z: complex) -> float:
    """|z|^2 (no square root: the kernel compares sizes, and hypot dominated its bookkeeping)."""
    return z.real * z.real + z.imag * z.imag


@njit(cache=True, _nrt=False)
def largest(g: np.ndarray) -> float:
    """max |g_j|."""
    out = 0.0
    for j in range(g.size):
        out = max(out, abs2(g[j]))
    return math.sqrt(out)


@njit(cache=True, _nrt=False)
def distance(a: np.ndarray, b: np.ndarray) -> float:
    """max |a_j - b_j|."""
    out = 0.0
    for j in range(a.size):
        out = max(out, abs2(a[j] - b[j]))
    return math.sqrt(out)


@njit(cache=True, _nrt=False)
def copy(src: np.ndarray, dst: np.ndarray) -> None:
    """dst[:] = src, element by element (a slice assignment would need numba's reference counting)."""
    for j in range(src.size):
        dst[j] = src[j]


@njit(cache=True, _nrt=False)
def fill(a: np.ndarray, value: complex) -> None:
    """a[:] = value, element by element."""
    for j in range(a.size):
        a[j] = value


@njit(cache=True, _nrt=False)
def finite(g: np.ndarray) -> bool:
    """Whether every g_j is finite (real and imaginary parts)."""
    for j in range(g.size):
        if not (math.isfinite(g[j].real) and math.isfinite(g[j].imag)):
            return False
    return True


@njit(cache=True, _nrt=False)
def invert(M: np.ndarray, o: int, k: int, R: np.ndarray, a: np.ndarray) -> bool:
    """R[o:o+k*k] = the inverse of the k x k block M[o:o+k*k] (1 x 1 and 2 x 2 in closed form, larger
    blocks by Gauss-Jordan with partial pivoting); False where it is singular."""
    if k == 1:
        if M[o] == 0:
            return False
        R[o] = 1.0 / M[o]
        return True
    if k == 2:  # the adjugate over the determinant
        det = M[o] * M[o + 3] - M[o + 1] * M[o + 2]
        if det == 0:
            return False
        inv = 1.0 / det
        R[o], R[o + 1], R[o + 2], R[o + 3] = M[o + 3] * inv, -M[o + 1] * inv, -M[o + 2] * inv, M[o] * inv
        return True
    for i in range(k):
        for j in range(k):
            a[i, j] = M[o + i * k + j]
            a[i, k + j] = 1.0 if i == j else 0.0
    for col in range(k):
        p = col
        best = abs2(a[col, col])
        for r in range(col + 1, k):
            if abs2(a[r, col]) > best:
                best, p = abs2(a[r, col]), r
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


@njit(cache=True, _nrt=False)
def _back(t: Tables, wk: Work, slope: bool) -> None:
    """Back substitution on the triangular tableau for its right-hand column na (F) into wk.step and,
    with ``slope``, for both columns na and na + 1 (dF/dw) in one pass, the second into wk.dg: the
    active unknowns, then the passive ones, whose columns of J are the identity's (their rows read
    at the terms of J alone, ``passive_entry``)."""
    na = t.active.size
    a, step, dg = wk.system, wk.step, wk.dg
    for i in range(na - 1, -1, -1):
        acc = a[i, na]
        acc_w = a[i, na + 1] if slope else 0j
        for j in range(max(i + 1, t.free), na):  # a leading row is zero up to the feedback columns
            u = a[i, j]
            col = t.active[j]
            acc -= u * step[col]
            if slope:
                acc_w -= u * dg[col]
        step[t.active[i]] = acc * a[i, i]
        if slope:
            dg[t.active[i]] = acc_w * a[i, i]
    for q in range(t.passive.size):
        row = t.passive[q]
        acc = wk.F[row]
        acc_w = wk.Fw[row] if slope else 0j
        for e in range(t.passive_start[q], t.passive_start[q + 1]):
            u = wk.J[t.passive_entry[e]]
            col = t.passive_column[e]
            acc -= u * step[col]
            if slope:
                acc_w -= u * dg[col]
        step[row] = acc
        if slope:
            dg[row] = acc_w


@njit(cache=True, _nrt=False)
def solve(t: Tables, wk: Work, slope: bool) -> bool:
    """The Newton step J^{-1} F into wk.step and, with ``slope``, dg/dw = -J^{-1} dF/dw into wk.dg
    (Gaussian elimination on the active unknowns in the order of the tables, the leading ``free``
    ones without pivoting, their pivots exactly 1, the rest with partial pivoting; its multipliers and
    row exchanges kept for :func:`resolve`, then the passive ones); False where J is singular."""
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
    for col in range(t.free):  # pivots 1; row col is zero from col + 1 up to the feedback columns
        wk.pivots[col] = col
        for i in range(col + 1, na):
            f = a[i, col]  # the multiplier, kept for chord steps
            if f != 0:
                for j in range(t.free, na + r):
                    a[i, j] -= f * a[col, j]
    for col in range(t.free, na):
        p = col
        best = abs2(a[col, col])
        for i in range(col + 1, na):
            size = abs2(a[i, col])
            if size > best:
                best, p = size, i
        if best == 0:
            return False
        wk.pivots[col] = p
        if p != col:
            for j in range(na + r):
                a[col, j], a[p, j] = a[p, j], a[col, j]
        pivot = 1.0 / a[col, col]
        a[col, col] = pivot  # kept as its reciprocal for the back substitution
        for i in range(col + 1, na):
            f = a[i, col] * pivot
            a[i, col] = f  # the multiplier, kept for chord steps
            if f != 0:
                for j in range(col + 1, na + r):
                    a[i, j] -= f * a[col, j]
    _back(t, wk, slope)
    if slope:
        for j in range(n):
            wk.dg[j] = -wk.dg[j]
    return True


@njit(cache=True, _nrt=False)
def resolve(t: Tables, wk: Work) -> None:
    """The chord step J0^{-1} F into wk.step, F the current residual and J0 the Jacobian of the last
    :func:`solve` (its LU factors and row exchanges in wk.system and wk.pivots, its passive rows in
    wk.J): the row exchanges, then forward and back substitution (LAPACK's getrs)."""
    n, na = t.size, t.active.size
    if n == 1:
        wk.step[0] = wk.F[0] / wk.J[0]
        return
    a = wk.system
    for i in range(na):
        a[i, na] = wk.F[t.active[i]]
    for col in range(na):
        p = wk.pivots[col]
        if p != col:
            a[col, na], a[p, na] = a[p, na], a[col, na]
    for col in range(na):
        for i in range(col + 1, na):
            f = a[i, col]
            if f != 0:  # most multipliers of the leading columns are zero
                a[i, na] -= f * a[col, na]
    _back(t, wk, False)
