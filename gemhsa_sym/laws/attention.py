"""The law of a configuration's centred MHSA output: a spectral law with its Gaussian-equivalence coefficients."""

from __future__ import annotations

import dataclasses
from typing import Any

import sympy as sp

from gemhsa_sym.export.record import AttentionRecord, LawRecord
from gemhsa_sym.free.equations.heads_limit import LimitError
from gemhsa_sym.free.equations.scale import ScaleError
from gemhsa_sym.laws.spectral import RecordEdges, SpectralLaw
from gemhsa_sym.layer.config import Config
from gemhsa_sym.layer.equivalent import MU1, SIGMA, gaussian_equivalent
from gemhsa_sym.layer.hermite import HermiteData, hermite_data
from gemhsa_sym.layer.statement import statement_latex, summary_latex
from gemhsa_sym.parse import integer_value

__all__ = ["AttentionLaw", "BETA"]

#: The inverse temperature in symbolic moments.
BETA = sp.Symbol("beta", real=True)


class AttentionLaw(SpectralLaw):
    """The law of the eigenvalues of Y_c^T Y_c / n (docs/model.md §1.1) with its derivation attached."""

    def __init__(self, config: Config, heads: int | sp.Symbol | None = None, values: dict | None = None,
                 known: AttentionRecord | None = None, symbolic: bool = False) -> None:
        if heads is not None and not isinstance(heads, sp.Symbol) and integer_value("heads", heads) < 1:
            raise ValueError(f"heads: a number of heads is a positive integer or a SymPy symbol, got {heads!r}")
        if known is not None and known.config != config.to_dict():
            raise ValueError("known: the record is not of this configuration")
        if config.mask_rule.causal:
            raise ValueError("mask: a causal layer's law is a CausalLaw (gemhsa_sym.law, docs/extensions.md §8.6), "
                             "not a spectral law of one polynomial")
        self.config = config
        ge = gaussian_equivalent(config, heads)
        self.coefficients: HermiteData = ge.coefficients
        try:
            super().__init__(ge.model, ge.ratios, {**ge.values, **(values or {})}, known=known, symbolic=symbolic)
        except LimitError as exc:
            raise ValueError(f"heads: infinitely many heads of this configuration have no limit law ({exc}); draw a finite "
                             "number of heads instead (--heads H)") from None
        except ScaleError as exc:
            sigma2 = sp.N(ge.coefficients.sigma2, 3)
            raise ValueError(f"beta: at beta = {config.beta} the {config.score} score's Gaussian equivalent "
                             f"(mu_1 = {sp.N(ge.coefficients.mu1, 3)}, sigma^2 = {sigma2}) is out of range: "
                             f"{str(exc).removeprefix('scale: ')}") from None

    @property
    def source_data(self) -> dict[str, Any]:
        """The configuration as data."""
        return self.config.to_dict()

    def record(self, dps: int = 30, moments: int = 3, time_limit: float = 20.0, edges: RecordEdges = "discriminant",
               discriminant_limit: float | None = None) -> AttentionRecord:
        """The law's record (:class:`.free.record.AttentionRecord`) with the configuration and the
        Gaussian-equivalence coefficients."""
        base: LawRecord = super().record(dps, moments, time_limit, edges, discriminant_limit)
        if base is self.known:
            return base
        c = self.coefficients
        scale = self.config.score_scale
        general = self._in_beta()
        formula = ([rf"\mu_{{1}}(\beta) = {sp.latex(sp.simplify(general.mu1 / scale))}",
                    rf"\sigma^{{2}}(\beta) = {sp.latex(sp.simplify(general.sigma2))}"] if general is not None else [])
        latex = dataclasses.replace(base.latex, coefficients=[*formula, rf"\mu_{{1}} = {sp.latex(c.mu1)}",
                                                              rf"\sigma^{{2}} = {sp.latex(c.sigma2)}"])
        fields = {f.name: getattr(base, f.name) for f in dataclasses.fields(base)}
        return AttentionRecord(**{**fields, "latex": latex, "name": self.config.name, "summary": self.config.summary(),
                                  "statement": self.config.statement, "summary_latex": summary_latex(self.config),
                                  "statement_latex": statement_latex(self.config)},
                               config=self.config.to_dict(), config_toml=self.config.to_toml(), coefficients=c.as_dict())

    def moments(self, k: int, symbolic: bool = False) -> list[sp.Expr]:
        """Exact mu_1..mu_k; with ``symbolic``, in beta when the score's Hermite data has a
        closed form (else in mu_1 and sigma), and in H when the heads are symbolic."""
        if not symbolic:
            return super().moments(k)
        out = super().moments(k, symbolic=True)
        scale = self.config.score_scale  # the scores' standard deviation (docs/extensions.md §8.3)
        h = self._in_beta()
        if h is None:
            return out
        sub = {MU1: h.mu1 / scale, SIGMA: sp.sqrt(h.sigma2)}
        return [sp.expand(m.subs(sub)) for m in out]

    def _in_beta(self) -> HermiteData | None:
        """The score's Hermite data in a symbolic beta, where they have a closed form (None for a score integrated by
        quadrature, such as sigmoid or softplus: docs/model.md §1.6)."""
        try:
            data = hermite_data(self.config.score, BETA * self.config.score_scale, self.config.normalisation)
        except ValueError:  # no closed form at a symbolic beta
            return None
        return data if data.exact else None
