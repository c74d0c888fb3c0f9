"""The text of ``gemhsa-sym verify``: one table of theory beside Monte Carlo per token count, then KS
against n, for every law, with the rows the law answers (docs/verification.md §4.3)."""

from __future__ import annotations

import math
from typing import Any

from gemhsa_sym.verification.compare import Comparison, VerifyResult
from gemhsa_sym.verification.distances import HILL_FRACTION, MIN_DRAWS

__all__ = ["format_report", "labels"]


def labels(source: Any) -> dict[str, str]:
    """What each reading is called in reports and figures: the real layer by its score (its JSON key stays ``softmax``,
    docs/exports.md §5.4), its Gaussian equivalent ``GE`` (a causal layer's without its uniform part ``GE w/o c_0``), a
    polynomial model's own samples ``MC``."""
    return {"softmax": getattr(source, "score", "layer"), "ge": "GE", "ge_without_uniform": "GE w/o c_0", "polynomial": "MC"}


def _fmt(value: float | None, spec: str = ".4g") -> str:
    return "n/a" if value is None else format(value, spec)


def _scaling_header(key: str, names: dict[str, str]) -> str:
    """The column of a series of :meth:`VerifyResult.scaling`."""
    if key.startswith("ks_theory_"):
        return f"KS th-{names[key.removeprefix('ks_theory_')]}"
    return {"ks_softmax_ge": f"KS {names['softmax']}-GE", "ks_floor": "floor"}.get(key, "outliers")


def _distances(c: Comparison, names: tuple[str, ...], labels: list[str]) -> list[str]:
    """KS (and W1 where the law answers it) of the theory to each set, the floor, and the real layer to GE."""
    columns = [(f"theory-{label}", c.ks[f"theory_{name}"], None if c.w1 is None else c.w1[f"theory_{name}"])
               for name, label in zip(names, labels)] if c.ks is not None else []
    columns.append((f"floor ({labels[-1]}-{labels[-1]})", c.floor["ks"], c.floor["w1"]))
    if c.softmax_ge is not None:
        columns.append((f"{labels[0]}-GE", c.softmax_ge["ks"], c.softmax_ge["w1"]))
    widths = [max(12, len(header) + 2) for header, _, _ in columns]
    lines = [f"{'distance':<10}" + "".join(f"{column[0]:>{w}}" for column, w in zip(columns, widths))]
    for row, key in ((1, "KS"), (2, "W1")):
        lines.append(f"{key:<10}" + "".join(f"{_fmt(column[row]):>{w}}" for column, w in zip(columns, widths)))
    return lines


def _moments_and_edges(c: Comparison, names: tuple[str, ...], labels: list[str]) -> list[str]:
    """The moment table, the edges against the bulk extremes and the outliers (laws with moments and edges)."""
    lines = []
    if c.moments is not None:
        lines.append(f"{'moment':<8}{'theory':>14}" + "".join(f" {label:>12} {'± se':>10} {'z':>6}" for label in labels) + "  exact")
        for moments in zip(*(c.moments[name] for name in names)):
            first = moments[0]
            lines.append(f"M_{first['k']:<6}{first['theory']:>14.6g}"
                         + "".join(f" {m['samples']:>12.6g} {_fmt(m['se']):>10} {_fmt(m['z'], '.2f'):>6}" for m in moments)
                         + f"  {_exact_text(first['exact'])}")
        if c.draws < MIN_DRAWS:
            lines.append(f"         (the mean over {c.draws} draw(s), without a standard error: one needs at least {MIN_DRAWS} "
                         "draws to mean what it says)")
    if c.edges is None:
        return lines
    for edges in zip(*(c.edges[name] for name in names)):
        first = edges[0]
        lines.append(f"{'hard ' if first['hard'] else ''}{first['side']} edge {first['location']:.6g}: bulk extreme "
                     + ", ".join(f"{label} {_fmt(e['bulk_extreme'], '.6g')} ({_fmt(e['rel_diff'], '+.2%')})"
                                 for label, e in zip(labels, edges)))
    if c.edges[names[0]]:
        quantiles = [c.edges[name][-1]["quantile"] for name in names]
        lines.append(f"quantile {quantiles[0]['level']:.5f}: theory {quantiles[0]['theory']:.6g}, "
                     + ", ".join(f"{label} {q['samples']:.6g} ({_fmt(q['rel_diff'], '+.2%')})" for label, q in zip(labels, quantiles)))
    for name, label in zip(names, labels):
        o = c.outliers[name]
        lines.append(f"outliers {label}: {o['count']} beyond the support +{o['tolerance']:.0%} "
                     f"({o['per_draw']:.3g} per draw, {o['above_top']} above the top edge)"
                     + (f", largest {o['max']:.6g}" if o["max"] is not None else ""))
    return lines


