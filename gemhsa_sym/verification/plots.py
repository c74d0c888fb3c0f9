"""Figures of theory against Monte Carlo (matplotlib with the Agg back end, the ``plot`` extra).

Verification: density over the histogram, the same on a logarithmic x axis (the
spectra are very skewed: at beta = 1 the median eigenvalue is about 0.08, the
top edge about 50), and the law's CDF over the empirical ones; atoms are
stems. Sweeps: theory curves of moments and of the top edge across the varied
parameter with Monte Carlo means and standard errors on top. Threshold: a heatmap of
KS(softmax, GE) over (beta, n) and the fitted exponents of n against beta.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from gemhsa_sym.files import check_writable, write_atomic_with
from gemhsa_sym.layer.sharing import INFINITE_HEADS
from gemhsa_sym.parse import real_number
from gemhsa_sym.verification.compare import VerifyResult
from gemhsa_sym.verification.distances import clean
from gemhsa_sym.verification.report import labels

if TYPE_CHECKING:
    from gemhsa_sym.verification.depth import DepthResult
    from gemhsa_sym.verification.sweep import SweepResult
    from gemhsa_sym.verification.threshold import ThresholdResult

__all__ = ["PLOT_FORMATS", "check_plot", "plot_depth", "plot_sweep", "plot_threshold", "plot_verify"]

COLOURS = {"theory": "black", "softmax": "tab:blue", "ge": "tab:orange", "ge_without_uniform": "tab:red", "polynomial": "tab:green"}


#: File formats of the figures, from the path's suffix.
PLOT_FORMATS: tuple[str, ...] = ("png", "pdf", "svg")


def check_plot(path: str | Path, field: str = "plot") -> None:
    """Before any work: the ``plot`` extra is installed, the suffix names a format, the file can be written."""
    if importlib.util.find_spec("matplotlib") is None:
        raise NotImplementedError(f"{field}: needs matplotlib; install the extra: pip install 'gemhsa_sym[plot]'")
    suffix = Path(path).suffix.lower().lstrip(".")
    if suffix not in PLOT_FORMATS:
        raise ValueError(f"{field}: {str(path)!r} must end in one of {', '.join('.' + f for f in PLOT_FORMATS)}")
    check_writable(path, field)


def _pyplot() -> Any:
    """matplotlib.pyplot on the Agg back end, or a clear error without the ``plot`` extra."""
    try:
        import matplotlib
    except ImportError:
        raise NotImplementedError("plot: needs matplotlib; install the extra: pip install 'gemhsa_sym[plot]'") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(fig: Any, path: str | Path) -> None:
    """Save (format from the suffix) whole or not at all (:func:`gemhsa_sym.files.write_atomic_with`)."""
    suffix = Path(path).suffix.lower().lstrip(".")
    write_atomic_with(path, lambda fh: fig.savefig(fh, format=suffix, dpi=120, bbox_inches="tight"), "plot")


def plot_verify(result: VerifyResult, path: str | Path) -> None:
    """The figure of a verification, by what the law answers: for a law whose cdf holds the whole line, three panels
    (:func:`_plot_compact`); for a law known on a range (a heavy tail) or no law, the distribution functions and the
    tails (:func:`_plot_tails`)."""
    if result.theory is not None and result.theory.quantile_bracket()[2]:
        _plot_compact(result, path)
    else:
        _plot_tails(result, path)


def _plot_compact(result: VerifyResult, path: str | Path) -> None:
    """Three panels for the largest n: density over histogram (linear x, atoms as stems),
    the same per unit of log10 x, and the CDFs."""
    plt = _pyplot()
    theory, comparison, named = result.theory, result.comparisons[-1], labels(result.config)
    samples = {name: clean(comparison.samples[name]) for name in comparison.readings}
    total = {name: x.size for name, x in samples.items()}
    x_rho = theory.grid[(theory.grid > 0) & (theory.grid < theory.top_edge)]
    rho = np.asarray(theory.density(x_rho))
    top = max(theory.top_edge, max(float(x[-1]) for x in samples.values()))
    fig, (ax_lin, ax_log, ax_cdf) = plt.subplots(1, 3, figsize=(18, 5.6), layout="constrained")
    config = result.config
    others = [c.n for c in result.comparisons[:-1]]
    fig.suptitle(f"{config.name or 'configuration'}: {config.summary()}\n"
                 f"n = {comparison.n}" + (f" (the largest of n = {', '.join(map(str, others))}, {comparison.n}; the report gives "
                                          "every n)" if others else "")
                 + f", {comparison.draws} draw(s), seed {result.seed}; {result.config.spectral_object}", fontsize=10)

    bins = np.linspace(0.0, 1.02 * top, 120)
    for name, x in samples.items():
        counts, _ = np.histogram(x[x > 0], bins=bins)
        ax_lin.stairs(counts / (total[name] * np.diff(bins)), bins, color=COLOURS[name], alpha=0.8,
                      label=f"{named[name]} samples (KS {comparison.ks['theory_' + name]:.3g})")
    ax_lin.plot(x_rho, rho, color=COLOURS["theory"], lw=1.4, label="theory density")
    ax_lin.set_yscale("log")
    bulk = rho[(x_rho > 0.02 * top) & (rho > 0)]  # the bulk's scale, away from a divergence at 0
    if bulk.size:
        ax_lin.set_ylim(max(float(bulk.min()) / 10, 1e-6 * float(bulk.max())), 10 * float(bulk.max()))
        if rho.max() > 10 * bulk.max():
            ax_lin.annotate("density diverges at 0 (clipped)", xy=(0.0, 10 * float(bulk.max())), xytext=(0.05, 0.95),
                            textcoords="axes fraction", fontsize=8, arrowprops={"arrowstyle": "->", "lw": 0.8})
    ax_lin.set_xlabel("eigenvalue $\\lambda$")
    ax_lin.set_ylabel("density (log scale)")
    for edge in theory.edge_data:
        ax_lin.axvline(edge["location"], color="grey", ls=":", lw=1)
    if theory.atom_data:
        stems = ax_lin.twinx()
        stems.stem([a["location"] for a in theory.atom_data], [a["mass"] for a in theory.atom_data],
                   linefmt="C3-", markerfmt="C3o", basefmt=" ", label="atoms (mass, right axis)")
        for name, info in comparison.atoms.items():
            stems.plot([0.0], [info["fraction"]], marker="x", ls="", color=COLOURS[name], label=f"{named[name]}: zero fraction")
        stems.set_ylim(0, 1.05)
        stems.set_ylabel("atom mass")
        stems.legend(loc="center right", fontsize=8)
    ax_lin.legend(loc="upper right", fontsize=8)
    ax_lin.set_title("density over histogram", fontsize=10)

    positive = np.concatenate([x[x > 0] for x in samples.values()])
    low = max(float(positive.min()) if positive.size else 1e-6, 1e-8 * top)
    log_bins = np.linspace(np.log10(low), np.log10(1.05 * top), 100)
    for name, x in samples.items():
        counts, _ = np.histogram(np.log10(x[x > 0]), bins=log_bins)
        ax_log.stairs(counts / (total[name] * np.diff(log_bins)), 10**log_bins, color=COLOURS[name], alpha=0.8,
                      label=f"{named[name]} samples")
    shown = x_rho >= low
    ax_log.plot(x_rho[shown], (x_rho * rho * np.log(10))[shown], color=COLOURS["theory"], lw=1.4,
                label="theory $\\lambda\\,\\rho(\\lambda) \\ln 10$")
    ax_log.set_xscale("log")
    ax_log.set_xlabel("eigenvalue $\\lambda$ (log scale)")
    ax_log.set_ylabel("density per unit of $\\log_{10}\\lambda$")
    ax_log.legend(fontsize=8)
    ax_log.set_title("log-x view", fontsize=10)

    x_cdf = np.concatenate([[0.0], np.geomspace(low, 1.05 * top, 600)])
    ax_cdf.plot(x_cdf, theory.cdf(x_cdf), color=COLOURS["theory"], lw=1.4, label="theory CDF")
    for name, x in samples.items():
        ax_cdf.step(x, np.arange(1, x.size + 1) / x.size, where="post", color=COLOURS[name], alpha=0.8,
                    label=f"{named[name]} empirical (W1 {comparison.w1['theory_' + name]:.3g})")
    ax_cdf.set_xscale("symlog", linthresh=low)
    ax_cdf.set_xlabel("eigenvalue $\\lambda$ (symmetric log scale)")
    ax_cdf.set_ylabel("$P(\\lambda' \\leq \\lambda)$")
    ax_cdf.set_ylim(0, 1.02)
    ax_cdf.legend(fontsize=8, loc="lower right")
    ax_cdf.set_title(f"CDF (floor KS {comparison.floor['ks']:.3g})", fontsize=10)
    _save(fig, path)
    plt.close(fig)


def _iid_comparison(config: Any) -> bool:
    """Whether the top edge of ``config``'s law has the iid comparison 4 (e^(beta^2) - 1): the softmax attention
    matrix with unit score variance (docs/extensions.md §8.1)."""
    return (getattr(config, "target", None) == "attention" and config.score == "softmax"
            and config.token_covariance is None)


def plot_sweep(result: SweepResult, path: str | Path) -> None:
    """The moments M_1, M_2 and the top edge across the first varied parameter; one curve per value of the others (heads on a
    log axis, where a value oo, infinitely many heads, is a dashed horizontal line; for the attention matrix against
    beta, its top edge beside the iid edge 4 (e^(beta^2) - 1))."""
    plt = _pyplot()
    first = result.parameters[0]
    quantities = [("M_1", "$M_1$ (mean)"), ("M_2", "$M_2$ (second moment)"), ("top_edge", "top edge")]
    fig, axes = plt.subplots(1, len(quantities), figsize=(5.5 * len(quantities), 4.8), layout="constrained")
    config = result.config
    others = result.parameters[1:]
    title = f"{config.name or 'configuration'}: {config.summary()}\nvarying {', '.join(result.parameters)}"
    if result.n is not None:
        title += f"; Monte Carlo n = {result.n}, {result.draws} draw(s), seed {result.seed}"
    fig.suptitle(title, fontsize=10)
    groups: dict[tuple[str, ...], list[Any]] = {}
    for point in result.points:
        groups.setdefault(tuple(str(point.values[p]) for p in others), []).append(point)
    for ax, (key, label) in zip(np.atleast_1d(axes), quantities):
        for g, (rest, points) in enumerate(groups.items()):
            colour = f"C{g}"
            tag = ", ".join(f"{p}={v}" for p, v in zip(others, rest))
            for limit in [p for p in points if p.values[first] == INFINITE_HEADS and p.has_theory(key)]:
                ax.axhline(limit.theory_value(key), color=colour, ls="--", lw=1.0, label=f"theory {first}=oo {tag}".strip())
            points = [p for p in points if p.values[first] != INFINITE_HEADS]
            xs = np.array([float(real_number(first, p.values[first])) for p in points])  # exact text such as 1/4
            if points[0].has_theory(key):
                ys = np.array([p.theory_value(key) for p in points], dtype=float)
                ax.plot(xs, ys, "-", color=colour, lw=1.4, label=f"theory {tag}".strip())
                if key == "top_edge" and first == "beta" and _iid_comparison(points[0].config):
                    ax.plot(xs, 4 * np.expm1(xs**2), ":", color=colour, lw=1.2,
                            label=f"4 (e^(beta^2) - 1), iid edge {tag}".strip())
            for name, marker in zip(points[0].mc or (), "os"):
                ys = np.array([p.mc_value(name, key)[0] for p in points], dtype=float)
                es = np.array([p.mc_value(name, key)[1] or 0.0 for p in points], dtype=float)
                ax.errorbar(xs, ys, yerr=es, fmt=marker, ms=4, capsize=3, color=colour, alpha=0.8,
                            mfc="none" if name == "ge" else colour, label=f"{labels(result.config)[name]} {tag}".strip())
        ax.set_xlabel(first)
        ax.set_ylabel(label)
        shown = [y for line in ax.get_lines() for y in np.asarray(line.get_ydata(), dtype=float) if np.isfinite(y)]
        if shown and min(shown) > 0 and max(shown) > 10 * min(shown):  # a log axis only where the values span a decade
            ax.set_yscale("log")
        if first == "heads":
            ax.set_xscale("log")
        ax.legend(fontsize=7)
    _save(fig, path)
    plt.close(fig)


def _plot_tails(result: VerifyResult, path: str | Path) -> None:
    """Two panels for the largest n of a heavy-tailed law (docs/extensions.md §8.6): the distribution functions on a
    logarithmic x axis, and the tails P(lambda > x) on log-log axes (the samples alone where there is no law)."""
    plt = _pyplot()
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    comparison, law, named = result.comparisons[-1], result.theory, labels(result.config)
    if law is not None:
        F = np.asarray(law.cdf(law.grid))
        left.semilogx(law.grid, F, color=COLOURS["theory"], label="theory")
        right.loglog(law.grid, 1 - F, color=COLOURS["theory"], label="theory")
    for name in comparison.readings:
        values = np.sort(comparison.samples[name], axis=None)
        x = values[values > 0]  # the rest is 0 up to rounding
        survival = 1 - (np.arange(1, x.size + 1) + values.size - x.size) / values.size
        left.semilogx(x, 1 - survival, color=COLOURS[name], lw=0.8, label=f"{named[name]}, n = {comparison.n}")
        right.loglog(x[:-1], survival[:-1], color=COLOURS[name], lw=0.8, label=f"{named[name]}, n = {comparison.n}")
    tail = comparison.tails["theory"]
    left.set(xlabel="x", ylabel="F(x)", title="distribution function")
    right.set(xlabel="x", ylabel="P(lambda > x)", title="tail" if tail is None else f"tail (theory kappa = {tail:.2f})")
    for ax in (left, right):
        ax.legend(fontsize=8)
    _save(fig, path)
    plt.close(fig)


def plot_threshold(result: ThresholdResult, path: str | Path) -> None:
    """KS(softmax, GE) over (beta, n) as a heatmap (log colour), and the exponents of n against beta
    with the rate of Gaussian equivalence (-1/2) and the stalled level."""
    from gemhsa_sym.verification.threshold import RATE, STALLED

    plt = _pyplot()
    rows = result.rows()
    betas = np.array([float(real_number("beta", r["beta"])) for r in rows])
    gap = np.array([r["ks_softmax_ge"] for r in rows], dtype=float)
    fig, (heat, fit) = plt.subplots(1, 2, figsize=(11, 4.6), layout="constrained")
    fig.suptitle(f"{result.config.name or 'configuration'}: {result.config.summary()}", fontsize=10)
    image = heat.imshow(np.log10(gap.T), origin="lower", aspect="auto", cmap="viridis")
    heat.set_xticks(range(len(betas)), [r["beta"] for r in rows])
    heat.set_yticks(range(len(result.n)), [str(v) for v in result.n])
    heat.set_xlabel("beta")
    heat.set_ylabel("n")
    heat.set_title("log10 KS(softmax, GE)")
    fig.colorbar(image, ax=heat)
    for key, label, marker in (("exponent_softmax_ge", "KS(softmax, GE)", "o"), ("exponent_theory_softmax", "KS(theory, softmax)", "s")):
        values = np.array([np.nan if r[key] is None else r[key] for r in rows], dtype=float)
        fit.plot(betas, values, marker=marker, label=label)
    fit.axhline(RATE, color="grey", ls="--", lw=1, label=f"n^{RATE:g}")
    fit.axhline(STALLED, color="tab:red", ls=":", lw=1, label="stalled above")
    fit.set_xlabel("beta")
    fit.set_ylabel("fitted exponent of n")
    fit.legend(fontsize=8)
    _save(fig, path)
    plt.close(fig)


def plot_depth(result: DepthResult, path: str | Path) -> None:
    """The law against depth, one line per n: its mean (log scale: a collapse is a straight fall), its top eigenvalue
    and quantiles, and the common vector's and the centred part's sizes per entry; the law (mean and top edge) marked
    at every layer that has one, a collapsed one's mean at each n."""
    from gemhsa_sym.verification.depth import QUANTILES

    plt = _pyplot()
    layers = np.arange(1, result.network.layers + 1)
    fig, (mean, spread, parts) = plt.subplots(1, 3, figsize=(14, 4.4), layout="constrained")
    fig.suptitle(f"{result.network.name or 'network'}: {result.network.summary()}"[:160], fontsize=9)
    for k, n in enumerate(result.n):
        colour = f"C{k}"
        figures = result.figures[n].mean(axis=0)
        mean.plot(layers, figures[:, 0], "o-", color=colour, label=f"n = {n}")
        spread.plot(layers, figures[:, 1], "o-", color=colour, label=f"top, n = {n}")
        for j, level in enumerate(QUANTILES):
            spread.plot(layers, result.quantiles[n][:, j], ":", color=colour, lw=1, label=f"q{level:g}" if k == 0 else None)
        parts.plot(layers, figures[:, 2], "s-", color=colour, label=f"common, n = {n}")
        parts.plot(layers, figures[:, 3], "^--", color=colour, label=f"centred, n = {n}")
    known = [t for t in result.theory if t["mean"] is not None]
    plain = [t for t in known if not t["collapse"]]
    if plain:
        mean.plot([t["layer"] for t in plain], [t["mean"] for t in plain], "k*", ms=12, label="the law")
    for t in (t for t in known if t["collapse"]):  # the law of n^c times the eigenvalues, at each n
        for k, n in enumerate(result.n):
            mean.plot([t["layer"]], [t["mean"] / n ** t["collapse"]], "*", color=f"C{k}", mec="k", ms=12,
                      label=f"the law / n^{t['collapse']}" if k == 0 else None)
    edged = [t for t in known if t["top"] is not None]
    if edged:
        spread.plot([t["layer"] for t in edged], [t["top"] for t in edged], "k*", ms=12, label="the law's top edge")
    from matplotlib.ticker import FuncFormatter

    for axis, label in ((mean, "mean of the law (token spread)"), (spread, "top eigenvalue and quantiles"),
                        (parts, "size per entry")):
        axis.set_yscale("log")
        low, high = axis.get_ylim()
        axis.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))  # plain numbers, not 5x10^1
        axis.yaxis.set_minor_formatter(FuncFormatter(lambda v, _, narrow=high < 10 * low: f"{v:g}" if narrow else ""))
        axis.set_xlabel("layer")
        axis.set_ylabel(label)
        axis.set_xticks(layers)
        axis.legend(fontsize=7)
    mean.set_title(result.summary()[:90], fontsize=8)
    _save(fig, path)
    plt.close(fig)
