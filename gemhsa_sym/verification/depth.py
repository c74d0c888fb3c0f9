"""The law of a network against depth (docs/extensions.md §8.7): Monte Carlo after every layer, the law beside every
layer where the engine has it, and whether the network collapses, freezes or keeps spreading.

One draw of the real network gives every layer's spectrum of out^T P out / n and the sizes per entry of the tokens'
common vector (their average) and of the centred part. Over the token counts, the mean of the law after each layer is
fitted against n (:func:`~.distances.power_fit`): a layer whose mean falls with n faster than n^-1/4 has
**collapsed** (the rate is reported); one whose mean changes by less than 2 % from the layer before at every n is
**frozen**; any other is **changing**.
"""

from __future__ import annotations

from concurrent.futures import Executor
from dataclasses import dataclass
from typing import Any

import numpy as np

from gemhsa_sym.laws.resolve import law_of
from gemhsa_sym.layer.network import Network
from gemhsa_sym.progress import stage
from gemhsa_sym.resources import check_memory
from gemhsa_sym.sampling.executors import local_workers, run_tasks
from gemhsa_sym.sampling.network import draw_network, network_bytes
from gemhsa_sym.sampling.sampler import spectrum
from gemhsa_sym.verification.distances import power_fit

__all__ = ["COLLAPSE_RATE", "FROZEN_CHANGE", "QUANTILES", "DepthResult", "depth"]

#: A mean falling faster than n^COLLAPSE_RATE has collapsed.
COLLAPSE_RATE = -0.25
#: A mean that changes by less than this fraction from the layer before, at every n, is frozen.
FROZEN_CHANGE = 0.02
#: The quantiles reported per layer.
QUANTILES: tuple[float, ...] = (0.1, 0.5, 0.9)
#: The figures of one draw per layer, in this order.
FIGURES: tuple[str, ...] = ("mean", "top", "common", "centred")


def _depth_draw(network: Network, n: int, seed: np.random.SeedSequence) -> tuple[np.ndarray, np.ndarray]:
    """One draw: every layer's spectrum (layers x d), and per layer (mean, top, common, centred) with common and centred
    the root mean square per entry of the tokens' average and of the rest."""
    outputs = draw_network(network, network.sizes(n), np.random.default_rng(seed))
    spectra = np.stack([spectrum(out / np.sqrt(n)) for out in outputs])
    figures = []
    for out, values in zip(outputs, spectra):
        average = out.mean(axis=0)
        figures.append((values.mean(), values.max(), np.sqrt(np.mean(average**2)), np.sqrt(np.mean((out - average) ** 2))))
    return spectra, np.array(figures)


@dataclass(frozen=True, eq=False)
class DepthResult:
    """Figures per token count (``figures[n]``: draws x layers x :data:`FIGURES`; ``quantiles[n]``: layers x
    :data:`QUANTILES`, pooled over draws), the law after each layer (``theory[l - 1]``: its mean and top edge, or why
    there is none) and the verdict per layer (module docstring)."""

    network: Network
    n: list[int]
    draws: int
    seed: int
    figures: dict[int, np.ndarray]
    quantiles: dict[int, np.ndarray]
    theory: list[dict[str, Any]]

    def mean(self, n: int) -> np.ndarray:
        """The law's mean after every layer at ``n``, averaged over the draws."""
        return self.figures[n][:, :, 0].mean(axis=0)

    def verdicts(self) -> list[dict[str, Any]]:
        """Per layer: the fitted exponent of its mean in n (with its error from three n or more), its relative change
        from the layer before at every n, and the verdict (module docstring)."""
        out = []
        for layer in range(self.network.layers):
            means = [float(self.mean(n)[layer]) for n in self.n]
            fit = power_fit(self.n, means) if len(self.n) > 1 and min(means) > 0 else None
            change = ([abs(float(self.mean(n)[layer] / self.mean(n)[layer - 1]) - 1) for n in self.n] if layer else None)
            if fit is not None and fit["exponent"] < COLLAPSE_RATE:
                verdict = "collapsed"
            elif change is not None and max(change) < FROZEN_CHANGE:
                verdict = "frozen"
            else:
                verdict = "changing"
            out.append({"layer": layer + 1, "mean": means, "rate": fit, "change": change, "verdict": verdict})
        return out

    def summary(self) -> str:
        """One sentence: where the network collapses or freezes, with the rate."""
        verdicts = self.verdicts()
        collapsed = [v for v in verdicts if v["verdict"] == "collapsed"]
        frozen = [v for v in verdicts if v["verdict"] == "frozen"]
        if collapsed:
            first = collapsed[0]
            rates = ", ".join(f"n^{v['rate']['exponent']:.2f} after layer {v['layer']}" for v in collapsed)
            return f"collapsed from layer {first['layer']} on: the mean falls like {rates}"
        if frozen:
            return (f"frozen from layer {frozen[0]['layer'] - 1} on: every later layer changes the mean by less than "
                    f"{FROZEN_CHANGE:.0%} at every n")
        if len(self.n) < 2:
            return "one token count: no rate in n, so no collapse can be told (give two n or more)"
        return "neither collapsed nor frozen: every layer changes the law"

    def to_json_dict(self) -> dict[str, Any]:
        """The figures as JSON types."""
        per_n = {str(n): {"layers": [dict(zip(FIGURES, (float(v) for v in self.figures[n][:, layer].mean(axis=0))),
                                           quantiles=[float(q) for q in self.quantiles[n][layer]])
                                      for layer in range(self.network.layers)]} for n in self.n}
        return {"network": self.network.to_dict(), "n": self.n, "draws": self.draws, "seed": self.seed,
                "quantile_levels": list(QUANTILES), "figures": per_n, "theory": self.theory, "verdicts": self.verdicts(),
                "summary": self.summary()}


