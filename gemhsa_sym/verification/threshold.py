"""The linearisation threshold: how fast the softmax layer approaches its Gaussian equivalent, on a
grid of beta and n (docs/verification.md §4.9).

At every beta of the grid, :func:`~.compare.verify` draws the softmax layer and its Gaussian
equivalent (GE) with the same seeds at every n, beside the law and an independent GE set (the
floor). Per beta, KS(softmax, GE), KS(theory, softmax), the floor and the outliers of the softmax
samples above the bulk are tabulated against n, and each KS series is fitted as C n^a (log-log
least squares). Gaussian equivalence with the rate of the fluctuations gives a near -1/2; where
the gap stops shrinking (a > STALLED) the linearisation behind it has failed at these n.

The scale to compare with: a row of the softmax normalises n terms e^{beta S_ij} whose relative
variance is (e^{beta^2} - 1) / n (unit score variance), so the normalisation concentrates, and the
linearisation can hold, only while e^{beta^2} - 1 << n, i.e. beta << sqrt(log n) (2.49 at n = 500,
2.88 at n = 4000).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from gemhsa_sym.layer.config import Config
from gemhsa_sym.verification.compare import VerifyResult, verify
from gemhsa_sym.verification.distances import power_fit
from gemhsa_sym.verification.sweep import vary_config

__all__ = ["FLOOR_FACTOR", "RATE", "SLOWER", "STALLED", "ThresholdResult", "format_threshold", "threshold"]

#: The exponent of n of a gap that shrinks like the fluctuations.
RATE = -0.5
#: A fitted exponent above this: the gap shrinks slower than the fluctuations ...
SLOWER = -0.4
#: ... and above this it has stopped shrinking (slower than n^{-1/4}).
STALLED = -0.25
#: A gap above this many times the floor is resolved by the Monte Carlo.
FLOOR_FACTOR = 2.0


def _fit(n: np.ndarray, values: list[float]) -> dict[str, Any]:
    """The fit values = C n^a (:func:`~.distances.power_fit`: a, its standard error, None from two n), None where it
    cannot be fitted (a zero value or a single n)."""
    if len(values) < 2 or min(values) <= 0:
        return {"exponent": None, "error": None, "points": len(values)}
    return power_fit(n, values)


@dataclass(frozen=True)
class ThresholdResult:
    """One :class:`~.compare.VerifyResult` per beta of the grid, all at the same n, draws and seed."""

    config: Config
    betas: tuple[str, ...]
    results: tuple[VerifyResult, ...]

    @property
    def n(self) -> list[int]:
        """The token counts, increasing."""
        return [c.n for c in self.results[0].comparisons]

    def rows(self) -> list[dict[str, Any]]:
        """Per beta: the KS series, the floor, the softmax outliers above the bulk (per draw) and the
        fitted exponents of n."""
        n = np.array(self.n, dtype=float)
        out = []
        for beta, result in zip(self.betas, self.results):
            comparisons = result.comparisons
            gap = [c.softmax_ge["ks"] for c in comparisons if c.softmax_ge is not None]
            theory = [c.ks["theory_softmax"] for c in comparisons]
            fits = {key: _fit(n, values) for key, values in (("softmax_ge", gap), ("theory_softmax", theory))}
            out.append({
                "beta": beta, "n": self.n, "ks_softmax_ge": gap, "ks_theory_softmax": theory,
                "ks_floor": [c.floor["ks"] for c in comparisons],
                "outliers_per_draw": [c.outliers["softmax"]["per_draw"] for c in comparisons],
                **{f"exponent_{key}": fit["exponent"] for key, fit in fits.items()},
                **{f"exponent_{key}_error": fit["error"] for key, fit in fits.items()},
            })
        return out

    def verdict(self) -> str:
        """In words: the betas where KS(softmax, GE) shrinks about like n^{-1/2}, where it stops
        shrinking, against the scale sqrt(log n) of the n measured."""
        rows = self.rows()
        fitted = [(r["beta"], r["exponent_softmax_ge"]) for r in rows if r["exponent_softmax_ge"] is not None]
        n = self.n
        scale = f"sqrt(log n) = {np.sqrt(np.log(n[0])):.2f} at n = {n[0]} and {np.sqrt(np.log(n[-1])):.2f} at n = {n[-1]}"
        if not fitted:
            return f"KS(softmax, GE) was not fitted (one n, or a zero distance); the scale of the threshold is {scale}."

        errors = {r["beta"]: r["exponent_softmax_ge_error"] for r in rows}

        def listed(pairs: list[tuple[str, float]]) -> str:
            return ", ".join(f"{b} (n^{a:.2f}" + ("" if errors[b] is None else f" ± {errors[b]:.2f}") + ")" for b, a in pairs)

        fast = [(b, a) for b, a in fitted if a <= SLOWER]
        slow = [(b, a) for b, a in fitted if SLOWER < a <= STALLED]
        stalled = [(b, a) for b, a in fitted if a > STALLED]
        parts = []
        if fast:
            parts.append(f"shrinks like n^{RATE:g} or faster (exponent at most {SLOWER:g}) at beta = " + listed(fast))
        if slow:
            parts.append(f"shrinks more slowly than n^{RATE:g} at beta = " + listed(slow))
        if stalled:
            parts.append(f"stops shrinking (exponent above {STALLED:g}) from beta = {stalled[0][0]} on: " + listed(stalled))
        else:
            parts.append(f"does not stop shrinking anywhere on this grid (no exponent above {STALLED:g})")
        parts[0] = "KS(softmax, GE) " + parts[0]
        above = [r["beta"] for r in rows if r["ks_softmax_ge"][-1] > FLOOR_FACTOR * r["ks_floor"][-1]]
        parts.append(f"at n = {n[-1]} the gap exceeds {FLOOR_FACTOR:g} times the Monte Carlo floor at beta = "
                     + ", ".join(above) if above else f"at n = {n[-1]} the gap is within {FLOOR_FACTOR:g} times the "
                     "Monte Carlo floor everywhere")
        caveat = " (fitted from two n, without an error: any power law fits two points)" if len(n) < 3 else ""
        return "; ".join(parts) + f"{caveat}. Gaussian equivalence predicts n^{RATE:g}; the scale of the threshold is {scale}."

    def to_json_dict(self) -> dict[str, Any]:
        """The rows, the verdict, and the configuration."""
        return {"config": self.config.to_dict(), "summary": self.config.summary(), "n": self.n,
                "draws": self.results[0].comparisons[0].draws, "seed": self.results[0].seed,
                "rows": self.rows(), "verdict": self.verdict(), "slower_above": SLOWER, "stalled_above": STALLED,
                "rate": RATE}


def threshold(config: Config, betas: list[str], n: list[int], draws: int = 2, seed: int = 0, executor: Any = None,
              progress: bool = False, cache: str | None = None, backend: str = "numpy",
              device: str = "cpu") -> ThresholdResult:
    """:func:`~.compare.verify` of ``config`` at every beta of ``betas`` (exact text, e.g. "3/2") and every
    n, all with ``seed`` (so the tokens and weights of a draw are the same at every beta), on ``executor``.
    Refuses a causal layer (its Gaussian equivalent is not its law, docs/extensions.md §8.6)."""
    if config.mask_rule.causal:
        raise ValueError("mask: the threshold needs a layer whose law is its Gaussian equivalent's; a causal layer's is not")
    if not betas:
        raise ValueError("beta: need at least one value")
    configs = [vary_config(config, {"beta": b}) for b in betas]  # every value checked before any work
    results = tuple(verify(c, n, draws=draws, seed=seed, executor=executor, progress=progress, cache=cache,
                           backend=backend, device=device) for c in configs)
    return ThresholdResult(config, tuple(betas), results)


def format_threshold(result: ThresholdResult) -> str:
    """A table per beta (KS against n with the fits, outliers per draw) and the verdict."""
    n = result.n
    lines = [f"config   {result.config.name or 'configuration'}: {result.config.summary()} (beta varied below)",
             f"Monte Carlo: n = {', '.join(map(str, n))}; {result.results[0].comparisons[0].draws} draw(s) per set, "
             f"seed {result.results[0].seed}",
             f"{'beta':>8}  {'quantity':<20}" + "".join(f"{f'n={v}':>11}" for v in n) + "   exponent of n"]
    for row in result.rows():
        for key, label, fit in (("ks_softmax_ge", "KS softmax-GE", "exponent_softmax_ge"),
                                ("ks_theory_softmax", "KS theory-softmax", "exponent_theory_softmax"),
                                ("ks_floor", "floor (GE-GE)", None), ("outliers_per_draw", "outliers/draw", None)):
            exponent = row[fit] if fit else None
            cells = "".join(f"{v:>11.4g}" for v in row[key])
            lines.append(f"{row['beta'] if key == 'ks_softmax_ge' else '':>8}  {label:<20}{cells}"
                         + (f"   {exponent:.3f}" if exponent is not None else ""))
    lines.append("verdict  " + result.verdict())
    return "\n".join(lines)
