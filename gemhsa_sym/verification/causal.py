"""A causal layer's law beside Monte Carlo (docs/extensions.md §8.6): the law has no moments, so the
comparison is by distribution functions, quantiles and the tail.

The theory is :func:`~gemhsa_sym.causal.causal_distribution` (the grid of
:data:`~gemhsa_sym.causal.CDF_GRID`, the mass below its first point included). Per token count n:
the pooled eigenvalues of the real layer and of its Gaussian equivalent from ``seed``, and an
independent Gaussian-equivalent set from ``seed + 1`` for the floor; KS distances (theory against a
sample: the supremum over the sample points inside the grid and at its first point), the quantiles
0.1, 0.5, 0.9, 0.99 of each, and the tail exponent of each sample by Hill's estimator over its top
:data:`HILL_FRACTION` beside the theory's.
"""

from __future__ import annotations

from concurrent.futures import Executor
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from gemhsa_sym.causal import QUANTILES, causal_distribution
from gemhsa_sym.config import Config
from gemhsa_sym.free.profiled_law import Distribution
from gemhsa_sym.sampler import sample

__all__ = ["HILL_FRACTION", "CausalPoint", "CausalVerification", "verify_causal", "format_causal", "ks_to_law", "hill"]

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
    """The comparison at one token count."""

    n: int
    ks_theory_softmax: float
    ks_theory_ge: float
    ks_softmax_ge: float
    floor: float
    quantiles_softmax: list[float]
    quantiles_ge: list[float]
    tail_softmax: float
    tail_ge: float


@dataclass(frozen=True)
class CausalVerification:
    """The theory's quantiles, tail exponent and achieved error, and one :class:`CausalPoint` per n."""

    config: Config
    draws: int
    seed: int
    quantiles: list[float | None]
    mass_below: tuple[float, float]
    tail: float
    error: float
    points: list[CausalPoint]
    #: The pooled eigenvalues of the largest n by reading, for the figure (not in the JSON).
    samples: dict[str, np.ndarray] = field(default_factory=dict, repr=False)

    def to_json_dict(self) -> dict[str, Any]:
        """JSON-able figures."""
        return {"config": self.config.to_dict(), "draws": self.draws, "seed": self.seed,
                "theory": {"q": list(QUANTILES), "quantiles": self.quantiles, "mass_below": list(self.mass_below),
                           "tail_exponent": self.tail, "error": self.error},
                "points": [asdict(p) for p in self.points]}


def verify_causal(config: Config, n: list[int], draws: int = 2, seed: int = 0, executor: Executor | None = None,
                  progress: bool | None = None) -> CausalVerification:
    """The causal law beside Monte Carlo at every token count in ``n`` (module docstring)."""
    law = causal_distribution(config)
    points = []
    for size in n:
        drawn = {model: sample(config, size, draws, seed, model, executor=executor, progress=progress).pooled
                 for model in ("softmax", "ge")}
        again = sample(config, size, draws, seed + 1, "ge", executor=executor, progress=progress).pooled
        points.append(CausalPoint(
            n=size,
            ks_theory_softmax=ks_to_law(law, drawn["softmax"]),
            ks_theory_ge=ks_to_law(law, drawn["ge"]),
            ks_softmax_ge=two_sample_ks(drawn["softmax"], drawn["ge"]),
            floor=two_sample_ks(drawn["ge"], again),
            quantiles_softmax=np.quantile(drawn["softmax"], QUANTILES).tolist(),
            quantiles_ge=np.quantile(drawn["ge"], QUANTILES).tolist(),
            tail_softmax=hill(drawn["softmax"]),
            tail_ge=hill(drawn["ge"]),
        ))
    return CausalVerification(config, draws, seed, law.covered_quantiles(QUANTILES), (float(law.x[0]), float(law.cdf[0])), law.tail_exponent(),
                              law.error, points, drawn)


def format_causal(result: CausalVerification) -> str:
    """The comparison as a table."""
    below, mass = result.mass_below
    theory = ["<" + f"{below:g}" if x is None else f"{x:.4g}" for x in result.quantiles]
    lines = [f"config   {result.config.summary()} (causal)",
             f"theory   quantiles {', '.join(theory)} at q = {', '.join(map(str, QUANTILES))}; F({below:g}) = {mass:.4f}; "
             f"tail exponent {result.tail:.3f}; achieved error of F {result.error:.1e}",
             "n        KS(th,sm) KS(th,GE) KS(sm,GE) floor    tail sm  tail GE  quantiles softmax | GE"]
    for p in result.points:
        quantiles = ", ".join(f"{x:.4g}" for x in p.quantiles_softmax) + " | " + ", ".join(f"{x:.4g}" for x in p.quantiles_ge)
        lines.append(f"{p.n:<8d} {p.ks_theory_softmax:<9.4f} {p.ks_theory_ge:<9.4f} {p.ks_softmax_ge:<9.4f} {p.floor:<8.4f} "
                     f"{p.tail_softmax:<8.3f} {p.tail_ge:<8.3f} {quantiles}")
    lines.append(f"tails by Hill's estimator over the top {HILL_FRACTION:.0%} of each sample; the law has no moments")
    return "\n".join(lines)
