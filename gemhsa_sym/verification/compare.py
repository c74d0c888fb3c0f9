"""Theory beside Monte Carlo for one configuration (docs/verification.md §4.3).

:func:`verify` runs, as tasks on one executor, the law's summary
(:func:`~gemhsa_sym.verification.theory.theory_task`) and three seeded sample
sets per token count n: the softmax layer and its Gaussian equivalent with the
same tokens and weights (children of ``SeedSequence(seed)``, as
``gemhsa-sym sample --seed`` draws them) and a second, independent Gaussian-
equivalent set (children of ``SeedSequence([seed, 1])``) for the Monte Carlo
floor. :func:`compare` then measures, for each n:

- KS and Wasserstein-1 distances between the law's CDF (atoms included) and the
  empirical CDFs, beside the floor (the same distances between the two GE sets);
- the first four moments, exact theory against the samples' mean over draws
  with its standard error (standard deviation over draws / sqrt(draws));
- each support edge against the extreme sample eigenvalues inside the support
  (widened by ``edge_tol``), and the top edge against the bulk quantile at
  level 1 - 1/d_out; eigenvalues outside the widened support are outliers,
  counted and reported with their largest value;
- each atom's mass against the fraction of numerically zero eigenvalues
  (below ``ZERO_TOL`` times the largest eigenvalue). When the law has an atom
  at 0 these are set to 0 before the distribution distances (the atom shows up
  as round-off); otherwise they are true eigenvalues of a law whose density
  diverges at 0 and are left as they are.

A polynomial model file (docs/exports.md §5.4) has one reading, its own sampler
(``polynomial``, the eigenvalues of Y^T Y at sizes ratio * n), and its floor is an
independent set of it; there is no softmax-GE distance (``softmax_ge`` is None).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import stats

from gemhsa_sym.layer.config import Config
from gemhsa_sym.layer.polynomial_model import PolynomialModel
from gemhsa_sym.sampling.executors import Task, local_workers, run_tasks
from gemhsa_sym.sampling.sampler import DrawTask, PolynomialDraw, check_draws, draw_sets, drawn_config, run_draw
from gemhsa_sym.verification.theory import Theory, theory_task

__all__ = ["FLOOR_STREAM", "ZERO_TOL", "Comparison", "VerifyResult", "clean", "compare", "draw_tasks",
           "empirical_ks", "empirical_w1", "format_report", "two_sample", "verify"]

#: Second entropy word of the independent Gaussian-equivalent sample set (the floor).
FLOOR_STREAM = 1
#: Eigenvalues below this times the largest one are numerically zero (round-off of eigvalsh is ~1e-14).
ZERO_TOL = 1e-11


def _timed_draw(task: DrawTask | PolynomialDraw) -> tuple[np.ndarray, float]:
    """The spectrum of one draw and the seconds it took."""
    start = time.perf_counter()
    return run_draw(task), time.perf_counter() - start


def draw_tasks(config: Config | PolynomialModel, n: int, draws: int, seed: int, backend: str = "numpy",
               device: str = "cpu") -> dict[str, list[Task]]:
    """The draw tasks of the sample sets (module docstring), each with its own seed, computed by
    ``backend`` on ``device`` (docs/verification.md §4.8): every reading of ``config``
    (:func:`~gemhsa_sym.sampling.sampler.draw_sets`), then ``floor``, an independent set of the last one."""
    same = draw_sets(config, n, np.random.SeedSequence(seed).spawn(draws), backend, device)
    other = draw_sets(config, n, np.random.SeedSequence([seed, FLOOR_STREAM]).spawn(draws), backend, device)
    sets: dict[str, list[DrawTask] | list[PolynomialDraw]] = {**same, "floor": list(other.values())[-1]}
    return {name: [(_timed_draw, (task,)) for task in group] for name, group in sets.items()}


def clean(eigenvalues: np.ndarray, snap: bool = True) -> np.ndarray:
    """Sorted eigenvalues, round-off negatives set to 0, and with ``snap`` the numerically zero ones too."""
    x = np.sort(np.asarray(eigenvalues, dtype=float), axis=None)
    cut = ZERO_TOL * max(float(x[-1]), 0.0) if snap else 0.0
    return np.where(x <= cut, 0.0, x)


def empirical_ks(theory: Theory, samples: np.ndarray) -> float:
    """sup |F - F_n| over both sides of every jump, for the law's CDF F (atoms included)."""
    x, counts = np.unique(clean(samples, _snaps(theory)), return_counts=True)
    right = np.cumsum(counts) / counts.sum()
    left = right - counts / counts.sum()
    F = theory.cdf(x)
    F_left = theory.cdf(np.nextafter(x, -np.inf))
    return float(max(np.max(np.abs(F - right)), np.max(np.abs(F_left - left))))


