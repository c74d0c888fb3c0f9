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
log-log tangent (:func:`~.descent.predict`) and are checked relative to |m|.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import mpmath
import numpy as np
import sympy as sp

from gemhsa_sym.free.numeric.kernel.tables import Tables, polynomial_tables
from gemhsa_sym.free.numeric.systems import DOUBLE, Backend, NumericSystem

__all__ = ["PolynomialSystem"]

#: Digits at which the coefficients of P are summed before they are rounded to double.
COEFFICIENT_DPS = 30


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
    def build(cls, polynomial: sp.Expr, m: sp.Symbol, w: sp.Symbol, anchor: NumericSystem,
              values: Mapping[sp.Symbol, sp.Expr] | None = None) -> "PolynomialSystem":
        """From P and the exact ``values`` of its other symbols: each coefficient of m^a w^b, a
        polynomial in those symbols, summed in mpmath at COEFFICIENT_DPS digits (no SymPy evalf per
        term; a coefficient that is not rational in them is evaluated by SymPy)."""
        values = dict(values or {})
        symbols = sorted(values, key=str)
        poly = sp.Poly(polynomial, m, w, *symbols)
        if poly.free_symbols - {m, w, *symbols}:
            raise ValueError(f"P: no value for {', '.join(sorted(map(str, poly.free_symbols - {m, w, *symbols})))}")
        dom = poly.domain
        C = np.zeros((poly.degree(m) + 1, poly.degree(w) + 1), dtype=complex)
        with mpmath.workdps(COEFFICIENT_DPS):
            at = [mpmath.mpmathify(sp.N(values[v], COEFFICIENT_DPS)) for v in symbols]
            sums: dict[tuple[int, int], Any] = {}
            for (a, b, *exps), c in poly.rep.terms():
                q = mpmath.mpf(int(dom.numer(c))) / int(dom.denom(c)) if dom.is_ZZ or dom.is_QQ \
                    else mpmath.mpmathify(sp.N(dom.to_sympy(c), COEFFICIENT_DPS))
                for v, e in zip(at, exps):
                    q *= v**e
                sums[a, b] = sums.get((a, b), 0) + q
            for (a, b), q in sums.items():
                C[a, b] = complex(q)
        return cls(C / np.max(np.abs(C)), anchor)

    @functools.cached_property
    def tables(self) -> Tables:
        """P as the compiled kernel reads it (:func:`.kernel_tables.polynomial_tables`)."""
        return polynomial_tables(self.coefficients)

    @functools.cached_property
    def _arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """[C, C_m] side by side (C_m: the coefficients of P_m, padded to C's shape), |C| and
        the exponents of w (for P_w)."""
        C = self.coefficients
        Cm = np.zeros_like(C)
        Cm[:-1] = C[1:] * np.arange(1, C.shape[0])[:, None]
        return np.concatenate([C, Cm], axis=1), np.abs(C), np.arange(C.shape[1], dtype=float)

    def linearisation(self, w: np.ndarray, g: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """F = P/S, dF/dm = P_m/S and dF/dw = P_w/S, shapes (n, 1), (n, 1, 1), (n, 1)."""
        both, absC, b = self._arrays
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
