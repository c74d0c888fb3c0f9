"""The standalone LaTeX document of a law's record (docs/exports.md §5.2): configuration, model,
reduced Dyson system, P(m, w), moments, edges and atoms, every formula printed by SymPy."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import sympy as sp

from gemhsa_sym.export.exact import from_table, from_tree
from gemhsa_sym.export.latex import WIDTH, broken_sum, collected_terms, packed, powers_in_text, printed_width, terms_of
from gemhsa_sym.export.record import LawRecord
from gemhsa_sym.free.algebraic.elimination import M
from gemhsa_sym.layer.config import Config
from gemhsa_sym.layer.statement import statement_latex, summary_latex

__all__ = ["PREAMBLE", "document", "escape"]


#: Text characters that LaTeX reads as commands, and how to print them.
_SPECIAL = {"\\": r"\textbackslash{}", "^": r"\^{}", "~": r"\~{}", "{": r"\{", "}": r"\}",
            **{c: "\\" + c for c in "_&%#$"}}


#: How the record's edges were found, in a sentence (docs/solving.md §3.3 and §3.7), by its ``edge_method``.
EDGE_METHODS = {
    "discriminant": r"Each edge is a real root of the discriminant of $P$ in $m$ (or of its leading coefficient), "
                    r"classified by the density just left and right of it.",
    "polynomial": r"Each edge is a fold of the continuation of the Dyson system, refined as a solution of "
                  r"$P = \partial_m P = 0$ by Newton's method.",
    "continuation": r"Each edge is a fold of the continuation of the Dyson system, refined in multiple precision.",
}
#: The same where the continuation left an edge unrefined (its ``refined`` is false in the record).
UNREFINED = (r"Each edge is a fold of the continuation of the Dyson system, refined in multiple precision, or, where "
             r"that failed, a sign change of the density found by bisection in double precision (about 12 digits).")


#: The lines that open a standalone document: article class, amsmath, 1.5 cm margins, displays that may break.
PREAMBLE: tuple[str, ...] = (r"\documentclass[10pt]{article}", r"\usepackage{amsmath,amssymb}",
                             r"\usepackage[margin=1.5cm]{geometry}", r"\allowdisplaybreaks", r"\begin{document}")


def _edge_method(record: LawRecord) -> str:
    """How the record's edges were found (:data:`EDGE_METHODS`)."""
    if record.edge_method == "continuation" and not all(e.get("refined", True) for e in record.edges):
        return UNREFINED
    return EDGE_METHODS.get(record.edge_method, "")


def escape(text: str) -> str:
    """``text`` as LaTeX text: every special character printed as itself."""
    return "".join(_SPECIAL.get(c, c) for c in text)


def _equation_latex(g: sp.Symbol, f: sp.Expr, meaning: str, heads: str) -> list[Any]:
    """[unknown, terms, meaning, heads] of g = f: one term (the equation) where it fits a line, else
    the terms of num - g den = 0, which the document breaks over lines."""
    whole = rf"{sp.latex(g)} = {sp.latex(f)}"
    if printed_width(whole) <= WIDTH:
        return [sp.latex(g), [whole], meaning, heads]
    num, den = sp.fraction(sp.together(f))
    return [sp.latex(g), terms_of(sp.expand(num - g * den)), meaning, heads]


#: What a sentence of the engine may name that is a formula: an unknown of the Dyson system, a power of H.
_FORMULA_IN_TEXT = re.compile(r"(g_\{[\w,]+\}(?:\^\{\w+\})?|\bH\^-?\d+(?:/\d+)?|\bH -> oo\b)")
_POWER = re.compile(r"\^(-?\d+(?:/\d+)?)$")


def _statement(record: LawRecord) -> str | None:
    """What the law is the law of, as LaTeX: printed from the configuration (:func:`~gemhsa_sym.layer.statement.statement_latex`),
    or a model's statement as text."""
    config = getattr(record, "config", None)
    if config:
        return statement_latex(Config.from_dict(config))
    return record.statement_latex or (None if record.statement is None else prose(record.statement))


def prose(text: str) -> str:
    """A sentence the engine wrote as LaTeX text: special characters escaped, numbers in e-notation typeset, and the
    unknowns it names (``g_{u1,u1}``, ``g_{v4,u4}^{g}``, already LaTeX) and powers of H (``H^-1``) in math mode."""
    parts = _FORMULA_IN_TEXT.split(text)
    return "".join(powers_in_text(escape(part)) if i % 2 == 0 else "$" + _POWER.sub(r"^{\1}", part).replace("-> oo", r"\to \infty") + "$"
                   for i, part in enumerate(parts))


def _summary(record: LawRecord) -> str:
    """The configuration or model in one line as LaTeX (:func:`~gemhsa_sym.layer.statement.summary_latex`)."""
    config = getattr(record, "config", None)
    return summary_latex(Config.from_dict(config)) if config else record.summary_latex or prose(record.summary)


