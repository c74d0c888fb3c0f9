"""The physical branch of m(w) for one derivation: values, refinement, rays (docs/solving.md §3.4–§3.6).

A :class:`BranchSolver` follows the physical solution of the reduced Dyson system
(``method = "dyson"``) or, built with an elimination that found P(m, w), the root of P
(``method = "polynomial"``; points where P fails verification or rounds badly are solved
with the Dyson system). It is immutable: :meth:`BranchSolver.with_polynomial` returns a new
solver. Points below the real axis are answered by conjugation; every value is verified
(Herglotz sign, continuity) or a ``BranchError`` is raised.
"""

from __future__ import annotations

import functools
from typing import Any, Literal

import mpmath
import numpy as np

from gemhsa_sym.free.algebraic.elimination import Elimination, M
from gemhsa_sym.free.equations.derivation import Derivation
from gemhsa_sym.free.expressions.system import W
from gemhsa_sym.free.numeric.continuation import follow_branch
from gemhsa_sym.free.numeric.descent import BranchError, RaysFailed, fixed_point_start, newton_solve
from gemhsa_sym.free.numeric.polynomial_system import PolynomialSystem
from gemhsa_sym.free.numeric.rays import follow_rays
from gemhsa_sym.free.numeric.results import check_dps, probe_points, top_of
from gemhsa_sym.free.numeric.systems import DOUBLE, MP, NumericSystem

__all__ = ["BranchSolver", "ValueMethod"]

#: How double-precision values of m are computed.
ValueMethod = Literal["dyson", "polynomial"]


