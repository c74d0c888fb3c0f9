"""The law of a network read after layer 2 or later, whose equivalent weights the keys (docs/extensions.md §8.7).

From layer 2 on the tokens carry a common vector whose column term in the scores gives key j the weight e^{b_j}:
the equivalent is a polynomial with a deterministic diagonal D of lognormal key weights
(:func:`~gemhsa_sym.layer.network_equivalent.network_equivalent`), whose Dyson equation is the positional one of
docs/equations.md §2.12, solved on Gauss-Hermite rules of growing size until m(w) changes by at most ``tol`` (1 + |m|)
(:func:`~gemhsa_sym.free.positions.profiled_law.stieltjes`). The lognormal weights are unbounded, so the support is
(0, inf) with a tail lighter than any power; the law is known by its distribution function on a log-spaced grid that
reaches 1 to within its achieved error, its moments by contour integrals of m(w), and m(w) and the density solved
afresh at any point.
"""

from __future__ import annotations

import functools
import math
import time
from typing import Any

import numpy as np
import sympy as sp
from sympy.matrices.expressions import MatrixExpr

from gemhsa_sym.export.positional_document import key_weighted_document
from gemhsa_sym.export.positional_record import key_weighted_record
from gemhsa_sym.free.expressions.matrices import Dim
from gemhsa_sym.free.numeric.results import Atom
from gemhsa_sym.free.positions import profiled_law
from gemhsa_sym.free.positions.distribution_function import Distribution, distribution
from gemhsa_sym.free.positions.profiled_law import ProfiledModel, density, stieltjes
from gemhsa_sym.laws.positional import PositionalLaw
from gemhsa_sym.laws.protocol import NoAnswer
from gemhsa_sym.laws.tabulated import TabulatedLaw, table_queries
from gemhsa_sym.layer.network import Network
from gemhsa_sym.layer.network_equivalent import NetworkEquivalent, equivalent_of
from gemhsa_sym.progress import note, stage

__all__ = ["GRID", "KeyWeightedLaw", "MOMENTS", "TOL", "far_mean", "key_weighted_table"]

#: The distribution function's grid, relative to the law's mean: 32 points per decade from 1e-5 to 1e3.
GRID: tuple[float, ...] = tuple(np.geomspace(1e-5, 1e3, 257))
#: Tolerance of the level-to-level change of m (docs/solving.md §3.11).
TOL = 1e-6
#: The most moments the contour integral gives; its points on the circle.
MOMENTS, CONTOUR_POINTS = 4, 64
#: Why there are no edges, tail exponent or P(m, w).
NO_EDGES = ("the key weights are lognormal, unbounded, so the support reaches to infinity, with a tail lighter than any "
            "power; quantiles and the distribution function say where the mass lies")
NO_POLYNOMIAL = ("the equation is function-valued in the key weights' positions; no finite polynomial system is "
                 "eliminated")


@functools.lru_cache(maxsize=8)
def _model(polynomial: MatrixExpr, ratios: tuple[tuple[Dim, sp.Expr], ...]) -> ProfiledModel:
    """The positional model of a key-weighted equivalent (its coefficients numbers), over the tokens n; one per equivalent,
    so that its discretised systems are built once."""
    dims = {str(dim): dim for dim, _ in ratios}
    return ProfiledModel(polynomial, dict(ratios), dims["n"], {})


def _numeric(network: Network) -> tuple[MatrixExpr, tuple[tuple[Dim, sp.Expr], ...]]:
    """The equivalent of ``network`` with its coefficients as 30-digit numbers, and its ratios: the key of what is solved
    once (networks whose equivalents agree, as a frozen layer and layer 2, share it)."""
    equivalent = equivalent_of(network)
    values = {symbol: sp.N(value, 30) for symbol, value in equivalent.values.items()}
    return equivalent.polynomial.xreplace(values), tuple(sorted(equivalent.ratios.items(), key=lambda item: str(item[0])))


def far_mean(network: Network) -> float:
    """mu_1 from m(w) far out (:func:`~gemhsa_sym.free.positions.profiled_law.far_mean`, at the scale of the mean after
    layer 1)."""
    return _far_mean(*_numeric(network), float(equivalent_of(network).constants["m_1"]))


@functools.lru_cache(maxsize=8)
def _far_mean(polynomial: MatrixExpr, ratios: tuple[tuple[Dim, sp.Expr], ...], scale: float) -> float:
    with stage("the key-weighted law's mean, from m(w) far out (its pencil and Gauss-Hermite systems built first)"):
        return profiled_law.far_mean(_model(polynomial, ratios), scale)


