"""Sparse linear algebra of Dyson systems (docs/solving.md §3.4): products with the nonzero part of the
system's arrays, and solves of large Jacobians in double precision and by refinement at any precision.

The arrays C and T of a system (see :mod:`.systems`) are mostly zero: an unknown enters few sectors, a
sector few unknowns. :class:`NonzeroPart` keeps the rows and columns where one is not zero; in double
precision its products are one dense product over that submatrix, on object arrays (mpmath) a sum over the
nonzero entries (:class:`Runs`), since a dense product of object arrays costs one Python operation per
entry, zero or not.

A Dyson system of many dimension groups (a token covariance of many levels) has a Jacobian with
few nonzero entries: each level's unknowns meet their own and a few shared ones (fifty levels,
659 unknowns: 4215 of 434 281 entries). Its dense elimination costs k^3 operations, at the
working precision in mpmath. Here J is factored in double precision by SuperLU
(``scipy.sparse.linalg.splu``, partial pivoting); that is the double solve. At higher precision,
x_{i+1} = x_i + (LU)^{-1} r_i with the residual r_i = F - J x_i computed over the nonzero entries at the working precision plus guard bits: each
step gains about 16 - log10 cond(J) digits (iterative refinement; Higham, *Accuracy and Stability
of Numerical Algorithms*, 2nd ed., §12.1). The residual is scaled to unit size before it is
rounded to double, so no number leaves double's range. Where the correction stops contracting
(J too ill-conditioned for double precision) or J does not fit in double, the answer is None and
the caller solves densely.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import mpmath
import numpy as np
import scipy.sparse
import scipy.sparse.linalg

from gemhsa_sym.free.numeric.blocks import nonzero_mask

__all__ = ["GUARD_BITS", "MAX_DENSITY", "MIN_SIZE", "NonzeroPart", "Runs", "double_solve", "refined_solve"]

#: Guard bits of the residual above mpmath's working precision (as in the dense solve).
GUARD_BITS = 20
#: Systems from this size on, with at most this fraction of nonzero entries, are solved here.
MIN_SIZE = 64
MAX_DENSITY = 0.1
#: A correction must shrink at least by this factor from one step to the next.
CONTRACTION = 1e-2


@dataclass(frozen=True)
class Runs:
    """out[:, target[i]] += sum_e x[:, source[e]] weight[e] over the entries e of run i: a product that
    touches the nonzero entries only, for object arrays (mpmath), where a dense product costs one Python
    operation per entry, zero or not."""

    source: np.ndarray
    weight: np.ndarray
    starts: np.ndarray
    target: np.ndarray

    @classmethod
    def of(cls, target: np.ndarray, source: np.ndarray, weight: np.ndarray) -> "Runs":
        order = np.argsort(target, kind="stable")
        target, source, weight = target[order], source[order], weight[order]
        starts = np.flatnonzero(np.r_[True, target[1:] != target[:-1]]) if target.size else np.array([], int)
        return cls(source, weight, starts, target[starts])

    def add(self, x: np.ndarray, out: np.ndarray) -> None:
        if self.starts.size:
            out[:, self.target] += np.add.reduceat(x[:, self.source] * self.weight, self.starts, axis=1)


@dataclass(frozen=True)
class NonzeroPart:
    """The nonzero part of an (m, k, k) array T (or C) seen as an m x k^2 matrix: the rows (unknowns)
    and flat columns (entries) where it is not zero, and that submatrix. Products with it skip the
    zeros, which are most of it (an unknown enters few sectors, a sector few unknowns): in double
    precision as one dense product over the submatrix, on object arrays entry by entry (``by_row``
    for products with its transpose, ``by_col`` for products with it)."""

    rows: np.ndarray
    cols: np.ndarray
    block: np.ndarray
    by_row: Runs
    by_col: Runs

    @classmethod
    def of(cls, T: np.ndarray) -> "NonzeroPart":
        flat = T.reshape(T.shape[0], -1)
        nonzero = nonzero_mask(flat)
        rows, cols = np.flatnonzero(nonzero.any(axis=1)), np.flatnonzero(nonzero.any(axis=0))
        block = np.ascontiguousarray(flat[np.ix_(rows, cols)])
        r, c = np.nonzero(nonzero[np.ix_(rows, cols)])
        return cls(rows, cols, block, Runs.of(rows[r], cols[c], block[r, c]), Runs.of(cols[c], rows[r], block[r, c]))

    def left(self, x: np.ndarray, out: np.ndarray) -> None:
        """out[:, rows] += x[:, cols] block^T (x, out of P rows)."""
        if out.dtype == object:
            self.by_row.add(x, out)
        elif self.rows.size:
            out[:, self.rows] += x[:, self.cols] @ self.block.T

    def right(self, x: np.ndarray, out: np.ndarray) -> None:
        """out[:, cols] += x[:, rows] block."""
        if out.dtype == object:
            self.by_col.add(x, out)
        elif self.rows.size:
            out[:, self.cols] += x[:, self.rows] @ self.block


def _scaled_double(v: np.ndarray, real: bool) -> tuple[np.ndarray, mpmath.mpf]:
    """v / s in double precision and s = max |v| (s = 0 for v = 0)."""
    s = max((abs(x) for x in v), default=mpmath.mpf(0))
    if not s:
        return np.zeros(len(v), dtype=float if real else complex), mpmath.mpf(0)
    scaled = v / s
    return np.array([float(x) for x in scaled] if real else [complex(x) for x in scaled]), s


def _sparse(J: np.ndarray) -> bool:
    """Whether J (k x k, or a batch of them) is large and sparse enough for this module."""
    k = J.shape[-1]
    return k >= MIN_SIZE and J.size > 0 and np.count_nonzero(J.reshape(-1, k, k), axis=(1, 2)).max() <= MAX_DENSITY * k * k


def double_solve(J: np.ndarray, F: np.ndarray) -> np.ndarray | None:
    """x with J x = F for a batch (J: P x k x k, F: P x k, complex128) by sparse LU, NaN where J is
    singular; None where J is small or dense (the caller solves densely)."""
    if not _sparse(J):
        return None
    out = np.empty(F.shape, dtype=np.result_type(J, F))
    for p in range(len(F)):
        try:
            out[p] = scipy.sparse.linalg.splu(scipy.sparse.csc_matrix(J[p])).solve(F[p])
        except RuntimeError:  # exactly singular
            out[p] = np.nan
    return out


def refined_solve(J: np.ndarray, F: np.ndarray) -> np.ndarray | None:
    """x with J x = F to the working precision (module docstring) for one k x k object array J and
    k-vector F of mpmath numbers; None where J is small (under MIN_SIZE) or dense (over MAX_DENSITY
    nonzero), or refinement does not reach the working precision."""
    k = len(F)
    if k < MIN_SIZE:
        return None
    mask = nonzero_mask(J)
    if np.count_nonzero(mask) > MAX_DENSITY * k * k:
        return None
    real = all(isinstance(v, mpmath.mpf) for v in F) and all(isinstance(v, mpmath.mpf) for v in J[mask])
    rows, cols = np.nonzero(mask)
    values = J[rows, cols]
    dtype = float if real else complex
    entries = np.array([dtype(v) for v in values], dtype=dtype)
    if not np.all(np.isfinite(entries)):
        return None
    try:
        lu = scipy.sparse.linalg.splu(scipy.sparse.csc_matrix((entries, (rows, cols)), shape=(k, k)))
    except RuntimeError:  # exactly singular in double precision
        return None
    starts = np.flatnonzero(np.r_[True, rows[1:] != rows[:-1]]) if rows.size else np.array([], int)
    zero = mpmath.mpf(0) if real else mpmath.mpc(0)
    x = np.full(k, zero, dtype=object)
    r = F.copy()
    last = math.inf
    with mpmath.workprec(mpmath.mp.prec + GUARD_BITS):
        target = mpmath.mpf(2) ** -(mpmath.mp.prec - GUARD_BITS)
        for _ in range(mpmath.mp.prec // 8 + 4):
            rd, s = _scaled_double(r, real)
            if not s:
                return x
            step = lu.solve(rd)
            if not np.all(np.isfinite(step)):
                return None
            size = float(np.max(np.abs(step))) * s
            x = x + np.array([mpmath.mpf(v) if real else mpmath.mpc(v) for v in step], dtype=object) * s
            scale = max(abs(v) for v in x)
            if size <= target * scale:
                return x
            if size > CONTRACTION * last:
                return None
            last = size
            product = values * x[cols]
            r = F.copy()
            r[rows[starts]] -= np.add.reduceat(product, starts) if rows.size else 0
    return None