def empirical_w1(theory: Theory, samples: np.ndarray) -> float:
    """∫ |F - F_n| dx, exact for the tabulated F (linear between its grid points)."""
    x = clean(samples, _snaps(theory))
    grid = np.union1d(np.union1d(theory.grid, x), [a["location"] for a in theory.atoms])
    F = theory.cdf(grid)
    F_next = theory.cdf(np.nextafter(grid[1:], -np.inf))
    Fn = np.searchsorted(x, grid, side="right") / x.size
    d0, d1, h = F[:-1] - Fn[:-1], F_next - Fn[:-1], np.diff(grid)
    same = d0 * d1 >= 0
    spread = np.where(same, 1.0, np.abs(d0) + np.abs(d1))
    piece = np.where(same, (np.abs(d0) + np.abs(d1)) / 2, (d0**2 + d1**2) / (2 * spread))
    tail = max(float(x[-1]) - float(grid[-1]), 0.0) * (1 - float(F[-1]))
    return float(np.sum(h * piece) + tail)


def _snaps(theory: Theory) -> bool:
    """Numerically zero eigenvalues are set to 0 when the law has an atom there."""
    return any(a["location"] == 0 and a["mass"] > 0 for a in theory.atoms)


def two_sample(a: np.ndarray, b: np.ndarray, snap: bool = True) -> dict[str, float]:
    """KS and W1 between two sample sets."""
    a, b = clean(a, snap), clean(b, snap)
    return {"ks": float(stats.ks_2samp(a, b, method="asymp").statistic), "w1": float(stats.wasserstein_distance(a, b))}


def _moments(theory: Theory, eigenvalues: np.ndarray) -> list[dict[str, Any]]:
    """Theory moments against the mean over draws of the per-draw moments, with standard errors."""
    draws = eigenvalues.shape[0]
    out = []
    for k, m in enumerate(theory.moments, 1):
        per_draw = np.mean(eigenvalues.astype(float) ** k, axis=1)
        mean = float(per_draw.mean())
        se = float(per_draw.std(ddof=1) / np.sqrt(draws)) if draws > 1 else None
        out.append({
            "k": k, "theory": m["float"], "exact": m["exact"], "samples": mean, "se": se,
            "rel_diff": mean / m["float"] - 1 if m["float"] else None,
            "z": (mean - m["float"]) / se if se else None,
        })
    return out


def _intervals(theory: Theory, edge_tol: float) -> list[tuple[float, float]]:
    """Support intervals widened by ``edge_tol`` (relative) on their soft sides."""
    edges = theory.edges
    return [(lo["location"] * (1 - edge_tol), hi["location"] * (1 + edge_tol)) for lo, hi in zip(edges[::2], edges[1::2])]


def _edges(theory: Theory, x: np.ndarray, d_out: int, edge_tol: float) -> list[dict[str, Any]]:
    """Each edge against the extreme sample eigenvalue inside its widened interval; the top edge also
    against the bulk quantile at level 1 - 1/d_out."""
    out = []
    nonzero = x[x > 0]
    for (lo, hi), (a, b) in zip(zip(theory.edges[::2], theory.edges[1::2]), _intervals(theory, edge_tol)):
        inside = nonzero[(nonzero >= a) & (nonzero <= b)]
        for edge, value in ((lo, inside.min() if inside.size else None), (hi, inside.max() if inside.size else None)):
            loc = edge["location"]
            out.append({
                "location": loc, "side": edge["side"], "hard": edge["hard"], "refined": edge["refined"],
                "bulk_extreme": None if value is None else float(value),
                "rel_diff": None if value is None or loc == 0 else float(value) / loc - 1,
            })
    if out:
        level = 1 - 1 / d_out
        top, sample_q = float(theory.quantile(level)), float(np.quantile(x, level))
        out[-1]["quantile"] = {"level": level, "theory": top, "samples": sample_q,
                               "rel_diff": sample_q / top - 1 if top else None}
    return out


