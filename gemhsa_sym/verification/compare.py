"""Theory beside Monte Carlo for one configuration, one path for every law (docs/verification.md §4.3).

:func:`verify` runs, as tasks on one executor, the law's table
(:func:`~gemhsa_sym.verification.theory.theory_task`) and three seeded sample sets per token count
n: the real layer and its Gaussian equivalent with the same tokens and weights (children of
``SeedSequence(seed)``, as ``gemhsa-sym sample --seed`` draws them) and a second, independent
Gaussian-equivalent set (children of ``SeedSequence([seed, 1])``) for the Monte Carlo floor. A
polynomial model file (docs/exports.md §5.4) has one reading, its own sampler (``polynomial``).
:func:`compare` then measures, for each n, what the law answers (docs/solving.md §3.15):

- KS distances between the law's cdf and the empirical cdfs beside the floor (the same distance
  between the two Gaussian-equivalent sets), and Wasserstein-1 distances where the law's cdf holds
  the whole line;
- the quantiles 0.1, 0.5, 0.9, 0.99 of the law and of each set, and the tail exponent of each set
  by Hill's estimator beside the law's;
- where the law has moments, the first four against the samples' mean over draws with its standard
  error; where it has edges, each edge against the extreme sample eigenvalues inside the support
  (widened by ``edge_tol``), the top edge against the bulk quantile at level 1 - 1/d_out, and the
  outliers beyond the widened support;
- each atom's mass against the fraction of numerically zero eigenvalues.

Where the engine has no law (a causal configuration it refuses), the samples alone are compared, with
the reason.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gemhsa_sym.laws.tabulated import TabulatedLaw
from gemhsa_sym.layer.config import Config
from gemhsa_sym.layer.polynomial_model import PolynomialModel
from gemhsa_sym.sampling.executors import Task, local_workers, run_tasks
from gemhsa_sym.sampling.sampler import DrawTask, PolynomialDraw, check_draws, draw_sets, drawn_config, run_draw
from gemhsa_sym.verification.distances import (
    QUANTILES,
    ZERO_TOL,
    clean,
    empirical_ks,
    empirical_w1,
    hill,
    mean_over_draws,
    power_fit,
    snaps,
    theory_quantiles,
    two_sample,
)
from gemhsa_sym.verification.theory import theory_or_reason

__all__ = ["FLOOR_STREAM", "Comparison", "VerifyResult", "compare", "draw_tasks", "verify"]

#: Second entropy word of the independent Gaussian-equivalent sample set (the floor).
FLOOR_STREAM = 1


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


def _moments(law: TabulatedLaw, eigenvalues: np.ndarray) -> list[dict[str, Any]]:
    """Theory moments against the mean over draws of the per-draw moments, with standard errors and z-scores where there
    are at least :data:`~.distances.MIN_DRAWS` draws (:func:`~.distances.mean_over_draws`)."""
    out = []
    for k, m in enumerate(law.moment_data or [], 1):
        mean, se = mean_over_draws(np.mean(eigenvalues.astype(float) ** k, axis=1))
        out.append({
            "k": k, "theory": m["float"], "exact": m["exact"], "samples": mean, "se": se,
            "rel_diff": mean / m["float"] - 1 if m["float"] else None,
            "z": (mean - m["float"]) / se if se else None,
        })
    return out


def _intervals(law: TabulatedLaw, edge_tol: float) -> list[tuple[float, float]]:
    """Support intervals widened by ``edge_tol`` (relative) on their soft sides."""
    return [(a * (1 - edge_tol), b * (1 + edge_tol)) for a, b in law.support()]


def _edges(law: TabulatedLaw, x: np.ndarray, d_out: int, edge_tol: float) -> list[dict[str, Any]]:
    """Each edge against the extreme sample eigenvalue inside its widened interval; the top edge also
    against the bulk quantile at level 1 - 1/d_out."""
    out = []
    nonzero = x[x > 0]
    edges = law.edge_data or []
    for (lo, hi), (a, b) in zip(zip(edges[::2], edges[1::2]), _intervals(law, edge_tol)):
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
        top, sample_q = float(law.quantile(level)), float(np.quantile(x, level))
        out[-1]["quantile"] = {"level": level, "theory": top, "samples": sample_q,
                               "rel_diff": sample_q / top - 1 if top else None}
    return out


def _outliers(law: TabulatedLaw, eigenvalues: np.ndarray, edge_tol: float) -> dict[str, Any]:
    """Eigenvalues outside the widened support (numerical zeros excepted): count, per draw, largest."""
    x = clean(eigenvalues)
    nonzero = x[x > 0]
    inside = np.zeros(nonzero.size, dtype=bool)
    for a, b in _intervals(law, edge_tol):
        inside |= (nonzero >= a) & (nonzero <= b)
    out = np.sort(nonzero[~inside])[::-1]
    above = out[out > law.top_edge * (1 + edge_tol)]
    return {
        "tolerance": edge_tol, "count": int(out.size), "per_draw": out.size / eigenvalues.shape[0],
        "above_top": int(above.size), "max": float(out[0]) if out.size else None,
        "largest": out[:10].tolist(),
    }


def _atoms(law: TabulatedLaw | None, eigenvalues: np.ndarray) -> dict[str, Any]:
    """Numerically zero eigenvalues against the law's mass at (and just above) 0."""
    x = np.sort(eigenvalues, axis=None)
    threshold = ZERO_TOL * max(float(x[-1]), 0.0)
    count = int(np.sum(x <= threshold))
    whole = law is not None and law.quantile_bracket()[2]
    return {
        "threshold": threshold, "near_zero": count, "fraction": count / x.size,
        "theory_fraction": float(law.cdf(threshold)) if whole else None, "theory": [] if law is None else law.atom_data,
    }


