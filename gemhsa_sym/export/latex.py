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
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import sympy as sp

__all__ = ["WIDTH", "aligned_system", "broken_sum", "collected_terms", "decimals", "entry", "named_terms", "packed", "power_of_ten",
           "powers_in_text", "printed_width", "terms_of"]

#: Printed characters of mathematics per line (11pt article with 2 cm margins holds about 75).
WIDTH = 62

#: A number in e-notation inside a sentence (``1e-40``, ``2.7e-03``).
_E_NOTATION = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)e([-+]?\d+)\b")
_COMMAND = re.compile(r"\\(left|right|quad|qquad|,|;|!|displaystyle)(?![a-zA-Z])")
_NAME = re.compile(r"\\[a-zA-Z]+")
_SCRIPT = re.compile(r"[_^]\{([^{}]*)\}")


def power_of_ten(text: str) -> str:
    """A number Python has written (``2.7e-03``) as LaTeX math (no dollars), its e-notation as a power of ten."""
    match = _E_NOTATION.fullmatch(text)
    if match is None:
        return text
    mantissa, exponent = match.group(1), int(match.group(2))
    return rf"10^{{{exponent}}}" if float(mantissa) == 1 else rf"{mantissa} \cdot 10^{{{exponent}}}"


def powers_in_text(text: str) -> str:
    """LaTeX text with every number in e-notation typeset as a power of ten (:func:`power_of_ten`) in math mode."""
    return _E_NOTATION.sub(lambda match: f"${power_of_ten(match.group(0))}$", text)


def printed_width(tex: str) -> float:
    """Rough width of typeset ``tex`` in characters: commands count one, scripts two thirds."""
    t = _COMMAND.sub("", tex)
    t = t.replace(r"\frac", "")
    for _ in range(4):
        t = _SCRIPT.sub(lambda m: "~" * int(0.67 * len(_NAME.sub("x", m.group(1))) + 1), t)
    t = _NAME.sub("x", t)
    return float(len(re.sub(r"[{}^_ &]", "", t)))


def _lines(terms: Sequence[str], width: int) -> list[str]:
    """Printed terms joined with their signs into lines no wider than ``width`` where a term allows ("0" for none)."""
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
    return lines


def broken_sum(lhs: str, terms: Sequence[str], width: int = WIDTH, numbered: bool = False) -> str:
    """``lhs = t1 + t2 + ...`` as an ``align*`` block with a line break whenever the width is reached
    (with ``numbered``, a ``multline``-like ``align`` with one number on its last line).

    ``terms`` are printed terms; a leading minus sign joins them with ``-``.
    """
    lines = _lines(terms, width)
    rows = [f"{lhs} &= {lines[0]}"] + [rf"&\quad {line}" for line in lines[1:]]
    if numbered:
        rows = [row + r" \nonumber" for row in rows[:-1]] + rows[-1:]
    env = "align" if numbered else "align*"
    return f"\\begin{{{env}}}\n" + " \\\\\n".join(rows) + f"\n\\end{{{env}}}"


def terms_of(expr: sp.Expr, printer: Any = sp.latex) -> list[str]:
    """Printed terms of a sum (a single term otherwise), in SymPy's order."""
    expr = sp.sympify(expr)
    return [printer(t) for t in (expr.as_ordered_terms() if isinstance(expr, sp.Add) else [expr])]


def decimals(expr: Any, longer: int) -> Any:
    """``expr`` with every rational whose numerator or denominator has more than ``longer`` digits shown as a 15-digit
    decimal (for display: quadrature coefficients and their products, which the record keeps exact)."""
    return expr.xreplace({r: sp.Float(r, 15) for r in expr.atoms(sp.Rational) if max(len(str(r.p)), len(str(r.q))) > longer})


def entry(lhs: str, value: sp.Expr, width: int = WIDTH) -> str:
    """``lhs = value`` for a list of equations (:func:`packed`); wider than ``width``, its rationals of more than 15
    digits are shown as 15-digit decimals (what a reader compares; the record keeps the exact system) and its terms
    are broken over the lines of an ``aligned`` block."""
    tex = f"{lhs} = {sp.latex(value)}"
    if printed_width(tex) <= width:
        return tex
    lines = _lines(terms_of(decimals(value, 15)), width)
    return rf"{lhs} = \begin{{aligned}}[t] & " + r" \\ & ".join(lines) + r" \end{aligned}"


