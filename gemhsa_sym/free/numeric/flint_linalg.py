"""Dense linear algebra on mpmath numbers through python-flint's arb matrices (docs/solving.md §3.4).

The multiprecision Newton iteration solves one small dense system per point and step. mpmath's
``lu_solve`` does that in Python, one mpf at a time; python-flint's ``arb_mat`` / ``acb_mat`` do the
same elimination in C. Numbers cross over exactly (an mpf is man 2^exp, an arb midpoint too), the
solve runs at the caller's mpmath precision plus guard bits, in floating point without error bounds
(``algorithm="approx"``, the arithmetic of mpmath's LU), and the midpoints come back as mpmath numbers.
"""

from __future__ import annotations

import flint
import mpmath
import numpy as np

__all__ = ["inverse", "solve"]

#: Guard bits above mpmath's working precision.
GUARD_BITS = 20


def _arb(x: mpmath.mpf) -> flint.arb:
    """The exact arb of an mpf (NaN for infinities and NaN)."""
    sign, man, exp, _ = x._mpf_
    if not man:
        return flint.arb(0) if not x else flint.arb("nan")
    return flint.arb((-man if sign else man, exp))


def _mpf(a: flint.arb) -> mpmath.mpf:
    """The midpoint of an arb as an mpf."""
    if a.is_nan():
        return mpmath.mpf("nan")
    man, exp = a.mid().man_exp()
    return mpmath.mpf((int(man), int(exp)))


def _is_real(*arrays: np.ndarray) -> bool:
    return all(isinstance(v, mpmath.mpf) for a in arrays for v in a.flat)


def _matrix(a: np.ndarray, real: bool) -> flint.arb_mat | flint.acb_mat:
    """An arb_mat (``real``) or acb_mat of a 2-d object array of mpmath numbers."""
    if real:
        return flint.arb_mat([[_arb(v) for v in row] for row in a])
    return flint.acb_mat([[flint.acb(_arb(mpmath.re(v)), _arb(mpmath.im(v))) for v in row] for row in a])


def _array(m: flint.arb_mat | flint.acb_mat, real: bool) -> np.ndarray:
    """The midpoints of a flint matrix as a 2-d object array; ZeroDivisionError when one is not finite
    (the approximate solve of a singular matrix)."""
    out = np.empty((m.nrows(), m.ncols()), dtype=object)
    for i in range(m.nrows()):
        for j in range(m.ncols()):
            v = m[i, j]
            out[i, j] = _mpf(v) if real else mpmath.mpc(_mpf(v.real), _mpf(v.imag))
    if not all(mpmath.isfinite(v) for v in out.flat):
        raise ZeroDivisionError("matrix is numerically singular")
    return out


def solve(J: np.ndarray, F: np.ndarray) -> np.ndarray:
    """x with J x = F for a batch: J of shape (..., k, k), F of shape (..., k), object arrays."""
    out = np.empty_like(F)
    real = _is_real(J, F)
    with flint.ctx.workprec(mpmath.mp.prec + GUARD_BITS):
        for idx in np.ndindex(F.shape[:-1]):
            x = _matrix(J[idx], real).solve(_matrix(F[idx][:, None], real), algorithm="approx")
            out[idx] = _array(x, real)[:, 0]
    return out


def inverse(M: np.ndarray) -> np.ndarray:
    """M^{-1} for a batch of square object arrays of shape (..., k, k)."""
    out = np.empty_like(M)
    real = _is_real(M)
    k = M.shape[-1]
    with flint.ctx.workprec(mpmath.mp.prec + GUARD_BITS):
        identity = flint.arb_mat(k, k, [int(i == j) for i in range(k) for j in range(k)]) if real else \
            flint.acb_mat(k, k, [int(i == j) for i in range(k) for j in range(k)])
        for idx in np.ndindex(M.shape[:-2]):
            out[idx] = _array(_matrix(M[idx], real).solve(identity, algorithm="approx"), real)
    return out