@dataclass(frozen=True)
class Comparison:
    """All figures of theory against the samples of one token count n (see the module docstring); a figure the law
    does not answer is None (``ks``, ``w1`` without a law; ``moments``, ``edges``, ``outliers`` without moments or edges)."""

    n: int
    draws: int
    ks: dict[str, float] | None
    w1: dict[str, float] | None
    floor: dict[str, float]
    softmax_ge: dict[str, float] | None
    moments: dict[str, list[dict[str, Any]]] | None
    edges: dict[str, list[dict[str, Any]]] | None
    outliers: dict[str, dict[str, Any]] | None
    atoms: dict[str, dict[str, Any]]
    quantiles: dict[str, Any]
    tails: dict[str, float | None]
    timing: dict[str, float]
    samples: dict[str, np.ndarray] = field(repr=False, compare=False)

    @property
    def readings(self) -> tuple[str, ...]:
        """The sample sets compared with the theory: ``softmax`` and ``ge``, or ``polynomial``."""
        return tuple(name for name in self.samples if name != "floor")

    def to_json_dict(self) -> dict[str, Any]:
        """The figures as JSON types (the eigenvalues themselves left out)."""
        return {key: value for key, value in self.__dict__.items() if key != "samples"}


def compare(law: TabulatedLaw | None, samples: dict[str, np.ndarray], n: int, edge_tol: float = 0.05,
            timing: dict[str, float] | None = None) -> Comparison:
    """``law`` (None where there is none) against the sample sets (each draws x q) at token count ``n``: the readings
    (``softmax`` and ``ge``, or ``polynomial``) and ``floor``, an independent set of the last reading."""
    names = [name for name in samples if name != "floor"]
    draws, d_out = samples[names[0]].shape
    snap = law is not None and snaps(law)
    pooled = {name: clean(values, snap) for name, values in samples.items()}
    whole = law is not None and law.quantile_bracket()[2]
    floor = two_sample(pooled[names[-1]], pooled["floor"], snap)
    tail = None
    if law is not None and law.answers("tail_exponent"):
        tail = law.tail_exponent()
    return Comparison(
        n=n, draws=draws,
        ks=None if law is None else {f"theory_{name}": empirical_ks(law, pooled[name]) for name in names},
        w1={f"theory_{name}": empirical_w1(law, pooled[name]) for name in names} if whole else None,
        floor=floor | ({} if law is None else {"ks_theory_floor": empirical_ks(law, pooled["floor"])}),
        softmax_ge=two_sample(pooled["softmax"], pooled["ge"], snap) if "softmax" in pooled else None,
        moments={name: _moments(law, samples[name]) for name in names} if law is not None and law.answers("moments") else None,
        edges={name: _edges(law, pooled[name], d_out, edge_tol) for name in names} if law is not None and law.answers("edges") else None,
        outliers=({name: _outliers(law, samples[name], edge_tol) for name in names}
                  if law is not None and law.answers("edges") else None),
        atoms={name: _atoms(law, samples[name]) for name in names},
        quantiles={"q": list(QUANTILES), "theory": None if law is None else theory_quantiles(law),
                   **{name: np.quantile(pooled[name], QUANTILES).tolist() for name in names}},
        tails={"theory": tail, **{name: hill(pooled[name]) for name in names}},
        timing=dict(timing or {}),
        samples=samples,
    )


