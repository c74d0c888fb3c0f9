"""The modes of a layer, each one entry that both readings use (docs/model.md §1.8).

A value rule says how W_V^h is made from the head's W_K^h and, if it draws one, its own
Gaussian W'^h; an output rule says how W_O^h is made. Each rule's function works on SymPy
matrices (the Gaussian-equivalent polynomial, :mod:`gemhsa_sym.layer.equivalent`) and on numpy arrays
(the sampler, :mod:`gemhsa_sym.layer.readings`) alike; ``number`` turns an exact coefficient into the
reading's number (itself for SymPy, a float for numpy), so the two readings cannot drift
apart, and a new mode is one entry here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import sympy as sp

__all__ = ["KV_MODES", "OUTPUT_MODES", "OUTPUT_RULES", "VALUE_RULES", "OutputRule", "ValueRule"]

#: Exact coefficient -> the number of a reading (``lambda c: c`` for SymPy, ``float`` for numpy).
Number = Callable[[sp.Expr], Any]


@dataclass(frozen=True)
class ValueRule:
    """W_V^h = make(W_K^h, W'^h, rho, number); ``fresh``: the rule draws W'^h (d x d_v, N(0, 1/d));
    ``follows_keys``: values are built from the keys, so d_v = d_k and the values share as the keys do."""

    fresh: bool
    follows_keys: bool
    make: Callable[[Any, Any, sp.Expr, Number], Any]
    summary: str
    uses_rho: bool = False


@dataclass(frozen=True)
class OutputRule:
    """W_O^h = make(W_K^h, its fresh block, scale, number), scale = sqrt(d / (H d_v)); ``fresh``: the
    rule draws W_O (H d_v x d_out, N(0, 1/(H d_v))); ``from_keys``: needs d_v = d_k and d_out = d."""

    fresh: bool
    from_keys: bool
    make: Callable[[Any, Any, sp.Expr, Number], Any]
    summary: str


VALUE_RULES: dict[str, ValueRule] = {
    "independent": ValueRule(True, False, lambda key, fresh, rho, number: fresh, ""),
    "tied": ValueRule(False, True, lambda key, fresh, rho, number: key, "W_V = W_K"),
    "correlated": ValueRule(
        True, True, lambda key, fresh, rho, number: number(rho) * key + number(sp.sqrt(1 - rho**2)) * fresh,
        "W_V = rho W_K + sqrt(1-rho^2) W'", uses_rho=True,
    ),
}

OUTPUT_RULES: dict[str, OutputRule] = {
    "independent": OutputRule(True, False, lambda key, fresh, scale, number: fresh, ""),
    "keys": OutputRule(False, True, lambda key, fresh, scale, number: number(scale) * key.T, "W_O^h = W_K^hT (rescaled)"),
}

#: The choices of ``kv`` and ``output``.
KV_MODES: tuple[str, ...] = tuple(VALUE_RULES)
OUTPUT_MODES: tuple[str, ...] = tuple(OUTPUT_RULES)