class _Printed:
    """The formulas of a record's exact parts (:class:`~.record.ExactParts`) printed by SymPy's LaTeX printer, now."""

    def __init__(self, record: LawRecord) -> None:
        exact, meanings = record.exact, record.latex.meanings or {}

        def rows(pairs: list[list[Any]]) -> list[list[Any]]:
            out = []
            for unknown, rhs in pairs:
                g = from_tree(unknown, "exact.unknown")
                out.append(_equation_latex(g, from_tree(rhs, "exact.equation"), *meanings[str(g)]))
            return out

        self.polynomial = None if exact.polynomial is None else collected_terms(from_table(exact.polynomial), M)
        self.moments = [terms_of(from_tree(m["symbolic"], "exact.moments")) for m in exact.moments]
        self.minimal, self.definitions = rows(exact.equations), rows(exact.definitions)


def document(record: LawRecord, verification: Mapping[str, Any] | None = None) -> str:
    """A standalone LaTeX document of a law's record (configuration, model, system, P, moments, edges, atoms),
    with the Monte Carlo figures of a ``verification`` record (the JSON of ``gemhsa-sym verify``) when given."""
    tex, printed = record.latex, _Printed(record)
    config_toml = getattr(record, "config_toml", "")
    out = [
        *PREAMBLE,
        rf"\section*{{Limiting spectral law: {escape(record.name or 'polynomial model')}}}",
    ]
    statement = _statement(record)
    if record.summary:
        short = "" if statement is None else " The law of " + statement.partition(": ")[0].partition(", of $Y")[0] + " (in full in the appendix)."
        out.append(r"{\raggedright\noindent " + _summary(record) + "." + short + r"\par}")
    if tex.coefficients:
        out += [r"\subsection*{Gaussian-equivalence coefficients}", packed(tex.coefficients)]
    out += [
        r"\subsection*{Gaussian-equivalent model}" if config_toml else r"\subsection*{Model}",
        r"The law is that of the eigenvalues of $Y^{T} Y$, with",
        *([broken_sum("Y", tex.model)] if not tex.template else [
            broken_sum("Y", [rf"\sum_{{h=1}}^{{{tex.heads}}} T^{{(h)}}"]), "where one head's term is",
            broken_sum("T^{(h)}", tex.template)]),
        *(["with the factors"] + [broken_sum(name, terms) for name, terms in tex.factors] if tex.factors else []),
        "and the size ratios " + ", ".join(f"${r}$" for r in tex.ratios) + ".",
    ]
    if record.system.get("reason"):
        out += [r"\subsection*{Minimal system}", "No minimal system: " + prose(record.system["reason"]) + "; the reduced "
                "Dyson system of the appendix is the law's equation."]
    else:
        out += [r"{\small", *_minimal_system(record, printed), "}"]
    out.append(r"\subsection*{Algebraic equation}")
    if printed.polynomial:
        info = record.polynomial_info
        how = (" It was guessed from the series of $m(w)$ modulo primes and verified: it vanishes on the series to "
               "twice the order used, at fresh points and a fresh prime, and on the 40-digit solution of the Dyson system."
               if info.method == "series guess" else "")
        out.append(rf"$m(w)$ is a root of $P(m, w) = 0$, of degree {info.degree_m} in $m$ and {info.degree_w} in $w$ "
                   r"(printed in the appendix)." + how)
    else:
        out.append("No polynomial equation: " + prose(str(record.polynomial_reason or "not attempted")) + ".")
    out.append(r"\subsection*{Moments}")
    out.append(r"$M_{k} = \int \lambda^{k}\, d\nu(\lambda)$, the moments of the law $\nu$ of the eigenvalues:")
    for k, m in enumerate(printed.moments, 1):
        out.append(broken_sum(rf"M_{{{k}}}", m))
    out.append(r"\subsection*{Support edges and atoms}")
    edges = record.edges
    if edges:
        rows = [rf"{e['side']}{' (hard)' if e.get('hard') else ''} & ${e['location']}$" for e in edges]
        out += [r"\begin{tabular}{ll}", " \\\\\n".join(rows), r"\end{tabular}", "", _edge_method(record), ""]
    else:
        out.append("No support edges were computed.")
    atoms = record.atoms
    out.append(
        "Atoms: " + ", ".join(f"mass ${a['exact'] or a['mass']}$ at ${a['location']}$" for a in atoms) + "."
        if atoms else "No atoms."
    )
    checks = [prose(n) for n in record.notes]
    if record.exact is not None and not record.system.get("reason"):
        checks.append(r"the minimal system gives the reduced system's $m(w)$ to $10^{-40}$ at 50 digits, and each of its "
                      r"equations holds there to $10^{-40}$")
    if verification is not None:
        checks.append(_monte_carlo(verification))
    if checks:
        out += [r"\subsection*{How it was checked}", "; ".join(checks) + "."]
    out += [r"\section*{Appendix}"]
    if config_toml:
        out += [r"\subsection*{Configuration}", r"\begin{verbatim}", config_toml.strip(), r"\end{verbatim}"]
    if statement is not None:
        out += [r"\subsection*{The spectral object}", r"{\raggedright The law of " + statement + "." + (
            r" In the engine's normalisation (the model above), every Gaussian matrix has $N(0, \mathrm{scale}/n)$ entries, so "
            r"that the scores' $1/\sqrt{d_k}$ is the factor $1/\sqrt{d_k/n}$ of $\mu_1$ in $Y$." if config_toml else "") + r"\par}"]
    if printed.minimal and any(_long(meaning) for _, _, meaning, _ in printed.minimal):
        out += [r"\subsection*{The unknowns of the minimal system}", *_meanings(printed.minimal)]
    if printed.definitions:
        out += [r"\subsection*{The unknowns given explicitly}", "In the order written, each uses only the unknowns of "
                "the minimal system and those before it:", *_equations(printed.definitions, numbered=False),
                "They are the normalised traces", *_meanings(printed.definitions)]
    if printed.polynomial:
        out += [r"\subsection*{The algebraic equation}",
                r"Collected in powers of $m$, each coefficient factored over $\mathbb{Q}$:",
                broken_sum("P(m, w)", printed.polynomial)]
    out += [
        r"\subsection*{Reduced Dyson system}",
        rf"Unknowns: {len(tex.unknowns)}; the Stieltjes transform is $m(w) = {tex.output}$. "
        r"Per sector (a dimension group, or an eigenspace of the exchangeable heads) $G = M^{-1}$, "
        r"where $M$ has the nonzero entries below; $K_{a,b}$ denotes the entry $(M^{-1})_{a,b}$.",
    ]
    for name, entries in tex.sectors:
        out += [rf"\paragraph{{Sector {escape(name)}.}}", packed(entries)]
    if tex.readouts:
        out += [r"\paragraph{Read-outs.}", packed(tex.readouts)]
    out += [r"\end{document}", ""]
    return "\n".join(out)


