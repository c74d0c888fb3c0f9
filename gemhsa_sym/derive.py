"""``derive(config)``: the limiting spectral law of a configuration's centered MHSA output."""

from __future__ import annotations

import sympy as sp

from .config import Config
from .free.law import SpectralLaw
from .hermite import HermiteData
from .model import gaussian_equivalent

__all__ = ["AttentionLaw", "derive"]


class AttentionLaw(SpectralLaw):
    """The law of the eigenvalues of Y_c^T Y_c / n (DESIGN §1.1) with its derivation attached."""

    def __init__(self, config: Config, heads: int | sp.Symbol | None = None, values: dict | None = None) -> None:
        self.config = config
        ge = gaussian_equivalent(config, heads)
        self.coefficients: HermiteData = ge.coefficients
        super().__init__(ge.model, ge.ratios, values)

    @property
    def named_constants(self) -> dict[sp.Symbol, sp.Expr]:
        """mu_1 and sigma^2 as the symbols ``mu1`` and ``sigma2`` where they are irrational (DESIGN §1.5)."""
        return {sp.Symbol("mu1", positive=True): self.coefficients.mu1, sp.Symbol("sigma2", positive=True): self.coefficients.sigma2}


def derive(config: Config, heads: int | sp.Symbol | None = None, values: dict | None = None) -> AttentionLaw:
    """Gaussian-equivalent model, reduced Dyson system and solution for ``config``.

    ``heads`` overrides the number of heads and may be a SymPy symbol (then give
    its value in ``values`` for numbers); the system's size does not depend on it
    when heads are exchangeable (DESIGN §1.4 step 3).
    """
    return AttentionLaw(config, heads, values)
