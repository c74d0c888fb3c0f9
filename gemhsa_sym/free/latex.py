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

__all__ = ["WIDTH", "broken_sum", "document", "packed", "printed_width", "terms_of"]

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


def broken_sum(lhs: str, terms: Sequence[str], width: int = WIDTH) -> str:
    """``lhs = t1 + t2 + ...`` as an ``align*`` block with a line break whenever the width is reached.

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
    return "\\begin{align*}\n" + " \\\\\n".join(rows) + "\n\\end{align*}"


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


def _escape(text: str) -> str:
    return re.sub(r"([_&%#$])", r"\\\1", text)


def document(record: Mapping[str, Any]) -> str:
    """A standalone LaTeX document of a law's record (configuration, model, system, P, moments, edges, atoms)."""
    tex = record["latex"]
    out = [
        r"\documentclass[11pt]{article}",
        r"\usepackage{amsmath,amssymb}",
        r"\usepackage[margin=2cm]{geometry}",
        r"\allowdisplaybreaks",
        r"\begin{document}",
        rf"\section*{{Limiting spectral law: {_escape(record.get('name') or 'polynomial model')}}}",
    ]
    if record.get("config_toml"):
        out += [r"\subsection*{Configuration}", r"\begin{verbatim}", record["config_toml"].strip(), r"\end{verbatim}"]
    if tex.get("coefficients"):
        out += [r"\subsection*{Gaussian-equivalence coefficients}", packed(tex["coefficients"])]
    out += [
        r"\subsection*{Gaussian-equivalent model}" if record.get("config_toml") else r"\subsection*{Model}",
        r"The law is that of the eigenvalues of $Y^{T} Y$, with",
        broken_sum("Y", tex["model"]),
        "and the size ratios " + ", ".join(f"${r}$" for r in tex["ratios"]) + ".",
        r"\subsection*{Reduced Dyson system}",
        rf"Unknowns: {len(tex['unknowns'])}; the Stieltjes transform is $m(w) = {tex['output']}$. "
        r"Per sector (a dimension group, or an eigenspace of the exchangeable heads) $G = M^{-1}$, "
        r"where $M$ has the nonzero entries below; $K_{a,b}$ denotes the entry $(M^{-1})_{a,b}$.",
    ]
    for name, entries in tex["sectors"]:
        out += [rf"\paragraph{{Sector {_escape(name)}.}}", packed(entries)]
    if tex["readouts"]:
        out += [r"\paragraph{Read-outs.}", packed(tex["readouts"])]
    if record.get("notes"):
        out += [r"\begin{itemize}"] + [rf"\item {_escape(n)}" for n in record["notes"]] + [r"\end{itemize}"]
    out.append(r"\subsection*{Algebraic equation}")
    if tex.get("polynomial"):
        info = record["polynomial_info"]
        out += [
            rf"$m(w)$ is a root of $P(m, w) = 0$, of degree {info['degree_m']} in $m$ and {info['degree_w']} in $w$:",
            broken_sum("P(m, w)", tex["polynomial"]),
        ]
    else:
        out.append("No polynomial equation: " + _escape(str(record.get("polynomial_reason") or "not attempted")) + ".")
    out.append(r"\subsection*{Moments}")
    for k, m in enumerate(tex["moments"], 1):
        out.append(broken_sum(rf"\mu_{{{k}}}", m))
    out.append(r"\subsection*{Support edges and atoms}")
    edges = record.get("edges", [])
    if edges:
        rows = [rf"{e['side']}{' (hard)' if e.get('hard') else ''} & ${e['location']}$" for e in edges]
        out += [r"\begin{tabular}{ll}", " \\\\\n".join(rows), r"\end{tabular}", ""]
    else:
        out.append("No support edges were computed.")
    atoms = record.get("atoms", [])
    out.append(
        "Atoms: " + ", ".join(f"mass ${a['exact'] or a['mass']}$ at ${a['location']}$" for a in atoms) + "."
        if atoms else "No atoms."
    )
    out += [r"\end{document}", ""]
    return "\n".join(out)
