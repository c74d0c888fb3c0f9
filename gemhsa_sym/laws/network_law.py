"""The law of a network's first block (docs/extensions.md §8.7): a spectral law of its Gaussian equivalent that knows
its network."""

from __future__ import annotations

import dataclasses
from typing import Any

import sympy as sp

from gemhsa_sym.export.record import LawRecord
from gemhsa_sym.laws.spectral import RecordEdges, SpectralLaw
from gemhsa_sym.layer.network import Network, network_statement_latex, network_summary_latex
from gemhsa_sym.layer.network_equivalent import NetworkEquivalent, equivalent_of

__all__ = ["MOMENT_DIGITS", "NetworkLaw"]

#: Digits of the moments of a law whose equivalent is not exact.
MOMENT_DIGITS = 30


class NetworkLaw(SpectralLaw):
    """The law of :class:`Network` ``source`` read after its first block, the law of the polynomial of
    :func:`~gemhsa_sym.layer.network_equivalent.network_equivalent` (NotImplementedError with the reason where that is
    not built); its record carries the network's summary and statement."""

    def __init__(self, network: Network, symbolic: bool = False) -> None:
        self.source = network
        self.equivalent: NetworkEquivalent = equivalent_of(network)
        super().__init__(self.equivalent.polynomial, self.equivalent.ratios, self.equivalent.values, symbolic=symbolic)

    def moments(self, k: int, symbolic: bool = False) -> list[sp.Expr]:
        """Exact mu_1..mu_k (:meth:`SpectralLaw.moments`) where the equivalent is exact; where its neurons are in levels
        or their data come from quadrature, the same moments of that model with :data:`MOMENT_DIGITS`-digit decimals (its
        exact rationals run to hundreds of digits, and the model is itself an approximation, docs/extensions.md §8.7)."""
        found = super().moments(k, symbolic)
        return found if self.equivalent.exact else [sp.N(m, MOMENT_DIGITS) for m in found]

    @property
    def source_data(self) -> dict[str, Any]:
        """The network as data."""
        return self.source.to_dict()

    def record(self, dps: int = 30, moments: int = 3, time_limit: float = 20.0, edges: RecordEdges = "discriminant",
               discriminant_limit: float | None = None) -> LawRecord:
        """The law's record (:meth:`SpectralLaw.record`) with the network's name, summary and statement, and the exact
        constants of its equivalent."""
        constants = "; ".join(f"{name} = {value if len(str(value)) <= 80 else sp.N(value, 20)}"
                              for name, value in self.equivalent.constants.items())
        typeset = ", ".join(f"${sp.latex(sp.Symbol(name))} = {sp.latex(value if len(str(value)) <= 80 else sp.N(value, 20))}$"
                            for name, value in self.equivalent.constants.items())
        return dataclasses.replace(super().record(dps, moments, time_limit, edges, discriminant_limit), name=self.source.name,
                                   summary=self.source.summary(), statement=f"{self.source.statement}; equivalent's constants: {constants}",
                                   summary_latex=network_summary_latex(self.source),
                                   statement_latex=f"{network_statement_latex(self.source)}; the equivalent's constants: {typeset}")
