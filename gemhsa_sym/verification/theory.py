"""A picklable, JSON-exportable summary of a derived law: what verification needs of the theory.

Solving the law (support, CDF) is the expensive step, so it runs once per
configuration, possibly in a worker process, and returns a :class:`Theory`:
moments (exact when the law gives them symbolically), support edges, atoms, the
CDF of the continuous part tabulated on a grid graded towards every edge (the
law's own CDF, :meth:`SpectralLaw.cdf`, at those points; the density for plots
is its derivative), and the Stieltjes transform at fixed probe points (to decide whether two laws
are equal without sampling).
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from gemhsa_sym.export.record import atom_entry, edge_entry
from gemhsa_sym.laws.resolve import law_of
from gemhsa_sym.laws.spectral import SpectralLaw
from gemhsa_sym.layer.config import Config
from gemhsa_sym.layer.polynomial_model import PolynomialModel
from gemhsa_sym.parse import parse_number
from gemhsa_sym.verification.entries import entry_file, read_entry, write_entry

__all__ = ["PROBES", "Theory", "cache_file", "theory_of", "theory_task", "validated"]

#: Points of the upper half plane where m(w) is recorded; equal laws agree at all of them.
PROBES: tuple[complex, ...] = (-1 + 1j, 0.25 + 0.5j, 1 + 0.25j, 2 + 1j, 5 + 2j, 20 + 5j)
#: Points of the CDF table per support interval.
CDF_POINTS = 2048
#: Version of the cache files; bumped whenever :class:`Theory` changes.
CACHE_FORMAT = 4


@dataclass(frozen=True)
class Theory:
    """Summary of the limiting law of one configuration (see the module docstring).

    ``moments[k]`` is ``{"exact": str | None, "float": float}`` for mu_{k+1};
    ``edges`` and ``atoms`` are plain dicts; ``grid``/``cdf_continuous`` tabulate
    the continuous part of the CDF.
    """

    config: dict[str, Any]
    moments: list[dict[str, Any]]
    edges: list[dict[str, Any]]
    atoms: list[dict[str, Any]]
    grid: np.ndarray = field(repr=False)
    cdf_continuous: np.ndarray = field(repr=False)
    probes: list[complex] = field(repr=False)
    seconds: float = 0.0

    @property
    def moment_values(self) -> np.ndarray:
        """mu_1, mu_2, ... as floats."""
        return np.array([m["float"] for m in self.moments])

    @property
    def top_edge(self) -> float:
        """The largest point of the support (0 for a law without a continuous part)."""
        return max((e["location"] for e in self.edges if e["side"] == "upper"), default=0.0)

    def atom_mass(self) -> float:
        """Total mass of the atoms."""
        return sum(a["mass"] for a in self.atoms)

    def cdf(self, x: Any) -> np.ndarray:
        """P(lambda <= x): the atoms plus the tabulated continuous part (linear between grid points)."""
        xa = np.asarray(x, dtype=float)
        out = np.interp(xa, self.grid, self.cdf_continuous, left=0.0, right=float(self.cdf_continuous[-1]))
        for atom in self.atoms:
            out = out + atom["mass"] * (xa >= atom["location"])
        return out

    def density(self, stride: int = 4) -> tuple[np.ndarray, np.ndarray]:
        """(x, rho) of the continuous part: slopes of the CDF table over ``stride`` grid steps (for plots)."""
        x, F = self.grid[::stride], self.cdf_continuous[::stride]
        step = np.diff(x)
        keep = step > 0
        return ((x[:-1] + x[1:])[keep] / 2, (np.diff(F)[keep] / step[keep]).clip(min=0.0))

    def quantile(self, q: Any) -> np.ndarray:
        """The smallest x with cdf(x) >= q, linear between the table's points."""
        qa = np.asarray(q, dtype=float)
        x = np.concatenate([[min(0.0, float(self.grid[0]))], self.grid])
        F = np.maximum.accumulate(self.cdf(x))
        i = np.clip(np.searchsorted(F, qa, side="left"), 1, len(x) - 1)
        rise = F[i] - F[i - 1]
        t = np.where(rise > 0, (qa - F[i - 1]) / np.where(rise > 0, rise, 1.0), 1.0)
        return np.where(qa <= F[0], x[0], x[i - 1] + np.clip(t, 0.0, 1.0) * (x[i] - x[i - 1]))

    def to_json_dict(self) -> dict[str, Any]:
        """Everything, as JSON types (complex probes as [re, im] pairs)."""
        data = asdict(self)
        data["grid"] = self.grid.tolist()
        data["cdf_continuous"] = self.cdf_continuous.tolist()
        data["probes"] = [[p.real, p.imag] for p in self.probes]
        return data

    @classmethod
    def from_json_dict(cls, data: dict[str, Any]) -> Theory:
        """The inverse of :meth:`to_json_dict`."""
        return cls(
            config=data["config"], moments=data["moments"], edges=data["edges"], atoms=data["atoms"],
            grid=np.array(data["grid"]), cdf_continuous=np.array(data["cdf_continuous"]),
            probes=[complex(re, im) for re, im in data["probes"]], seconds=data["seconds"],
        )


def _moments(law: SpectralLaw, k: int) -> list[dict[str, Any]]:
    """mu_1..mu_k: exact from ``law.moments(k)`` when it gives numbers, else the contour rule."""
    values = law.moments(k)
    if all(v.is_number for v in values):
        return [{"exact": str(v), "float": float(v)} for v in values]
    return [{"exact": None, "float": float(v)} for v in law.numeric_moments(k)]


