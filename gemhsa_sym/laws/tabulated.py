"""A law known on a table: what a law leaves for verification, caches and plots (docs/solving.md §3.15).

Solving a law is the expensive step, so verification asks it once, possibly in a worker process, for
its :class:`TabulatedLaw` (:meth:`~gemhsa_sym.laws.spectral.SpectralLaw.tabulate`,
:meth:`~gemhsa_sym.laws.causal.CausalLaw.tabulate`): the distribution function of the continuous part
on a grid (graded towards every edge of a compact support, or log-spaced over a heavy tail), the
atoms, and what else the law answers (moments exact where it gives them, edges, the Stieltjes transform
at fixed probe points, the tail exponent, the achieved error), each with its method, and the reason for
every query it does not answer. A table answers the same protocol as the law it summarises; its cdf is
linear between grid points, and where the table does not hold the whole law (a heavy tail cut at both
ends) it answers only inside the grid.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import mpmath
import numpy as np

from gemhsa_sym.free.numeric.results import Atom, Edge
from gemhsa_sym.free.positions.distribution_function import between_points
from gemhsa_sym.laws.protocol import Law, NoAnswer, check_points
from gemhsa_sym.parse import MAX_TEXT, parse_number

__all__ = ["CDF_POINTS", "PROBES", "TabulatedLaw", "table_queries", "tabulate", "validated"]

#: Points of the upper half plane where m(w) is kept; equal laws agree at all of them.
PROBES: tuple[complex, ...] = (-1 + 1j, 0.25 + 0.5j, 1 + 0.25j, 2 + 1j, 5 + 2j, 20 + 5j)
#: Points of the CDF table per support interval of a compact support.
CDF_POINTS = 2048


@dataclass(frozen=True, eq=False)
class TabulatedLaw(Law):
    """A law on a table (module docstring). ``moment_data[k]`` is ``{"exact": str | None, "float": float}`` for
    mu_{k+1}; ``edge_data`` and ``atom_data`` are the JSON entries of the record; ``whole`` says whether the
    table holds the whole law (outside the grid F is 0 below and its last value above)."""

    source: dict[str, Any]
    grid: np.ndarray = field(repr=False)
    table: np.ndarray = field(repr=False)
    atom_data: list[dict[str, Any]]
    error: float
    answered: dict[str, str]
    refused: dict[str, str]
    whole: bool = True
    edge_data: list[dict[str, Any]] | None = None
    moment_data: list[dict[str, Any]] | None = None
    probes: list[complex] | None = field(default=None, repr=False)
    tail: float | None = None
    density_table: np.ndarray | None = field(default=None, repr=False)
    seconds: float = 0.0
    #: What the kind of law needs to be rebuilt from its table (a causal law's level and nodes).
    detail: dict[str, Any] = field(default_factory=dict)

    # ---- the protocol ----------------------------------------------------------------------
    def methods(self) -> Mapping[str, str]:
        return self.answered

    def reasons(self) -> Mapping[str, str]:
        return self.refused

    def atoms(self) -> list[Atom]:
        return [Atom(float(a["location"]), float(a["mass"]), float(a.get("error", 0.0)),
                     None if a.get("exact") is None else parse_number(str(a["exact"]), "atoms.exact"), "exact")
                for a in self.atom_data]

    def edges(self) -> list[Edge]:
        if self.edge_data is None:
            raise NoAnswer("edges", self.refused.get("edges", "not tabulated"))
        return [Edge(mpmath.mpf(e["location"]), e["side"], e["hard"], e.get("refined", True), 16) for e in self.edge_data]

    def support(self) -> list[tuple[float, float]]:
        if self.edge_data is None:
            return [(float(self.grid[0]), math.inf)] if not self.whole else []
        locations = [float(e["location"]) for e in self.edge_data]
        return list(zip(locations[::2], locations[1::2]))

    def achieved_error(self) -> float:
        return self.error

    def moments(self, k: int) -> list[Any]:
        if self.moment_data is None:
            raise NoAnswer("moments", self.refused.get("moments", "not tabulated"))
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= len(self.moment_data):
            raise ValueError(f"k: this table holds moments 1 to {len(self.moment_data)}, got {k!r}")
        return [parse_number(m["exact"], "moments") if m["exact"] is not None else m["float"] for m in self.moment_data[:k]]

    def tail_exponent(self) -> float:
        if self.tail is None:
            raise NoAnswer("tail_exponent", self.refused.get("tail_exponent", "not tabulated"))
        return self.tail

    def stieltjes(self, w: Any) -> Any:
        """m(w) at the probe points :data:`PROBES` (the only points a table keeps)."""
        if self.probes is None:
            raise NoAnswer("stieltjes", self.refused.get("stieltjes", "not tabulated"))
        points = np.atleast_1d(np.asarray(w, dtype=complex))
        index = [PROBES.index(p) if p in PROBES else -1 for p in points]
        if -1 in index:
            raise ValueError(f"w: a table keeps m(w) at the probe points {', '.join(map(str, PROBES))} only")
        out = np.array([self.probes[i] for i in index])
        return out if np.ndim(w) else complex(out[0])

    def quantile_bracket(self) -> tuple[float, float, bool]:
        if self.whole:
            return super().quantile_bracket()
        return float(self.grid[0]), float(self.grid[-1]), False

    def cdf(self, x: Any) -> Any:
        """P(lambda <= x): the atoms plus the table, between grid points the cubic in log x that matches it and the
        density where the table has one on a positive grid (:func:`~gemhsa_sym.free.positions.profiled_law.between_points`),
        else linear; inside the grid only where the table does not hold the whole law."""
        xa = check_points(x)
        if not self.whole and np.any((xa < self.grid[0]) | (xa > self.grid[-1])):
            raise ValueError(f"x: this law's distribution function is tabulated on [{self.grid[0]:g}, {self.grid[-1]:g}] only")
        out = np.array(np.interp(xa, self.grid, self.table, left=0.0, right=float(self.table[-1])), dtype=float)
        if self.density_table is not None and self.grid[0] > 0:
            inside = (xa >= self.grid[0]) & (xa <= self.grid[-1])
            out[inside] = between_points(self.grid, self.table, self.density_table, xa[inside])
        for atom in self.atom_data:
            out = out + atom["mass"] * (xa >= atom["location"])
        return out if out.ndim else float(out)

    def density(self, x: Any) -> Any:
        """The density of the continuous part: the tabulated density where the table has one, else the slope of
        the cdf table between its grid points."""
        xa = check_points(x)
        if not self.whole and np.any((xa < self.grid[0]) | (xa > self.grid[-1])):
            raise ValueError(f"x: this law's density is tabulated on [{self.grid[0]:g}, {self.grid[-1]:g}] only")
        if self.density_table is not None:
            out = np.interp(xa, self.grid, self.density_table, left=0.0, right=0.0)
        else:
            step = np.diff(self.grid)
            keep = step > 0
            middle = ((self.grid[:-1] + self.grid[1:]) / 2)[keep]
            slope = (np.diff(self.table)[keep] / step[keep]).clip(min=0.0)
            inside = (xa >= self.grid[0]) & (xa <= self.grid[-1])
            out = np.where(inside, np.interp(xa, middle, slope), 0.0)
        return out if out.ndim else float(out)

    def tabulate(self, moments: int = 4, cdf: bool = True) -> TabulatedLaw:
        """Itself."""
        return self

    # ---- properties verification reads -----------------------------------------------------
    @property
    def top_edge(self) -> float:
        """The largest point of the support (0 for a law without a continuous part; the grid's end for a table
        that does not hold the whole law)."""
        if self.edge_data is None:
            return float(self.grid[-1])
        return max((float(e["location"]) for e in self.edge_data if e["side"] == "upper"), default=0.0)

    def atom_mass(self) -> float:
        """Total mass of the atoms."""
        return sum(a["mass"] for a in self.atom_data)

    # ---- JSON ------------------------------------------------------------------------------
    def to_json_dict(self) -> dict[str, Any]:
        """Everything, as JSON types (complex probes as [re, im] pairs)."""
        return {"source": self.source, "grid": self.grid.tolist(), "table": self.table.tolist(), "atoms": self.atom_data,
                "error": self.error, "answered": self.answered, "refused": self.refused, "whole": self.whole,
                "edges": self.edge_data, "moments": self.moment_data,
                "probes": None if self.probes is None else [[p.real, p.imag] for p in self.probes],
                "tail": "inf" if self.tail == math.inf else self.tail, "density": None if self.density_table is None else self.density_table.tolist(),
                "seconds": self.seconds, "detail": self.detail}

    @classmethod
    def from_json_dict(cls, data: dict[str, Any]) -> TabulatedLaw:
        """The inverse of :meth:`to_json_dict`."""
        return cls(source=data["source"], grid=np.array(data["grid"], dtype=float), table=np.array(data["table"], dtype=float),
                   atom_data=data["atoms"], error=float(data["error"]), answered=dict(data["answered"]),
                   refused=dict(data["refused"]), whole=bool(data["whole"]), edge_data=data["edges"], moment_data=data["moments"],
                   probes=None if data["probes"] is None else [complex(re, im) for re, im in data["probes"]],
                   tail=math.inf if data["tail"] == "inf" else data["tail"], density_table=None if data["density"] is None else np.array(data["density"], dtype=float),
                   seconds=float(data["seconds"]), detail=dict(data["detail"]))


def _graded(a: float, b: float, hard: bool, points: int) -> np.ndarray:
    """Points of [a, b] crowded towards the edges: cosine, or at a hard edge s^4 preceded by
    64 logarithmic points from 1e-40 (b - a) (the mass near 0 may decay only like a small power)."""
    s = np.linspace(0.0, 1.0, points)
    if hard:
        graded = a + (b - a) * s**4
        return np.concatenate([[a], a + np.geomspace(1e-40 * (b - a), graded[1], 64, endpoint=False), graded[1:]])
    return a + (b - a) * (1 - np.cos(np.pi * s)) / 2


def tabulate(law: Law, source: dict[str, Any], moments: list[dict[str, Any]], probes: list[complex], edges: list[Edge],
             cdf: bool = True) -> TabulatedLaw:
    """The table of a law of compact support (:class:`TabulatedLaw`): its cdf without the atoms on :data:`CDF_POINTS`
    points of every support interval between ``edges`` (those the law's cdf is built on, to 16 digits) graded towards
    them (``cdf=False``: no table), atoms, ``moments`` and ``probes`` (m at :data:`PROBES`), methods and reasons, and
    the seconds this took. An exact moment longer than the number grammar reads back (:data:`~gemhsa_sym.parse.MAX_TEXT`
    characters) is kept as its float, so that the table reads back."""
    start = time.perf_counter()
    moments = [m if m["exact"] is None or len(m["exact"]) <= MAX_TEXT else m | {"exact": None} for m in moments]
    atoms = law.atoms()
    grids, values = [np.zeros(0)], [np.zeros(0)]
    if cdf:
        for lo, hi in zip(edges[::2], edges[1::2]):
            x = _graded(float(lo.location), float(hi.location), lo.hard, CDF_POINTS)
            grids.append(x)
            values.append(np.asarray(law.cdf(x)) - sum(a.mass * (x >= a.location) for a in atoms))
    edge_data = [{"location": float(e.location), "side": e.side, "hard": e.hard, "refined": e.refined} for e in edges]
    atom_data = [{"location": a.location, "mass": a.mass, "error": a.error, "exact": None if a.exact is None else str(a.exact)}
                 for a in atoms]
    methods, reasons = table_queries(law.methods(), law.reasons(), True)
    tabulated = cdf and len(grids) > 1  # a law of atoms alone (the point mass) has no continuous part to tabulate
    return TabulatedLaw(source, np.concatenate(grids) if tabulated else np.zeros(1), np.concatenate(values) if tabulated else np.zeros(1),
                        atom_data, law.achieved_error(), methods, reasons, True, edge_data, moments, probes,
                        law.tail_exponent(), None, time.perf_counter() - start)


def table_queries(methods: Mapping[str, str], reasons: Mapping[str, str], probes: bool) -> tuple[dict[str, str], dict[str, str]]:
    """The methods and reasons of a law's table: those of the law, but a table keeps no record and draws no sample, its
    m(w) is the probe points' alone (where it keeps them), and its cdf and density are read off the table."""
    refused = {**reasons, "record": "a table keeps no record; the law it summarises has it",
               "to_latex": "a table keeps no record; the law it summarises has it",
               "sample": "a table draws no sample; the law it summarises may"}
    if not probes:
        refused["stieltjes"] = "this table keeps no values of m(w)"
    kept = {key: value for key, value in methods.items() if key not in refused}
    for key in ("cdf", "density"):
        if key in kept:
            kept[key] = f"the table (linear between grid points) of: {kept[key]}"
    if probes:
        kept["stieltjes"] = f"m(w) at the probe points {', '.join(map(str, PROBES))} only, of: {methods['stieltjes']}"
    return kept, refused


def _finite_floats(value: Any, what: str) -> np.ndarray:
    array = np.asarray(value, dtype=float)
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{what} has values that are not finite")
    return array


def validated(data: Any, source: Mapping[str, Any], tabulated: bool) -> TabulatedLaw:
    """The :class:`TabulatedLaw` of JSON data for ``source``, or ValueError saying what is wrong with it: its fields
    and their types, its source, a table in [0, 1] (up to the achieved error) that never decreases on an increasing
    grid, a total mass of 1 where the table holds the whole law, edges in order, and each moment's float equal to its
    exact value; ``tabulated`` False allows the one-point table of a law summarised without its cdf."""
    try:
        if not isinstance(data, dict) or data.get("source") != source:
            raise ValueError("it belongs to another configuration")
        law = TabulatedLaw.from_json_dict(data)
        grid, table = _finite_floats(law.grid, "the grid"), _finite_floats(law.table, "the CDF table")
        if grid.shape != table.shape or grid.ndim != 1 or (tabulated and grid.size < 2 and law.edge_data):
            raise ValueError("the CDF table does not match its grid")
        if law.density_table is not None and _finite_floats(law.density_table, "the density").shape != grid.shape:
            raise ValueError("the density table does not match its grid")
        if not (math.isfinite(law.error) and 0 <= law.error < 1):
            raise ValueError(f"the achieved error {law.error} is not a number in [0, 1)")
        slack = 1e-9 + law.error
        if tabulated and (np.any(np.diff(grid) < 0) or np.any(np.diff(table) < -1e-9) or table.min() < -slack
                          or table.max() > 1 + slack):
            raise ValueError("the CDF table is not a distribution function")
        atoms = sum(float(a["mass"]) for a in law.atom_data)
        if tabulated and law.whole and abs(atoms + float(table[-1]) - 1) > 1e-6:
            raise ValueError(f"the masses add up to {atoms + float(table[-1])}, not 1")
        if law.edge_data is not None:
            locations = _finite_floats([e["location"] for e in law.edge_data], "the edges")
            if np.any(np.diff(locations) < 0) or [e["side"] for e in law.edge_data] != ["lower", "upper"] * (len(locations) // 2):
                raise ValueError("the edges are not in order")
        for k, moment in enumerate(law.moment_data or [], 1):
            value = float(moment["float"])
            if moment["exact"] is not None:
                exact = float(parse_number(str(moment["exact"]), f"moment {k}"))
                if not np.isclose(value, exact, rtol=1e-9, atol=0):
                    raise ValueError(f"moment {k} is {value}, but its exact value {moment['exact']} is {exact}")
        if law.probes is not None:
            _finite_floats([[p.real, p.imag] for p in law.probes], "the probes")
    except (KeyError, TypeError, AttributeError, IndexError) as exc:
        raise ValueError(f"a field is missing or of the wrong type ({type(exc).__name__}: {exc})") from None
    return law
