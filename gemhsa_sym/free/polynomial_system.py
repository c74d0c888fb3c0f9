"""P(m, w) = 0 as a system of one unknown for the continuation drivers (docs/solving.md §3.6).

Once the elimination has found the minimal polynomial P of m(w), a Newton
step on P costs a few array operations whatever the size of the Dyson
system. The residual is P divided by the sum of the moduli of its terms,

    F = P(m, w) / S(m, w),   S = sum_ab |c_ab| |m|^a |w|^b,

so that |F| is the relative rounding level of the evaluation; the Jacobian
dF/dm = P_m / S and dF/dw = P_w / S keep S fixed (the Newton step P / P_m
and the tangent dm/dw = -P_w / P_m do not depend on it). P alone does not
say which of its roots is m (docs/solving.md §3.4), so the system carries
the Dyson system it was eliminated from (``anchor``): the drivers take the
physical solution of the anchor at large |w| and follow the root of P from
there. Unlike the Dyson system, whose physical solution is the attracting fixed point
of its map, P gives Newton no preference among its roots: steps start from the
log-log tangent (:func:`~.continuation.predict`) and are checked relative to |m|.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import sympy as sp

from .numeric import DOUBLE, Backend, NumericSystem

__all__ = ["PolynomialSystem"]


@dataclass(frozen=True)
class PolynomialSystem:
    """P(m, w) = sum_ab coefficients[a, b] m^a w^b in double precision, one unknown m."""

    coefficients: np.ndarray
    anchor: NumericSystem
    backend: Backend = DOUBLE
    output: int = 0
    size: int = 1
    #: Continuity checks relative to |m| (m ~ 1/w is small at large |w|, where an absolute
    #: bound lets Newton pass to another root of P).
    relative: ClassVar[bool] = True

    @classmethod
    def build(cls, polynomial: sp.Expr, m: sp.Symbol, w: sp.Symbol, anchor: NumericSystem) -> "PolynomialSystem":
        """From P with numeric coefficients (every parameter substituted)."""
        poly = sp.Poly(polynomial, m, w)
        if poly.free_symbols - {m, w}:
            raise ValueError(f"P: no value for {', '.join(sorted(map(str, poly.free_symbols - {m, w})))}")
        C = np.zeros((poly.degree(m) + 1, poly.degree(w) + 1), dtype=complex)
        for (a, b), c in poly.terms():
            C[a, b] = complex(c)
        return cls(C / np.max(np.abs(C)), anchor)

    @functools.cached_property
    def _tables(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """[C, C_m] side by side (C_m: the coefficients of P_m, padded to C's shape), |C| and
        the exponents of w (for P_w)."""
        C = self.coefficients
        Cm = np.zeros_like(C)
        Cm[:-1] = C[1:] * np.arange(1, C.shape[0])[:, None]
        return np.concatenate([C, Cm], axis=1), np.abs(C), np.arange(C.shape[1], dtype=float)

    def linearisation(self, w: np.ndarray, g: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """F = P/S, dF/dm = P_m/S and dF/dw = P_w/S, shapes (n, 1), (n, 1, 1), (n, 1)."""
        both, absC, b = self._tables
        k = absC.shape[1]
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            mp = _powers(g[:, 0], absC.shape[0])
            wp = _powers(w, k)
            A = mp @ both  # sum_a C[a, b] m^a and sum_a C_m[a, b] m^a
            S = ((np.abs(mp) @ absC) * np.abs(wp)).sum(axis=1)
            F = (A[:, :k] * wp).sum(axis=1) / S
            Fm = (A[:, k:] * wp).sum(axis=1) / S
            Fw = (A[:, 1:k] * wp[:, :-1]) @ b[1:] / S
        return F[:, None], Fm[:, None, None], Fw[:, None]

    def rounding(self, w: np.ndarray, g: np.ndarray) -> np.ndarray:
        """Relative error of the double-precision root m from rounding: 10 eps S / (|P_m| |m|)
        (the evaluation's backward error over the root's sensitivity; large near an atom,
        where P cancels between huge terms, and at a double root)."""
        _, J, _ = self.linearisation(w, g)
        with np.errstate(divide="ignore", invalid="ignore"):
            out = 10 * np.finfo(float).eps / np.abs(J[:, 0, 0] * g[:, 0])
        return np.where(np.isfinite(out), out, np.inf)

    def residual_jacobian(self, w: np.ndarray, g: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """F and dF/dm (:meth:`linearisation` without dF/dw)."""
        F, J, _ = self.linearisation(w, g)
        return F, J


def _powers(z: np.ndarray, k: int) -> np.ndarray:
    """z^0, ..., z^(k-1) by repeated multiplication, shape (len(z), k)."""
    out = np.empty((len(z), k), dtype=complex)
    out[:, 0] = 1
    out[:, 1:] = z[:, None]
    return np.cumprod(out, axis=1, out=out)
