"""LaTeX of a derivation: formulas through SymPy's printer, long ones broken over lines.

A law's record (:meth:`~.law.SpectralLaw.record`) holds every formula already
printed by SymPy (``latex`` fields); :func:`document` turns a record into a
standalone document for pdflatex (article class, amsmath, geometry), so the
document is a pure function of the record, which is JSON. Sums wider than
the text are broken term by term inside ``align*`` environments, and lists
of short equations are packed greedily into lines (docs/exports.md §5.2).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

import sympy as sp

__all__ = ["WIDTH", "broken_sum", "packed", "printed_width", "terms_of"]

#: Printed characters of mathematics per line (11pt article with 2 cm margins holds about 75).
WIDTH = 62

_COMMAND = re.compile(r"\\(left|right|quad|qquad|,|;|!|displaystyle)(?![a-zA-Z])")
_NAME = re.compile(r"\\[a-zA-Z]+")
_SCRIPT = re.compile(r"[_^]\{([^{}]*)\}")


def printed_width(tex: str) -> float:
    """Rough width of typeset ``tex`` in characters: commands count one, scripts two thirds."""
    t = _COMMAND.sub("", tex)
    t = t.replace(r"\frac", "")
    for _ in range(4):
        t = _SCRIPT.sub(lambda m: "~" * int(0.67 * len(_NAME.sub("x", m.group(1))) + 1), t)
    t = _NAME.sub("x", t)
    return float(len(re.sub(r"[{}^_ &]", "", t)))


def broken_sum(lhs: str, terms: Sequence[str], width: int = WIDTH, numbered: bool = False) -> str:
    """``lhs = t1 + t2 + ...`` as an ``align*`` block with a line break whenever the width is reached
    (with ``numbered``, a ``multline``-like ``align`` with one number on its last line).

    ``terms`` are printed terms; a leading minus sign joins them with ``-``.
    """
    lines: list[str] = []
    current = ""
    for k, t in enumerate(terms):
        sign, body = ("-", t[1:].lstrip()) if t.startswith("-") else ("+", t)
        piece = (body if sign == "+" else "- " + body) if k == 0 else f" {sign} {body}"
        if current and printed_width(current + piece) > width:
            lines.append(current)
            current = f"{sign} {body}"
        else:
            current += piece
    lines.append(current or "0")
    rows = [f"{lhs} &= {lines[0]}"] + [rf"&\quad {line}" for line in lines[1:]]
    if numbered:
        rows = [row + r" \nonumber" for row in rows[:-1]] + rows[-1:]
    env = "align" if numbered else "align*"
    return f"\\begin{{{env}}}\n" + " \\\\\n".join(rows) + f"\n\\end{{{env}}}"


def terms_of(expr: sp.Expr, printer: Any = sp.latex) -> list[str]:
    """Printed terms of a sum (a single term otherwise), in SymPy's order."""
    expr = sp.sympify(expr)
    return [printer(t) for t in (expr.as_ordered_terms() if isinstance(expr, sp.Add) else [expr])]


def packed(items: Iterable[str], width: int = WIDTH) -> str:
    """Short equations, as many per line as fit, in a ``gather*`` block."""
    lines: list[str] = []
    current = ""
    for item in items:
        piece = item if not current else r",\quad " + item
        if current and printed_width(current + piece) > width:
            lines.append(current)
            current = item
        else:
            current += piece
    if current:
        lines.append(current)
    return "\\begin{gather*}\n" + " \\\\\n".join(lines) + "\n\\end{gather*}" if lines else ""
