"""The claims on laws over positions (docs/verification.md §4.5): the causal section (docs/extensions.md §8.6) and the
depth section (docs/extensions.md §8.7) of the claims report, their layers and networks, and their verdicts."""

from __future__ import annotations

from typing import Any

from gemhsa_sym.layer.config import Config
from gemhsa_sym.layer.presets import PRESETS
from gemhsa_sym.verification.compare import Comparison, VerifyResult

__all__ = ["CAUSAL", "CAUSAL_N", "DEPTH", "FLOOR_MARGIN", "STALLED_EXPONENT", "causal_section", "causal_sizes", "depth_section"]

#: The causal layers of the causal section (unit ratios, beta = 1): softmax with one head and with four (H d_k = d),
#: multi-query (four heads sharing W_K and W_V) and grouped-query attention (eight heads, four groups sharing them),
#: compared by their samples and by their laws (the two-point equation of their masked scores), and the square score
#: (mu_1 = 0, one head), whose law is its noise's variance profile.
CAUSAL: dict[str, Config] = {"softmax": PRESETS["causal-single-head"], "softmax, 4 heads": PRESETS["causal-mha"],
                             "softmax, MQA (4 heads)": PRESETS["causal-mqa"],
                             "softmax, GQA (8 heads, 4 groups)": PRESETS["causal-gqa"],
                             "square": Config(mask="causal", score="square")}
#: The token counts of the causal section where the caller gives none.
CAUSAL_N: tuple[int, ...] = (2000, 4000)
#: The networks of the depth section (one head, unit ratios, beta = 1, pre-LayerNorm), by the layer read: the first block
#: with a ReLU MLP, layer 2 of two attention-only layers, layer 4 of blocks with a ReLU MLP (frozen: layer 2's law), and
#: layer 2 of centred attention, without and with a ReLU MLP (whose mean weights layer 2's keys).
DEPTH: dict[str, dict[str, Any]] = {
    "layer 1, ReLU MLP d_ff = n, alpha = 1": {"residual": 1, "norm": "layer", "d_ff": 1},
    "layer 2, attention only, alpha = 1/2": {"residual": "1/2", "norm": "layer", "layers": 2},
    "layer 4 (frozen), ReLU MLP d_ff = n, alpha = 1": {"residual": 1, "norm": "layer", "d_ff": 1, "layers": 4},
    "layer 2, centred attention, alpha = 1": {"residual": 1, "norm": "layer", "layers": 2, "attention": "centred"},
    "layer 2, centred attention, ReLU MLP d_ff = n, alpha = 1": {"residual": 1, "norm": "layer", "layers": 2,
                                                               "attention": "centred", "d_ff": 1},
}
#: A fitted exponent of n above this: the gap has stopped shrinking (slower than n^{-1/4}).
STALLED_EXPONENT = -0.25
#: KS(theory, GE) within the floor plus this counts as agreement at the largest n.
FLOOR_MARGIN = 0.002


def causal_sizes(causal: dict[str, VerifyResult]) -> list[int]:
    """The token counts of the causal section, or none where it did not run."""
    return [c.n for c in next(iter(causal.values())).comparisons] if causal else []


