"""The limiting law of the eigenvalues of Y^T Y for a polynomial Y in Gaussian matrices.

``spectral_law(Y, ratios)`` linearises Y, writes and reduces its Dyson
system, and answers questions about the law of Y^T Y (q x q, q the number
of columns of Y, zero eigenvalues included): the Stieltjes transform
m(w) = (1/q) tr (w - Y^T Y)^{-1} (docs/equations.md §2.6), the density
-Im m(x + i0)/pi, the atom at zero, support edges, CDF, quantiles, moments,
and finite samples of the same matrices for Monte Carlo checks.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping
from fractions import Fraction
from typing import Any

import mpmath
import numpy as np
import sympy as sp
from sympy.matrices.expressions import MatAdd, MatMul, MatrixExpr, Transpose

from ..parse import to_number
from .algebraic import EdgeClassification, atom_masses, classify_edges, density_closed_form
from .continuation import BranchError, follow_branch, follow_rays, newton_solve
from .elimination import Elimination, M, eliminate
from .exchangeable import ExchangeableSum, exchangeable_system
from .integrals import Band, Core, band, core
from .latex import document, terms_of
from .matrices import Dim, Gaussian, gaussians_of, without_powers
from .numeric import DOUBLE, MP, NumericSystem
from .pencil import Pencil, linearise
from .polynomial_system import PolynomialSystem
from .reductions import reduce_system
from .results import WORK_DPS, Atom, Edge, check_dps
from .scale import law_scale, norm_bound, to_float
from .series import moment_series
from .system import DysonSystem, W, dyson_system

__all__ = ["Atom", "Edge", "SpectralLaw", "spectral_law"]

#: Points of the graded grid used to locate the support.
SCAN_POINTS = 1500
#: Density below this over the norm-bound scale counts as outside the support on the scan.
SUPPORT_THRESHOLD = 1e-8
#: Below this times the scale, the support scan tolerates points that fail verification.
NEAR_ZERO = 1e-8
#: Largest relative rounding error of m from the root of P(m, w) in double precision;
#: points above it are solved with the Dyson system instead.
ROOT_ROUNDING = 1e-12
#: Atoms lighter than this are not resolved (the estimate near a hard edge is not more accurate).
ATOM_THRESHOLD = 1e-6
#: Fewest decades down the imaginary axis for the atom's extrapolation.
ATOM_DECADES = 6
def _power_law_limit(a: np.ndarray) -> tuple[float, float]:
    """The limit of a_k = A + C r^k (0 < r < 1: a(y) at y decreasing by decades, near a hard edge)
    by Aitken's delta-squared on the last three decades, and its change from the triple before
    as the error; BranchError when fewer than ATOM_DECADES decades or no geometric decay."""
    if len(a) < ATOM_DECADES:
        raise BranchError(f"atom at zero: the continuation down the imaginary axis failed after {len(a)} decades")
    d = np.diff(a[-4:])
    r = d[1:] / d[:-1]
    if not np.all((r > 0) & (r < 0.95)):
        raise BranchError("atom at zero: the continuation down the imaginary axis failed early, before a(y) settled")
    limits = a[-2:] - d[1:] ** 2 / (d[1:] - d[:-1])
    return float(limits[-1]), float(abs(limits[-1] - limits[-2]))


class RaysFailed(BranchError):
    """Rays towards 0 failed verification below ``radius``."""

    def __init__(self, radius: float) -> None:
        super().__init__(f"rays towards 0 failed verification below |w| = {radius:.3e}")
        self.radius = float(radius)


def _expression(field: str, value: Any) -> sp.Expr:
    """A SymPy expression as given, or a number read from other input by the grammar of :mod:`gemhsa_sym.parse`."""
    return value if isinstance(value, sp.Expr) else to_number(value, field)


class SpectralLaw:
    """Limiting law of the eigenvalues of Y^T Y (module docstring)."""

    def __init__(
        self,
        model: MatrixExpr | ExchangeableSum,
        ratios: Mapping[Dim, Any],
        values: Mapping[sp.Symbol, Any] | None = None,
        reduce: bool = True,
    ) -> None:
        self.model = model
        self.ratios = {d: _expression(f"ratios.{d}", v) for d, v in ratios.items()}
        for d, v in self.ratios.items():
            if v.is_positive is False:
                raise ValueError(f"ratios: the ratio of {d} must be positive, got {v}")
        template = model.template if isinstance(model, ExchangeableSum) else model
        exprs = [template, *(g.scale for g in gaussians_of(template)), *self.ratios.values()]
        if isinstance(model, ExchangeableSum):
            exprs.append(model.heads)
        named = {str(p): p for e in exprs for p in sp.sympify(e).free_symbols if isinstance(p, sp.Symbol)}
        # a value given by name is the value of the model's parameter of that name, whatever its assumptions
        self.values = {(k if isinstance(k, sp.Symbol) else named.get(k, sp.Symbol(k))): _expression(f"values.{k}", v) for k, v in (values or {}).items()}
        if isinstance(model, ExchangeableSum):
            self.pencil: Pencil = linearise(model.template)
            self.pencil.check()
            full = exchangeable_system(model, self.pencil, self.ratios, self.values)
        else:
            self.pencil = linearise(model)
            self.pencil.check()
            full = dyson_system(self.pencil, self.ratios)
        # parameters without a value get generic ones for scales and reductions only
        generic = {p: sp.Rational(7 + 3 * k, 10) for k, p in enumerate(full.parameters) if p not in self.values}
        probe = {**generic, **self.values}
        if isinstance(model, ExchangeableSum):
            bound = norm_bound(model.template, self.ratios, probe) * float(model.heads.subs(probe))
        else:
            bound = norm_bound(model, self.ratios, probe)
        #: Y = 0 at these values (e.g. an attention layer at beta = 0): the law is the point mass at 0.
        self.zero = bound == 0
        self.scale = 0.0 if self.zero else law_scale(bound * bound, full, probe)
        self.full_system = full
        self.system: DysonSystem = reduce_system(full, probe, self.scale) if reduce and not self.zero else full
        self._exact_moments: list[sp.Expr] = []
        self._eliminations: dict[tuple[float, str | None], Any] = {}
        self._exact_atoms: dict[tuple[float, str | None], list[Atom] | None] = {}
        self._polynomial_system: PolynomialSystem | None = None
        self._edge_cache: dict[int, list[Edge]] = {}
        self._classified: dict[tuple[int, float], Any] = {}
        self._top = 8.0 * self.scale + 8.0
        self._floor = 1e-13 * self.scale

    @property
    def polynomial(self) -> MatrixExpr:
        """Y as one polynomial (an exchangeable sum is written out head by head)."""
        return self.model.expand(self.values) if isinstance(self.model, ExchangeableSum) else self.model

    @property
    def equations(self) -> DysonSystem:
        """The reduced Dyson system: prints readably; ``sympy.latex`` gives LaTeX."""
        return self.system

    @property
    def q(self) -> Dim:
        """The dimension of Y^T Y."""
        return self.model.cols

    def __repr__(self) -> str:
        return f"SpectralLaw(Y = {self.model}, ratios = {dict((str(k), v) for k, v in self.ratios.items())})"

    @functools.cached_property
    def _double(self) -> NumericSystem:
        return NumericSystem.build(self.system, self.values, DOUBLE)

    def _mp(self, dps: int) -> NumericSystem:
        with mpmath.workdps(dps):
            return NumericSystem.build(self.system, self.values, MP)

    @property
    def _fast(self) -> NumericSystem | PolynomialSystem:
        """The system double-precision values of m come from: P(m, w) once an elimination has
        found it (one unknown whatever the size of the Dyson system), else the Dyson system."""
        found = [e for e in self._eliminations.values() if e.polynomial is not None]
        if not found:
            return self._double
        if self._polynomial_system is None:
            self._polynomial_system = PolynomialSystem.build(found[0].specialised(), M, W, self._double)
        return self._polynomial_system

    # ---- Stieltjes transform and density -------------------------------------------------
    def _branch(self, w: np.ndarray, system: NumericSystem | PolynomialSystem | None = None) -> np.ndarray:
        """Solutions g (P, m) of ``system`` (default: the Dyson system) at w (upper half plane by
        conjugation), verified or BranchError."""
        w = np.atleast_1d(np.asarray(w, dtype=complex))
        g, ok = self._followed(w, system)
        if not np.all(ok):
            bad = w[~ok]
            hint = " (w = 0 is a pole of m when the law has an atom at 0; see atoms())" if np.any(bad == 0) else ""
            raise BranchError(f"the physical branch failed verification at {bad.size} point(s), e.g. w = {bad[:3]}{hint}")
        return g

    def _followed(self, w: np.ndarray, system: NumericSystem | PolynomialSystem | None = None) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`_branch` without the error: solutions g and ``ok`` where they passed verification."""
        system = self._double if system is None else system
        lower = w.imag < 0
        target = np.where(lower, w.conj(), w)
        floor = self._floor * np.minimum(1.0, (np.abs(target.real) / self.scale) ** 2 + 1e-12)
        br = follow_branch(system, target, top=self._top, floor=floor)
        if isinstance(system, PolynomialSystem):  # where P fails or rounds badly, the Dyson system
            redo = ~br.ok | (system.rounding(target, br.g) > ROOT_ROUNDING)
            if np.any(redo):
                again = follow_branch(self._double, target[redo], top=self._top, floor=floor[redo])
                br.g[redo], br.ok[redo] = again.g[:, [again.output]], again.ok
        return np.where(lower[:, None], br.g.conj(), br.g), br.ok

    def _density_near_zero(self, x: np.ndarray) -> float:
        """The density at the smallest of the points x (increasing, near 0) whose solution
        passes verification: next to a hard edge m grows like x^(-1/2) or faster, and
        double precision can lose the branch below about 1e-12 times the scale."""
        g, ok = self._followed(x.astype(complex))
        if not np.any(ok):
            raise BranchError(f"the physical branch failed verification at every point of {x[0]:.3g} .. {x[-1]:.3g}")
        return float(-g[int(np.argmax(ok)), self._double.output].imag / np.pi)

    def _refine(self, w: complex | mpmath.mpc, g0: np.ndarray, dps: int) -> np.ndarray:
        """mpmath Newton at w from a double solution g0 on the branch; verified continuity."""
        with mpmath.workdps(dps + 10):
            num = self._mp(dps + 10)
            wa = np.array([mpmath.mpmathify(w)], dtype=object)
            ga = MP.array(g0[None, :])
            g, ok = newton_solve(num, wa, ga, tol=float(mpmath.mpf(10) ** (-dps - 3)), maxit=80)
            drift = max(abs(complex(a) - b) for a, b in zip(g[0], g0))
            if not ok[0] or drift > 1e-6 * (1 + np.max(np.abs(g0))):
                raise BranchError(f"mpmath refinement at w = {w} left the branch (drift {drift:.2e})")
            return g[0]

    def stieltjes(self, w: Any, dps: int | None = None) -> Any:
        """m(w) = (1/q) tr (w - Y^T Y)^{-1}; on the real axis the limit from above.

        Double precision for arrays (from the root of P(m, w) once :meth:`algebraic` has found
        P, else from the Dyson system); with ``dps``, an mpmath number (or object array).
        """
        if dps is None:
            w_arr = np.asarray(w, dtype=complex)
            if not np.all(np.isfinite(w_arr)):
                raise ValueError("w: points must be finite")
            if self.zero:  # the point mass at 0
                with np.errstate(divide="ignore", invalid="ignore"):
                    m0 = 1.0 / w_arr
                return m0 if w_arr.ndim else complex(m0)
            fast = self._fast
            m = self._branch(w_arr.ravel(), fast)[:, fast.output]
            return m.reshape(w_arr.shape) if w_arr.ndim else complex(m[0])
        dps = check_dps(dps)
        ws = np.atleast_1d(np.asarray(w, dtype=object))
        out = []
        for z in ws:
            z = mpmath.mpmathify(z)
            if self.zero:
                with mpmath.workdps(dps):
                    out.append(1 / z)
                continue
            conj = z.imag < 0
            zz = mpmath.conj(z) if conj else z
            g0 = self._branch(np.array([complex(zz)]))[0]
            m = self._refine(zz, g0, dps)[self._double.output]
            with mpmath.workdps(dps):
                out.append(+(mpmath.conj(m) if conj else m))
        return out[0] if np.ndim(w) == 0 else np.array(out, dtype=object)

    def density(self, x: Any, dps: int | None = None) -> Any:
        """-Im m(x + i0)/pi, for real x (array in double, or mpmath at ``dps``)."""
        if dps is None:
            xa = np.asarray(x, dtype=float)
            m = self.stieltjes(xa.astype(complex))
            return np.maximum(-np.imag(m) / np.pi, 0.0)
        m = self.stieltjes(x, dps=dps)
        with mpmath.workdps(dps):
            if np.ndim(x) == 0:
                return -mpmath.im(m) / mpmath.pi
            return np.array([-mpmath.im(v) / mpmath.pi for v in m], dtype=object)

    # ---- atoms, support, edges ----------------------------------------------------------
    @functools.cached_property
    def _atom_zero(self) -> Atom | None:
        """mu({0}) = lim_{y->0} a(y), a(y) = Re(iy m(iy)) = int y^2/(y^2 + l^2) dmu(l), followed down
        the imaginary axis towards 1e-60 * scale (in double precision, until the system becomes
        too ill-conditioned).

        a(y) decreases to the atom, so the descent stops as soon as a(y) < ATOM_THRESHOLD.
        The continuous part contributes O(y) without mass near 0 and a power of y near
        a hard edge, while rounding grows as the system becomes ill-conditioned: of the
        estimates below 1e-13 * scale, the one that changed least over its decade is
        kept, and that change is the error reported. Where double precision loses the
        branch before that (a strongly divergent hard edge), the limit of a(y) = atom + C y^alpha
        is extrapolated over the last decades (:func:`_power_law_limit`).
        """
        ys = np.concatenate([[self._top], self.scale * 10.0 ** -np.arange(2, 61)])
        a = []
        for k, g in follow_rays(self._double, np.array([1j]), ys):
            if k == 0:
                continue
            a.append(float(np.real(1j * ys[k] * g[0, self._double.output])))
            if a[-1] < ATOM_THRESHOLD:  # a(y) bounds the atom from above
                return None
            if k > 14 and abs(a[-1] - a[-2]) < 1e-15:
                break
        if len(a) < 14:
            mass, err = _power_law_limit(np.array(a))
            if mass < ATOM_THRESHOLD + 10 * err:
                return None
        else:
            change = np.abs(np.diff(a))[12:]  # change into decade k + 13, k >= 0
            best = 13 + int(np.argmin(change))
            mass, err = a[best], float(change[best - 13])
            if mass < ATOM_THRESHOLD + 10 * err:  # not resolved from zero: no atom within the estimate's accuracy
                return None
        frac = Fraction(mass).limit_denominator(10_000)
        exact = sp.Rational(frac.numerator, frac.denominator) if abs(float(frac) - mass) <= max(10 * err, 1e-12) else None
        if exact == 0:  # the estimate is still decaying: no atom within its accuracy
            return None
        return Atom(0.0, mass, err, exact)

    def atoms(self) -> list[Atom]:
        """Point masses of the law (at zero when Y^T Y is rank deficient): exact from P(m, w) when an
        elimination has found it already (:meth:`algebraic_atoms`), else by descent down the imaginary axis."""
        if self.zero:
            return [Atom(0.0, 1.0, 0.0, sp.Integer(1))]
        found = [key for key, e in self._eliminations.items() if e.polynomial is not None]
        if found and found[0] not in self._exact_atoms:
            self._exact_atoms[found[0]] = self._atoms_from(self._eliminations[found[0]])
        exact = self._exact_atoms[found[0]] if found else None
        if exact is not None:
            return exact
        return [self._atom_zero] if self._atom_zero is not None else []

    @functools.cached_property
    def _top_of_support(self) -> float:
        """A point just above the support, from a logarithmic pass up to the norm bound."""
        coarse = self.scale * np.logspace(-14, 0.01, 300)
        g, ok = self._followed(coarse.astype(complex))
        if not np.all(ok[coarse > NEAR_ZERO * self.scale]):  # below, a hard edge can defeat double precision
            raise BranchError(f"the physical branch failed verification at {np.sum(~ok)} point(s) of the support scan, e.g. x = {coarse[~ok][-3:]}")
        inside = np.nonzero(ok & (-g[:, self._double.output].imag > SUPPORT_THRESHOLD / self.scale))[0]
        return float(coarse[min(inside[-1] + 1, len(coarse) - 1)]) if inside.size else self.scale

    @functools.cached_property
    def _scan(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Density and solutions on a grid graded towards 0, up to just above the support.

        A logarithmic pass from 1e-14 times the norm bound locates the top of the
        support; the graded grid then covers [0, 1.02 top].
        """
        x = 1.02 * self._top_of_support * (np.arange(1, SCAN_POINTS + 1) / SCAN_POINTS) ** 2
        g = self._branch(x.astype(complex))
        rho = np.maximum(-g[:, self._double.output].imag / np.pi, 0.0)
        return x, rho, g

    @functools.cached_property
    def _intervals(self) -> list[tuple[int, int, bool]]:
        """Runs (first, last) of scan points inside the support; flag True when the run touches 0."""
        x, rho, _ = self._scan
        inside = rho > SUPPORT_THRESHOLD / self.scale
        runs, start = [], None
        for i, flag in enumerate(inside):
            if flag and start is None:
                start = i
            if not flag and start is not None:
                runs.append((start, i - 1))
                start = None
        if start is not None:
            raise BranchError("the density does not vanish at the norm bound: the scan range is wrong")
        hard = bool(runs and runs[0][0] == 0 and self._density_near_zero(x[0] * np.logspace(-6, -2, 5)) > SUPPORT_THRESHOLD / self.scale)
        return [(a, b, hard and k == 0) for k, (a, b) in enumerate(runs)]

    def support(self) -> list[tuple[float, float]]:
        """Support intervals of the continuous part, edges in double precision."""
        return [(float(lo.location), float(hi.location)) for lo, hi in zip(self.edges(dps=16)[::2], self.edges(dps=16)[1::2])]

    def _fold_curve(self, num: NumericSystem, g: list, x: Any, tol: Any) -> Any:
        """dx/dm along the real solution curve parametrised by m = g_tt (see :meth:`_fold`)."""
        out, size = num.output, num.size
        rest = [j for j in range(size) if j != out]
        real = (lambda v: v.real) if num.backend is DOUBLE else (lambda v: mpmath.re(v))

        def dx_dm(m: Any) -> Any:
            gg, xx = list(g[0]), x[0]
            gg[out] = m
            for _ in range(60):
                ga = num.backend.array(np.array([gg], dtype=object))
                wa = num.backend.array(np.array([xx], dtype=object))
                F, J, Fx = num.linearisation(wa, ga)
                A = [[real(J[0][i][j]) for j in rest] + [real(Fx[0][i])] for i in range(size)]
                if num.backend is DOUBLE:
                    delta = np.linalg.solve(np.array(A), np.real(F[0]))
                    done = np.max(np.abs(delta)) < tol * (1 + abs(xx) + max(abs(v) for v in gg))
                else:
                    delta = mpmath.lu_solve(mpmath.matrix(A), mpmath.matrix([real(v) for v in F[0]]))
                    done = mpmath.norm(delta, mpmath.inf) < tol * (1 + abs(xx) + max(abs(v) for v in gg))
                for k, j in enumerate(rest):
                    gg[j] -= delta[k]
                xx -= delta[size - 1]
                if done:
                    break
            else:
                raise BranchError(f"edge refinement: no real solution of the system near m = {m}")
            g[0], x[0] = gg, xx
            rhs = [-real(J[0][i][out]) for i in range(size)]
            sol = np.linalg.solve(np.array(A), np.array(rhs)) if num.backend is DOUBLE else mpmath.lu_solve(mpmath.matrix(A), mpmath.matrix(rhs))
            return sol[size - 1]

        return dx_dm

    def _fold(self, x_out: float, g_out: np.ndarray, x_in: float, dps: int) -> mpmath.mpf:
        """The edge near x_out: the extremum of x(m) on the real solution curve (a fold).

        With m = g_tt as the parameter, F(g, x) = 0 is solved for (g_rest, x);
        at an edge dx/dm = 0. The secant method on dx/dm (from implicit
        differentiation) finds it, first in double precision, then at ``dps``.
        """
        out = self._double.output
        g, x = [[float(v.real) for v in g_out]], [float(x_out)]
        curve = self._fold_curve(self._double, g, x, 1e-15)
        m0 = g[0][out]
        phi0 = curve(m0)
        m1 = m0 + np.sign((x_in - x_out) / phi0) * min(0.5 * abs((x_out - x_in) / phi0), 1e-2 * (1 + abs(m0)))
        with mpmath.workdps(15):
            m_star = mpmath.findroot(curve, (m0, m1), solver="secant", tol=1e-11, verify=False, maxsteps=100)
        curve(float(m_star))
        if abs(x[0] - x_out) > 2 * abs(x_out - x_in) + 1e-12:
            raise BranchError(f"edge refinement near x = {x_out} converged to a distant fold at {x[0]}")
        with mpmath.workdps(dps + 15):
            num = self._mp(dps + 15)
            g = [[mpmath.mpf(v) for v in g[0]]]
            x = [mpmath.mpf(x[0])]
            tol = mpmath.mpf(10) ** (-(dps + 10))
            curve = self._fold_curve(num, g, x, tol)
            m0 = g[0][out]
            # x is quadratic in m - m* at the fold: half the digits of m give all digits of x
            m_tol = mpmath.mpf(10) ** (-(dps // 2 + 8))
            m_star = mpmath.findroot(curve, (m0, m0 * (1 + mpmath.mpf(10) ** -8)), solver="secant", tol=m_tol, verify=False, maxsteps=100)
            curve(m_star)
            return +x[0]

    def edges(self, dps: int = 30) -> list[Edge]:
        """Support edges in increasing order, lower and upper alternating, to ``dps`` digits
        (computed with at least WORK_DPS, so that fewer digits are a rounding, never a coarser edge)."""
        dps = check_dps(dps)
        work = max(dps, WORK_DPS)
        if work not in self._edge_cache:
            self._edge_cache[work] = self._edges(work)
        return [dataclasses.replace(e, digits=min(e.digits, dps)) for e in self._edge_cache[work]]

    def _edges(self, dps: int) -> list[Edge]:
        """:meth:`edges` at ``dps`` working digits."""
        if self.zero:
            return []
        x, _, g = self._scan
        found: list[Edge] = []
        for a, b, hard in self._intervals:
            if hard:
                found.append(Edge(mpmath.mpf(0), "lower", hard=True))
            elif a == 0:
                # a soft lower edge below the first scan point: zoom in on a geometric grid
                xs = x[0] * np.logspace(-10, 0, 201)
                gs = self._branch(xs.astype(complex))
                rs = -gs[:, self._double.output].imag / np.pi
                outside = np.nonzero(rs <= SUPPORT_THRESHOLD / self.scale)[0]
                if not outside.size or outside[-1] == len(xs) - 1:
                    raise BranchError("the lower support edge near 0 could not be bracketed")
                k = outside[-1]
                found.append(self._edge(xs[k], gs[k], xs[k + 1], "lower", dps))
            else:
                found.append(self._edge(x[a - 1], g[a - 1], x[a], "lower", dps))
            found.append(self._edge(x[b + 1], g[b + 1], x[b], "upper", dps))
        return found

    def _edge(self, x_out: float, g_out: np.ndarray, x_in: float, side: str, dps: int) -> Edge:
        """The fold refinement of an edge, or bisection of the density when it fails."""
        try:
            with mpmath.workdps(dps):
                return Edge(+self._fold(x_out, g_out, x_in, dps), side, digits=dps)
        except (BranchError, ZeroDivisionError, np.linalg.LinAlgError):
            lo, hi = x_out, x_in
            for _ in range(60):
                mid = (lo + hi) / 2
                if self.density(np.array([mid]))[0] > SUPPORT_THRESHOLD / self.scale:
                    hi = mid
                else:
                    lo = mid
            return Edge(mpmath.mpf((lo + hi) / 2), side, refined=False, digits=12)

    # ---- integrals: mass, CDF, quantiles, moments ---------------------------------------
    @functools.cached_property
    def _pieces(self) -> list[Core | Band]:
        """The continuous part piece by piece (:mod:`.integrals`): one band per support
        interval; an interval with a hard edge starts with a core [0, 1e-5 b] whose mass
        comes from contour integrals (down to 1e-14 of the norm-bound scale, or to ten times
        the radius where double precision loses the branch, if that is above)."""
        pieces: list[Core | Band] = []
        edges = self.edges(dps=16)
        for lo, hi in zip(edges[::2], edges[1::2]):
            a, b = float(lo.location), float(hi.location)
            if lo.hard:
                x0 = 1e-5 * b
                atom = sum(t.mass for t in self.atoms() if t.location == 0)
                try:
                    piece = core(self._on_arcs, min(1e-14 * self.scale, 1e-6 * x0), x0, atom)
                except RaysFailed as failed:  # double precision loses the branch that deep
                    if 10 * failed.radius > 1e-3 * x0:
                        raise
                    piece = core(self._on_arcs, 10 * failed.radius, x0, atom)
                pieces.append(piece)
                pieces.append(band(self.density, x0, b, p=3))
            else:
                pieces.append(band(self.density, a, b))
        return pieces

    def _on_arcs(self, radii: np.ndarray, directions: np.ndarray) -> np.ndarray:
        """m(radii[k] directions[j]) for directions in the upper half plane: the outermost arc
        by descent (:meth:`_branch`), the others inward along each ray (:func:`.follow_rays`)."""
        order = np.argsort(radii)[::-1]
        out = np.empty((len(radii), len(directions)), dtype=complex)
        g0 = self._branch(radii[order[0]] * directions)
        reached = 0
        for k, g in follow_rays(self._double, directions, radii[order], g0):
            out[order[k]] = g[:, self._double.output]
            reached += 1
        if reached < len(radii):
            raise RaysFailed(radii[order[max(reached - 1, 0)]])
        return out

    def mass(self) -> float:
        """Total mass: atoms plus the continuous part (1 for a verified law)."""
        return sum(a.mass for a in self.atoms()) + sum(piece.mass for piece in self._pieces)

    def cdf(self, x: Any) -> Any:
        """P(lambda <= x), from the atoms and the pieces of the continuous part."""
        xa = np.asarray(x, dtype=float)
        out = np.zeros_like(xa, dtype=float)
        for atom in self.atoms():
            out += atom.mass * (xa >= atom.location)
        for piece in self._pieces:
            out += piece.cdf(xa)
        return out if out.ndim else float(out)

    def quantile(self, q: Any) -> Any:
        """The smallest x with cdf(x) >= q for 0 < q <= 1 (bisection on the monotone CDF); at q = 0
        the lower end of the support (docs/solving.md §3.8), as scipy's ``ppf(0)``.

        Levels within an atom give its location exactly; neither rule depends on rounding.
        """
        qa = np.asarray(q, dtype=float)
        if np.any(~((qa >= 0) & (qa <= 1))):
            raise ValueError("q: quantile levels must lie in [0, 1]")
        edges, atoms = self.edges(dps=16), self.atoms()
        lowest = min([float(e.location) for e in edges[:1]] + [a.location for a in atoms], default=0.0)
        lo = np.zeros_like(qa)
        hi = np.full_like(qa, float(edges[-1].location) if edges else 0.0)
        for _ in range(60):
            mid = (lo + hi) / 2
            below = self.cdf(mid) < qa
            lo, hi = np.where(below, mid, lo), np.where(below, hi, mid)
        at_zero = sum(a.mass for a in atoms if a.location == 0)
        hi = np.where((qa > 0) & (qa <= at_zero), 0.0, hi)  # levels within the atom at 0
        hi = np.where(qa == 0, lowest, hi)
        return hi if hi.ndim else float(hi)

    def moments(self, k: int, symbolic: bool = False) -> list[sp.Expr]:
        """Exact mu_1..mu_k, from the full Dyson system as a power series in 1/w (:mod:`.series`).

        Parameters keep their symbols with ``symbolic``; otherwise the law's
        values are substituted.
        """
        if k < 1:
            raise ValueError("k: need at least one moment")
        if len(self._exact_moments) < k:
            self._exact_moments = moment_series(self.full_system, k)
        out = self._exact_moments[:k]
        return out if symbolic else [sp.expand(m.subs(self.values)) for m in out]

    def numeric_moments(self, k: int, points: int = 512) -> np.ndarray:
        """mu_1..mu_k by the trapezoidal rule on a circle enclosing the support.

        mu_j = (1/2 pi i) oint w^j m(w) dw; on |w| = R the rule converges like
        (edge/R)^points (m is analytic outside the support).
        """
        if k < 1:
            raise ValueError("k: need at least one moment")
        if self.zero:
            return np.zeros(k)
        radius = 1.25 * self._top_of_support
        theta = np.pi * (np.arange(points // 2) + 0.5) / (points // 2)
        w = radius * np.exp(1j * theta)
        m = self.stieltjes(w)
        j = np.arange(1, k + 1)[:, None]
        # upper and lower half circles: the lower half is the conjugate.
        return np.real(np.sum(w[None, :] ** (j + 1) * m[None, :], axis=1)) / (points // 2)

    # ---- the derivation as a record: JSON, LaTeX ------------------------------------------
    def record(self, dps: int = 30, moments: int = 3, time_limit: float = 20.0) -> dict[str, Any]:
        """Everything derived, JSON-able: model, system, P(m, w), exact moments, edges, atoms,
        with every formula also printed in LaTeX (``latex``) for :func:`.latex.document`.

        Edges are the classified discriminant roots of P when P exists (``edge_method``
        'discriminant'), else the continuation's folds; both to ``dps`` digits.
        """
        exact, general = self.moments(moments), self.moments(moments, symbolic=True)
        elimination = self.algebraic(time_limit)
        classified = self.algebraic_edges(dps, time_limit) if elimination.polynomial is not None else None
        if classified is not None:
            edges = [{"location": mpmath.nstr(e.location, dps), "side": e.side, "hard": e.hard} for e in classified.edges]
        else:
            edges = [{"location": mpmath.nstr(e.location, dps), "side": e.side, "hard": e.hard, "refined": e.refined} for e in self.edges(dps)]
        atoms = self.algebraic_atoms(time_limit) if elimination.polynomial is not None else None
        system = self.system
        model_terms = self.model.args if isinstance(self.model, MatAdd) else (self.model,)
        return {
            "model": str(self.model),
            "ratios": {str(d): str(v) for d, v in self.ratios.items()},
            "values": {str(k): str(v) for k, v in self.values.items()},
            "unknowns": len(system.unknowns),
            "notes": list(system.notes),
            "moments": [
                {"exact": str(m), "symbolic": str(g), "float": float(sp.N(m, 20)) if not m.free_symbols else None}
                for m, g in zip(exact, general)
            ],
            "polynomial": None if elimination.polynomial is None else str(elimination.polynomial),
            "polynomial_reason": elimination.reason,
            "polynomial_info": {
                "variables": "P(m, w) = 0, m(w) = (1/q) tr (w - Y^T Y)^{-1}",
                "degree_m": elimination.degree_m,
                "degree_w": elimination.degree_w,
                "symbolic": [str(v) for v in elimination.symbolic],
                "substituted": {str(k): str(v) for k, v in elimination.substituted.items()},
                "backend": elimination.backend,
            },
            "edge_method": "discriminant" if classified is not None else "continuation",
            "edges": edges,
            "edge_candidates": [] if classified is None else [{"location": mpmath.nstr(c.location, dps), "kind": c.kind} for c in classified.candidates],
            "cusps": [] if classified is None else [mpmath.nstr(c, dps) for c in classified.cusps],
            "gaps": [] if classified is None else [[mpmath.nstr(a, dps), mpmath.nstr(b, dps)] for a, b in classified.gaps],
            "atom_method": "polynomial" if atoms is not None else "continuation",
            "atoms": [{"location": a.location, "mass": a.mass, "exact": None if a.exact is None else str(a.exact)} for a in (atoms if atoms is not None else self.atoms())],
            "latex": {
                "model": [sp.latex(t) for t in model_terms],
                "ratios": [rf"{sp.latex(sp.Symbol(str(d)))} = {sp.latex(v)}" for d, v in self.ratios.items()],
                "unknowns": [sp.latex(g) for g in system.unknowns],
                "output": sp.latex(system.output),
                "sectors": [
                    [sec.name, [rf"M_{{{sec.labels[a]},{sec.labels[b]}}} = {sp.latex(v)}" for (a, b), v in _nonzero_entries(sec.matrix())]]
                    for sec in system.sectors
                ],
                "readouts": [sp.latex(e) for e in system.readout_equations()],
                "polynomial": None if elimination.polynomial is None else terms_of(elimination.polynomial),
                "moments": [terms_of(g) for g in general],
            },
        }

    def to_latex(self, dps: int = 30) -> str:
        """A standalone LaTeX document of the derivation (:func:`.latex.document`)."""
        return document(self.record(dps))

    def _repr_latex_(self) -> str:
        """The model and its Stieltjes transform's unknown, for notebooks."""
        return rf"$\displaystyle Y = {sp.latex(self.model)},\quad m(w) = {sp.latex(self.system.output)}$"

    # ---- Monte Carlo --------------------------------------------------------------------
    def sample(self, N: int, seed: int = 0, draws: int = 1) -> np.ndarray:
        """Eigenvalues of Y^T Y for finite Gaussian matrices at sizes ratio*N (one row per draw)."""
        sizes = {}
        for d, v in self.ratios.items():
            s = to_float(v, self.values) * N
            if abs(s - round(s)) > 1e-9 or round(s) < 1:
                raise ValueError(f"N: ratio * N must be a positive integer for {d}; {N} gives {s}")
            sizes[str(d)] = int(round(s))
        polynomial = self.polynomial
        mats = gaussians_of(polynomial)
        out = []
        for child in np.random.SeedSequence(seed).spawn(draws):
            rng = np.random.default_rng(child)
            real = {
                g: rng.standard_normal((sizes[str(g.rows)], sizes[str(g.cols)])) * np.sqrt(to_float(g.scale, self.values) / N)
                for g in mats
            }
            Y = _evaluate(polynomial, real, sizes, self.values)
            q = Y.shape[1]
            gram = Y.T @ Y if Y.shape[0] >= q else Y @ Y.T
            ev = np.linalg.eigvalsh(gram)
            out.append(np.sort(np.concatenate([np.zeros(q - ev.size), ev])))
        return np.array(out)

    # ---- algebraic equation: elimination, discriminant edges, closed form ----------------
    def _solutions(self, dps: int = 40) -> list[tuple[complex, np.ndarray]]:
        """The physical solution at three generic points of the upper half plane, to ``dps`` digits."""
        points = [complex(self.scale * z) for z in (0.37 + 0.61j, 1.13 + 0.29j, -0.71 + 0.47j)]
        g = self._branch(np.array(points))
        return [(w, self._refine(w, g0, dps)) for w, g0 in zip(points, g)]

    def algebraic(self, time_limit: float = 20.0, backend: str | None = None) -> Any:
        """P(m, w) = 0 for m(w) by exact elimination (:func:`.elimination.eliminate`), or the reason there is none.

        ``time_limit`` (seconds) bounds each attempt: parameters symbolic, then at their values.
        Cached per (time_limit, backend). Once P is found, double-precision :meth:`stieltjes`
        and :meth:`density` follow its root (:class:`.polynomial_system.PolynomialSystem`).
        """
        key = (float(time_limit), backend)
        if key not in self._eliminations:
            if self.zero:  # m(w) = 1/w
                self._eliminations[key] = Elimination(M * W - 1, None, 1, 1, (), {}, {}, {}, "exact", 0.0)
            else:
                self._eliminations[key] = eliminate(self.system, self.values, self._solutions(), key[0], backend)
        return self._eliminations[key]

    def algebraic_edges(self, dps: int = 30, time_limit: float = 20.0) -> Any:
        """Real roots of the discriminant of P classified by the physical branch
        (:func:`.algebraic.classify_edges`), to ``dps`` digits from at least WORK_DPS; None when there is no P."""
        dps = check_dps(dps)
        key = (max(dps, WORK_DPS), float(time_limit))
        if key not in self._classified:
            self._classified[key] = self._algebraic_edges(*key)
        found = self._classified[key]
        if found is None:
            return None
        return dataclasses.replace(found, edges=tuple(dataclasses.replace(e, digits=min(e.digits, dps)) for e in found.edges))

    def _algebraic_edges(self, dps: int, time_limit: float) -> Any:
        elimination = self.algebraic(time_limit)
        if self.zero:
            return EdgeClassification((), (), (), (), sp.Integer(1))
        return None if elimination.polynomial is None else classify_edges(self.density, self.scale, elimination, dps)

    def algebraic_atoms(self, time_limit: float = 20.0) -> list[Atom] | None:
        """The atom at zero from P (:func:`.algebraic.atom_masses`): exact, with the physical candidate
        chosen by y m(iy) at y = 1e-9 * scale when there are several; None without P or when
        that estimate cannot tell the candidates apart."""
        return self._atoms_from(self.algebraic(time_limit))

    def _atoms_from(self, elimination: Any) -> list[Atom] | None:
        """:meth:`algebraic_atoms` for a given elimination result."""
        if elimination.polynomial is None:
            return None
        masses = atom_masses(elimination)
        if not masses:
            return None
        error = 0.0
        if len(masses) > 1:
            ys = self.scale * 10.0 ** -np.arange(2, 10)
            estimate = float(np.real(1j * ys[-1] * self.stieltjes(1j * ys)[-1]))
            values = np.array([float(sp.N(v)) for v in masses])
            order = np.argsort(np.abs(values - estimate))
            error = float(abs(values[order[0]] - estimate))
            if error > abs(values[order[1]] - values[order[0]]) / 4:
                return None
            masses = [masses[order[0]]]
        mass = masses[0]
        if float(sp.N(mass)) == 0:
            return []
        return [Atom(0.0, float(sp.N(mass)), error, mass if mass.is_Rational else None)]

    def density_closed_form(self, x: sp.Symbol | None = None, time_limit: float = 20.0) -> sp.Expr | None:
        """The density in radicals where P has degree <= 4 in m (:func:`.algebraic.density_closed_form`)."""
        elimination = self.algebraic(time_limit)
        return None if elimination.polynomial is None else density_closed_form(self.density, self.scale, elimination, x)


def _evaluate(expr: MatrixExpr, real: Mapping[Gaussian, np.ndarray], sizes: Mapping[str, int], values: Mapping[sp.Symbol, Any]) -> np.ndarray:
    """A numpy realisation of a polynomial from realisations of its Gaussians."""
    expr = without_powers(expr)
    if isinstance(expr, Gaussian):
        return real[expr]
    if isinstance(expr, Transpose):
        return _evaluate(expr.arg, real, sizes, values).T
    if isinstance(expr, MatAdd):
        return sum(_evaluate(a, real, sizes, values) for a in expr.args)
    if isinstance(expr, MatMul):
        c, mats = expr.as_coeff_matrices()
        out = _evaluate(mats[0], real, sizes, values)
        for m in mats[1:]:
            out = out @ _evaluate(m, real, sizes, values)
        return to_float(c, values) * out
    if isinstance(expr, sp.Identity):
        return np.eye(sizes[str(expr.rows)])
    raise NotImplementedError(f"cannot evaluate {expr}")


def _nonzero_entries(M: sp.Matrix) -> list[tuple[tuple[int, int], sp.Expr]]:
    """Nonzero entries of a symmetric matrix on and above the diagonal."""
    return [((a, b), M[a, b]) for a in range(M.rows) for b in range(a, M.cols) if M[a, b] != 0]


def spectral_law(polynomial: MatrixExpr, ratios: Mapping[Dim, Any], values: Mapping[sp.Symbol, Any] | None = None) -> SpectralLaw:
    """The limiting law of the eigenvalues of Y^T Y; ratios give each Dim's size / N."""
    return SpectralLaw(polynomial, ratios, values)
