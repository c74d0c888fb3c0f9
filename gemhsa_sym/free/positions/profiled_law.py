"""The law of a polynomial whose Gaussians carry variance profiles (docs/solving.md §3.11).

:class:`ProfiledModel` holds the polynomial, the ratios, the positional dimension group and the
profiles; :meth:`ProfiledModel.system` discretises its Dyson equation (:mod:`.profiles`) at a level
of :data:`LEVELS`, each with about twice the nodes of the one before (for a polynomial whose only
positional part is its deterministic diagonals, docs/equations.md §2.12, a level of
:data:`NORMAL_LEVELS`, Gauss-Hermite rules in the diagonals' standard Gaussian). :meth:`ProfiledModel.levels`
yields m(w) level after level (as does any :class:`LeveledModel`, such as the masked scores of
:mod:`.two_point`); the driver :func:`stieltjes` keeps each point's m at the first level where it
differs from the previous level's by at most ``tol`` (1 + |m|), asks the next levels for the other
points only (or, given each point's weight in a sum such as the distribution function, spends a
budget of that sum's error), and reports that difference as the achieved error beside every value; a
request that the last level cannot meet is refused with the error it reached. Densities are
-Im m(x + i0) / pi; the distribution function is built from them in :mod:`.distribution_function`.
"""

from __future__ import annotations

import functools
from collections.abc import Generator, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
from sympy.matrices.expressions import MatrixExpr

from gemhsa_sym.free.expressions.matrices import Diagonal, Dim, Gaussian, diagonals_of, dims_of, gaussians_of, is_polynomial
from gemhsa_sym.free.expressions.pencil import Pencil, linearise
from gemhsa_sym.free.numeric.continuation import follow_branch
from gemhsa_sym.free.numeric.descent import BranchError
from gemhsa_sym.free.numeric.systems import NumericSystem
from gemhsa_sym.free.positions.profiles import Profile, Quadrature, profiled_system
from gemhsa_sym.parse import to_number
from gemhsa_sym.progress import note

__all__ = ["LEVELS", "NORMAL_LEVELS", "ProfileError", "LeveledModel", "ProfiledModel", "ProfiledValues", "stieltjes",
           "density", "far_mean"]

#: (Gauss-Legendre order per panel, octaves of geometric grading towards t = 0) of each level.
LEVELS: tuple[tuple[int, int], ...] = ((4, 8), (6, 16), (8, 24), (10, 32))
#: Gauss-Hermite nodes of each level of a model whose positions carry only deterministic diagonals.
NORMAL_LEVELS: tuple[int, ...] = (8, 16, 32, 64)
#: Heights tried for the fixed-point start (the discretised norm grows like the deepest node's variance).
START_HEIGHTS: tuple[float, ...] = tuple(10.0 ** k for k in range(2, 18, 2))
#: Steps of the fixed-point iteration allowed at a start height.
FIXED_POINT_STEPS = 100


class ProfileError(ArithmeticError):
    """The discretisation did not reach the requested tolerance at its last level."""


