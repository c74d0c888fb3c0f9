"""A cheap exact law for verification tests: Marchenko–Pastur with an atom.

Case i′ of docs/reference-values.md §9.2.

Y = X (n x D, D = 2n, entries N(0, 1/n)): the law of Y^T Y has mass 1/2 at 0, support
[(1 - 1/sqrt 2)^2 2, (1 + 1/sqrt 2)^2 2] and moments 1, 3, 11. It solves in seconds, so
it stands in for an attention law where a test exercises the plumbing, not the engine.
"""

from __future__ import annotations

import json
from pathlib import Path

import sympy as sp

from gemhsa_sym.free.expressions.matrices import Dim, Gaussian
from gemhsa_sym.laws.spectral import SpectralLaw, spectral_law
from gemhsa_sym.laws.tabulated import TabulatedLaw
from gemhsa_sym.layer.config import Config
from gemhsa_sym.verification.theory import cache_file


def mp_law() -> SpectralLaw:
    """The law of case i′."""
    n, D = Dim("n"), Dim("D")
    return spectral_law(Gaussian("X", n, D), {n: 1, D: sp.Integer(2)})


def store_stand_in(cache: Path, config: Config, theory: TabulatedLaw, cdf: bool = True) -> None:
    """Put ``theory`` in the cache where the theory task of ``config`` looks for it."""
    path = cache_file(cache, config, cdf)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({**theory.to_json_dict(), "source": config.to_dict()}))


def mp_theory() -> TabulatedLaw:
    """The table of :func:`mp_law`."""
    return mp_law().tabulate()
