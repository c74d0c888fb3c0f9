"""The law of a causal layer through the one protocol (docs/solving.md §3.15, docs/extensions.md §8.6).

A causal layer's law (without its uniform part) has a heavy tail and no moments, edges or P(m, w): it is known
by its distribution function on a log-spaced grid (:func:`~gemhsa_sym.laws.causal.causal_distribution`, solved,
or read back from a library record or a cache), and m(w) and the density are solved afresh from the discretised
equation of its positions (:func:`~gemhsa_sym.laws.causal.causal_model`) to the law's tolerance. Every query it
cannot answer says why.
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np

from gemhsa_sym.export.positional_document import causal_document
from gemhsa_sym.export.positional_record import causal_latex, causal_record
from gemhsa_sym.free.positions.distribution_function import Distribution
from gemhsa_sym.free.positions.two_point_solver import MaskedScoresModel
from gemhsa_sym.laws.causal import (
    REPORT_TOL,
    UNRESOLVED_TAIL,
    causal_distribution,
    causal_model,
    causal_report,
    causal_tail,
)
from gemhsa_sym.laws.positional import PositionalLaw, validated_distribution
from gemhsa_sym.laws.protocol import NoAnswer
from gemhsa_sym.laws.tabulated import TabulatedLaw, table_queries
from gemhsa_sym.layer.config import Config

__all__ = ["CausalLaw", "NO_MOMENTS"]

#: Why a causal law has no moments.
NO_MOMENTS = ("the law has a heavy tail, P(lambda > x) ~ c / x^kappa with kappa near 1 (row i of the noise has variance n / i), "
              "so its mean and every higher moment diverge")
#: Why it has no edges.
NO_EDGES = "the support is (0, inf): the heavy tail has no upper edge, and the mass reaches down to 0"


class CausalLaw(PositionalLaw):
    """The law of the causal layer ``config`` (module docstring), at the tolerance ``tol`` of m(w); ``table`` its
    distribution function where it was solved before (a library record or a cache: ``origin`` says which)."""

    def __init__(self, config: Config, table: Distribution | None = None, tol: float = REPORT_TOL, origin: str = "solved") -> None:
        if not config.mask_rule.causal:
            raise ValueError(f"mask: a causal law is the law of a causal layer; this configuration has mask = {config.mask!r}")
        self.config, self.tol, self.origin = config, tol, origin
        self.model = causal_model(config)  # NotImplementedError naming the field where no equation is written
        self._table, self.seconds = table, 0.0

    def __repr__(self) -> str:
        return f"CausalLaw({self.config.summary()})"

    def distribution(self) -> Distribution:
        """The distribution function on its grid (solved once, with the seconds it took in :attr:`seconds`)."""
        if self._table is None:
            start = time.perf_counter()
            self._table = causal_distribution(self.config, self.tol)
            self.seconds = time.perf_counter() - start
        return self._table

    @property
    def masked(self) -> bool:
        """Whether the law is that of masked scores (the two-point equation), not of a variance profile."""
        return isinstance(self.model, MaskedScoresModel)

    @property
    def found(self) -> str:
        """How the distribution function was found: solved, or read from the library's record or a cache."""
        return {"solved": "solved", "library": "read from the library's record", "cache": "read from the cache"}[self.origin]

    # ---- the protocol ----------------------------------------------------------------------
    def methods(self) -> dict[str, str]:
        equation = ("the two-point Dyson equation of the masked scores (docs/equations.md §2.11)" if self.masked else
                    "the Dyson equation of the variance profile 1{u <= t} / t^2 (docs/equations.md §2.9)")
        found = self.found
        out = {
            "cdf": f"the distribution function on its log-spaced grid ({found}): the mass below the first point by a contour "
                   f"integral of m(w), then the density integrated in log x (docs/solving.md §3.11); between points the cubic "
                   f"in log x that matches F and the density",
            "ccdf": "1 - cdf", "quantile": "bisection on cdf inside the grid",
            "density": f"-Im m(x + i0) / pi of {equation}, discretised level by level until m is within tol (1 + |m|)",
            "stieltjes": f"{equation}, discretised level by level until m is within tol (1 + |m|)",
            "atoms": "none: no eigenvalue keeps a positive fraction of the mass at one point",
            "support": "(0, inf)",
            "achieved_error": "every point's error (its change from the level before, or the two-point levels' estimate) times its "
                              "weight in F, summed, and the integration rule's estimate (docs/solving.md §3.11)",
            "record": "the record of the library (docs/exports.md §5.5)", "to_latex": "the record as a document",
        }
        if not self.masked:
            out["tail_exponent"] = "the log-log slope of the density over the top fifth of the grid"
        return out

    def reasons(self) -> dict[str, str]:
        out = {"moments": NO_MOMENTS, "edges": NO_EDGES,
               "sample": "the law has no finite realisation of its own; gemhsa_sym.sample draws the causal layer and its "
                         "Gaussian equivalent"}
        if self.masked:
            out["tail_exponent"] = UNRESOLVED_TAIL
        return out

    def atoms(self) -> list:
        return []

    def support(self) -> list[tuple[float, float]]:
        return [(0.0, math.inf)]

    def tail_exponent(self) -> float:
        value = causal_tail(self.config, self.distribution())
        if value is None:
            raise NoAnswer("tail_exponent", UNRESOLVED_TAIL)
        return value

    def report(self, grid: np.ndarray | None = None) -> dict[str, Any]:
        """What ``derive`` prints (:func:`~gemhsa_sym.laws.causal.causal_report`), the density on ``grid`` when given."""
        return causal_report(self.config, grid, self.distribution())

    def record(self) -> dict[str, Any]:
        return causal_record(self.config, self.distribution(), self.config.name)

    def to_latex(self) -> str:
        return causal_document(self.record())

    def _repr_latex_(self) -> str:
        """For notebooks: the coefficients, a row of the Gaussian equivalent and the equations of the law."""
        tex = causal_latex(self.config)
        return r"$\begin{aligned}" + r" \\ ".join(rf"&{row}" for part in tex.values() for row in part) + r"\end{aligned}$"

    def tabulate(self, moments: int = 4, cdf: bool = True) -> TabulatedLaw:
        """The law's own table (:class:`~.tabulated.TabulatedLaw`), which holds it between its grid's ends only."""
        law = self.distribution()
        tail = None if self.masked else self.tail_exponent()
        methods, refused = table_queries(self.methods(), self.reasons(), False)
        return TabulatedLaw(self.config.to_dict(), law.x, law.cdf, [], float(law.error), methods, refused, False, None, None, None,
                            tail, law.density, self.seconds, {"level": law.level, "nodes": law.nodes, "tol": self.tol})

    @classmethod
    def from_table(cls, config: Config, table: TabulatedLaw, origin: str = "cache") -> CausalLaw:
        """The law of ``config`` from its table (:meth:`tabulate`, kept in a cache), validated as a record's distribution
        function is (:func:`~gemhsa_sym.laws.positional.validated_distribution`)."""
        try:
            entry = {"config": table.source, "tol": table.detail["tol"], "x": table.grid.tolist(), "cdf": table.table.tolist(),
                     "density": None if table.density_table is None else table.density_table.tolist(), "error": table.error,
                     "level": table.detail["level"], "nodes": table.detail["nodes"]}
        except KeyError:
            raise ValueError("the table is not a causal law's: it has no level and nodes") from None
        return cls(config, validated_distribution(entry, config, entry["tol"]), entry["tol"], origin)