def _outliers(theory: Theory, eigenvalues: np.ndarray, edge_tol: float) -> dict[str, Any]:
    """Eigenvalues outside the widened support (numerical zeros excepted): count, per draw, largest."""
    x = clean(eigenvalues)
    nonzero = x[x > 0]
    inside = np.zeros(nonzero.size, dtype=bool)
    for a, b in _intervals(theory, edge_tol):
        inside |= (nonzero >= a) & (nonzero <= b)
    out = np.sort(nonzero[~inside])[::-1]
    above = out[out > theory.top_edge * (1 + edge_tol)]
    return {
        "tolerance": edge_tol, "count": int(out.size), "per_draw": out.size / eigenvalues.shape[0],
        "above_top": int(above.size), "max": float(out[0]) if out.size else None,
        "largest": out[:10].tolist(),
    }


def _atoms(theory: Theory, eigenvalues: np.ndarray) -> dict[str, Any]:
    """Numerically zero eigenvalues against the law's mass at (and just above) 0."""
    x = np.sort(eigenvalues, axis=None)
    threshold = ZERO_TOL * max(float(x[-1]), 0.0)
    count = int(np.sum(x <= threshold))
    expected = float(theory.cdf(threshold))
    return {
        "threshold": threshold, "near_zero": count, "fraction": count / x.size,
        "theory_fraction": expected, "theory": theory.atoms,
    }


@dataclass(frozen=True)
class Comparison:
    """All figures of theory against the samples of one token count n (see the module docstring)."""

    n: int
    draws: int
    ks: dict[str, float]
    w1: dict[str, float]
    floor: dict[str, float]
    softmax_ge: dict[str, float] | None
    moments: dict[str, list[dict[str, Any]]]
    edges: dict[str, list[dict[str, Any]]]
    outliers: dict[str, dict[str, Any]]
    atoms: dict[str, dict[str, Any]]
    timing: dict[str, float]
    samples: dict[str, np.ndarray] = field(repr=False, compare=False)

    @property
    def readings(self) -> tuple[str, ...]:
        """The sample sets compared with the theory: ``softmax`` and ``ge``, or ``polynomial``."""
        return tuple(key.removeprefix("theory_") for key in self.ks)

    def to_json_dict(self) -> dict[str, Any]:
        """The figures as JSON types (the eigenvalues themselves left out)."""
        return {key: value for key, value in self.__dict__.items() if key != "samples"}


def compare(theory: Theory, samples: dict[str, np.ndarray], n: int, edge_tol: float = 0.05,
            timing: dict[str, float] | None = None) -> Comparison:
    """Theory against the sample sets (each draws x q) at token count ``n``: the readings (``softmax`` and ``ge``,
    or ``polynomial``) and ``floor``, an independent set of the last reading."""
    names = [name for name in samples if name != "floor"]
    draws, d_out = samples[names[0]].shape
    snap = _snaps(theory)
    pooled = {name: clean(values, snap) for name, values in samples.items()}
    return Comparison(
        n=n, draws=draws,
        ks={f"theory_{name}": empirical_ks(theory, pooled[name]) for name in names},
        w1={f"theory_{name}": empirical_w1(theory, pooled[name]) for name in names},
        floor=two_sample(pooled[names[-1]], pooled["floor"], snap) | {"ks_theory_floor": empirical_ks(theory, pooled["floor"])},
        softmax_ge=two_sample(pooled["softmax"], pooled["ge"], snap) if "softmax" in pooled else None,
        moments={name: _moments(theory, samples[name]) for name in names},
        edges={name: _edges(theory, pooled[name], d_out, edge_tol) for name in names},
        outliers={name: _outliers(theory, samples[name], edge_tol) for name in names},
        atoms={name: _atoms(theory, samples[name]) for name in names},
        timing=dict(timing or {}),
        samples=samples,
    )