@dataclass(frozen=True, eq=False)
class ProfiledModel:
    """A polynomial in Gaussian matrices, some with variance profiles over the positions of ``positions``.

    ``breaks`` are positions where a profile jumps (added as panel edges, so that the quadrature
    stays exact for piecewise polynomial integrands). The polynomial may hold deterministic diagonals over the
    positions (:class:`~gemhsa_sym.free.expressions.matrices.Diagonal`); then no profile may vary with the position,
    and the levels are Gauss-Hermite rules (:data:`NORMAL_LEVELS`).
    """

    polynomial: MatrixExpr
    ratios: Mapping[Dim, Any]
    positions: Dim
    profiles: Mapping[Gaussian, Profile]
    breaks: tuple[float, ...] = ()
    _systems: dict[int, NumericSystem] = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not is_polynomial(self.polynomial, diagonals=True):
            raise ValueError(f"polynomial: not a polynomial in Gaussian matrices: {self.polynomial}")
        dims = {str(d) for d in dims_of(self.polynomial)}
        if str(self.positions) not in dims:
            raise ValueError(f"positions: {self.positions} is not a dimension group of the polynomial")
        used = set(gaussians_of(self.polynomial))
        for X in self.profiles:
            if X not in used:
                raise ValueError(f"profiles: {X} is not a matrix of the polynomial")
        ratios = {d: to_number(v, f"ratios.{d}") for d, v in self.ratios.items()}
        if any(not v.is_positive for v in ratios.values()):
            raise ValueError("ratios: every size ratio must be positive")
        object.__setattr__(self, "ratios", ratios)
        if any(not 0 < b < 1 for b in self.breaks):
            raise ValueError("breaks: positions of jumps lie strictly between 0 and 1")
        for D in self.diagonals:
            if str(D.rows) != str(self.positions):
                raise ValueError(f"positions: the diagonal {D.name} lies over {D.rows}, not over the positions {self.positions}")
        if self.diagonals and (self.breaks or any(p.positional_rows or p.positional_cols for p in self.profiles.values())):
            raise ValueError("profiles: a model with deterministic diagonals is solved on Gauss-Hermite rules in the standard "
                             "Gaussian of their entries, where no profile may vary with the position")

    @functools.cached_property
    def diagonals(self) -> tuple[Diagonal, ...]:
        """The deterministic diagonals of the polynomial."""
        return diagonals_of(self.polynomial)

    @property
    def level_count(self) -> int:
        """How many levels of discretisation there are."""
        return len(NORMAL_LEVELS if self.diagonals else LEVELS)

    @functools.cached_property
    def pencil(self) -> Pencil:
        """The linear pencil of the polynomial (docs/equations.md §2.2)."""
        return linearise(self.polynomial, diagonals=True)

    def quadrature(self, level: int) -> Quadrature:
        """The nodes of ``level`` (:data:`LEVELS`, or :data:`NORMAL_LEVELS` for a model with diagonals)."""
        if self.diagonals:
            return Quadrature.normal(NORMAL_LEVELS[level])
        order, octaves = LEVELS[level]
        return Quadrature.graded(1, octaves, order, self.breaks)

    def system(self, level: int) -> NumericSystem:
        """The discretised Dyson system at ``level`` (built once)."""
        if level not in self._systems:
            self._systems[level] = profiled_system(self.pencil, self.ratios, self.positions, self.profiles,
                                                   self.quadrature(level))
        return self._systems[level]

    def levels(self, w: np.ndarray, floor: float | np.ndarray) -> Generator[tuple[int, int, np.ndarray, None], np.ndarray | None, None]:
        """(level, nodes, m(w), None) for every level in turn, every point solved (a mask sent is not needed: a level
        costs seconds; its error is the change from the level before); BranchError where a point fails verification."""
        for level in range(self.level_count):
            system = self.system(level)
            branch = follow_branch(system, w, max(start_height(system), 10 * float(np.max(np.abs(w)))), floor)
            if not np.all(branch.ok):
                bad = w[~branch.ok]
                raise BranchError(f"m(w) failed verification at {bad.size} point(s), e.g. w = {bad[0]:.6g}, level {level}")
            yield level, self.quadrature(level).size, branch.m, None


@dataclass(frozen=True)
class ProfiledValues:
    """m(w) at the targets, the achieved error (the change from the level before, or the level's own estimate), the level
    and its nodes."""

    w: np.ndarray
    m: np.ndarray
    error: np.ndarray
    level: int
    nodes: int


def start_height(system: NumericSystem) -> float:
    """The lowest of :data:`START_HEIGHTS` at which the fixed-point iteration g <- R(g, w) from 0 converges
    by itself at w = i top (to 1e-12 in :data:`FIXED_POINT_STEPS` steps): there it reaches the physical
    solution (docs/solving.md §3.5), which a Newton polish of an unconverged iterate need not."""
    for top in START_HEIGHTS:
        w = np.array([1j * top])
        g = np.zeros((1, system.size), dtype=complex)
        for _ in range(FIXED_POINT_STEPS):
            new = system.readout(w, g)
            done = np.max(np.abs(new - g)) <= 1e-12 * (1 + np.max(np.abs(new)))
            g = new
            if done:
                return top
    raise BranchError(f"the fixed-point iteration did not converge up to Im w = {START_HEIGHTS[-1]:g}")


class LeveledModel(Protocol):
    """A law computed on ever finer discretisations: :class:`ProfiledModel`, and the masked scores of
    :class:`~.two_point_solver.MaskedScoresModel`."""

    def levels(self, w: np.ndarray, floor: float | np.ndarray) -> Generator[tuple[int, int, np.ndarray, np.ndarray | None],
                                                                            np.ndarray | None, None]:
        """(level, nodes, m(w), its error) for every level in turn (``floor``: the height of the drivers' last step; the
        error None where the driver is to take the change from the level before); a boolean mask sent to the generator
        names the points the next levels must solve (the others may be left as they are)."""
        ...


