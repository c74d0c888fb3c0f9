"""The limiting law of the eigenvalues of Y^T Y for a polynomial Y in Gaussian matrices (docs/solving.md §3.9).

``spectral_law(Y, ratios)`` derives the law once (:mod:`.derivation`) and answers questions about
it (q x q, q the number of columns of Y, zero eigenvalues included): the Stieltjes transform
m(w) = (1/q) tr (w - Y^T Y)^{-1}, the density -Im m(x + i0)/pi, atoms, support edges, CDF,
quantiles, moments, P(m, w) = 0, the record and finite samples of the same matrices.

Each query may name its method, as scipy's distributions do; the default is a fixed rule, never
what ran before, so that the same question always gets the same answer:

- values (``stieltjes``, ``density``, ``cdf``): ``"dyson"`` (default) or ``"polynomial"`` (the
  root of P; needs an elimination that finds it);
- ``edges``: ``"fold"`` (default), ``"polynomial"`` (the folds refined on P) or ``"discriminant"``;
  ``atoms``: ``"descent"`` (default) or ``"polynomial"``.
Every edge and atom records the method that found it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
from collections.abc import Mapping
from typing import Any, Literal

import mpmath
import numpy as np
import sympy as sp
from sympy.matrices.expressions import MatrixExpr

from gemhsa_sym.export.document import document
from gemhsa_sym.export.latex import aligned_system
from gemhsa_sym.export.record import LawRecord, build_record
from gemhsa_sym.free.algebraic.bounded import Bounded
from gemhsa_sym.free.algebraic.elimination import TIME_LIMIT, Elimination, M, eliminate
from gemhsa_sym.free.algebraic.polynomial_edges import polynomial_edges
from gemhsa_sym.free.algebraic.roots import atoms_from_polynomial, classify_edges, density_closed_form
from gemhsa_sym.free.equations.derivation import Derivation, derivation
from gemhsa_sym.free.equations.meanings import Meaning, meanings
from gemhsa_sym.free.equations.minimal import MinimalSystem, bounded_minimal, start_minimal
from gemhsa_sym.free.equations.series import moment_series
from gemhsa_sym.free.expressions.exchangeable import ExchangeableSum
from gemhsa_sym.free.expressions.matrices import Dim
from gemhsa_sym.free.expressions.system import DysonSystem, W
from gemhsa_sym.free.numeric.results import WORK_DPS, Atom, Edge, EdgeClassification, check_dps
from gemhsa_sym.laws.integrals import Band, Core, continuous_pieces, contour_moments
from gemhsa_sym.laws.protocol import Law, check_points, choose_method
from gemhsa_sym.laws.recorded import answers_record, recorded_elimination
from gemhsa_sym.laws.solver import BranchSolver, ValueMethod
from gemhsa_sym.laws.support import SupportScan, atom_at_zero, fold_edges, scan_support, top_of_support
from gemhsa_sym.laws.tabulated import PROBES, TabulatedLaw, tabulate
from gemhsa_sym.progress import stage
from gemhsa_sym.sampling.polynomial import sample_polynomial

__all__ = ["RecordEdges", "SpectralLaw", "spectral_law"]

EdgeQuery = Literal["fold", "polynomial", "discriminant"]
AtomQuery = Literal["descent", "polynomial"]
RecordEdges = Literal["discriminant", "polynomial"]


class SpectralLaw(Law):
    """Limiting law of the eigenvalues of Y^T Y (module docstring); answers the protocol of :class:`.protocol.Law`.
    ``known``, a record of this law written before (the library's), gives P(m, w) and answers :meth:`record`'s requests
    that match it (:mod:`.recorded`); ``symbolic`` makes every elimination try the parameters symbolic first
    (:func:`.elimination.eliminate`), and then no record is taken."""

    def __init__(self, model: MatrixExpr | ExchangeableSum, ratios: Mapping[Dim, Any],
                 values: Mapping[sp.Symbol, Any] | None = None, reduce: bool = True, known: LawRecord | None = None,
                 symbolic: bool = False) -> None:
        self.derivation: Derivation = derivation(model, ratios, values, reduce)
        self.known, self.symbolic = (None if symbolic else known), symbolic
        self._solvers: dict[str, BranchSolver] = {"dyson": BranchSolver(self.derivation)}
        self._eliminations: dict[tuple[float, str | None], Elimination] = {}
        self._answers: dict[tuple[Any, ...], Any] = {}
        self._exact_moments: list[sp.Expr] = []

    # ---- the derivation ----------------------------------------------------------------
    model = property(lambda self: self.derivation.model, doc="Y, or the exchangeable sum of its heads.")
    ratios = property(lambda self: self.derivation.ratios, doc="Each dimension's size over N.")
    values = property(lambda self: self.derivation.values, doc="Values of the model's parameters.")
    pencil = property(lambda self: self.derivation.pencil, doc="The linear pencil of Y.")
    full_system = property(lambda self: self.derivation.full_system, doc="The Dyson system before reductions.")
    system = property(lambda self: self.derivation.system, doc="The reduced Dyson system.")
    scale = property(lambda self: self.derivation.scale, doc="The law's scale (docs/solving.md §3.10).")
    zero = property(lambda self: self.derivation.zero, doc="True when Y = 0: the point mass at 0.")
    polynomial = property(lambda self: self.derivation.polynomial, doc="Y as one polynomial.")
    q = property(lambda self: self.derivation.q, doc="The dimension of Y^T Y.")

    @property
    def equations(self) -> DysonSystem:
        """The reduced Dyson system: prints readably; ``sympy.latex`` gives LaTeX."""
        return self.system

    def minimal(self, time_limit: float = 20.0) -> MinimalSystem:
        """The minimal system (docs/equations.md §2.7), its symbolic elimination bounded by ``time_limit`` seconds in a child
        process (ValueError with the reason past it), proved against the reduced one by :func:`.minimal.check_minimal`
        (50 digits, 1e-40); none for the point mass at 0 (Y = 0), whose m(w) = 1/w needs no system."""
        found = self._minimal(time_limit)
        if isinstance(found, str):
            raise ValueError(f"minimal: no minimal system: {found}")
        return found

    def _minimal(self, time_limit: float, started: Bounded | None = None) -> MinimalSystem | str:
        return self._cached(("minimal", float(time_limit)), lambda: "Y = 0: the law is the point mass at 0, m(w) = 1/w"
                            if self.zero else bounded_minimal(self.system, self.derivation.probe, self.scale, time_limit, started))

    def meanings(self) -> dict[sp.Symbol, Meaning]:
        """What each unknown of the reduced system is (docs/equations.md §2.8)."""
        heads = isinstance(self.model, ExchangeableSum) and self.model.heads != 1
        return self._cached(("meanings",), lambda: meanings(self.system, self.pencil, heads, self.derivation.limit))

    def __repr__(self) -> str:
        return f"{type(self).__name__}(Y = {self.model}, ratios = {dict((str(k), v) for k, v in self.ratios.items())})"

    def _cached(self, key: tuple[Any, ...], compute: Any) -> Any:
        if key not in self._answers:
            self._answers[key] = compute()
        return self._answers[key]

    def solver(self, method: ValueMethod | None = None, time_limit: float = 20.0) -> BranchSolver:
        """The branch solver of ``method`` ('dyson' by default; 'polynomial' eliminates first and
        raises ValueError when no P(m, w) is found)."""
        method = choose_method(method, "dyson", ("dyson", "polynomial"))
        if method == "polynomial" and "polynomial" not in self._solvers:
            self._solvers["polynomial"] = self._solvers["dyson"].with_polynomial(self.algebraic(time_limit))
        return self._solvers[method]

    # ---- values ------------------------------------------------------------------------
    def stieltjes(self, w: Any, dps: int | None = None, method: ValueMethod | None = None) -> Any:
        """m(w) = (1/q) tr (w - Y^T Y)^{-1}, on the real axis the limit from above: double precision
        (arrays keep their shape), or with ``dps`` mpmath numbers (refined from the Dyson system)."""
        solver = self.solver(method)
        return solver.stieltjes(w) if dps is None else self._solvers["dyson"].stieltjes_mp(w, check_dps(dps))

    def density(self, x: Any, dps: int | None = None, method: ValueMethod | None = None) -> Any:
        """-Im m(x + i0)/pi for real x (array in double, or mpmath at ``dps``). At x = 0, where m has a pole when the law
        has an atom there, the density of the continuous part is answered as its limit from the right: inf at a hard
        edge (the density diverges), 0 otherwise."""
        if dps is None:
            xa = check_points(x)
            zero = xa == 0
            if not np.any(zero):
                return self.solver(method).density(xa)
            out = np.zeros(xa.shape)
            out[~zero] = self.solver(method).density(xa[~zero])
            lowest = self.edges(dps=16)[:1]
            out[zero] = np.inf if lowest and float(lowest[0].location) == 0 and lowest[0].hard else 0.0
            return out if out.ndim else float(out)
        m = self.stieltjes(x, dps=dps)
        with mpmath.workdps(dps):
            if np.ndim(x) == 0:
                return -mpmath.im(m) / mpmath.pi
            return np.array([-mpmath.im(v) / mpmath.pi for v in m], dtype=object)

    # ---- atoms, support, edges -------------------------------------------------------------
    def atoms(self, method: AtomQuery | None = None) -> list[Atom]:
        """Point masses (at zero when Y^T Y is rank deficient): by descent down the imaginary axis
        (default), or exact from P(m, w) with ``method="polynomial"``."""
        method = choose_method(method, "descent", ("descent", "polynomial"))
        if self.zero:
            return [Atom(0.0, 1.0, 0.0, sp.Integer(1), "exact")]
        if method == "polynomial":
            found = self.algebraic_atoms()
            if found is None:
                raise ValueError("method: P(m, w) does not give the atoms of this law (no P, or its candidates "
                                 "cannot be told apart)")
            return found
        return self._cached(("atoms",), lambda: [a for a in [atom_at_zero(self._solvers["dyson"])] if a is not None])

    def _top(self) -> float:
        return self._cached(("top",), lambda: top_of_support(self._solvers["dyson"]))

    def _scan(self) -> SupportScan:
        def scan() -> SupportScan:
            with stage("following the physical branch over the support"):
                return scan_support(self._solvers["dyson"], self._top())

        return self._cached(("scan",), scan)

    def support(self) -> list[tuple[float, float]]:
        """Support intervals of the continuous part, edges in double precision."""
        edges = self.edges(dps=16)
        return [(float(lo.location), float(hi.location)) for lo, hi in zip(edges[::2], edges[1::2])]

    def edges(self, dps: int = 30, method: EdgeQuery | None = None, time_limit: float = 20.0) -> list[Edge]:
        """Support edges in increasing order, lower and upper alternating, to ``dps`` digits (computed
        with at least WORK_DPS): folds of the continuation (default), the folds refined as solutions of
        P = dP/dm = 0 (``method="polynomial"``, :func:`.polynomial_edges.polynomial_edges`) or the classified
        real roots of the discriminant of P (``method="discriminant"``); ``time_limit`` bounds the elimination
        of P and its discriminant (:meth:`algebraic`)."""
        dps = check_dps(dps)
        method = choose_method(method, "fold", ("fold", "polynomial", "discriminant"))
        if method == "discriminant":
            classified = self.algebraic_edges(dps, time_limit)
            if classified is None:
                reason = self.algebraic(time_limit).reason or "its discriminant did not finish within the time limit"
                raise ValueError(f"method: no discriminant edges for this law ({reason})")
            return list(classified.edges)
        work = max(dps, WORK_DPS)
        found = self._cached(("edges", work), lambda: [] if self.zero else fold_edges(self._solvers["dyson"], self._scan(), work))
        if method == "polynomial" and not self.zero:
            elimination = self.algebraic(time_limit)
            if elimination.polynomial is None:
                raise ValueError(f"method: no polynomial edges for this law ({elimination.reason})")
            found = self._cached(("polynomial edges", work, float(time_limit)), lambda: polynomial_edges(
                found, self._solvers["dyson"].stieltjes, self.scale, elimination, work))
        return [dataclasses.replace(e, digits=min(e.digits, dps)) for e in found]

    # ---- integrals ---------------------------------------------------------------------
    def _pieces(self, method: ValueMethod | None) -> list[Core | Band]:
        solver = self.solver(method)
        atom = sum(a.mass for a in self.atoms() if a.location == 0)
        edges = self.edges(dps=16)
        return self._cached(("pieces", solver.method), lambda: continuous_pieces(
            edges, atom, solver.density, self._solvers["dyson"].on_arcs, self.scale))

    def mass(self) -> float:
        """Total mass: atoms plus the continuous part (1 for a verified law)."""
        return sum(a.mass for a in self.atoms()) + sum(piece.mass for piece in self._pieces(None))

    def cdf(self, x: Any, method: ValueMethod | None = None) -> Any:
        """P(lambda <= x), from the atoms and the pieces of the continuous part."""
        xa = check_points(x)
        out = np.zeros_like(xa, dtype=float)
        for atom in self.atoms():
            out += atom.mass * (xa >= atom.location)
        for piece in self._pieces(method):
            out += piece.cdf(xa)
        return out if out.ndim else float(out)

    def moments(self, k: int, symbolic: bool = False) -> list[sp.Expr]:
        """Exact mu_1..mu_k from the full Dyson system as a power series in 1/w (:mod:`.series`);
        parameters keep their symbols with ``symbolic``, otherwise the law's values are substituted."""
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise ValueError("k: need at least one moment")
        if len(self._exact_moments) < k:
            self._exact_moments = moment_series(self.full_system, k)
        out = self._exact_moments[:k]
        return out if symbolic else [sp.expand(m.subs(self.values)) for m in out]

    def numeric_moments(self, k: int, points: int = 512) -> np.ndarray:
        """The moments M_1..M_k by the contour rule of :func:`.integrals.contour_moments` on a circle of radius 1.25 top edge."""
        found = contour_moments(self.stieltjes, 1.0 if self.zero else 1.25 * self._top(), k, points)
        return np.zeros(k) if self.zero else found  # the point mass at 0: every moment is 0 exactly

    # ---- P(m, w) -----------------------------------------------------------------------
    def algebraic(self, time_limit: float = 20.0, backend: str | None = None) -> Elimination:
        """P(m, w) = 0 for m(w) by exact elimination (:func:`.elimination.eliminate`), or the reason there
        is none; ``time_limit`` (seconds) bounds each attempt; cached per (time_limit, backend)."""
        key = (float(time_limit), backend)
        if key not in self._eliminations:
            if self.zero:  # m(w) = 1/w
                self._eliminations[key] = Elimination(M * W - 1, None, 1, 1, (), {}, {}, {}, "exact", 0.0)
            elif self.known is not None and key == (TIME_LIMIT, None):  # what the record's elimination found at this limit
                self._eliminations[key] = recorded_elimination(self.known, self.system, self.values, lambda: self._solvers[
                    "dyson"].solutions(unit=self._top()))  # near the support, where every term of P counts
            else:
                with stage(f"eliminating P(m, w) (at most {key[0]:g} s per attempt)"):
                    self._eliminations[key] = eliminate(self.system, self.values, self._solvers["dyson"].solutions, key[0], backend,
                                                        symbolic=self.symbolic)
        return self._eliminations[key]

    def algebraic_edges(self, dps: int = 30, time_limit: float = 20.0,
                        discriminant_limit: float | None = None) -> EdgeClassification | None:
        """Real roots of the discriminant of P classified by the physical branch (:func:`.algebraic.classify_edges`),
        to ``dps`` digits from at least WORK_DPS; None when there is no P or its discriminant does not finish
        within ``discriminant_limit`` seconds (default ``time_limit``, which bounds the elimination of P), a
        ValueError with the reason where it fails."""
        dps = check_dps(dps)
        limit = time_limit if discriminant_limit is None else discriminant_limit
        key = ("classified", max(dps, WORK_DPS), float(time_limit), float(limit))

        def classify() -> EdgeClassification | None:
            elimination = self.algebraic(time_limit)
            if self.zero:
                return EdgeClassification((), (), (), (), sp.Integer(1))
            if elimination.polynomial is None:
                return None
            with stage(f"classifying the real roots of P's discriminant (at most {limit:g} s)"):
                return classify_edges(self._solvers["dyson"].density, self.scale, elimination, key[1], limit)

        found = self._cached(key, classify)
        return None if found is None else dataclasses.replace(
            found, edges=tuple(dataclasses.replace(e, digits=min(e.digits, dps)) for e in found.edges))

    def algebraic_atoms(self, time_limit: float = 20.0) -> list[Atom] | None:
        """The atom at zero from P (:func:`.algebraic.atoms_from_polynomial`); None without P or when the
        candidates cannot be told apart."""
        return self._cached(("atoms from P", float(time_limit)), lambda: atoms_from_polynomial(
            self.algebraic(time_limit), self._solvers["dyson"].stieltjes, self.scale))

    def density_closed_form(self, x: sp.Symbol | None = None, time_limit: float = 20.0) -> sp.Expr | None:
        """The density in radicals where P has degree <= 4 in m (:func:`.algebraic.density_closed_form`)."""
        elimination = self.algebraic(time_limit)
        if elimination.polynomial is None:
            return None
        return density_closed_form(self._solvers["dyson"].density, self.scale, elimination, x)

    # ---- record, export, samples -------------------------------------------------------
    def record(self, dps: int = 30, moments: int = 3, time_limit: float = 20.0, edges: RecordEdges = "discriminant",
               discriminant_limit: float | None = None) -> LawRecord:
        """Everything derived (:class:`.record.LawRecord`), or the record ``known`` where it answers the request. Edges
        where P exists: with ``edges="discriminant"`` the classified discriminant roots of P, else (the discriminant does
        not finish within ``discriminant_limit``, default ``time_limit``, or fails, or ``edges="polynomial"``) the folds
        refined on P; without P, or where that refinement fails, the continuation's folds. Atoms from P when it gives
        them, else by descent. ``time_limit`` bounds each attempt of the elimination of P (:meth:`algebraic`)."""
        dps = check_dps(dps)
        chosen = choose_method(edges, "discriminant", ("discriminant", "polynomial"), "edges")
        if self.known is not None and answers_record(self.known, dps, moments, time_limit, chosen, discriminant_limit):
            return self.known
        fresh = not self.zero and ("minimal", float(time_limit)) not in self._answers
        with contextlib.ExitStack() as stack:  # the minimal system's child runs beside the elimination, on another core
            started = (stack.enter_context(start_minimal(self.system, self.derivation.probe, self.scale, time_limit))
                       if fresh else None)
            elimination = self.algebraic(time_limit)
            classified = None
            if elimination.polynomial is not None and chosen == "discriminant":
                with contextlib.suppress(ValueError):  # the discriminant failed: the folds refined on P follow
                    classified = self.algebraic_edges(dps, time_limit, discriminant_limit)
            found: list[Edge] = []
            if classified is None:
                try:
                    found = self.edges(dps, "polynomial" if elimination.polynomial is not None else "fold", time_limit)
                except ValueError:
                    found = self.edges(dps)
            exact_atoms = self.algebraic_atoms(time_limit) if elimination.polynomial is not None else None
            minimal = self._minimal(time_limit, started)
        return build_record(self.derivation, self.moments(moments), self.moments(moments, symbolic=True), elimination,
                            classified, found, exact_atoms if exact_atoms is not None else self.atoms(),
                            "polynomial" if exact_atoms is not None else "continuation", dps, minimal,
                            {} if isinstance(minimal, str) else self.meanings())  # the minimal system's unknowns only

    def to_latex(self, dps: int = 30) -> str:
        """A standalone LaTeX document of the derivation (:func:`.document.document`)."""
        return document(self.record(dps))

    def _repr_latex_(self) -> str:
        """For notebooks: the model, the minimal system (docs/equations.md §2.7) with the meaning of
        each of its unknowns (§2.8), and m(w), as one aligned block of mathematics."""
        minimal = self._minimal(20.0)
        if isinstance(minimal, str):  # the point mass, or no minimal system within the time limit
            return self.derivation._repr_latex_()
        return aligned_system(self.model, minimal, self.meanings(), self.pencil)

    def sample(self, N: int, seed: int = 0, draws: int = 1) -> np.ndarray:
        """Eigenvalues of Y^T Y for finite Gaussian matrices at sizes ratio * N (one row per draw)."""
        return sample_polynomial(self.polynomial, self.ratios, self.values, N, seed, draws)

    # ---- the rest of the protocol (docs/solving.md §3.15) ----------------------------------
    def methods(self) -> dict[str, str]:
        """The method of every query (each query that takes ``method=`` names its others)."""
        return {
            "cdf": "the atoms plus the density integrated between the fold edges, and at a hard edge the mass from contour "
                   "integrals of m(w) (docs/solving.md §3.8)",
            "ccdf": "1 - cdf", "quantile": "bisection on cdf; levels within the atom at the lowest point by its exact mass",
            "density": "-Im m(x + i0) / pi on the physical branch of the reduced Dyson system (docs/solving.md §3.5)",
            "stieltjes": "the physical branch of the reduced Dyson system, in double or mpmath (docs/solving.md §3.4)",
            "sample": "eigenvalues of Y^T Y for finite Gaussian matrices at sizes ratio * N",
            "moments": "exact, from the full Dyson system as a power series in 1/w (docs/solving.md §3.1)",
            "edges": "folds of the continuation refined in mpmath; method='polynomial' or 'discriminant' from P(m, w)",
            "atoms": "descent down the imaginary axis; method='polynomial' from P(m, w)",
            "support": "the intervals between the fold edges",
            "tail_exponent": "inf: the support is compact",
            "achieved_error": "|total mass - 1| of the atoms and the pieces of the CDF",
            "record": "everything derived, with P(m, w) where elimination finds it" + (
                "; P and the record as written by the library where a request matches it" if self.known else ""),
            "to_latex": "the record as a document",
        }

    def reasons(self) -> dict[str, str]:
        """None: a spectral law answers every query."""
        return {}

    def achieved_error(self) -> float:
        """|mass - 1| (the pieces of the CDF are converged to 1e-12 of their largest term, docs/solving.md §3.8)."""
        return abs(self.mass() - 1.0)

    def tail_exponent(self) -> float:
        """inf: the support is compact."""
        return math.inf

    @property
    def source_data(self) -> dict[str, Any]:
        """What the law is of, as data (a configuration or a model file; empty for a polynomial given directly)."""
        return {}

    def tabulate(self, moments: int = 4, cdf: bool = True) -> TabulatedLaw:
        """The law on a table (:func:`.tabulated.tabulate`): the CDF graded towards every edge, exact moments (by the
        contour rule where they are not numbers), edges, atoms and m(w) at the probe points."""
        exact = self.moments(moments)
        entries = ([{"exact": str(v), "float": float(v)} for v in exact] if all(v.is_number for v in exact)
                   else [{"exact": None, "float": float(v)} for v in self.numeric_moments(moments)])
        probes = [complex(m) for m in np.atleast_1d(self.stieltjes(np.array(PROBES)))]
        return tabulate(self, self.source_data, entries, probes, self.edges(dps=16), cdf)


def spectral_law(polynomial: MatrixExpr, ratios: Mapping[Dim, Any], values: Mapping[sp.Symbol, Any] | None = None) -> SpectralLaw:
    """The limiting law of the eigenvalues of Y^T Y; ratios give each Dim's size / N."""
    return SpectralLaw(polynomial, ratios, values)