class BranchSolver:
    """m(w) on the physical branch of one :class:`~.derivation.Derivation` (module docstring)."""

    def __init__(self, derivation: Derivation, elimination: Elimination | None = None) -> None:
        if elimination is not None and elimination.polynomial is None:
            raise ValueError(f"method: no polynomial P(m, w) for this law ({elimination.reason})")
        self.derivation = derivation
        self.scale = derivation.scale
        self.top = top_of(derivation.scale)
        self.floor = 1e-13 * derivation.scale
        self.elimination = elimination
        self.method: ValueMethod = "polynomial" if elimination is not None else "dyson"
        self._mp: dict[int, NumericSystem] = {}

    @functools.cached_property
    def dyson(self) -> NumericSystem | None:
        """The reduced Dyson system in double precision (None for the point mass at 0); built on
        first use, so that a law with symbolic parameters can be derived without values."""
        return None if self.derivation.zero else NumericSystem.build(self.derivation.system, self.derivation.values, DOUBLE)

    @functools.cached_property
    def polynomial(self) -> PolynomialSystem | None:
        """The root of P(m, w) as a system of one unknown, for the polynomial method."""
        if self.elimination is None or self.derivation.zero:
            return None
        return PolynomialSystem.build(self.elimination.polynomial, M, W, self.dyson, self.elimination.values)

    @functools.cached_property
    def root_start(self) -> tuple[complex, np.ndarray] | None:
        """The root of P that is m at w = i top (from the Dyson solution there), where every follow
        of the root starts (docs/solving.md §3.6); None without P."""
        if self.polynomial is None:
            return None
        w0 = 1j * self.top
        return w0, fixed_point_start(self.polynomial, np.array([w0]), 1e-12)[0]

    def with_polynomial(self, elimination: Elimination) -> BranchSolver:
        """A new solver that follows the root of P(m, w) of ``elimination`` (sharing this one's
        numeric Dyson systems, which do not change), its P in double precision and its start built."""
        solver = BranchSolver(self.derivation, elimination)
        solver.__dict__["dyson"] = self.dyson
        solver._mp = self._mp
        _ = solver.root_start
        return solver

    @property
    def output(self) -> int:
        """The index of m among the Dyson system's unknowns."""
        return 0 if self.dyson is None else self.dyson.output

    def mp(self, dps: int) -> NumericSystem:
        """The Dyson system with mpmath numbers at ``dps`` digits (built once per precision)."""
        if dps not in self._mp:
            with mpmath.workdps(dps):
                self._mp[dps] = NumericSystem.build(self.derivation.system, self.derivation.values, MP)
        return self._mp[dps]

    # ---- double precision ------------------------------------------------------------------
    def followed(self, w: np.ndarray, dyson: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """Solutions at w (any half plane) and ``ok`` where they passed verification; the Dyson
        system's unknowns with ``dyson`` (or for the Dyson method), else m alone (shape (P, 1))."""
        w = np.atleast_1d(np.asarray(w, dtype=complex))
        lower = w.imag < 0
        target = np.where(lower, w.conj(), w)
        floor = self.floor * np.minimum(1.0, (np.abs(target.real) / self.scale) ** 2 + 1e-12)
        if dyson or self.polynomial is None:
            br = follow_branch(self.dyson, target, top=self.top, floor=floor)
            g, ok = br.g, br.ok
        else:
            br = follow_branch(self.polynomial, target, top=self.top, floor=floor, start=self.root_start)
            g, ok = br.g, br.ok
            redo = ~ok
            if np.any(redo):  # where P fails or rounds badly, the Dyson system
                again = follow_branch(self.dyson, target[redo], top=self.top, floor=floor[redo])
                g[redo], ok[redo] = again.g[:, [again.output]], again.ok
        g[lower] = g[lower].conj()  # g is this call's own array
        return g, ok

    def branch(self, w: np.ndarray, dyson: bool = False) -> np.ndarray:
        """:meth:`followed`, verified everywhere or BranchError."""
        w = np.atleast_1d(np.asarray(w, dtype=complex))
        g, ok = self.followed(w, dyson)
        if not np.all(ok):
            bad = w[~ok]
            hint = " (w = 0 is a pole of m when the law has an atom at 0; see atoms())" if np.any(bad == 0) else ""
            raise BranchError(f"the physical branch failed verification at {bad.size} point(s), e.g. w = {bad[:3]}{hint}")
        return g

    def stieltjes(self, w: Any) -> Any:
        """m(w) in double precision, same shape as ``w`` (a complex for a scalar)."""
        w_arr = np.asarray(w, dtype=complex)
        if not np.all(np.isfinite(w_arr)):
            raise ValueError("w: points must be finite")
        if self.derivation.zero:  # the point mass at 0
            with np.errstate(divide="ignore", invalid="ignore"):
                m = 1.0 / w_arr.ravel()
        else:
            g = self.branch(w_arr.ravel())
            m = g[:, self.output] if self.polynomial is None else g[:, 0]
        return m.reshape(w_arr.shape) if w_arr.ndim else complex(m[0])

    def density(self, x: Any) -> np.ndarray:
        """-Im m(x + i0)/pi on real points, in double precision."""
        m = self.stieltjes(np.asarray(x, dtype=float).astype(complex))
        return np.maximum(-np.imag(m) / np.pi, 0.0)

    def density_near_zero(self, x: np.ndarray) -> float:
        """The density at the smallest of the points x (increasing, near 0) whose solution passes
        verification: next to a hard edge m grows like x^(-1/2) or faster, and double precision
        can lose the branch below about 1e-12 times the scale."""
        g, ok = self.followed(x.astype(complex), dyson=True)
        if not np.any(ok):
            raise BranchError(f"the physical branch failed verification at every point of {x[0]:.3g} .. {x[-1]:.3g}")
        return float(-g[int(np.argmax(ok)), self.output].imag / np.pi)

    def on_arcs(self, radii: np.ndarray, directions: np.ndarray) -> np.ndarray:
        """m(radii[k] directions[j]) for directions in the upper half plane: the outermost arc by
        descent, the others inward along each ray (:func:`.rays.follow_rays`);
        RaysFailed with the radius where double precision lost the branch."""
        order = np.argsort(radii)[::-1]
        out = np.empty((len(radii), len(directions)), dtype=complex)
        g0 = self.branch(radii[order[0]] * directions, dyson=True)
        reached = 0
        for k, g in follow_rays(self.dyson, directions, radii[order], g0):
            out[order[k]] = g[:, self.output]
            reached += 1
        if reached < len(radii):
            raise RaysFailed(radii[order[max(reached - 1, 0)]])
        return out

    # ---- mpmath ----------------------------------------------------------------------------
    def refine(self, w: complex | mpmath.mpc, g0: np.ndarray, dps: int) -> np.ndarray:
        """mpmath Newton at w from a double solution g0 of the Dyson system; verified continuity."""
        with mpmath.workdps(dps + 10):
            num = self.mp(dps + 10)
            wa = np.array([mpmath.mpmathify(w)], dtype=object)
            ga = MP.array(g0[None, :])
            g, ok = newton_solve(num, wa, ga, tol=float(mpmath.mpf(10) ** (-dps - 3)), maxit=80)
            drift = max(abs(complex(a) - b) for a, b in zip(g[0], g0))
            if not ok[0] or drift > 1e-6 * (1 + np.max(np.abs(g0))):
                raise BranchError(f"mpmath refinement at w = {w} left the branch (drift {drift:.2e})")
            return g[0]

    def stieltjes_mp(self, w: Any, dps: int) -> Any:
        """m(w) to ``dps`` digits (mpmath numbers; an object array for an array of points)."""
        dps = check_dps(dps)
        out = []
        for z in np.atleast_1d(np.asarray(w, dtype=object)):
            z = mpmath.mpmathify(z)
            if self.derivation.zero:
                with mpmath.workdps(dps):
                    out.append(1 / z)
                continue
            conj = z.imag < 0
            zz = mpmath.conj(z) if conj else z
            g0 = self.branch(np.array([complex(zz)]), dyson=True)[0]
            m = self.refine(zz, g0, dps)[self.output]
            with mpmath.workdps(dps):
                out.append(+(mpmath.conj(m) if conj else m))
        return out[0] if np.ndim(w) == 0 else np.array(out, dtype=object)

    def solutions(self, dps: int = 40, unit: float | None = None) -> list[tuple[complex, np.ndarray]]:
        """The physical solution at three generic points of the upper half plane in units of ``unit`` (default the
        law's scale), to ``dps`` digits (where the elimination chooses the factor of its resultant)."""
        points = [complex(z) for z in probe_points(self.scale if unit is None else unit, 3)]
        g = self.branch(np.array(points), dyson=True)
        return [(w, self.refine(w, g0, dps)) for w, g0 in zip(points, g)]