def causal_section(causal: dict[str, VerifyResult]) -> list[str]:
    """Causal attention: the softmax layer against its conjectured Gaussian equivalent, and each layer's law
    against its samples (docs/extensions.md §8.6)."""
    if not causal:
        return []
    lines = ["", "## Causal attention (a decoder layer)", "",
             "Unit ratios, beta = 1, one head (more with H d_k = d where said; MQA and GQA share W_K and W_V); query i",
             "sees the keys j <= i. GE = the",
             "conjectured Gaussian equivalent (c_0 + mu_1 S0_ij + sigma Z_ij) / i on j <= i; GE w/o c_0 = the same without",
             "its uniform part c_0 / i, the equivalent the theory describes: for softmax (mu_1 = 1) the two-point Dyson",
             "equation of the masked scores, for the square score (mu_1 = 0) the variance profile of the noise. The floor is",
             "KS between two independent GE w/o c_0 sets. The law has no moments: medians and 99 % quantiles instead.", "",
             "| score | n | KS(theory, softmax) | KS(theory, GE) | KS(theory, GE w/o c_0) | KS(softmax, GE) | floor | "
             "median softmax / GE / GE w/o c_0 | 99 % quantile softmax / GE / GE w/o c_0 |",
             "|---|---|---|---|---|---|---|---|---|"]

    def cell(value: float | None) -> str:
        return "no law" if value is None else f"{value:.4f}"

    def ks(c: Comparison, reading: str) -> float | None:
        return None if c.ks is None else c.ks[f"theory_{reading}"]

    for score, v in causal.items():
        for c in v.comparisons:
            q = c.quantiles
            median, top = (" / ".join(f"{q[name][level]:.4g}" for name in c.readings) for level in (1, 3))
            lines.append(f"| {score} | {c.n} | {cell(ks(c, 'softmax'))} | {cell(ks(c, 'ge'))} | "
                         f"{cell(ks(c, 'ge_without_uniform'))} | {c.softmax_ge['ks']:.4f} | {c.floor['ks']:.4f} | "
                         f"{median} | {top} |")
    lines.append("")
    for score, v in causal.items():
        if v.config.score != "softmax" or len(v.comparisons) < 2:
            continue
        a = v.scaling()["ks_softmax_ge_exponent"]
        first, last = v.comparisons[0], v.comparisons[-1]
        shrinks = a <= STALLED_EXPONENT and last.softmax_ge["ks"] < first.softmax_ge["ks"]
        lines.append(f"Verdict ({score}): KS(softmax, GE) **{'shrinks' if shrinks else 'does not shrink'}**, fitted as "
                     f"n^{a:.2f} over n = {first.n} .. {last.n}; at n = {last.n} it is {last.softmax_ge['ks'] / last.floor['ks']:.1f} "
                     "times the floor.")
    for score, v in causal.items():
        first, last = v.comparisons[0], v.comparisons[-1]
        if v.theory is None:
            continue
        within = ks(last, "ge_without_uniform") <= last.floor["ks"] + FLOOR_MARGIN
        line = (f"Verdict ({score} law): KS(theory, GE w/o c_0) at n = {last.n} is {ks(last, 'ge_without_uniform'):.4f} "
                f"against the floor {last.floor['ks']:.4f}: **{'within' if within else 'beyond'}** the floor + {FLOOR_MARGIN:g} "
                f"(KS(theory, GE) {ks(last, 'ge'):.4f})")
        a = (v.scaling() or {}).get("ks_theory_softmax_exponent")
        if a is not None:
            shrinks = a <= STALLED_EXPONENT and ks(last, "softmax") < ks(first, "softmax")
            line += (f"; KS(theory, softmax) **{'shrinks' if shrinks else 'does not shrink'}**, fitted as n^{a:.2f} over "
                     f"n = {first.n} .. {last.n}")
        lines.append(line + f"; the law's own error of F is {v.theory.error:.4f}.")
    return lines


def depth_section(depth: dict[str, VerifyResult]) -> list[str]:
    """Depth: each network's law against the real network and its equivalent's draws (docs/extensions.md §8.7)."""
    if not depth:
        return []
    lines = ["", "## Depth: transformer blocks at initialisation", "",
             "One head, d = d_k = d_v = n, beta = 1, pre-LayerNorm, every layer with its own weights; the law after the layer",
             "named: the first block's, layer 2's (lognormal key weights from the common vector), and after layer 2 layer 2's",
             "again (later branches add nothing centred); with centred attention layer 2's own, its keys weighted where a "
             "ReLU MLP's mean leaves a common vector. real = the real network, GE = the law's equivalent drawn.", "",
             "| network | n | KS(theory, real) | KS(theory, GE) | KS(real, GE) | floor | mean theory / real |",
             "|---|---|---|---|---|---|---|"]
    for label, v in depth.items():
        mean = v.theory.moment_data[0]["float"]
        for c in v.comparisons:
            lines.append(f"| {label} | {c.n} | {c.ks['theory_softmax']:.4f} | {c.ks['theory_ge']:.4f} | "
                         f"{c.softmax_ge['ks']:.4f} | {c.floor['ks']:.4f} | {mean:.6g} / {c.moments['softmax'][0]['samples']:.6g} |")
    lines.append("")
    for label, v in depth.items():
        first, last, fits = v.comparisons[0], v.comparisons[-1], v.scaling() or {}

        def fitted(key: str) -> str:
            error = fits.get(f"{key}_exponent_error")
            return f"n^{fits[f'{key}_exponent']:.2f}" + ("" if error is None else f" ± {error:.2f}")

        within = last.ks["theory_ge"] <= last.floor["ks"] + FLOOR_MARGIN
        shrinks = ("ks_theory_softmax_exponent" in fits and fits["ks_theory_softmax_exponent"] <= STALLED_EXPONENT
                   and last.ks["theory_softmax"] < first.ks["theory_softmax"])
        holds = shrinks or last.ks["theory_softmax"] <= 2 * last.floor["ks"]
        lines.append(f"Verdict ({label}): KS(theory, GE) at n = {last.n} is {last.ks['theory_ge']:.4f} against the floor "
                     f"{last.floor['ks']:.4f}: **{'within' if within else 'beyond'}** the floor + {FLOOR_MARGIN:g}; the law "
                     f"**{'holds' if holds else 'fails'}** for the real network"
                     + (f" (KS(theory, real) ~ {fitted('ks_theory_softmax')}, KS(real, GE) ~ {fitted('ks_softmax_ge')} over "
                        f"n = {first.n} .. {last.n})" if len(v.comparisons) > 1 else "")
                     + f"; the law's own error of F is {v.theory.error:.1e}.")
    return lines
