"""A causal layer's law beside Monte Carlo (docs/extensions.md §8.6): the law has no moments, so the
comparison is by distribution functions, quantiles and the tail.

The theory is :func:`~gemhsa_sym.laws.causal.causal_distribution` (the grid of
:data:`~gemhsa_sym.laws.causal.CDF_GRID`, the mass below its first point included). Per token count n:
the pooled eigenvalues of the real layer and of its Gaussian equivalent from ``seed``, and an
independent Gaussian-equivalent set from ``seed + 1`` for the floor; KS distances (theory against a
sample: the supremum over the sample points inside the grid and at its first point), the quantiles
0.1, 0.5, 0.9, 0.99 of each, and the tail exponent of each sample by Hill's estimator over its top
:data:`HILL_FRACTION` beside the theory's. Where the engine has no law (a score with mu_1 != 0, such as
softmax) the comparison is of the samples alone, with the reason: KS(softmax, GE) against n, fitted
as C n^a, answers whether the layer approaches the conjectured Gaussian equivalent, and how fast.
"""

from __future__ import annotations

from concurrent.futures import Executor
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from gemhsa_sym.free.positions.profiled_law import Distribution
from gemhsa_sym.laws.causal import QUANTILES, causal_tail
from gemhsa_sym.layer.config import Config
from gemhsa_sym.sampling.sampler import sample
from gemhsa_sym.verification.causal_cache import cached_distribution

__all__ = ["HILL_FRACTION", "CausalPoint", "CausalTheory", "CausalVerification", "verify_causal", "format_causal",
           "ks_to_law", "hill"]

#: The top fraction of a sample that Hill's estimator of the tail exponent uses.
HILL_FRACTION = 0.01


def ks_to_law(law: Distribution, eigenvalues: np.ndarray) -> float:
    """sup |F_law - F_sample| over the sample points inside the law's grid and at its first point."""
    x = np.sort(eigenvalues)
    inside = (x >= law.x[0]) & (x <= law.x[-1])
    F = np.interp(x[inside], law.x, law.cdf)
    upper = np.flatnonzero(inside) + 1.0
    gaps = np.r_[np.abs(F - upper / x.size), np.abs(F - (upper - 1) / x.size)]
    first = abs(law.cdf[0] - np.searchsorted(x, law.x[0], side="right") / x.size)
    return float(max(first, gaps.max(initial=0.0)))


def two_sample_ks(a: np.ndarray, b: np.ndarray) -> float:
    """sup |F_a - F_b| over the pooled points."""
    points = np.sort(np.r_[a, b])
    Fa = np.searchsorted(np.sort(a), points, side="right") / a.size
    Fb = np.searchsorted(np.sort(b), points, side="right") / b.size
    return float(np.max(np.abs(Fa - Fb)))


def hill(eigenvalues: np.ndarray, fraction: float = HILL_FRACTION) -> float:
    """Hill's estimator of kappa in P(lambda > x) ~ c x^-kappa over the top ``fraction`` of the sample."""
    x = np.sort(eigenvalues)[::-1]
    k = max(2, int(x.size * fraction))
    return float(1 / np.mean(np.log(x[:k] / x[k])))


@dataclass(frozen=True)
class CausalPoint:
    """The comparison at one token count (KS against the theory None without a law)."""

    n: int
    ks_theory_softmax: float | None
    ks_theory_ge: float | None
    ks_softmax_ge: float
    floor: float
    quantiles_softmax: list[float]
    quantiles_ge: list[float]
    tail_softmax: float
    tail_ge: float


@dataclass(frozen=True)
class CausalTheory:
    """What the law gives the comparison: quantiles, the mass below the grid, tail exponent, achieved error."""

    quantiles: list[float | None]
    mass_below: tuple[float, float]
    tail: float | None
    error: float


