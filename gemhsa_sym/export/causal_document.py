"""The standalone LaTeX document of a causal layer's law (docs/exports.md §5.5): a pure function of its
record (:func:`~gemhsa_sym.export.causal_record.causal_record`, formulas printed by SymPy there) and of the
Monte Carlo of ``gemhsa-sym verify`` when given. The law has no moments and no P(m, w); the document
gives the equations, the quantiles, the distribution function by decades and the tail instead."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from gemhsa_sym.export.document import escape
from gemhsa_sym.layer.config import Config
from gemhsa_sym.layer.statement import statement_latex

__all__ = ["causal_document"]

#: Quantile levels the Monte Carlo gives beside the law's.
_LEVELS = ("0.1", "0.5", "0.9", "0.99")


def _text(text: str) -> str:
    """``text`` as LaTeX text (:func:`~.free.document.escape`, and the comparison signs, which the default font
    does not have)."""
    return escape(text).replace("<", r"\textless{}").replace(">", r"\textgreater{}")


def _number(x: float | None) -> str:
    return "--" if x is None else f"{x:.4g}"


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
        r"{\raggedright\noindent " + _text(_summary(record)) + ". The law of " + statement.partition(": ")[0].partition(", of $Y")[0]
        + r" (in full in the appendix).\par}",
        r"\subsection*{Gaussian-equivalence coefficients}",
        r"\begin{gather*}" + r",\quad ".join(tex["coefficients"]) + r"\end{gather*}",
        r"\subsection*{Causal Gaussian equivalent}",
        r"Query $i$ sees the keys $j \le i$; the conjectured equivalent of the attention matrix is",
        r"\begin{equation*}" + tex["equivalent"][0] + r"\end{equation*}",
        "The law is that of the eigenvalues of $Y_c^{T} Y_c / n$ of the column-centred output, without the uniform part "
        "$c_0 / i$ (Monte Carlo shows its effect on the law fading with $n$).",
        r"\subsection*{Equations}",
    ]
    if masked:
        out += ["Given the tokens, the rows of the equivalent with fresh queries are independent Gaussian vectors; row "
                r"$t = i / n$ has covariance $C_t / n$ with", r"\begin{gather*}" + r"\\ ".join(tex["equations"][:2]) + r"\end{gather*}",
                "where $P_t$ keeps the keys $u \\le t$ and $r_k = d_k / n$. On the nodes $t_k$ and weights $\\omega_k$ of "
                "a graded Gauss--Legendre rule,", r"\begin{gather*}" + tex["equations"][2] + r"\end{gather*}",
                "and the matrix $\\sum_k \\phi_k C_{t_k}$ is solved for given $\\phi_k$ by the Dyson equation of its "
                "linear pencil, in which the tokens occur masked ($X^{T} P_{t_k}$)."]
    else:
        out += ["The noise has the variance profile", r"\begin{equation*}" + tex["equations"][0] + r"\end{equation*}",
                "over the token positions; " + _text(record["equation"]) + "."]
    out += [
        r"\subsection*{The law}",
        f"Solved on {record['nodes']} positions (level {record['level']}); achieved error of the distribution function "
        f"{record['error']:.1e} (the change from the level before). "
        f"The mass below ${below:g}$ is {mass:.4f}. " + _tail(record),
        "", r"\begin{tabular}{l" + "r" * len(_LEVELS) + "}", "quantile & " + " & ".join(_LEVELS) + r" \\ \hline",
        "law & " + " & ".join(_number(x) for x in record["quantiles"]["x"]) + r" \\",
    ]
    if verification is not None and verification.get("by_n"):
        last = verification["by_n"][-1]
        out += [rf"softmax, $n = {last['n']}$ & " + " & ".join(_number(x) for x in last["quantiles"]["softmax"]) + r" \\",
                rf"Gaussian equivalent, $n = {last['n']}$ & " + " & ".join(_number(x) for x in last["quantiles"]["ge"]) + r" \\"]
    out += [r"\end{tabular}", "", "The distribution function by decades:", "",
            *_decades(record), "", "No moments: " + _text(record["moments"]) + ". No algebraic equation: "
            + _text(record["polynomial_reason"]) + "."]
    probes = record["probes"]
    checks = [f"$m(w)$ at {len(probes['w'])} points of the upper half plane on the first level ({probes['nodes']} nodes) is "
              "solved again by every check of the library and must agree to $10^{-6}$"]
    if verification is not None:
        checks.append(_monte_carlo(verification))
    out += [r"\subsection*{How it was checked}", "; ".join(checks) + ".",
            r"\section*{Appendix}", r"\subsection*{The spectral object}", r"{\raggedright The law of " + statement + r".\par}",
            r"\subsection*{Configuration}", r"\begin{verbatim}", record["config_toml"].strip(),
            r"\end{verbatim}", r"\end{document}", ""]
    return "\n".join(out)


def _summary(record: Mapping[str, Any]) -> str:
    """The configuration in one line: heads, ratios, score and temperature."""
    c = record["config"]
    return (f"H={c['heads']}; d={c['d']}, d_k={c['d_k']}, d_v={c['d_v']}, d_out={c['d_out']} (ratios to n); "
            f"beta={c['beta']}, {c['score']}, causal mask")


def _tail(record: Mapping[str, Any]) -> str:
    """The tail exponent, or why there is none."""
    low, high = record["tail_range"]
    if record["tail_exponent"] is None:
        return "No tail exponent: " + _text(record["tail_reason"]) + "."
    return rf"Tail: $P(\lambda > x) \sim c\, x^{{-\kappa}}$ with $\kappa = {record['tail_exponent']:.3f}$ fitted on [{low:g}, {high:g}]."


def _decades(record: Mapping[str, Any]) -> list[str]:
    """A table of F at the powers of ten of the grid."""
    x, F = record["cdf"]["x"], record["cdf"]["F"]
    rows = [(round(math.log10(a)), f) for a, f in zip(x, F) if abs(round(math.log10(a)) - math.log10(a)) < 1e-9]
    return [r"\begin{tabular}{l" + "r" * len(rows) + "}",
            "$x$ & " + " & ".join(f"$10^{{{e}}}$" for e, _ in rows) + r" \\ \hline",
            "$F(x)$ & " + " & ".join(f"{f:.4f}" for _, f in rows) + r" \\", r"\end{tabular}"]


def _monte_carlo(data: Mapping[str, Any]) -> str:
    """One sentence of Monte Carlo figures per n: KS of the law to the softmax layer and to its Gaussian equivalent,
    KS between the two, and the floor."""
    parts = []
    for p in data["by_n"]:
        theory = p["ks"] or {}
        ks = [f"KS to the softmax layer {theory['theory_softmax']:.4f}" if "theory_softmax" in theory else None,
              f"to the Gaussian equivalent {theory['theory_ge']:.4f}" if "theory_ge" in theory else None,
              f"softmax to equivalent {p['softmax_ge']['ks']:.4f}"]
        parts.append(rf"at $n = {p['n']}$ " + ", ".join(k for k in ks if k) + f" (floor {p['floor']['ks']:.4f})")
    return (rf"Monte Carlo (\texttt{{gemhsa-sym verify}}, seed {data['seed']}, {data['draws']} draws per set): "
            + "; ".join(parts) + "; the floor is the KS distance between two independent sets of the equivalent")