@dataclass(frozen=True)
class VerifyResult:
    """The law's table (None, with the ``reason``, where the engine has no law) and one :class:`Comparison` per token
    count, in increasing n; ``drawn`` is the configuration the samples come from where it is not ``config`` (infinitely
    many heads, drawn at a finite number)."""

    config: Config | PolynomialModel
    seed: int
    theory: TabulatedLaw | None
    comparisons: list[Comparison]
    seconds: float
    drawn: Config | None = None
    reason: str | None = None

    def scaling(self) -> dict[str, Any] | None:
        """KS against n with fitted exponents (log-log least squares, :func:`~.distances.power_fit`) and their standard
    errors (None from two n), when there are several n."""
        if len(self.comparisons) < 2:
            return None
        n = np.array([c.n for c in self.comparisons], dtype=float)
        rows: dict[str, Any] = {"n": n.astype(int).tolist()}
        names = self.comparisons[0].readings
        series: dict[str, list[Any]] = {}
        if self.theory is not None:
            series |= {f"ks_theory_{name}": [c.ks[f"theory_{name}"] for c in self.comparisons] for name in names}
        if self.comparisons[0].softmax_ge is not None:
            series["ks_softmax_ge"] = [c.softmax_ge["ks"] for c in self.comparisons if c.softmax_ge is not None]
        series["ks_floor"] = [c.floor["ks"] for c in self.comparisons]
        if self.comparisons[0].outliers is not None:
            series[f"outliers_{names[0]}"] = [c.outliers[names[0]]["count"] for c in self.comparisons]
        for key, values in series.items():
            rows[key] = values
            if key.startswith("ks") and min(values) > 0:
                fit = power_fit(n, values)
                rows[f"{key}_exponent"] = fit["exponent"]
                rows[f"{key}_exponent_error"] = fit["error"]
        return rows

    def to_json_dict(self) -> dict[str, Any]:
        """The largest n's figures at the top level (keys ks, w1, floor, moments, edges, outliers, quantiles,
        tails, timing, ...), every n under ``by_n``, the KS-against-n fit under ``scaling``; the law's own figures
        under ``theory`` (None, with ``no_theory`` the reason, where there is no law)."""
        last = self.comparisons[-1]
        law = self.theory
        theory = None if law is None else {
            "moments": law.moment_data, "edges": law.edge_data, "atoms": law.atom_data, "q": list(QUANTILES),
            "quantiles": theory_quantiles(law), "tail_exponent": "inf" if law.tail == np.inf else law.tail,
            "error": law.error, "reasons": dict(law.reasons())}
        return {
            "config": self.config.to_dict(), "summary": self.config.summary(), "seed": self.seed,
            **({} if self.drawn is None else {"drawn": {"config": self.drawn.to_dict(), "summary": self.drawn.summary()}}),
            **last.to_json_dict(),
            "timing": last.timing | {"theory_s": 0.0 if law is None else law.seconds, "total_s": self.seconds},
            "theory": theory, "no_theory": self.reason,
            "by_n": [c.to_json_dict() for c in self.comparisons],
            "scaling": self.scaling(),
        }


def verify(config: Config | PolynomialModel, n: list[int], draws: int = 3, seed: int = 0, executor: Any = None,
           progress: bool = False, edge_tol: float = 0.05, cache: str | None = None, theory: TabulatedLaw | None = None,
           backend: str = "numpy", device: str = "cpu", sample_heads: int | None = None) -> VerifyResult:
    """Derive the law of ``config`` (a configuration or a polynomial model) and compare it with seeded samples at
    every token count in ``n`` (for a model, the n of its sizes ratio * n).

    The law's table (unless given as ``theory``) and all draws are tasks on ``executor`` (None: this process); the
    result does not depend on it. The draws are computed by ``backend`` on ``device`` (docs/verification.md §4.8). A
    configuration with infinitely many heads is drawn with ``sample_heads`` heads (:func:`drawn_config`). A law the
    engine refuses (NotImplementedError naming the field) leaves the samples compared alone, with the reason.
    """
    if isinstance(draws, bool) or not isinstance(draws, int) or draws < 1:
        raise ValueError(f"draws: need an integer >= 1, got {draws!r}")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed: need an integer >= 0, got {seed!r}")
    sizes = sorted(set(n))
    drawn = drawn_config(config, sample_heads)
    for value in sizes:
        drawn.sizes(value)
    start = time.perf_counter()
    tasks: list[Task] = [] if theory is not None else [(theory_or_reason, (config, True, cache))]
    layout = []
    for value in sizes:
        for name, group in draw_tasks(drawn, value, draws, seed, backend, device).items():
            layout.append((value, name, len(tasks), len(group)))
            tasks += group
    check_draws([args[0] for fn, args in tasks if fn is _timed_draw], local_workers(executor))
    results = run_tasks(tasks, executor, progress, desc="verify")
    reason = None
    if theory is None:
        theory, reason = results[0]
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
                        drawn if drawn is not config else None, reason)
