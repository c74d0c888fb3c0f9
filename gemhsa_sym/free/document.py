"""The standalone LaTeX document of a law's record (docs/exports.md §5.2): configuration, model,
reduced Dyson system, P(m, w), moments, edges and atoms, every formula printed by SymPy."""

from __future__ import annotations

import re

from .latex import broken_sum, packed
from .record import LawRecord

__all__ = ["document"]


def _escape(text: str) -> str:
    return re.sub(r"([_&%#$])", r"\\\1", text)


def document(record: LawRecord) -> str:
    """A standalone LaTeX document of a law's record (configuration, model, system, P, moments, edges, atoms)."""
    tex = record.latex
    config_toml = getattr(record, "config_toml", "")
    out = [
        r"\documentclass[11pt]{article}",
        r"\usepackage{amsmath,amssymb}",
        r"\usepackage[margin=2cm]{geometry}",
        r"\allowdisplaybreaks",
        r"\begin{document}",
        rf"\section*{{Limiting spectral law: {_escape(record.name or 'polynomial model')}}}",
    ]
    if config_toml:
        out += [r"\subsection*{Configuration}", r"\begin{verbatim}", config_toml.strip(), r"\end{verbatim}"]
    if tex.coefficients:
        out += [r"\subsection*{Gaussian-equivalence coefficients}", packed(tex.coefficients)]
    out += [
        r"\subsection*{Gaussian-equivalent model}" if config_toml else r"\subsection*{Model}",
        r"The law is that of the eigenvalues of $Y^{T} Y$, with",
        *([broken_sum("Y", tex.model)] if not tex.template else [
            broken_sum("Y", [rf"\sum_{{h=1}}^{{{tex.heads}}} T^{{(h)}}"]), "where one head's term is",
            broken_sum("T^{(h)}", tex.template)]),
        "and the size ratios " + ", ".join(f"${r}$" for r in tex.ratios) + ".",
        r"\subsection*{Reduced Dyson system}",
        rf"Unknowns: {len(tex.unknowns)}; the Stieltjes transform is $m(w) = {tex.output}$. "
        r"Per sector (a dimension group, or an eigenspace of the exchangeable heads) $G = M^{-1}$, "
        r"where $M$ has the nonzero entries below; $K_{a,b}$ denotes the entry $(M^{-1})_{a,b}$.",
    ]
    for name, entries in tex.sectors:
        out += [rf"\paragraph{{Sector {_escape(name)}.}}", packed(entries)]
    if tex.readouts:
        out += [r"\paragraph{Read-outs.}", packed(tex.readouts)]
    if record.notes:
        out += [r"\begin{itemize}"] + [rf"\item {_escape(n)}" for n in record.notes] + [r"\end{itemize}"]
    out.append(r"\subsection*{Algebraic equation}")
    if tex.polynomial:
        info = record.polynomial_info
        out += [
            rf"$m(w)$ is a root of $P(m, w) = 0$, of degree {info.degree_m} in $m$ and {info.degree_w} in $w$:",
            broken_sum("P(m, w)", tex.polynomial),
        ]
    else:
        out.append("No polynomial equation: " + _escape(str(record.polynomial_reason or "not attempted")) + ".")
    out.append(r"\subsection*{Moments}")
    for k, m in enumerate(tex.moments, 1):
        out.append(broken_sum(rf"\mu_{{{k}}}", m))
    out.append(r"\subsection*{Support edges and atoms}")
    edges = record.edges
    if edges:
        rows = [rf"{e['side']}{' (hard)' if e.get('hard') else ''} & ${e['location']}$" for e in edges]
        out += [r"\begin{tabular}{ll}", " \\\\\n".join(rows), r"\end{tabular}", ""]
    else:
        out.append("No support edges were computed.")
    atoms = record.atoms
    out.append(
        "Atoms: " + ", ".join(f"mass ${a['exact'] or a['mass']}$ at ${a['location']}$" for a in atoms) + "."
        if atoms else "No atoms."
    )
    out += [r"\end{document}", ""]
    return "\n".join(out)
