"""The standalone LaTeX documents of the laws of the positional Dyson equation (docs/exports.md §5.5): a causal layer's
and a key-weighted network's, each a pure function of its record (:mod:`~gemhsa_sym.export.positional_record`, formulas
printed by SymPy there) and of the Monte Carlo of ``gemhsa-sym verify`` when given. Neither law has P(m, w) (and the
causal law no moments); the documents give the equations, the quantiles, the distribution function by decades and the
tail or the moments instead."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from gemhsa_sym.export.document import PREAMBLE, escape
from gemhsa_sym.export.latex import packed, power_of_ten
from gemhsa_sym.layer.config import Config
from gemhsa_sym.layer.network import description_from_dict, network_statement_latex, network_summary_latex
from gemhsa_sym.layer.statement import statement_latex, summary_latex

__all__ = ["causal_document", "key_weighted_document"]

#: Quantile levels the Monte Carlo gives beside the law's.
_LEVELS = ("0.1", "0.5", "0.9", "0.99")


def _text(text: str) -> str:
    """``text`` as LaTeX text (:func:`~.free.document.escape`, and the comparison signs, which the default font
    does not have)."""
    return escape(text).replace("<", r"\textless{}").replace(">", r"\textgreater{}")


def _number(x: float | None) -> str:
    """A table entry: four significant digits, a power of ten typeset where Python would write e-notation."""
    if x is None:
        return "--"
    text = f"{x:.4g}"
    return text if "e" not in text else f"${power_of_ten(text)}$"


def causal_document(record: Mapping[str, Any], verification: Mapping[str, Any] | None = None) -> str:
    """A standalone LaTeX document of a causal law's record, with the figures of a ``verification`` record (the JSON
    of ``gemhsa-sym verify`` for a causal layer) when given."""
    tex = record["latex"]
    statement = statement_latex(Config.from_dict(record["config"]))
    masked = len(tex["equations"]) > 1
    below, mass = record["mass_below_grid"]
    out = [
        r"\documentclass[10pt]{article}",
        r"\usepackage{amsmath,amssymb}",
        r"\usepackage[margin=1.5cm]{geometry}",
        r"\begin{document}",
        rf"\section*{{Limiting spectral law of a causal layer: {_text(record['name'] or 'configuration')}}}",
        r"{\raggedright\noindent " + summary_latex(Config.from_dict(record["config"])) + ". The law of " + statement.partition(": ")[0].partition(", of $Y")[0]
        + r" (in full in the appendix).\par}",
        r"\subsection*{Gaussian-equivalence coefficients}",
        r"\begin{gather*}" + r",\quad ".join(tex["coefficients"]) + r"\end{gather*}",
        r"\subsection*{Causal Gaussian equivalent}",
        r"Query $i$ sees the keys $j \le i$; the conjectured equivalent of the attention matrix is",
        r"\begin{equation*}" + tex["equivalent"][0] + r"\end{equation*}",
        (r"The law is that of the eigenvalues of $n (A - C)^{T} (A - C)$, $C_{ij} = 1/i$ on $j \le i$ the causal average: "
         r"row normalisation has $c_0 = 1$, so the equivalent's uniform part $c_0 C$ is the $C$ the object subtracts."
         if record["config"].get("target") == "attention" else
         ("The law is that of the eigenvalues of $Y_c^{T} Y_c / n$ of the column-centred output" if "residual" not in record["config"]
          else r"The law is that of the eigenvalues of $R^{T} P R / n$ of the residual stream $R = X + \alpha \sqrt{n}\, Y$, "
               r"$P = I - \mathbf{1}\mathbf{1}^{T} / n$")
         + ", without the uniform part $c_0 / i$ (Monte Carlo shows its effect on the law fading with $n$)."),
        r"\subsection*{Equations}",
    ]
    if masked:
        out += ["Given the tokens, the rows of the equivalent with fresh queries are independent Gaussian vectors; row "
                r"$t = i / n$ has covariance $C_t / n$ with", r"\begin{gather*}" + r"\\ ".join(tex["equations"][:2]) + r"\end{gather*}",
                "where $P_t$ keeps the keys $u \\le t$ and $r_k = d_k / n$. On the nodes $t_k$ and weights $\\omega_k$ of "
                "a graded Gauss--Legendre rule,", r"\begin{gather*}" + tex["equations"][2] + r"\end{gather*}",
                "and the matrix $\\sum_k \\phi_k C_{t_k}$ is solved for given $\\phi_k$ by the Dyson equation of its "
                "linear pencil, in which the tokens occur masked ($X^{T} P_{t_k}$)." + _sharing(Config.from_dict(record["config"]))]
    else:
        out += ["The noise has the variance profile", r"\begin{equation*}" + tex["equations"][0] + r"\end{equation*}",
                "over the token positions; " + tex["equation"][0] + "."]
    out += [
        r"\subsection*{The law}",
        f"Solved on {record['nodes']} positions (level {record['level']}); achieved error of the distribution function "
        f"${_number_latex(record['error'])}$ (the error of $m(w)$ at every point, its change from the level before or "
        "the levels' own estimate of it, weighted by the point's share of $F$, summed, and the integration rule's estimate). "
        f"The mass below ${_number_latex(below)}$ is {mass:.4f}. " + _tail(record),
        *_quantile_table(record, verification, "softmax"),
    ]
    out += ["", "The distribution function by decades:", "",
            *_decades(record), "", "No moments: " + tex["moments"][0] + ". No algebraic equation: "
            + _text(record["polynomial_reason"]) + "."]
    probes = record["probes"]
    checks = [f"$m(w)$ at {len(probes['w'])} points of the upper half plane on the first level ({probes['nodes']} nodes) is "
              "solved again by every check of the library and must agree to $10^{-6}$"]
    if verification is not None:
        checks.append(_monte_carlo(verification, "the softmax layer"))
    out += [r"\subsection*{How it was checked}", "; ".join(checks) + ".",
            r"\section*{Appendix}", r"\subsection*{The spectral object}", r"{\raggedright The law of " + statement + r".\par}",
            r"\subsection*{Configuration}", r"\begin{verbatim}", record["config_toml"].strip(),
            r"\end{verbatim}", r"\end{document}", ""]
    return "\n".join(out)


def _quantile_table(record: Mapping[str, Any], verification: Mapping[str, Any] | None, real: str) -> list[str]:
    """The law's quantiles, and beside them those of the ``real`` model and of its equivalent (a causal layer's without
    its uniform part too) at the largest n drawn."""
    rows = ["", r"\begin{tabular}{l" + "r" * len(_LEVELS) + "}", "quantile & " + " & ".join(_LEVELS) + r" \\ \hline",
            "law & " + " & ".join(_number(x) for x in record["quantiles"]["x"]) + r" \\"]
    if verification is not None and verification.get("by_n"):
        last = verification["by_n"][-1]
        rows += [rf"{real}, $n = {last['n']}$ & " + " & ".join(_number(x) for x in last["quantiles"]["softmax"]) + r" \\",
                 rf"Gaussian equivalent, $n = {last['n']}$ & " + " & ".join(_number(x) for x in last["quantiles"]["ge"]) + r" \\"]
        if "ge_without_uniform" in last["quantiles"]:
            rows.append(rf"without $c_0$, $n = {last['n']}$ & "
                        + " & ".join(_number(x) for x in last["quantiles"]["ge_without_uniform"]) + r" \\")
    return rows + [r"\end{tabular}"]


def _number_latex(x: float) -> str:
    """``x`` in LaTeX math with two significant digits, as a times 10^b outside [0.01, 1000)."""
    return f"{x:.2g}" if x == 0 or 0.01 <= abs(x) < 1000 else power_of_ten(f"{x:.1e}")


def _sharing(config: Config) -> str:
    """What shared projections do to the equation (docs/equations.md §2.11), as a sentence ("" without sharing)."""
    shared = {name for names in config.shared().values() for name in names}
    if not shared:
        return ""
    if "W_Q" in shared or config.output != "independent":
        return " The heads that share a matrix read one Gaussian in the pencil, which is written with every head."
    return (r" The heads that share $W_K$ or $W_V$ have the law of heads with their own projections: the map "
            r"$(W_Q^{(h)}, W_O^{(h)}) \mapsto -(W_Q^{(h)}, W_O^{(h)})$ of one head leaves $C_t$ unchanged and turns every "
            "block of the resolvent between that head and another into its negative, so those blocks vanish, and the "
            "pairings of a shared matrix across heads read only them.")


def _tail(record: Mapping[str, Any]) -> str:
    """The tail exponent, or why there is none."""
    low, high = record["tail_range"]
    if record["tail_exponent"] is None:
        return "No tail exponent: " + record["latex"]["tail"][0] + "."
    return (rf"Tail: $P(\lambda > x) \sim c\, x^{{-\kappa}}$ with $\kappa = {record['tail_exponent']:.3f}$ fitted on "
            rf"$[{_number_latex(low)}, {_number_latex(high)}]$.")


def _decades(record: Mapping[str, Any]) -> list[str]:
    """A table of F at the powers of ten inside the grid (linear between its points)."""
    x, F = record["cdf"]["x"], record["cdf"]["F"]
    low, high = math.ceil(math.log10(x[0]) - 1e-9), math.floor(math.log10(x[-1]) + 1e-9)
    rows = [(e, float(np.interp(10.0**e, x, F))) for e in range(low, high + 1)]
    return [r"\begin{tabular}{l" + "r" * len(rows) + "}",
            "$x$ & " + " & ".join(f"$10^{{{e}}}$" for e, _ in rows) + r" \\ \hline",
            "$F(x)$ & " + " & ".join(f"{f:.4f}" for _, f in rows) + r" \\", r"\end{tabular}"]


def _monte_carlo(data: Mapping[str, Any], real: str) -> str:
    """One sentence of Monte Carlo figures per n: KS of the law to the ``real`` model, to its Gaussian equivalent and (a
    causal layer) to the equivalent without its uniform part, KS between the real model and the equivalent, and the
    floor (between two independent sets of the last reading)."""
    parts = []
    for p in data["by_n"]:
        theory = p["ks"] or {}
        ks = [f"KS to {real} {theory['theory_softmax']:.4f}" if "theory_softmax" in theory else None,
              f"to the Gaussian equivalent {theory['theory_ge']:.4f}" if "theory_ge" in theory else None,
              f"to the equivalent without its uniform part {theory['theory_ge_without_uniform']:.4f}"
              if "theory_ge_without_uniform" in theory else None,
              f"softmax to equivalent {p['softmax_ge']['ks']:.4f}"]
        parts.append(rf"at $n = {p['n']}$ " + ", ".join(k for k in ks if k) + f" (floor {p['floor']['ks']:.4f})")
    return (rf"Monte Carlo (\texttt{{gemhsa-sym verify}}, seed {data['seed']}, {data['draws']} draws per set): "
            + "; ".join(parts) + "; the floor is the KS distance between two independent sets of the equivalent"
            + (" without its uniform part" if "theory_ge_without_uniform" in (data["by_n"][0]["ks"] or {}) else ""))


def key_weighted_document(record: Mapping[str, Any], verification: Mapping[str, Any] | None = None) -> str:
    """A standalone LaTeX document of a key-weighted law's record (a network read after layer 2, docs/extensions.md
    §8.7), with the figures of a ``verification`` record (the JSON of ``gemhsa-sym verify`` for it) when given."""
    tex, network = record["latex"], description_from_dict(record["network"])
    out = [
        *PREAMBLE,
        rf"\section*{{Limiting spectral law after layer {network.read_layer}: {_text(record['name'] or 'network')}}}",
        r"{\raggedright\noindent " + network_summary_latex(network) + r". The law of the eigenvalues of $\mathrm{out}^{T} P\, "
        r"\mathrm{out} / n$, $P = I - \mathbf{1}\mathbf{1}^{T} / n$, after layer " + str(network.read_layer)
        + r" (the network in full in the appendix).\par}",
        r"\subsection*{Gaussian equivalent}",
        "In units of the engine (every Gaussian matrix with entries of variance scale$/n$), the law is that of the "
        "eigenvalues of $Y^{T} Y$ with",
        *tex["model"],
        *(["where $S$, the first block's output less its common vector, is", *tex["first"]] if tex["first"] else []),
        *(["with the factors", *tex["factors"]] if tex["factors"] else []),
        "and the key weights, a deterministic diagonal over the tokens $j$ with $g_j$ independent standard Gaussians,",
        r"\begin{gather*}" + r"\\ ".join(tex["key_weights"]) + r"\end{gather*}",
        "The values and constants (the exact means of the laws they come from, and the common vector's size):",
        packed(tex["constants"]),
        *([r"\begin{itemize}", *(r"\item " + _text(note) for note in record["notes"]), r"\end{itemize}"]
          if record["notes"] else []),
        r"\subsection*{Equation}",
        "The Dyson equation of the linear pencil of $Y$ with every unknown a function of the key weight's Gaussian "
        "$g$ (an operator-valued equation over the diagonal algebra of the tokens), read on Gauss--Hermite rules of 8, 16, 32 and 64 nodes "
        "until $m(w)$ changes by at most the tolerance times $1 + |m|$ from one rule to the next.",
        r"\subsection*{The law}",
        f"Solved on {record['nodes']} nodes (level {record['level']}); achieved error of the distribution function "
        f"${_number_latex(record['error'])}$ (the change from the level before and the integration rule's estimate). The moments, "
        "contour integrals of $m(w)$ on a circle around the mass:",
        r"\begin{gather*}" + r",\quad ".join(rf"M_{{{k}}} = {m['float']:.10g}" for k, m in enumerate(record["moments"], 1))
        + r"\end{gather*}",
        *[f"An atom at 0 of mass {a['mass']:.6g} (the rank of the centred output)." for a in record["atoms"]],
        "No edges: " + _text(record["edges"]) + ". No algebraic equation: " + _text(record["polynomial_reason"]) + ".",
        *_quantile_table(record, verification, "network"),
    ]
    probes = record["probes"]
    checks = [f"$m(w)$ at {len(probes['w'])} points of the upper half plane on the first level ({probes['nodes']} nodes) "
              "and the moments are solved again by every check of the library and must agree to $10^{-6}$"]
    if verification is not None:
        checks.append(_monte_carlo(verification, "the network"))
    out += ["", "The distribution function by decades:", "", *_decades(record),
            r"\subsection*{How it was checked}", "; ".join(checks) + ".",
            r"\section*{Appendix}", r"\subsection*{The spectral object}", r"{\raggedright The law of " + network_statement_latex(network)
            + r".\par}", r"\subsection*{Network}", r"\begin{verbatim}", record["config_toml"].strip(), r"\end{verbatim}",
            r"\end{document}", ""]
    return "\n".join(out)
