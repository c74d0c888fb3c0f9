"""gemhsa_sym: limiting spectral laws of random multi-head self-attention.

Gaussian equivalence turns softmax attention into a polynomial in independent
Gaussian matrices; free probability (linear pencils and the matrix Dyson
equation) gives its limiting singular-value law.

>>> import gemhsa_sym as gs
>>> law = gs.law("mha")                 # a preset, a TOML file, a Config, a model file or a polynomial
>>> law.cdf(1.0), law.quantile(0.5), law.moments(2), law.edges()

The names below are the public face (docs/architecture.md §7.4); everything else is internal. They are
imported when first used, so that ``import gemhsa_sym`` stays light.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

#: Each public name and the module that defines it.
_PUBLIC: dict[str, str] = {
    "Config": "gemhsa_sym.layer.config",
    "Network": "gemhsa_sym.layer.network",
    "PolynomialModel": "gemhsa_sym.layer.polynomial_model",
    "Dim": "gemhsa_sym.free.expressions.matrices",
    "Gaussian": "gemhsa_sym.free.expressions.matrices",
    "Law": "gemhsa_sym.laws.protocol",
    "NoAnswer": "gemhsa_sym.laws.protocol",
    "law": "gemhsa_sym.api",
    "load": "gemhsa_sym.api",
    "presets": "gemhsa_sym.api",
    "sample": "gemhsa_sym.api",
    "verify": "gemhsa_sym.api",
}

__all__ = ["__version__", *_PUBLIC]


def __getattr__(name: str) -> Any:
    if name not in _PUBLIC:
        raise AttributeError(f"module 'gemhsa_sym' has no attribute {name!r}")
    value = getattr(importlib.import_module(_PUBLIC[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
