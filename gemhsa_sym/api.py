"""The functions of the public face (``import gemhsa_sym as gs``; docs/architecture.md §7.4).

``gs.law`` takes whatever names a law: a preset name, a configuration or polynomial model file, a
:class:`~gemhsa_sym.layer.config.Config`, a :class:`~gemhsa_sym.layer.polynomial_model.PolynomialModel`,
or a polynomial in Gaussian matrices with the ratios of its dimensions; every law it returns answers the
one protocol of :class:`~gemhsa_sym.laws.protocol.Law`.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from sympy.matrices.expressions import MatrixExpr

from gemhsa_sym.free.expressions.exchangeable import ExchangeableSum
from gemhsa_sym.free.expressions.matrices import Dim
from gemhsa_sym.laws.protocol import Law
from gemhsa_sym.laws.resolve import law_of
from gemhsa_sym.laws.spectral import SpectralLaw
from gemhsa_sym.layer.config import Config
from gemhsa_sym.layer.network import Network
from gemhsa_sym.layer.polynomial_model import PolynomialModel
from gemhsa_sym.layer.presets import PRESETS, load_input
from gemhsa_sym.library.catalogue import library_law
from gemhsa_sym.sampling.result import SampleResult
from gemhsa_sym.sampling.sampler import sample as sample_config
from gemhsa_sym.verification.compare import VerifyResult
from gemhsa_sym.verification.compare import verify as verify_source

__all__ = ["law", "load", "presets", "sample", "verify"]

Source = str | Path | Config | Network | PolynomialModel


def presets() -> dict[str, Config]:
    """The named configurations (docs/model.md §1.4), by name."""
    return dict(PRESETS)


def load(source: str | Path) -> Config | Network | PolynomialModel:
    """A preset by name, or the attention configuration, network of blocks or polynomial model in a TOML file."""
    if not isinstance(source, (str, Path)):
        raise TypeError(f"source: expected a preset name or a file path, got {type(source).__name__}")
    return load_input(source)


def law(source: Source | MatrixExpr | ExchangeableSum | Law, ratios: Mapping[Dim, Any] | None = None,
        values: Mapping[Any, Any] | None = None) -> Law:
    """The law of ``source`` (module docstring). A preset or library entry named by its name is read from the library's
    record, validated against its configuration: a causal layer's law, or a network's after layer 2, is the record's
    distribution function; any other layer's takes P(m, w) and the record from it (written by this package version;
    else derived afresh, with a warning); ``gs.law(gs.load(name))`` derives it afresh. A polynomial needs ``ratios`` (each dimension's size over N) and may take ``values`` of its
    parameters."""
    if isinstance(source, (MatrixExpr, ExchangeableSum)):
        if ratios is None:
            raise ValueError("ratios: a polynomial's law needs the ratio of every dimension to N")
        return SpectralLaw(source, ratios, values)
    if ratios is not None or values is not None:
        raise ValueError("ratios: only a polynomial given directly takes ratios and values; a configuration or a model "
                         "file holds its own")
    if isinstance(source, Law):
        return source
    if isinstance(source, str):  # a preset or library entry by its name (None for anything else)
        found = library_law(source)
        if found is not None:
            return found
    return law_of(load(source) if isinstance(source, (str, Path)) else source)


def _config(source: Source) -> Config | Network:
    found = load(source) if isinstance(source, (str, Path)) else source
    if not isinstance(found, (Config, Network)):
        raise ValueError(f"source: {source!r} is a polynomial model; its own samples are gs.law(model).sample(N)")
    return found


def sample(source: Source, n: int, draws: int = 1, seed: int = 0, reading: str = "softmax", **options: Any) -> SampleResult:
    """``draws`` seeded spectra of a layer or a network at token count ``n``: the real layer (``reading="softmax"``) or
    its Gaussian equivalent (``"ge"``; a network's after its first block); ``options`` as :func:`~gemhsa_sym.sampling.sampler.sample` (jobs, backend, device)."""
    return sample_config(_config(source), n, draws, seed, reading, **options)


def verify(source: Source, n: list[int], draws: int = 3, seed: int = 0, **options: Any) -> VerifyResult:
    """The law of ``source`` beside seeded Monte Carlo at every token count in ``n`` (docs/verification.md §4.3);
    ``options`` as :func:`~gemhsa_sym.verification.compare.verify` (executor, cache, backend, sample_heads, ...)."""
    return verify_source(load(source) if isinstance(source, (str, Path)) else source, list(n), draws, seed, **options)