@dataclass(frozen=True)
class VerifyResult:
    """The law's summary and one :class:`Comparison` per token count, in increasing n; ``drawn`` is the
    configuration the samples come from where it is not ``config`` (infinitely many heads, drawn at a
    finite number)."""

    config: Config | PolynomialModel
    seed: int
    theory: Theory
    comparisons: list[Comparison]
    seconds: float
    drawn: Config | None = None

    def scaling(self) -> dict[str, Any] | None:
        """KS against n with fitted exponents (log-log least squares), when there are several n."""
        if len(self.comparisons) < 2:
            return None
        n = np.array([c.n for c in self.comparisons], dtype=float)
        rows: dict[str, Any] = {"n": n.astype(int).tolist()}
        names = self.comparisons[0].readings
        series = {f"ks_theory_{name}": [c.ks[f"theory_{name}"] for c in self.comparisons] for name in names}
        if self.comparisons[0].softmax_ge is not None:
            series["ks_softmax_ge"] = [c.softmax_ge["ks"] for c in self.comparisons if c.softmax_ge is not None]
        series["ks_floor"] = [c.floor["ks"] for c in self.comparisons]
        series[f"outliers_{names[0]}"] = [c.outliers[names[0]]["count"] for c in self.comparisons]
        for key, values in series.items():
            rows[key] = values
            if key.startswith("ks") and min(values) > 0:
                rows[f"{key}_exponent"] = float(np.polyfit(np.log(n), np.log(values), 1)[0])
        return rows

    def to_json_dict(self) -> dict[str, Any]:
        """The largest n's figures at the top level (keys ks, w1, floor, moments, edges, outliers,
        timing, ...), every n under ``by_n``, the KS-against-n fit under ``scaling``."""
        last = self.comparisons[-1]
        theory = self.theory.to_json_dict()
        return {
            "config": self.config.to_dict(), "summary": self.config.summary(), "seed": self.seed,
            **({} if self.drawn is None else {"drawn": {"config": self.drawn.to_dict(), "summary": self.drawn.summary()}}),
            **last.to_json_dict(),
            "timing": last.timing | {"theory_s": self.theory.seconds, "total_s": self.seconds},
            "theory": {key: theory[key] for key in ("moments", "edges", "atoms")},
            "by_n": [c.to_json_dict() for c in self.comparisons],
            "scaling": self.scaling(),
        }


def verify(config: Config | PolynomialModel, n: list[int], draws: int = 3, seed: int = 0, executor: Any = None,
           progress: bool = False, edge_tol: float = 0.05, cache: str | None = None, theory: Theory | None = None,
           backend: str = "numpy", device: str = "cpu", sample_heads: int | None = None) -> VerifyResult:
    """Derive the law of ``config`` (a configuration or a polynomial model) and compare it with seeded samples at
    every token count in ``n`` (for a model, the n of its sizes ratio * n).

    The law's summary (unless given as ``theory``) and all draws are tasks on
    ``executor`` (None: this process); the result does not depend on it. The draws are
    computed by ``backend`` on ``device`` (docs/verification.md §4.8). A configuration with
    infinitely many heads is drawn with ``sample_heads`` heads (:func:`drawn_config`).
    """
    if isinstance(draws, bool) or not isinstance(draws, int) or draws < 1:
        raise ValueError(f"draws: need an integer >= 1, got {draws!r}")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed: need an integer >= 0, got {seed!r}")
    sizes = sorted(set(n))
    drawn = drawn_config(config, sample_heads) if isinstance(config, Config) else config
    for value in sizes:
        drawn.sizes(value)
    start = time.perf_counter()
    tasks: list[Task] = [] if theory is not None else [(theory_task, (config, True, cache))]
    layout = []
    for value in sizes:
        for name, group in draw_tasks(drawn, value, draws, seed, backend, device).items():
            layout.append((value, name, len(tasks), len(group)))
            tasks += group
    check_draws([args[0] for fn, args in tasks if fn is _timed_draw], local_workers(executor))
    results = run_tasks(tasks, executor, progress, desc="verify")
    if theory is None:
        theory = results[0]
    comparisons = []
    for value in sizes:
        samples, timing = {}, {}
        for size, name, first, count in layout:
            if size == value:
                chunk = results[first:first + count]
                samples[name] = np.stack([spectrum for spectrum, _ in chunk])
                timing[f"{name}_s"] = float(sum(seconds for _, seconds in chunk))
        comparisons.append(compare(theory, samples, value, edge_tol, timing))
    return VerifyResult(config, seed, theory, comparisons, time.perf_counter() - start,
                        drawn if drawn is not config else None)