def _graded(a: float, b: float, hard: bool, points: int) -> np.ndarray:
    """Points of [a, b] crowded towards the edges: cosine, or at a hard edge s^4 preceded by
    64 logarithmic points from 1e-40 (b - a) (the mass near 0 may decay only like a small power)."""
    s = np.linspace(0.0, 1.0, points)
    if hard:
        graded = a + (b - a) * s**4
        return np.concatenate([[a], a + np.geomspace(1e-40 * (b - a), graded[1], 64, endpoint=False), graded[1:]])
    return a + (b - a) * (1 - np.cos(np.pi * s)) / 2


def theory_of(law: SpectralLaw, config: Config | PolynomialModel | None = None, moments: int = 4, cdf: bool = True) -> Theory:
    """The :class:`Theory` of ``law``; ``cdf=False`` skips the CDF table (moments, edges, atoms only)."""
    start = time.perf_counter()
    edges, atoms = law.edges(dps=16), law.atoms()  # the edges and atoms the CDF is built on
    grids, values = [np.zeros(0)], [np.zeros(0)]
    if cdf:
        for lo, hi in zip(edges[::2], edges[1::2]):
            a, b = float(lo.location), float(hi.location)
            x = _graded(a, b, lo.hard, CDF_POINTS)
            grids.append(x)
            values.append(np.asarray(law.cdf(x)) - sum(a.mass * (x >= a.location) for a in atoms))
    probes = [complex(m) for m in np.atleast_1d(law.stieltjes(np.array(PROBES)))]
    return Theory(
        config={} if config is None else config.to_dict(),
        moments=_moments(law, moments),
        edges=[edge_entry(e, None) for e in edges],
        atoms=[atom_entry(a, error=True) for a in atoms],
        grid=np.concatenate(grids) if cdf else np.zeros(1),
        cdf_continuous=np.concatenate(values) if cdf else np.zeros(1),
        probes=probes,
        seconds=time.perf_counter() - start,
    )


def cache_file(cache: Path, config: Config | PolynomialModel, cdf: bool) -> Path:
    """Where the summary of ``config`` (with or without the CDF table) is kept in the folder ``cache``:
    the name is a hash of the cache format, the package version, the configuration and the options."""
    return entry_file(cache, "theory", CACHE_FORMAT, config.to_dict(), cdf)


def _finite_floats(value: Any, what: str) -> np.ndarray:
    array = np.asarray(value, dtype=float)
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{what} has values that are not finite")
    return array


def validated(data: Any, config: Config | PolynomialModel, cdf: bool) -> Theory:
    """The :class:`Theory` of a cache entry for ``config``, or ValueError saying what is wrong with it:
    its fields and their types, its configuration, a CDF table in [0, 1] that never decreases, a total
    mass of 1, edges in order, and each moment's float equal to its exact value."""
    try:
        if not isinstance(data, dict) or data.get("config") != config.to_dict():
            raise ValueError("it belongs to another configuration")
        theory = Theory.from_json_dict(data)
        grid = _finite_floats(theory.grid, "the grid")
        table = _finite_floats(theory.cdf_continuous, "the CDF table")
        if grid.shape != table.shape or grid.ndim != 1 or (cdf and grid.size < 2):
            raise ValueError("the CDF table does not match its grid")
        if cdf and (np.any(np.diff(table) < -1e-9) or table.min() < -1e-9 or table.max() > 1 + 1e-9):
            raise ValueError("the CDF table is not a distribution function")
        atoms = sum(float(a["mass"]) for a in theory.atoms)
        if cdf and abs(atoms + float(table[-1]) - 1) > 1e-6:
            raise ValueError(f"the masses add up to {atoms + float(table[-1])}, not 1")
        locations = _finite_floats([e["location"] for e in theory.edges], "the edges")
        if np.any(np.diff(locations) < 0) or [e["side"] for e in theory.edges] != ["lower", "upper"] * (len(locations) // 2):
            raise ValueError("the edges are not in order")
        for k, moment in enumerate(theory.moments, 1):
            value = float(moment["float"])
            if moment["exact"] is not None:
                exact = float(parse_number(str(moment["exact"]), f"moment {k}"))
                if not np.isclose(value, exact, rtol=1e-9, atol=0):
                    raise ValueError(f"moment {k} is {value}, but its exact value {moment['exact']} is {exact}")
        _finite_floats([[p.real, p.imag] for p in theory.probes], "the probes")
    except (KeyError, TypeError, AttributeError, IndexError) as exc:
        raise ValueError(f"a field is missing or of the wrong type ({type(exc).__name__}: {exc})") from None
    return theory


def theory_task(config: Config | PolynomialModel, cdf: bool = True, cache: str | None = None) -> Theory:
    """Derive and summarise the law of ``config``, a configuration or a polynomial model (a task for an executor).

    With ``cache`` (a folder), a summary computed before for the same configuration,
    options and package version is read back instead of solving again, after
    :func:`validated`; an entry that does not validate is recomputed and replaced.
    """
    path = None if cache is None else cache_file(Path(cache), config, cdf)
    if path is not None and (theory := read_entry(path, lambda data: validated(data, config, cdf),
                                                  "a valid summary of this configuration")) is not None:
        return theory
    start = time.perf_counter()
    law = law_of(config)
    theory = theory_of(law, config, cdf=cdf)
    theory = Theory(**{**theory.__dict__, "seconds": time.perf_counter() - start})
    if path is not None:
        write_entry(path, theory.to_json_dict())
    return theory