def key_weighted_table(network: Network, tol: float = TOL) -> tuple[Distribution, float]:
    """The distribution function of the law of ``network`` on :data:`GRID` times its mean, to ``tol``, and the seconds it
    took (solved once per equivalent and tolerance)."""
    return _table(*_numeric(network), far_mean(network), tol)


@functools.lru_cache(maxsize=8)
def _table(polynomial: MatrixExpr, ratios: tuple[tuple[Dim, sp.Expr], ...], mean: float, tol: float) -> tuple[Distribution, float]:
    start = time.perf_counter()
    note(f"the key-weighted law's distribution function on {len(GRID)} points, Gauss-Hermite level by level: about 20 s for "
         "one attention layer on two cores, more with an MLP")
    found = distribution(_model(polynomial, ratios), np.array(GRID) * mean, tol)
    return found, time.perf_counter() - start


@functools.lru_cache(maxsize=8)
def _contour_moments(polynomial: MatrixExpr, ratios: tuple[tuple[Dim, sp.Expr], ...], radius: float,
                     tol: float) -> tuple[float, ...]:
    """mu_1 .. mu_MOMENTS by the contour integral of :meth:`KeyWeightedLaw.moments` (solved once per equivalent)."""
    angles = (np.arange(CONTOUR_POINTS) + 0.5) * np.pi / CONTOUR_POINTS
    w = radius * np.exp(1j * angles)
    with stage(f"the moments: m(w) at {2 * CONTOUR_POINTS} points of a circle"):
        m = stieltjes(_model(polynomial, ratios), w, tol).m
    w, m = np.r_[w, w.conj()], np.r_[m, m.conj()]
    return tuple(float(np.mean(m * w ** (j + 1)).real) for j in range(1, MOMENTS + 1))