def stieltjes(model: LeveledModel, w: Any, tol: float = 1e-6, floor: float | np.ndarray = 1e-4,
              weight: np.ndarray | None = None) -> ProfiledValues:
    """m(w) on the upper half plane to ``tol`` (1 + |m|) in the achieved error, the level-to-level change or the level's
    own estimate (module docstring): each point
    keeps the value of its first level within ``tol``, and the levels after it are asked (by ``send``) for the points
    still above; ``level`` and ``nodes`` are those of the last level a point needed. With ``weight`` (one per point,
    the share of a sum such as F that its m carries), ``tol`` bounds sum_i weight_i error_i instead: after every level
    every point keeps its value if their parts fit in what the points kept so far left of ``tol``, and otherwise the
    points whose part is within an equal share of it (docs/solving.md §3.11)."""
    w = np.atleast_1d(np.asarray(w, dtype=complex))
    if not tol > 0:
        raise ValueError(f"tol: must be positive, got {tol}")
    if weight is not None and (np.shape(weight) != w.shape or np.any(np.asarray(weight) < 0)):
        raise ValueError("weight: one non-negative weight per point")
    previous, error, nodes = None, np.full(w.shape, np.inf), 0
    active = np.ones(w.shape, dtype=bool)
    levels = model.levels(w, floor)
    while True:
        try:
            level, nodes, m, own = next(levels) if previous is None else levels.send(active.copy())
        except StopIteration:
            break
        except MemoryError as exc:  # the next level does not fit: the last one reached is the answer's bound
            if previous is None:
                raise
            raise ProfileError(f"tol: the level of {nodes} nodes {_excess(error, previous, tol, weight)}, and {exc}") from None
        if previous is not None:
            m = np.where(active, m, previous)
            error = np.where(active, np.abs(m - previous) if own is None else own, error)
            if weight is None:
                active = error > tol * (1 + np.abs(m))
                note(f"level {level} ({nodes} nodes): m(w) within {tol:g} (1 + |m|) at "
                     f"{w.size - int(active.sum())} of {w.size} points")
            else:
                part = weight * error
                left = tol - float(np.sum(part[~active]))
                if np.sum(part[active]) > left:  # the points still refined share what is left equally
                    active &= part > left / np.count_nonzero(active)
                else:
                    active[:] = False
                note(f"level {level} ({nodes} nodes): {w.size - int(active.sum())} of {w.size} points kept, their weighted "
                     f"change {float(np.sum(part[~active])):.2e} of {tol:g} (all points: {float(np.sum(part)):.2e})")
            if not np.any(active):
                return ProfiledValues(w, m, error, level, nodes)
        else:
            note(f"level {level} ({nodes} nodes) solved at {w.size} points")
        previous = m
    raise ProfileError(f"tol: the last level ({nodes} nodes) {_excess(error, previous, tol, weight)}")


def _excess(error: np.ndarray, m: np.ndarray, tol: float, weight: np.ndarray | None) -> str:
    """How far the last level's changes are from ``tol``, in words (:func:`stieltjes`)."""
    if weight is None:
        return f"changed m(w) by {float(np.max(error / (1 + np.abs(m)))):.2e} (1 + |m|), above {tol:g}"
    return f"left a weighted change of m(w) of {float(np.sum(weight * error)):.2e}, above {tol:g}"


def far_mean(model: LeveledModel, scale: float) -> float:
    """The law's mean from m(w) far out: Re((m w - 1) w) at w = i y is mu_1 - mu_3 / y^2 + O(y^-4), extrapolated over y
    and 2y, y = 1e4 ``scale`` (a size of the law), m solved to 1e-12."""
    y = 1e4 * scale
    w = np.array([1j * y, 2j * y])
    first = ((stieltjes(model, w, 1e-12).m * w - 1) * w).real
    return float((4 * first[1] - first[0]) / 3)


def density(model: LeveledModel, x: Any, tol: float = 1e-6) -> ProfiledValues:
    """m(x + i0) at real points (``m.imag`` = -pi times the density), to ``tol`` as :func:`stieltjes`."""
    x = np.atleast_1d(np.asarray(x, dtype=float))
    return stieltjes(model, x + 0j, tol, floor=1e-6 * (1 + np.abs(x)))
