"""The one protocol every law answers (docs/solving.md §3.15).

A law is a thin public face over a few pieces, as scipy's distributions are: each kind of law
implements ``cdf``, ``density``, ``atoms``, ``support``, ``achieved_error`` and says which of the other
queries it answers and by which method (:meth:`Law.methods`); every query it cannot answer raises
:class:`NoAnswer` with the reason (a heavy-tailed law has no moments, a tabulated law no Stieltjes
transform off its table). ``ccdf`` and ``quantile`` are derived once, here, from ``cdf``. Callers ask a
law what it answers (:meth:`Law.answers`, :meth:`Law.reason`) instead of testing its type.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from gemhsa_sym.free.numeric.results import Atom, Edge

if TYPE_CHECKING:
    from scipy import stats

__all__ = ["QUERIES", "Law", "NoAnswer", "check_points", "choose_method"]

#: The queries of the protocol, in the order a summary lists them.
QUERIES: tuple[str, ...] = ("cdf", "ccdf", "quantile", "density", "stieltjes", "sample", "moments", "edges", "atoms",
                            "support", "tail_exponent", "achieved_error", "record", "to_latex")
#: Bisection steps of the generic quantile (the bracket shrinks to 2^-60 of its width).
QUANTILE_STEPS = 60


class NoAnswer(ValueError):
    """A query this law cannot answer, with the reason (``query``, ``reason``)."""

    def __init__(self, query: str, reason: str) -> None:
        super().__init__(f"{query}: {reason}")
        self.query, self.reason = query, reason


def check_points(x: Any, field: str = "x") -> np.ndarray:
    """Real points as a float array: TypeError for what is not a number, ValueError for NaN (as scipy's
    ``ValueError`` names the parameter)."""
    array = np.asarray(x)
    if array.dtype.kind not in "biuf":
        raise TypeError(f"{field}: expected real numbers, got {array.dtype} values")
    array = array.astype(float)
    if np.any(np.isnan(array)):
        raise ValueError(f"{field}: got NaN, which is not a number")
    return array


def choose_method(method: str | None, default: str, allowed: tuple[str, ...], field: str = "method") -> str:
    """The method a query names, or its default by a fixed rule (never what ran before); ValueError naming ``field``."""
    chosen = default if method is None else method
    if chosen not in allowed:
        raise ValueError(f"{field}: unknown method {method!r}; choose one of {', '.join(allowed)}")
    return chosen


class Law(ABC):
    """The law of the eigenvalues of a spectral object (module docstring)."""

    # ---- the pieces a law implements -------------------------------------------------------
    @abstractmethod
    def cdf(self, x: Any) -> Any:
        """P(lambda <= x), atoms included."""

    @abstractmethod
    def density(self, x: Any) -> Any:
        """The density of the continuous part at real points."""

    @abstractmethod
    def atoms(self) -> list[Atom]:
        """The point masses (an empty list where there are none)."""

    @abstractmethod
    def support(self) -> list[tuple[float, float]]:
        """The intervals of the continuous part (an upper end inf for a heavy tail)."""

    @abstractmethod
    def achieved_error(self) -> float:
        """A bound on the error of :meth:`cdf` (the method says how it is measured)."""

    @abstractmethod
    def methods(self) -> Mapping[str, str]:
        """For every query this law answers, the method that answers it."""

    @abstractmethod
    def reasons(self) -> Mapping[str, str]:
        """For every query this law does not answer, why."""

    # ---- what a law answers ----------------------------------------------------------------
    def answers(self, query: str) -> bool:
        """Whether this law answers ``query`` (one of :data:`QUERIES`)."""
        return self.reason(query) is None

    def reason(self, query: str) -> str | None:
        """Why this law does not answer ``query``; None where it does."""
        if query not in QUERIES:
            raise ValueError(f"query: unknown query {query!r}; choose one of {', '.join(QUERIES)}")
        return self.reasons().get(query)

    def _refuse(self, query: str) -> NoAnswer:
        return NoAnswer(query, self.reason(query) or "not answered by this law")

    # ---- queries with a reason by default --------------------------------------------------
    def stieltjes(self, w: Any) -> Any:
        """m(w) = E 1/(w - lambda) off the support."""
        raise self._refuse("stieltjes")

    def sample(self, N: int, seed: int = 0, draws: int = 1) -> np.ndarray:
        """Eigenvalues of finite realisations at size N (one row per draw)."""
        raise self._refuse("sample")

    def moments(self, k: int) -> list[Any]:
        """The first ``k`` moments, exact where the law gives them."""
        raise self._refuse("moments")

    def edges(self) -> list[Edge]:
        """The edges of the support, lower and upper alternating."""
        raise self._refuse("edges")

    def tail_exponent(self) -> float:
        """kappa in P(lambda > x) ~ c x^-kappa (inf for a compact support)."""
        raise self._refuse("tail_exponent")

    def record(self) -> Any:
        """Everything the law has derived, as exportable data."""
        raise self._refuse("record")

    def to_latex(self) -> str:
        """A standalone LaTeX document of the law."""
        raise self._refuse("to_latex")

    # ---- derived once from cdf -------------------------------------------------------------
    def ccdf(self, x: Any) -> Any:
        """P(lambda > x) = 1 - cdf(x)."""
        out = 1 - np.asarray(self.cdf(x), dtype=float)
        return out if out.ndim else float(out)

    def quantile_bracket(self) -> tuple[float, float, bool]:
        """(lo, hi, whole): the quantile searches [lo, hi], where :meth:`cdf` is answered; ``whole`` when that
        holds the whole law, so that level 0 is its lowest point and level 1 its highest."""
        intervals = self.support()
        points = [a.location for a in self.atoms()] + [x for interval in intervals for x in interval]
        lo, hi = min(points, default=0.0), max(points, default=0.0)
        if not math.isfinite(hi):
            raise self._refuse("quantile")
        return min(lo, 0.0), hi, True

    def quantile(self, q: Any) -> Any:
        """The smallest x with cdf(x) >= q, by bisection on the monotone cdf within :meth:`quantile_bracket`; at
        q = 0 and q = 1 the lowest and highest points of the law, as scipy's ``ppf``. A level within an atom of
        exactly known mass gives its location exactly (the answer must not depend on the last bit of a sum)."""
        qa = check_points(q, "q")
        if np.any((qa < 0) | (qa > 1)):
            raise ValueError("q: quantile levels must lie in [0, 1]")
        lo0, hi0, whole = self.quantile_bracket()
        if not whole:
            covered = np.asarray(self.cdf(np.array([lo0, hi0])), dtype=float)
            outside = (qa < covered[0]) | (qa > covered[1])
            if np.any(outside):
                raise ValueError(f"q: this law's cdf is answered on [{lo0:g}, {hi0:g}], where it runs from "
                                 f"{covered[0]:.4g} to {covered[1]:.4g}; level {qa[outside].flat[0]:g} lies outside")
        lo, hi = np.full_like(qa, lo0), np.full_like(qa, hi0)
        for _ in range(QUANTILE_STEPS):
            mid = (lo + hi) / 2
            below = np.asarray(self.cdf(mid)) < qa
            lo, hi = np.where(below, mid, lo), np.where(below, hi, mid)
        atoms = self.atoms()
        points = [a.location for a in atoms] + [x for interval in self.support() for x in interval]
        lowest = [a for a in atoms if a.location <= min(points)]
        if lowest and whole:
            mass = sum(float(a.exact) if a.exact is not None else a.mass for a in lowest)
            hi = np.where((qa > 0) & (qa <= mass), lowest[0].location, hi)
        if whole:
            hi = np.where(qa == 0, min(points, default=0.0), np.where(qa == 1, max(points, default=0.0), hi))
        return hi if hi.ndim else float(hi)

    def to_scipy(self) -> stats.rv_continuous:
        """This law as a ``scipy.stats.rv_continuous`` distribution without shape parameters: its ``cdf``, ``pdf``,
        ``ppf``, ``moment`` (where the law has moments), ``rvs`` (by the quantile) and every ``scipy.stats`` tool
        that takes a distribution or its ``cdf`` (``ks_1samp``) read this law; ``scipy.stats.make_distribution``
        accepts it where scipy has it. Refused (:class:`NoAnswer`) where the cdf is answered on a range only."""
        from scipy import stats  # imported on use: scipy.stats costs half a second to import

        lo, hi, whole = self.quantile_bracket()
        if not whole:
            raise NoAnswer("to_scipy", f"this law's cdf is answered on [{lo:g}, {hi:g}] only, not on the whole line")
        law = self
        moments: dict[int, float] = {}

        def munp(self: stats.rv_continuous, k: Any) -> float:
            order = int(k)
            if order not in moments:
                moments[order] = float(law.moments(order)[-1])
            return moments[order]

        methods = {"_cdf": lambda self, x: np.asarray(law.cdf(x), dtype=float),
                   "_pdf": lambda self, x: np.asarray(law.density(x), dtype=float),
                   "_ppf": lambda self, q: np.asarray(law.quantile(q), dtype=float), "_munp": munp,
                   "_shape_info": lambda self: []}
        kind = type(self.__class__.__name__ + "Distribution", (stats.rv_continuous,), methods)
        return kind(a=lo, b=hi, name=type(self).__name__)