class KeyWeightedLaw(PositionalLaw):
    """The law of :class:`~gemhsa_sym.layer.network.Network` ``network`` read after layer 2 or later (module docstring),
    at the tolerance ``tol`` of m(w); ``table`` its distribution function and ``moments`` its first moments where they
    were solved before (a library record: ``origin`` says so)."""

    def __init__(self, network: Network, tol: float = TOL, table: Distribution | None = None, origin: str = "solved",
                 moments: tuple[float, ...] = ()) -> None:
        self.source, self.tol, self.origin, self._table, self._moments = network, tol, origin, table, moments
        self.equivalent: NetworkEquivalent = equivalent_of(network)
        if not self.equivalent.key_weights:
            raise ValueError("network: this network's equivalent has no key weights; its law is a spectral law")
        self.model = _model(*_numeric(network))
        ratio = next(value for dim, value in self.equivalent.ratios.items() if str(dim) == "d")
        self._atom = max(sp.Integer(0), 1 - 1 / ratio)  # rank: out^T P out / n has at most n - 1 non-zero eigenvalues
        self.zero_mass = float(self._atom)
        self.seconds = 0.0

    def __repr__(self) -> str:
        return f"KeyWeightedLaw({self.source.summary()})"

    # ---- what is solved once ---------------------------------------------------------------
    @property
    def mean(self) -> float:
        """mu_1 from m(w) far out (:func:`far_mean`), which scales the grid; :meth:`moments` gives it by a contour integral."""
        return far_mean(self.source)

    def distribution(self) -> Distribution:
        """The distribution function on :data:`GRID` times the mean (:func:`key_weighted_table`), or the table given."""
        if self._table is not None:
            return self._table
        found, self.seconds = key_weighted_table(self.source, self.tol)
        return found

    @property
    def found(self) -> str:
        """How the distribution function was found: solved, or read from the library's record."""
        return {"solved": "solved", "library": "read from the library's record"}[self.origin]

    # ---- the protocol ----------------------------------------------------------------------
    def methods(self) -> dict[str, str]:
        equation = ("the positional Dyson equation of a polynomial with a diagonal of lognormal key weights (docs/equations.md "
                    "§2.12), on Gauss-Hermite rules of 8, 16, 32, 64 nodes until m changes by at most tol (1 + |m|)")
        return {
            "cdf": "the distribution function on a log-spaced grid: the mass below its first point by a contour integral of "
                   "m(w), then the density integrated in log x (docs/solving.md §3.11); between points the cubic in log x that "
                   "matches F and the density",
            "ccdf": "1 - cdf", "quantile": "bisection on cdf inside the grid", "density": f"-Im m(x + i0) / pi of {equation}",
            "stieltjes": equation, "moments": f"contour integrals of m(w) w^k on a circle around the grid's mass ({equation})",
            "atoms": "the rank of out^T P out / n: a mass 1 - n/d at 0 where d > n", "support": "(0, inf)",
            "achieved_error": "the level-to-level change of F, integrated, and the integration rule's estimate (docs/solving.md §3.11)",
            "record": "the record of the library (docs/exports.md §5.5)", "to_latex": "the record as a document",
        }

    def reasons(self) -> dict[str, str]:
        return {"edges": NO_EDGES, "tail_exponent": NO_EDGES,
                "sample": "the law has no finite realisation of its own; gemhsa_sym.sample draws the network"}

    def atoms(self) -> list[Atom]:
        return [Atom(0.0, float(self._atom), 0.0, sp.Rational(self._atom), "exact")] if self._atom > 0 else []

    def support(self) -> list[tuple[float, float]]:
        return [(0.0, math.inf)]

    def moments(self, k: int) -> list[float]:
        """mu_1 .. mu_k (k <= :data:`MOMENTS`): (1 / 2 pi i) of the contour integral of m(w) w^j on the circle of radius
        twice the grid's end, where F is 1 to within the achieved error (m is real on the real axis there, so the lower
        half circle is the conjugate of the upper one; :func:`_contour_moments`)."""
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MOMENTS:
            raise ValueError(f"k: this law gives moments 1 to {MOMENTS}, got {k!r}")
        if k <= len(self._moments):  # a record's, which derivations --check solves again
            return list(self._moments[:k])
        return list(_contour_moments(*_numeric(self.source), 2 * float(self.distribution().x[-1]), self.tol)[:k])

    def tail_exponent(self) -> float:
        raise NoAnswer("tail_exponent", NO_EDGES)

    # ---- reports ---------------------------------------------------------------------------
    def report(self, grid: np.ndarray | None = None) -> dict[str, Any]:
        """What ``derive`` prints: the network, the model and its constants, the mean and second moment, quantiles, the
        achieved error, what the later layers leave out; the density on ``grid`` when given."""
        law = self.distribution()
        quantiles = (0.1, 0.5, 0.9, 0.99)
        report: dict[str, Any] = {
            "network": self.source.to_dict(), "statement": self.source.statement,
            "model": f"Y = {self.equivalent.polynomial}",
            "values": {str(k): str(v) for k, v in self.equivalent.values.items()},
            "constants": {name: str(value) for name, value in self.equivalent.constants.items()},
            "key_weights": [f"{D.name} = diag(exp(tau g - tau^2/2)), g standard Gaussian: {D.entry}"
                            for D in self.equivalent.key_weights],
            "notes": list(self.equivalent.notes),
            "equation": self.methods()["stieltjes"], "nodes": law.nodes, "level": law.level, "error": law.error,
            "moments": self.moments(2), "quantiles": {"q": list(quantiles), "x": law.covered_quantiles(quantiles)},
            "atoms": [{"location": a.location, "mass": a.mass} for a in self.atoms()],
            "edges": NO_EDGES, "polynomial_reason": NO_POLYNOMIAL,
            "cdf": {"x": law.x.tolist(), "F": law.cdf.tolist(), "density": law.density.tolist()},
        }
        if grid is not None:
            values = density(self.model, grid, self.tol)
            report["density"] = {"x": list(map(float, grid)), "density": (-values.m.imag / np.pi).tolist(),
                                 "error": values.error.tolist()}
        return report

    def record(self) -> dict[str, Any]:
        """The library record of the law (:func:`~gemhsa_sym.export.positional_record.key_weighted_record`)."""
        return key_weighted_record(self.source, self.equivalent, self.report(), self.model, self.tol, self.source.name)

    def to_latex(self) -> str:
        return key_weighted_document(self.record())

    def tabulate(self, moments: int = 4, cdf: bool = True) -> TabulatedLaw:
        """The law's own table (:class:`~.tabulated.TabulatedLaw`), which holds it between its grid's ends; its table is
        F less the atom."""
        law = self.distribution()
        methods, refused = table_queries(self.methods(), self.reasons(), False)
        found = self.moments(min(moments, MOMENTS))
        atoms = [{"location": a.location, "mass": a.mass, "exact": str(a.exact)} for a in self.atoms()]
        return TabulatedLaw(self.source.to_dict(), law.x, law.cdf - float(self._atom), atoms, float(law.error), methods,
                            refused, False, None, [{"exact": None, "float": v} for v in found], None, None, law.density,
                            self.seconds, {"level": law.level, "nodes": law.nodes, "tol": self.tol})
