"""What every law solved by the positional Dyson equation answers alike (docs/equations.md §2.9, §2.12).

Such a law is known by its distribution function on a grid (:meth:`PositionalLaw.distribution`, solved once or read
back), while m(w) and the density are solved afresh at any point from its discretised equation to the law's tolerance
(:func:`~gemhsa_sym.free.positions.profiled_law.stieltjes`): the causal layer's law and the law of a network whose keys
are weighted.
"""

from __future__ import annotations

from abc import abstractmethod
from typing import Any

import numpy as np

from gemhsa_sym.free.positions.distribution_function import Distribution
from gemhsa_sym.free.positions.profiled_law import LeveledModel, density, stieltjes
from gemhsa_sym.laws.protocol import Law, check_points
from gemhsa_sym.layer.config import Config
from gemhsa_sym.layer.network import Network

__all__ = ["PositionalLaw", "validated_distribution"]


class PositionalLaw(Law):
    """A law of the positional equation ``model`` at tolerance ``tol`` with an atom of mass ``zero_mass`` at 0 (module
    docstring)."""

    model: LeveledModel
    tol: float
    zero_mass: float = 0.0

    @abstractmethod
    def distribution(self) -> Distribution:
        """The distribution function on its grid, atoms included."""

    def cdf(self, x: Any) -> Any:
        """F(x) from the table, between its points the cubic in log x that matches F and the density
        (:meth:`~gemhsa_sym.free.positions.profiled_law.Distribution.at`); 0 below 0 and the atom at 0; refused
        elsewhere outside the grid."""
        law, xa = self.distribution(), check_points(x)
        outside = (xa > 0) & ((xa < law.x[0]) | (xa > law.x[-1]))
        if np.any(outside):
            raise ValueError(f"x: this law's distribution function is known on [{law.x[0]:g}, {law.x[-1]:g}] "
                             f"(F = {law.cdf[0]:.4g} .. {law.cdf[-1]:.4g}); {xa[outside].flat[0]:g} lies outside")
        inside = (xa >= law.x[0]) & (xa <= law.x[-1])
        out = np.where(xa < 0, 0.0, self.zero_mass)
        out[inside] = law.at(xa[inside])
        return out if out.ndim else float(out)

    def density(self, x: Any) -> Any:
        """The density at positive points, solved to the law's tolerance (0 at x <= 0)."""
        xa = check_points(x)
        out = np.zeros(xa.shape)
        positive = xa > 0
        if np.any(positive):
            out[positive] = -density(self.model, xa[positive], self.tol).m.imag / np.pi
        return out if out.ndim else float(out)

    def stieltjes(self, w: Any) -> Any:
        """m(w) = E 1 / (w - lambda) in the upper half plane, solved to the law's tolerance."""
        points = np.asarray(w, dtype=complex)
        if np.any(points.imag <= 0):
            raise ValueError("w: this law's m(w) is solved in the upper half plane (Im w > 0)")
        out = stieltjes(self.model, points.ravel(), self.tol).m.reshape(points.shape)
        return out if out.ndim else complex(out)

    def achieved_error(self) -> float:
        return float(self.distribution().error)

    def quantile_bracket(self) -> tuple[float, float, bool]:
        law = self.distribution()
        return float(law.x[0]), float(law.x[-1]), False


def validated_distribution(data: Any, source: Config | Network, tol: float) -> Distribution:
    """The :class:`~gemhsa_sym.free.positions.profiled_law.Distribution` of an entry (a record's or a cache's) for the
    configuration or network ``source`` at ``tol``, or ValueError saying what is wrong with it: its source and
    tolerance, finite tables of one shape on an increasing positive grid, a non-negative density, and F within [0, 1] up
    to its achieved error, never decreasing."""
    if not isinstance(data, dict) or data.get("config") != source.to_dict() or data.get("tol") != tol:
        raise ValueError("it belongs to another configuration or tolerance")
    try:
        x, cdf, rho = (np.asarray(data[key], dtype=float) for key in ("x", "cdf", "density"))
        error, level, nodes = float(data["error"]), data["level"], data["nodes"]
    except (KeyError, TypeError, ValueError):
        raise ValueError("a field is missing or is not a number") from None
    if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in (level, nodes)):
        raise ValueError("level and nodes are not counts")
    if not (x.ndim == 1 and x.size >= 2 and x.shape == cdf.shape == rho.shape):
        raise ValueError("the tables do not match their grid")
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(cdf)) and np.all(np.isfinite(rho)) and np.isfinite(error)):
        raise ValueError("a value is not finite")
    if x[0] <= 0 or np.any(np.diff(x) <= 0) or np.any(rho < 0) or error < 0:
        raise ValueError("the grid is not increasing and positive, or the density or error is negative")
    if np.any(np.diff(cdf) < -1e-12) or cdf[0] < -error - 1e-9 or cdf[-1] > 1 + error + 1e-9:
        raise ValueError("the table is not a distribution function")
    return Distribution(x, cdf, rho, error, level, nodes)