def named_terms(expr: sp.Expr, width: int = WIDTH, first: int = 1) -> tuple[list[str], list[list[Any]]]:
    """Printed terms of a sum of matrix products, and the factors they name: a product wider than ``width`` has each
    of its sums wider than a third of it replaced by a name F_first, F_{first+1}, ... (calligraphic), and each named sum comes
    back as [name, its terms] (named the same way where they are wide), so that :func:`broken_sum` may break every
    line of the model and its factors."""
    named: list[list[Any]] = []

    def term(t: sp.Expr) -> str:
        tex = sp.latex(t)
        if printed_width(tex) <= width or not isinstance(t, sp.MatMul):
            return tex
        factors = []
        for f in t.args:
            if isinstance(f, sp.MatAdd) and printed_width(sp.latex(f)) > width / 3:
                name = sp.MatrixSymbol(rf"\mathcal{{F}}_{{{len(named) + first}}}", f.rows, f.cols)
                slot: list[Any] = [sp.latex(name), []]
                named.append(slot)
                slot[1] = [term(a) for a in f.args]
                f = name
            factors.append(f)
        return sp.latex(sp.MatMul(*factors))

    terms = [term(t) for t in (expr.args if isinstance(expr, sp.MatAdd) else (expr,))]
    return terms, named


def collected_terms(expr: sp.Expr, x: sp.Symbol, width: int = WIDTH) -> list[str]:
    """Printed terms of ``expr`` collected in powers of ``x``, highest first, each coefficient factored
    (``c_k x^k``). A term wider than ``width`` is opened at its widest factor, a sum, whose terms become
    terms of their own between ``\\bigl(`` and ``\\bigr)``, so that :func:`broken_sum` may break inside it."""
    poly = sp.Poly(sp.expand(expr), x)
    out: list[str] = []
    for (k,), c in zip(poly.monoms(), poly.coeffs()):
        coefficient = sp.factor(c)
        sign = "-" if coefficient.could_extract_minus_sign() else ""
        coefficient = -coefficient if sign else coefficient
        power = sp.latex(x**k) if k else ""
        whole = " ".join(t for t in (sp.latex(coefficient) if coefficient != 1 or not k else "", power) if t)
        factors = sp.Mul.make_args(coefficient)
        sums = [f for f in factors if isinstance(f, sp.Add)]
        if printed_width(whole) <= width or not sums:
            out.append(sign + whole)
            continue
        widest = max(sums, key=lambda f: printed_width(sp.latex(f)))
        rest = sp.Mul(*[f for f in factors if f is not widest])
        inner = terms_of(widest)
        head = " ".join(t for t in (sp.latex(rest) if rest != 1 else "", power) if t)
        out += [sign + f"{head} \\bigl({inner[0]}".lstrip(), *inner[1:-1], inner[-1] + r" \bigr)"]
    return out


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


def aligned_system(model: Any, minimal: Any, meanings: Mapping[sp.Symbol, Any], pencil: Any) -> str:
    """The model, the minimal system (docs/equations.md §2.7) with the meaning of each of its unknowns (§2.8), and
    m(w), as one aligned block of mathematics (a law's ``_repr_latex_`` in a notebook)."""
    rows = [rf"Y &= {sp.latex(model)}", r"G(w) &= (w - Y^{T} Y)^{-1}"]
    said = {c: meanings[c].latex(pencil).replace("\\allowbreak ", "") for c, _ in minimal.equations}
    rows += [rf"{sp.latex(c)} &= {sp.latex(f)} &&\text{{where }} {sp.latex(c)} = {said[c]}" for c, f in minimal.equations]
    rows += [rf"{sp.latex(d)} &= {sp.latex(f)}" for d, f in minimal.definitions]
    rows.append(rf"m(w) &= {sp.latex(minimal.output)}")
    return r"$\begin{aligned}" + r" \\ ".join(rows) + r"\end{aligned}$"