@dataclass(frozen=True)
class CausalVerification:
    """The theory (None, with the ``reason``, where the engine has no law) and one :class:`CausalPoint` per n."""

    config: Config
    draws: int
    seed: int
    theory: CausalTheory | None
    points: list[CausalPoint]
    reason: str | None = None
    #: The pooled eigenvalues of the largest n by reading, for the figure (not in the JSON).
    samples: dict[str, np.ndarray] = field(default_factory=dict, repr=False)
    #: The law the theory summarises, for the figure (not in the JSON).
    law: Distribution | None = field(default=None, repr=False)

    def exponents(self) -> dict[str, float]:
        """a of the fit C n^a of every KS series against n (least squares in log-log; needs two n)."""
        if len(self.points) < 2:
            return {}
        n = np.log([p.n for p in self.points])
        out = {}
        for key in ("ks_softmax_ge", "floor", "ks_theory_softmax", "ks_theory_ge"):
            values = [getattr(p, key) for p in self.points]
            if all(v is not None and v > 0 for v in values):
                out[key] = float(np.polyfit(n, np.log(values), 1)[0])
        return out

    def to_json_dict(self) -> dict[str, Any]:
        """JSON-able figures."""
        theory = None if self.theory is None else {
            "q": list(QUANTILES), "quantiles": self.theory.quantiles, "mass_below": list(self.theory.mass_below),
            "tail_exponent": self.theory.tail, "error": self.theory.error}
        return {"config": self.config.to_dict(), "draws": self.draws, "seed": self.seed, "theory": theory,
                "no_theory": self.reason, "points": [asdict(p) for p in self.points], "exponents": self.exponents()}


def verify_causal(config: Config, n: list[int], draws: int = 2, seed: int = 0, executor: Executor | None = None,
                  progress: bool | None = None, cache: str | None = None) -> CausalVerification:
    """The causal law beside Monte Carlo at every token count in ``n``, or the samples alone with the reason
    where the engine has no law (module docstring); the law read from and kept in the folder ``cache``
    (:mod:`.causal_cache`)."""
    for size in n:
        config.sizes(size)
    try:
        law: Distribution | None = cached_distribution(config, cache)
        reason = None
    except NotImplementedError as exc:
        law, reason = None, str(exc)
    points = []
    for size in n:
        drawn = {model: sample(config, size, draws, seed, model, executor=executor, progress=progress).pooled
                 for model in ("softmax", "ge")}
        again = sample(config, size, draws, seed + 1, "ge", executor=executor, progress=progress).pooled
        points.append(CausalPoint(
            n=size,
            ks_theory_softmax=None if law is None else ks_to_law(law, drawn["softmax"]),
            ks_theory_ge=None if law is None else ks_to_law(law, drawn["ge"]),
            ks_softmax_ge=two_sample_ks(drawn["softmax"], drawn["ge"]),
            floor=two_sample_ks(drawn["ge"], again),
            quantiles_softmax=np.quantile(drawn["softmax"], QUANTILES).tolist(),
            quantiles_ge=np.quantile(drawn["ge"], QUANTILES).tolist(),
            tail_softmax=hill(drawn["softmax"]),
            tail_ge=hill(drawn["ge"]),
        ))
    theory = None if law is None else CausalTheory(law.covered_quantiles(QUANTILES), (float(law.x[0]), float(law.cdf[0])),
                                                   causal_tail(config, law), law.error)
    return CausalVerification(config, draws, seed, theory, points, reason, drawn, law)


def _cell(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.4f}"


def format_causal(result: CausalVerification) -> str:
    """The comparison as a table, with the fitted exponents of n where there are several n."""
    lines = [f"config   {result.config.summary()} (causal)"]
    if result.theory is None:
        lines.append(f"theory   none: {result.reason}")
    else:
        t = result.theory
        below, mass = t.mass_below
        theory = ["<" + f"{below:g}" if x is None else f"{x:.4g}" for x in t.quantiles]
        lines.append(f"theory   quantiles {', '.join(theory)} at q = {', '.join(map(str, QUANTILES))}; F({below:g}) = "
                     f"{mass:.4f}; tail exponent {'not resolved' if t.tail is None else f'{t.tail:.3f}'}; achieved error of F {t.error:.1e}")
    lines.append("n        KS(th,sm) KS(th,GE) KS(sm,GE) floor    tail sm  tail GE  quantiles softmax | GE")
    for p in result.points:
        quantiles = ", ".join(f"{x:.4g}" for x in p.quantiles_softmax) + " | " + ", ".join(f"{x:.4g}" for x in p.quantiles_ge)
        lines.append(f"{p.n:<8d} {_cell(p.ks_theory_softmax):<9} {_cell(p.ks_theory_ge):<9} {p.ks_softmax_ge:<9.4f} "
                     f"{p.floor:<8.4f} {p.tail_softmax:<8.3f} {p.tail_ge:<8.3f} {quantiles}")
    fits = result.exponents()
    if fits:
        lines.append("fitted   " + ", ".join(f"{key} ~ n^{a:.2f}" for key, a in fits.items()))
    lines.append(f"tails by Hill's estimator over the top {HILL_FRACTION:.0%} of each sample; the law has no moments")
    return "\n".join(lines)
