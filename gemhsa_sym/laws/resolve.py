"""The law of a configuration or a polynomial model: the one place that tells the kinds of law apart."""

from __future__ import annotations

from gemhsa_sym.laws.attention import AttentionLaw
from gemhsa_sym.laws.causal_law import CausalLaw
from gemhsa_sym.laws.key_weighted import KeyWeightedLaw
from gemhsa_sym.laws.network_law import NetworkLaw
from gemhsa_sym.laws.polynomial import ModelLaw
from gemhsa_sym.laws.protocol import Law
from gemhsa_sym.layer.config import Config
from gemhsa_sym.layer.network import Network
from gemhsa_sym.layer.network_equivalent import equivalent_of
from gemhsa_sym.layer.polynomial_model import PolynomialModel

__all__ = ["law_of"]


def law_of(source: Config | Network | PolynomialModel, symbolic: bool = False) -> Law:
    """The law of an attention configuration (a :class:`~.causal_law.CausalLaw` for a causal mask, an
    :class:`~.attention.AttentionLaw` otherwise) or of a polynomial model (:class:`~.polynomial.ModelLaw`); ``symbolic``:
    a spectral law's elimination tries the parameters symbolic first (:class:`~.spectral.SpectralLaw`). A network of
    blocks has the law of its equivalent: a spectral law (:class:`~.network_law.NetworkLaw`), or where the equivalent
    weights the keys (from layer 2 on) a :class:`~.key_weighted.KeyWeightedLaw` (docs/extensions.md §8.7)."""
    if isinstance(source, Network):
        if equivalent_of(source).key_weights:
            return KeyWeightedLaw(source)
        return NetworkLaw(source, symbolic=symbolic)
    if isinstance(source, PolynomialModel):
        return ModelLaw(source, symbolic=symbolic)
    if not isinstance(source, Config):
        raise TypeError(f"source: expected a Config or a PolynomialModel, got {type(source).__name__}")
    return CausalLaw(source) if source.mask_rule.causal else AttentionLaw(source, symbolic=symbolic)
