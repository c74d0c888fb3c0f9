"""Dimensions of a layer as exact ratios to the token count n (docs/model.md §1.1).

Widths are given as ratios (n = 1) or as integer sizes (n > 1); both are read here into
exact ratios, with the range of widths the engine honours (docs/conventions.md §6.8).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import sympy as sp

from gemhsa_sym.layer.sharing import INFINITE_HEADS
from gemhsa_sym.parse import integer_value, real_number

__all__ = ["DIMENSIONS", "RATIO_RANGE", "dimension_ratios"]

#: Dimension fields, in the order of docs/model.md §1.1.
DIMENSIONS: tuple[str, ...] = ("n", "d", "d_k", "d_v", "d_out")
#: Widths (d, d_out, and heads times d_k and d_v) as ratios to n that the engine honours.
RATIO_RANGE = (sp.Rational(1, 1000), sp.Integer(1000))


def _short(number: sp.Expr) -> str:
    """A number in a message: exact when short, else to 4 digits."""
    text = str(number)
    return text if len(text) <= 12 else f"{float(number):.4g}"


def dimension_ratios(given: Mapping[str, Any], heads: int | str) -> dict[str, Any]:
    """Exact ratios to n of the widths ``given`` (n, d, d_k, d_v, d_out, None for a default) and ``size_n``,
    from ratio input (n = 1) or size input (n > 1) (docs/model.md §1.1). With infinitely many heads the
    default per-head widths are None: H d_k = H d_v = d in the limit (docs/extensions.md §8.5)."""
    infinite = heads == INFINITE_HEADS
    n = real_number("n", given["n"])
    size_n = None if given["size_n"] is None else integer_value("size_n", given["size_n"])
    if size_n is not None and size_n < 1:
        raise ValueError(f"size_n: must be a positive token count, got {size_n}")
    if n != 1:
        if not (n.is_integer and n > 1):
            raise ValueError(f"n: must be 1 (dimensions as ratios) or a token count > 1, got {n}")
        if size_n not in (None, n):
            raise ValueError(f"size_n: {size_n} disagrees with the token count n = {n}")
        size_n = int(n)
    ratios: dict[str, Any] = {"n": sp.Integer(1)}
    defaults = {
        "d": lambda: sp.Integer(1),
        "d_k": lambda: None if infinite else ratios["d"] / heads,
        "d_v": lambda: ratios["d_k"],
        "d_out": lambda: ratios["d"],
    }
    for key in DIMENSIONS[1:]:
        value = given[key]
        if value is None:
            ratio = defaults[key]()
            if ratio is None:  # a per-head width d / H of infinitely many heads
                ratios[key] = None
                continue
        else:
            ratio = real_number(key, value)
            if n != 1 and not ratio.is_integer:
                raise ValueError(f"{key}: n is a size ({n}), so {key} must be an integer size, got {ratio}")
            ratio /= n
        if not ratio.is_Rational:
            raise ValueError(f"{key}: a dimension ratio must be rational, got {ratio}")
        if ratio <= 0:
            raise ValueError(f"{key}: must be positive, got {value}")
        ratios[key] = ratio
    low, high = RATIO_RANGE
    widths = [("d", ratios["d"], "d / n"), ("d_out", ratios["d_out"], "d_out / n")]
    for key in ("d_k", "d_v"):
        if ratios[key] is not None:
            widths.append((key, ratios[key], f"{key} / n") if infinite else (key, heads * ratios[key], f"heads * {key} / n"))
    for key, width, text in widths:
        if not low <= width <= high:
            raise ValueError(f"{key}: {text} = {_short(width)} is outside {low}..{high}, the range of widths "
                             "the engine solves reliably")
    return ratios | {"size_n": size_n}
