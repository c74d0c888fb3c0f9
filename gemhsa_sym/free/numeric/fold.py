"""Support edges as folds of the real solution curve (docs/solving.md §3.7).

On the real axis outside the support the Dyson system has a real solution g(x). With
m = g_out as the parameter, F(g, x) = 0 is solved for u = (the other unknowns, x): the
:class:`FoldSystem`, an ordinary system of the Newton driver (:func:`.descent.newton_solve`)
in either back end. At an edge x(m) has an extremum, dx/dm = 0; the secant method on dx/dm
(implicit differentiation) finds it, first in double precision, then at the requested digits.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import mpmath
import numpy as np

from gemhsa_sym.free.numeric.descent import BranchError, newton_solve
from gemhsa_sym.free.numeric.systems import DOUBLE, Backend, NumericSystem

__all__ = ["FoldSystem", "fold_edge"]


@dataclass(frozen=True)
class FoldSystem:
    """F(g, x) = 0 with m = g_out fixed (passed as the driver's ``w``): unknowns u = (g without m, x), real."""

    base: NumericSystem
    relative: ClassVar[bool] = False
    anchor: ClassVar[None] = None
    output: ClassVar[int] = 0

    @property
    def backend(self) -> Backend:
        return self.base.backend

    @property
    def size(self) -> int:
        return self.base.size

    def _real(self, a: np.ndarray) -> np.ndarray:
        """The real part of ``a`` (in mpmath, only its complex entries are touched: on the real axis there are none)."""
        if self.backend is DOUBLE:
            return a.real
        flat = a.ravel()
        complex_at = [i for i, v in enumerate(flat) if isinstance(v, mpmath.mpc)]
        if not complex_at:
            return a
        out = flat.copy()
        out[complex_at] = [mpmath.re(v) for v in flat[complex_at]]
        return out.reshape(a.shape)

    def linearisation(self, m: np.ndarray, u: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """F, dF/du and dF/dm at (m, u), batched."""
        out = self.base.output
        be = self.backend
        g = be.array(np.concatenate([u[:, :out], m[:, None], u[:, out:-1]], axis=1))
        F, J, Fx = self.base.linearisation(be.array(u[:, -1]), g)
        rest = [j for j in range(self.size) if j != out]
        A = np.concatenate([self._real(J[:, :, rest]), self._real(Fx)[:, :, None]], axis=2)
        return self._real(F), A, self._real(J[:, :, out])

    def residual_jacobian(self, m: np.ndarray, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        F, A, _ = self.linearisation(m, u)
        return F, A

    def slope(self, m: np.ndarray, u: np.ndarray) -> np.ndarray:
        """dx/dm along the curve at solutions (m, u)."""
        _, A, Fm = self.linearisation(m, u)
        return -self.backend.solve(A, Fm)[:, -1]


def _curve(system: FoldSystem, u0: np.ndarray, tol: float) -> tuple[Callable[[Any], Any], dict[str, np.ndarray]]:
    """dx/dm as a function of m, each evaluation solving the curve from the previous solution
    (``state["u"]``, updated in place)."""
    state = {"u": u0}
    be = system.backend

    def dx_dm(m: Any) -> Any:
        ma = be.array(np.array([m], dtype=object)) if be is not DOUBLE else np.array([float(m)])
        u, ok = newton_solve(system, ma, state["u"], tol=tol, maxit=60)
        if not ok[0]:
            raise BranchError(f"edge refinement: no real solution of the system near m = {m}")
        state["u"] = u
        return system.slope(ma, u)[0]

    return dx_dm, state


def fold_edge(dyson: NumericSystem, mp: Callable[[int], NumericSystem], x_out: float, g_out: np.ndarray,
              x_in: float, dps: int) -> mpmath.mpf:
    """The edge between x_out (outside the support, solution g_out) and x_in (inside): the fold of
    the real solution curve, to ``dps`` digits; ``mp(digits)`` gives the mpmath system.

    BranchError where the curve cannot be followed or the fold found lies far from x_out.
    """
    out = dyson.output
    rest = [float(v.real) for j, v in enumerate(g_out) if j != out]
    system = FoldSystem(dyson)
    curve, state = _curve(system, np.array([rest + [float(x_out)]]), 1e-15)
    m0 = float(g_out[out].real)
    phi0 = curve(m0)
    m1 = m0 + np.sign((x_in - x_out) / phi0) * min(0.5 * abs((x_out - x_in) / phi0), 1e-2 * (1 + abs(m0)))
    with mpmath.workdps(15):
        m_star = mpmath.findroot(curve, (m0, m1), solver="secant", tol=1e-11, verify=False, maxsteps=100)
    curve(float(m_star))
    x_found = float(state["u"][0, -1])
    if abs(x_found - x_out) > 2 * abs(x_out - x_in) + 1e-12:
        raise BranchError(f"edge refinement near x = {x_out} converged to a distant fold at {x_found}")
    with mpmath.workdps(dps + 15):
        system = FoldSystem(mp(dps + 15))
        u0 = np.array([[mpmath.mpf(float(v)) for v in state["u"][0]]], dtype=object)
        curve, state = _curve(system, u0, float(mpmath.mpf(10) ** (-(dps + 10))))
        m0 = mpmath.mpf(float(m_star))
        # x is quadratic in m - m* at the fold: half the digits of m give all digits of x
        m_tol = mpmath.mpf(10) ** (-(dps // 2 + 8))
        m_star = mpmath.findroot(curve, (m0, m0 * (1 + mpmath.mpf(10) ** -8)), solver="secant", tol=m_tol,
                                 verify=False, maxsteps=100)
        curve(m_star)
        return +state["u"][0, -1]