def _fmt(value: float | None, spec: str = ".4g") -> str:
    return "n/a" if value is None else format(value, spec)


#: Column labels of the readings in the report.
LABELS = {"softmax": "softmax", "ge": "GE", "polynomial": "MC"}


def _scaling_header(key: str) -> str:
    """The column of a series of :meth:`VerifyResult.scaling`."""
    if key.startswith("ks_theory_"):
        return f"KS th-{LABELS[key.removeprefix('ks_theory_')]}"
    return {"ks_softmax_ge": "KS softmax-GE", "ks_floor": "floor"}.get(key, "outliers")


def format_report(result: VerifyResult) -> str:
    """The comparison as a plain-text table, largest n first in detail, then KS against n."""
    theory, lines = result.theory, []
    config = result.config
    lines.append(f"config   {config.name or 'configuration'}: {config.summary()}")
    if result.drawn is not None:
        lines.append(f"drawn    {result.drawn.summary()} (the samples' distance to the limit law includes its finite H)")
    for c in result.comparisons:
        names, labels = c.readings, [LABELS[name] for name in c.readings]
        lines.append("")
        lines.append(f"n = {c.n}, {c.draws} draw(s), seed {result.seed}; {result.config.spectral_object}")
        columns = [(f"theory-{LABELS[name]}", c.ks[f"theory_{name}"], c.w1[f"theory_{name}"]) for name in names]
        columns.append((f"floor ({labels[-1]}-{labels[-1]})", c.floor["ks"], c.floor["w1"]))
        if c.softmax_ge is not None:
            columns.append(("softmax-GE", c.softmax_ge["ks"], c.softmax_ge["w1"]))
        widths = [max(12, len(header) + 2) for header, _, _ in columns]
        lines.append(f"{'distance':<10}" + "".join(f"{column[0]:>{w}}" for column, w in zip(columns, widths)))
        for row, key in ((1, "KS"), (2, "W1")):
            lines.append(f"{key:<10}" + "".join(f"{column[row]:>{w}.4g}" for column, w in zip(columns, widths)))
        lines.append(f"{'moment':<8}{'theory':>14}" + "".join(f" {label:>12} {'± se':>10}" for label in labels) + "  exact")
        for moments in zip(*(c.moments[name] for name in names)):
            first = moments[0]
            lines.append(f"mu_{first['k']:<5}{first['theory']:>14.6g}"
                         + "".join(f" {m['samples']:>12.6g} {_fmt(m['se']):>10}" for m in moments)
                         + f"  {first['exact'] or '(numeric)'}")
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
        atoms = ", ".join(f"{a['mass']:.6g} at {a['location']:g}" for a in theory.atoms) or "none"
        zeros = [c.atoms[name] for name in names]
        lines.append(f"atoms    theory {atoms}; eigenvalues <= {zeros[0]['threshold']:.2g}: "
                     + ", ".join(f"{label} {a['near_zero']} ({a['fraction']:.4g})" for label, a in zip(labels, zeros))
                     + f"; theory fraction {zeros[0]['theory_fraction']:.4g}")
        lines.append("timing   " + ", ".join(f"{key} {value:.1f}" for key, value in c.timing.items()))
    scaling = result.scaling()
    if scaling is not None:
        keys = [key for key in scaling if key != "n" and not key.endswith("_exponent")]
        widths = [max(9, len(_scaling_header(key)) + 2) for key in keys]
        lines.append("")
        lines.append(f"{'n':>8}" + "".join(f"{_scaling_header(key):>{w}}" for key, w in zip(keys, widths)))
        for i, n in enumerate(scaling["n"]):
            lines.append(f"{n:>8}" + "".join(f"{scaling[key][i]:>{w}.4g}" if key.startswith("ks") else f"{scaling[key][i]:>{w}}"
                                             for key, w in zip(keys, widths)))
        fits = ", ".join(f"{key[:-9]} ~ n^{scaling[key]:.2f}" for key in scaling if key.endswith("_exponent"))
        lines.append(f"fitted   {fits}")
    lines.append(f"timing   law solved in {theory.seconds:.1f} s (earlier, if read from the cache); "
                 f"this run {result.seconds:.1f} s")
    return "\n".join(lines)
