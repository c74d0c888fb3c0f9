"""The law of a polynomial model file (docs/exports.md §5.4): a spectral law that knows its model."""

from __future__ import annotations

import dataclasses
from typing import Any

from gemhsa_sym.export.record import LawRecord
from gemhsa_sym.laws.spectral import RecordEdges, SpectralLaw
from gemhsa_sym.layer.polynomial_model import PolynomialModel

__all__ = ["ModelLaw"]


class ModelLaw(SpectralLaw):
    """The law of a :class:`PolynomialModel` (``source``); its record carries the model's name."""

    def __init__(self, model: PolynomialModel, symbolic: bool = False) -> None:
        self.source = model
        super().__init__(*model.parsed(), symbolic=symbolic)

    @property
    def source_data(self) -> dict[str, Any]:
        """The model as data."""
        return self.source.to_dict()

    def record(self, dps: int = 30, moments: int = 3, time_limit: float = 20.0, edges: RecordEdges = "discriminant",
               discriminant_limit: float | None = None) -> LawRecord:
        """The law's record (:meth:`SpectralLaw.record`) named after the model."""
        return dataclasses.replace(super().record(dps, moments, time_limit, edges, discriminant_limit), name=self.source.name,
                                   summary=self.source.summary(), statement=self.source.statement,
                                   summary_latex=self.source.summary_latex(), statement_latex=self.source.statement_latex())
