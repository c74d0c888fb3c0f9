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

from gemhsa_sym.free.positions.profiled_law import Distribution, LeveledModel, density, stieltjes
from gemhsa_sym.laws.protocol import Law, check_points

__all__ = ["PositionalLaw"]


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
        """F(x) from the table, linear between its points; 0 below 0 and the atom at 0; refused elsewhere outside the
        grid."""
        law, xa = self.distribution(), check_points(x)
        outside = (xa > 0) & ((xa < law.x[0]) | (xa > law.x[-1]))
        if np.any(outside):
            raise ValueError(f"x: this law's distribution function is known on [{law.x[0]:g}, {law.x[-1]:g}] "
                             f"(F = {law.cdf[0]:.4g} .. {law.cdf[-1]:.4g}); {xa[outside].flat[0]:g} lies outside")
        out = np.where(xa < 0, 0.0, np.where(xa == 0, self.zero_mass, np.interp(xa, law.x, law.cdf)))
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