def _quantiles_and_tails(c: Comparison, names: tuple[str, ...], labels: list[str]) -> list[str]:
    """The quantiles 0.1 .. 0.99 and the tail exponents of the law and of each set."""
    levels = ", ".join(f"{q:g}" for q in c.quantiles["q"])
    theory = c.quantiles["theory"]
    parts = ([] if theory is None else ["theory " + ", ".join("below the grid" if x is None else f"{x:.4g}" for x in theory)])
    parts += [f"{label} " + ", ".join(f"{x:.4g}" for x in c.quantiles[name]) for name, label in zip(names, labels)]
    tail = c.tails["theory"]
    tails = ([] if tail is None else ["theory " + ("inf (compact support)" if math.isinf(tail) else f"{tail:.3f}")])
    tails += [f"{label} {c.tails[name]:.3f}" for name, label in zip(names, labels)]
    return [f"quantiles {levels}: " + "; ".join(parts),
            f"tail exponent (Hill, top {HILL_FRACTION:.0%} of each set): " + "; ".join(tails)]


def _atoms(result: VerifyResult, c: Comparison, names: tuple[str, ...], labels: list[str]) -> str:
    """The law's atoms against the numerically zero eigenvalues of each set."""
    law = result.theory
    atoms = "none" if law is None or not law.atom_data else ", ".join(
        f"mass {a['mass']:.6g} at {a['location']:g}" for a in law.atom_data)
    zeros = [c.atoms[name] for name in names]
    expected = zeros[0]["theory_fraction"]
    return (f"atoms    theory: {atoms}; eigenvalues <= {zeros[0]['threshold']:.2g}: "
            + ", ".join(f"{label} {a['near_zero']} ({a['fraction']:.4g})" for label, a in zip(labels, zeros))
            + ("" if expected is None else f"; the law's mass up to there {expected:.4g}"))


def format_report(result: VerifyResult) -> str:
    """The comparison as a plain-text table, largest n first in detail, then KS against n."""
    config, lines, named = result.config, [], labels(result.config)
    lines.append(f"config   {config.name or 'configuration'}: {config.summary()}")
    if result.drawn is not None:
        lines.append(f"drawn    {result.drawn.summary()} (the samples' distance to the limit law includes its finite H)")
    law = result.theory
    if law is None:
        lines.append(f"theory   none: {result.reason}")
    else:
        missing = {query: law.reason(query) for query in ("moments", "edges")}
        for query, why in missing.items():
            if why is not None:
                lines.append(f"theory   no {query}: {why}")
        lines.append(f"theory   achieved error of the cdf {law.error:.1e}")
    for c in result.comparisons:
        names, shown = c.readings, [named[name] for name in c.readings]
        lines += ["", f"n = {c.n}, {c.draws} draw(s), seed {result.seed}; {result.config.spectral_object}"]
        lines += _distances(c, names, shown)
        lines += _moments_and_edges(c, names, shown)
        lines += _quantiles_and_tails(c, names, shown)
        lines.append(_atoms(result, c, names, shown))
        lines.append("timing   " + ", ".join(f"{key} {value:.1f}" for key, value in c.timing.items()))
    scaling = result.scaling()
    if scaling is not None:
        keys = [key for key in scaling if key != "n" and not key.endswith(("_exponent", "_exponent_error"))]
        widths = [max(9, len(_scaling_header(key, named)) + 2) for key in keys]
        lines.append("")
        lines.append(f"{'n':>8}" + "".join(f"{_scaling_header(key, named):>{w}}" for key, w in zip(keys, widths)))
        for i, n in enumerate(scaling["n"]):
            lines.append(f"{n:>8}" + "".join(f"{scaling[key][i]:>{w}.4g}" if key.startswith("ks") else f"{scaling[key][i]:>{w}}"
                                             for key, w in zip(keys, widths)))
        fits = ", ".join(f"{key[:-9]} ~ n^{scaling[key]:.2f}" + ("" if scaling[f"{key}_error"] is None else f" ± {scaling[f'{key}_error']:.2f}")
                         for key in scaling if key.endswith("_exponent"))
        two = len(scaling["n"]) < 3
        lines.append(f"fitted   {fits}" + (" (from two n: any power law fits two points, so no error is given)" if two else
                                           " (± the standard error of the least-squares slope in log-log)"))
    seconds = 0.0 if law is None else law.seconds
    lines.append(f"timing   law solved in {seconds:.1f} s (earlier, if read from the cache); this run {result.seconds:.1f} s")
    return "\n".join(lines)


def _exact_text(exact: str | None) -> str:
    """An exact moment as the table prints it: itself, or where it is long (rational digits of quadrature data) its
    length, for the JSON to hold."""
    if not exact:
        return "(numeric)"
    return exact if len(exact) <= 60 else f"(exact, {len(exact)} characters: --json)"