def _theory(network: Network, first: int | None) -> list[dict[str, Any]]:
    """Per layer, the mean and top edge of the law after it (None where the law has no edge), or why there is none
    (docs/extensions.md §8.7), from layer ``first`` on (None: none); ``collapse``: the power of n by which the law's
    eigenvalues are multiplied (:attr:`Network.collapse`), so that its mean at n is ``mean`` / n^collapse."""
    out: list[dict[str, Any]] = []
    for layer in range(1, network.layers + 1):
        source = network.replace(layers=layer)
        collapse = source.collapse if isinstance(source, Network) else 0
        if first is None or layer < first:
            out.append({"layer": layer, "mean": None, "top": None, "collapse": collapse, "reason": "not asked"})
            continue
        try:
            law = law_of(source)
        except NotImplementedError as exc:
            out.append({"layer": layer, "mean": None, "top": None, "collapse": collapse, "reason": str(exc)})
            continue
        with stage(f"the law after layer {layer} (its mean{' and top edge' if law.answers('edges') else ''})"):
            out.append({"layer": layer, "mean": float(law.moments(1)[0]), "collapse": collapse,
                        "top": float(law.edges()[-1].location) if law.answers("edges") else None, "reason": None})
    return out


def depth(network: Network, n: list[int], draws: int = 1, seed: int = 0, executor: Executor | None = None,
          progress: bool = False, laws: int | None = 1) -> DepthResult:
    """Every layer of ``network`` at every token count in ``n``: ``draws`` draws each (draw i of n from child i of
    ``SeedSequence([seed, n])``), as tasks on ``executor`` (the memory of the draws that run at once checked first), and
    the law after each layer from layer ``laws`` on (module docstring; None: no law, every layer's reason says so)."""
    if isinstance(draws, bool) or not isinstance(draws, int) or draws < 1:
        raise ValueError(f"draws: need an integer >= 1, got {draws!r}")
    sizes = sorted(set(n))
    for value in sizes:
        network.sizes(value)
    workers = local_workers(executor)
    if workers is not None:
        check_memory(workers * network_bytes(network, network.sizes(sizes[-1])),
                     "a draw" if workers == 1 else f"{workers} draws at once")
    tasks = [(_depth_draw, (network, value, child)) for value in sizes
             for child in np.random.SeedSequence([seed, value]).spawn(draws)]
    results = run_tasks(tasks, executor, progress, desc="depth")
    figures, quantiles = {}, {}
    for index, value in enumerate(sizes):
        chunk = results[index * draws: (index + 1) * draws]
        figures[value] = np.stack([f for _, f in chunk])
        pooled = np.concatenate([s for s, _ in chunk], axis=1)
        quantiles[value] = np.quantile(pooled, QUANTILES, axis=1).T
    return DepthResult(network, sizes, draws, seed, figures, quantiles, _theory(network, laws))
