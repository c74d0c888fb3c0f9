"""Sweeps: theory curves of moments and the top edge across parameters, with Monte Carlo on top.

Every point of the grid (the product of the varied parameters' values) is a
theory task and ``draws`` draw tasks of the softmax layer and of its Gaussian
equivalent; point i draws from child i of ``SeedSequence(seed)``, so results do
not depend on the executor or on the number of workers. A polynomial model file
(docs/exports.md §5.4) varies its ratios and scales (``dimensions.NAME``,
``gaussians.NAME.scale``) and is drawn by its own sampler (``polynomial``).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

import numpy as np

from gemhsa_sym.laws.tabulated import TabulatedLaw
from gemhsa_sym.layer.config import Config
from gemhsa_sym.layer.polynomial_model import PolynomialModel
from gemhsa_sym.sampling.executors import Task, local_workers, run_tasks
from gemhsa_sym.sampling.sampler import DrawTask, PolynomialDraw, check_draws, draw_sets, run_draw
from gemhsa_sym.verification.distances import mean_over_draws
from gemhsa_sym.verification.theory import theory_task

__all__ = ["SweepPoint", "SweepResult", "parse_vary", "sweep", "vary_config"]

#: Most values of one varied parameter.
MAX_POINTS = 1000
#: Monte Carlo summaries of a draw: the first four moments and the largest eigenvalue.
MC_KEYS: tuple[str, ...] = ("M_1", "M_2", "M_3", "M_4", "top_edge")


def parse_vary(spec: str) -> tuple[str, list[str]]:
    """``beta=0.25:1.5:6`` (K points from A to B) or ``heads=1,2,4,8`` (a list) as (field, values)."""
    field, sep, values = spec.partition("=")
    field = field.strip()
    if not sep or not field or not values.strip():
        raise ValueError(f"vary: expected FIELD=A:B:K or FIELD=V1,V2,..., got {spec!r}")
    if ":" in values:
        try:
            a, b, k = values.split(":")
            low, high, count = float(a), float(b), int(k)
        except ValueError:
            raise ValueError(f"vary: expected FIELD=A:B:K with numbers A, B and an integer K >= 1, got {spec!r}") from None
        if not (np.isfinite(low) and np.isfinite(high) and 1 <= count <= MAX_POINTS):
            raise ValueError(f"vary: expected finite A, B and 1 <= K <= {MAX_POINTS} in {spec!r}")
        if high < low:
            raise ValueError(f"vary: expected A <= B in FIELD=A:B:K (an increasing grid), got {spec!r}")
        return field, [f"{v:.12g}" for v in np.linspace(low, high, count)]
    listed = [v.strip() for v in values.split(",") if v.strip()]
    if not listed:
        raise ValueError(f"vary: no value in {spec!r}; expected FIELD=V1,V2,... or FIELD=A:B:K")
    if len(listed) > MAX_POINTS:
        raise ValueError(f"vary: at most {MAX_POINTS} values, got {len(listed)}")
    return field, listed


def vary_config(config: Config | PolynomialModel, changes: dict[str, str]) -> Config | PolynomialModel:
    """``config`` with ``changes`` (:meth:`Config.replace`: changing ``heads`` keeps H d_k = d, and d_v = d_k, where the
    config has it). A polynomial model takes ``dimensions.NAME`` and ``gaussians.NAME.scale`` (:meth:`PolynomialModel.replace`)."""
    return config.replace(**changes) if changes else config


def _draw_summary(task: DrawTask | PolynomialDraw) -> list[float]:
    """The first four moments and the largest eigenvalue of one draw."""
    eigenvalues = run_draw(task)
    return [float(np.mean(eigenvalues**k)) for k in range(1, 5)] + [float(eigenvalues[-1])]


@dataclass(frozen=True)
class SweepPoint:
    """One grid point: the varied values, its configuration or model, the law's summary and per-draw Monte Carlo
    rows of each reading (``softmax`` and ``ge``, or ``polynomial``)."""

    values: dict[str, str]
    config: Config | PolynomialModel
    theory: TabulatedLaw | None
    mc: dict[str, np.ndarray] | None

    def has_theory(self, key: str) -> bool:
        """Whether the law gives ``key`` (a heavy-tailed law has no moments, a law with lognormal key weights no edge)."""
        return self.theory is not None and self.theory.answers("edges" if key == "top_edge" else "moments")

    def theory_value(self, key: str) -> float:
        """The moment M_k or the top edge of the law (NoAnswer, with the reason, where the law has none)."""
        if self.theory is None:
            raise ValueError("theory: this sweep ran without theory")
        if key == "top_edge":
            self.theory.edges()  # NoAnswer where the law has no edges
            return self.theory.top_edge
        self.theory.moments(1)  # NoAnswer where the law has no moments
        return self.theory.moment_data[int(key[2:]) - 1]["float"]

    def mc_value(self, model: str, key: str) -> tuple[float, float | None]:
        """Mean over draws and its standard error (None with fewer than :data:`~.distances.MIN_DRAWS` draws,
        :func:`~.distances.mean_over_draws`); top_edge is the largest eigenvalue."""
        if self.mc is None:
            raise ValueError("mc: this sweep ran without Monte Carlo")
        return mean_over_draws(self.mc[model][:, MC_KEYS.index(key)])

    def to_json_dict(self) -> dict[str, Any]:
        """Values, theory (moments, edges, atoms) and Monte Carlo means with standard errors."""
        out: dict[str, Any] = {"values": self.values, "config": self.config.to_dict()}
        if self.theory is not None:
            law = self.theory
            out["theory"] = {"moments": None if law.moment_data is None else [m["float"] for m in law.moment_data],
                             "exact": None if law.moment_data is None else [m["exact"] for m in law.moment_data],
                             "top_edge": law.top_edge if law.edge_data is not None else None, "edges": law.edge_data,
                             "atoms": law.atom_data, "seconds": law.seconds, "reasons": dict(law.reasons())}
        if self.mc is not None:
            out["mc"] = {model: {key: dict(zip(("mean", "se"), self.mc_value(model, key))) for key in MC_KEYS}
                         for model in self.mc}
        return out


@dataclass(frozen=True)
class SweepResult:
    """All points of a sweep, in grid order (the last varied parameter fastest)."""

    config: Config | PolynomialModel
    parameters: list[str]
    points: list[SweepPoint]
    n: int | None
    draws: int
    seed: int

    def to_json_dict(self) -> dict[str, Any]:
        """JSON types throughout."""
        return {"config": self.config.to_dict(), "parameters": self.parameters, "n": self.n, "draws": self.draws,
                "seed": self.seed, "points": [p.to_json_dict() for p in self.points]}


def sweep(config: Config | PolynomialModel, vary: list[tuple[str, list[str]]], n: int | None = 1000, draws: int = 2, seed: int = 0,
          theory: bool = True, executor: Any = None, progress: bool = False, cache: str | None = None,
          backend: str = "numpy", device: str = "cpu") -> SweepResult:
    """Theory (unless ``theory=False``) and, unless ``n`` is None, Monte Carlo at every grid point, drawn by
    ``backend`` on ``device`` (docs/verification.md §4.8)."""
    if not vary:
        raise ValueError("vary: give at least one parameter to vary")
    if n is None and not theory:
        raise ValueError("sweep: nothing to do without theory and without Monte Carlo")
    parameters = [field for field, _ in vary]
    if len(set(parameters)) != len(parameters):
        raise ValueError(f"vary: a parameter is varied twice in {parameters}")
    size = int(np.prod([len(values) for _, values in vary]))
    if size > MAX_POINTS:
        raise ValueError(f"vary: the grid of {' x '.join(str(len(values)) for _, values in vary)} = {size} points is larger than "
                         f"{MAX_POINTS}; vary fewer values")
    grid = [dict(zip(parameters, combo)) for combo in itertools.product(*(values for _, values in vary))]
    configs = [vary_config(config, values) for values in grid]
    tasks: list[Task] = []
    if theory:
        tasks += [(theory_task, (c, False, cache)) for c in configs]
    layout: list[list[tuple[str, int]]] = []  # per point: (reading, index of its first draw) in tasks
    if n is not None:
        for c, child in zip(configs, np.random.SeedSequence(seed).spawn(len(configs))):
            c.sizes(n)
            layout.append([])
            for name, group in draw_sets(c, n, child.spawn(draws), backend, device).items():
                layout[-1].append((name, len(tasks)))
                tasks += [(_draw_summary, (task,)) for task in group]
    check_draws([args[0] for fn, args in tasks if fn is _draw_summary], local_workers(executor))
    results = run_tasks(tasks, executor, progress, desc="sweep")
    theories = results[: len(configs)] if theory else [None] * len(configs)
    points = []
    for i, (values, c) in enumerate(zip(grid, configs)):
        mc = None if n is None else {name: np.array(results[first:first + draws]) for name, first in layout[i]}
        points.append(SweepPoint(values, c, theories[i], mc))
    return SweepResult(config, parameters, points, n, draws, seed)
