"""The spectrum of the token covariance, read and validated (docs/extensions.md §8.3)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import sympy as sp

from gemhsa_sym.parse import real_number

__all__ = ["token_spectrum"]


def token_spectrum(tokens: str, given: Any) -> tuple[tuple[sp.Expr, sp.Expr], ...] | None:
    """The token covariance's spectrum as (value, weight) pairs, weights summing to 1, for tokens = 'covariance'
    (None otherwise); ``given`` is a table of the lists values and weights, or such pairs."""
    if tokens != "covariance":
        if given is not None:
            raise ValueError("token_covariance: only used with tokens = 'covariance'")
        return None
    if given is None:
        raise ValueError("token_covariance: tokens = 'covariance' needs [token_covariance] with values and weights")
    if isinstance(given, tuple):
        if not all(isinstance(pair, tuple) and len(pair) == 2 for pair in given) or not given:
            raise ValueError("token_covariance: expected (value, weight) pairs, or a table with the lists values and weights")
        pairs = tuple((real_number(f"token_covariance[{k}].value", v), real_number(f"token_covariance[{k}].weight", w))
                      for k, (v, w) in enumerate(given))
    else:
        if not isinstance(given, Mapping) or set(given) != {"values", "weights"}:
            raise ValueError("token_covariance: expected a table with the lists values and weights")
        values, weights = given["values"], given["weights"]
        if not isinstance(values, (list, tuple)) or not isinstance(weights, (list, tuple)) or len(values) != len(weights) or not values:
            raise ValueError("token_covariance: values and weights must be lists of the same positive length")
        pairs = tuple((real_number(f"token_covariance.values[{k}]", v), real_number(f"token_covariance.weights[{k}]", w))
                      for k, (v, w) in enumerate(zip(values, weights)))
    for k, (v, w) in enumerate(pairs):
        if not (v > 0 and w > 0 and v.is_Rational and w.is_Rational):
            raise ValueError(f"token_covariance: value and weight {k} must be positive rationals, got {v} and {w}")
    if sum(w for _, w in pairs) != 1:
        raise ValueError(f"token_covariance: the weights must sum to 1, got {sum(w for _, w in pairs)}")
    return tuple(pairs)