#: How a verification record names its sample sets.
_READINGS = {"ge": "the Gaussian equivalent", "softmax": "the softmax layer", "polynomial": "the samples"}


def _monte_carlo(data: Mapping[str, Any]) -> str:
    """One sentence of Monte Carlo figures: KS distances of the theory to each sample set per n, the floor
    and the outliers beyond the support (docs/exports.md §5.2)."""
    rows = data["by_n"]
    readings = [key.removeprefix("theory_") for key in rows[0]["ks"]]
    drawn = data.get("drawn")
    parts = []
    for row in rows:
        ks = ", ".join(f"KS to {_READINGS.get(r, escape(r))} {row['ks'][f'theory_{r}']:.4f}" for r in readings)
        outliers = row["outliers"].get(readings[-1] if "softmax" not in readings else "softmax", {}).get("count")
        parts.append(rf"at $n = {row['n']}$ {ks} (floor {row['floor']['ks']:.4f}"
                     + (f", {outliers} eigenvalues beyond the support" if outliers else "") + ")")
    where = f", drawn as {prose(drawn['summary'])}" if drawn else ""
    return (rf"Monte Carlo (\texttt{{gemhsa-sym verify}}, seed {data['seed']}, {rows[0]['draws']} draws per set{where}): "
            + "; ".join(parts) + r"; the floor is the KS distance between two independent sample sets")


def _minimal_system(record: LawRecord, printed: _Printed) -> list[str]:
    """The minimal system as numbered equations, the definitions, and the meaning of each unknown."""
    tex = record.latex
    system = record.system
    out = [
        r"\subsection*{Minimal system}",
        rf"With $G(w) = (w - Y^{{T}} Y)^{{-1}}$, the Stieltjes transform is $m(w) = {tex.output}$, and "
        rf"{len(printed.minimal)} unknowns (of {system.get('reduced_unknowns', len(tex.unknowns))} in the reduced "
        r"Dyson system of the appendix) solve",
    ]
    out += _equations(printed.minimal, numbered=True)
    if printed.definitions:
        out.append(f"where the other {len(printed.definitions)} unknowns are the explicit functions of the appendix.")
    out += [r"Each unknown is a normalised trace in the limit $n \to \infty$ (one longer than a line and a half is given in "
            r"the appendix):"] + _meanings(printed.minimal, short=True)
    return out


def _long(meaning: str) -> bool:
    """Whether a meaning is wider than a line and a half (the main part leaves it to the appendix)."""
    return printed_width(meaning) > 1.5 * WIDTH


def _meanings(rows: list[list], short: bool = False) -> list[str]:
    """The meaning of each unknown of ``rows`` as an itemised list; with ``short``, a meaning wider than
    a line and a half is left to the appendix."""
    items = [rf"\item ${g}$: in the appendix" if short and _long(meaning) else
             rf"\item ${g} = {meaning}$" + (f", {escape(heads)}" if heads else "") for g, _, meaning, heads in rows]
    return [r"{\raggedright", r"\begin{itemize}", *items, r"\end{itemize}", "}"]


def _equations(rows: list[list], numbered: bool) -> list[str]:
    """Equations g = F (one term) or num - g den = 0 broken over lines, numbered or not."""
    out = []
    for _, terms, _, _ in rows:
        if len(terms) == 1:
            out.append(rf"\begin{{equation{'' if numbered else '*'}}}" + terms[0] + rf"\end{{equation{'' if numbered else '*'}}}")
        else:
            out.append(broken_sum("0", terms, numbered=numbered))
    return out
