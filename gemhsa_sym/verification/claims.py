"""The claims report: the seed paper's qualitative claims, each with the theory's verdict and Monte Carlo.

Every preset is derived once (its law's summary) and drawn at every token count
n (softmax layer, its Gaussian equivalent with the same draws, an independent
Gaussian-equivalent set for the floor), all as tasks on one executor. Verdicts
are computed, never written in:

- Gaussian equivalence: KS(theory, softmax) against n beside the floor; it
  "holds" when the gap shrinks from the smallest to the largest n, or sits within
  twice the floor at the largest n.
- Equal or different laws (sharing, dependence, output projections): "law
  preserved" when the Stieltjes transforms agree to 1e-10 (relative) at every
  probe point and, where both laws have exact moments, the moments are
  symbolically equal; "law changed" otherwise. Monte Carlo: KS between the two
  configurations' softmax samples beside the floor.
- Head allocation: "narrows" when the second moment M_2 and the top edge decrease strictly with H.
- Causal attention (docs/extensions.md §8.6): for the causal softmax layers (one head, four heads),
  KS(softmax, GE) against n and its fitted exponent, "shrinks" when the exponent is at most STALLED_EXPONENT and the gap
  falls from the smallest to the largest n; for every causal layer of the section (softmax by the
  two-point equation, the square score by its variance profile), KS(theory, GE without its uniform part) within the
  floor + 0.002 at the largest n or beyond it, and KS(theory, softmax) against n by the same rule as
  KS(softmax, GE), beside the law's own error of F. The section has its own token counts (default
  :data:`CAUSAL_N`: the law's error of F, at most 1e-3, is resolved against the floor there).
- Depth (docs/extensions.md §8.7): for networks read after layer 1, 2 and 4, KS(theory, GE) within the floor + 0.002 at
  the largest n, and KS(theory, real network) "shrinks" by the causal rule or sits within twice the floor there; the
  fitted exponents of KS(theory, real) and KS(real, GE) with their errors.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import sympy as sp

from gemhsa_sym.laws.tabulated import PROBES, TabulatedLaw
from gemhsa_sym.layer.config import Config
from gemhsa_sym.layer.network import description_from_dict
from gemhsa_sym.layer.presets import BIDIRECTIONAL_PRESETS, PRESETS
from gemhsa_sym.parse import parse_number
from gemhsa_sym.sampling.executors import Task, local_workers, run_tasks
from gemhsa_sym.sampling.sampler import check_draws, drawn_config, torch_draws
from gemhsa_sym.verification.compare import Comparison, VerifyResult, compare, draw_tasks, verify
from gemhsa_sym.verification.distances import MIN_DRAWS, two_sample
from gemhsa_sym.verification.positional_claims import CAUSAL, CAUSAL_N, DEPTH, causal_section, causal_sizes, depth_section
from gemhsa_sym.verification.theory import theory_task

__all__ = ["CLAIM_PAIRS", "SAMPLE_HEADS", "ClaimsResult", "claims", "laws_equal", "render_markdown"]

#: (claim, configuration, reference, what the paper says: True = same law).
CLAIM_PAIRS: tuple[tuple[str, str, str, bool], ...] = (
    ("K/V sharing across all heads (multi-query) preserves the law", "mqa", "mha", True),
    ("K/V sharing in 2 groups (grouped-query) preserves the law", "gqa", "mha", True),
    ("Q sharing across heads changes the law", "shared-q", "mha", False),
    ("Tying W_V = W_K within a head changes the law", "tied-kv", "single-head", False),
    ("Correlating W_V with W_K (rho = 1/2) changes the law", "correlated-kv", "single-head", False),
    ("A key-dependent W_O (W_O^h = W_K^hT) does not change the law", "key-output", "single-head", True),
)
#: Presets of the head-allocation claim, in increasing H (H d_k = d).
HEAD_ALLOCATION: tuple[str, ...] = ("single-head", "mha", "heads-8", "heads-infinite")
#: Heads drawn for a preset with infinitely many (docs/extensions.md §8.5): n divisible by 40 gives integer
#: per-head widths n / 40.
SAMPLE_HEADS = 40
#: Inverse temperatures of the attention matrix's edge against the iid edge 4 (e^{beta^2} - 1).
ATTENTION_BETAS: tuple[str, ...] = ("1/4", "1/2", "3/4", "1", "5/4", "3/2")
#: Relative agreement of the Stieltjes transforms for "law preserved".
PROBE_TOL = 1e-10


def _drawn(name: str) -> Config:
    """The configuration drawn for a preset: itself, or at :data:`SAMPLE_HEADS` heads for infinitely many."""
    return drawn_config(PRESETS[name], SAMPLE_HEADS if PRESETS[name].infinite_heads else None)


def _heads(name: str) -> str:
    """The H column of a preset: its number of heads, and the number drawn where that differs."""
    config = PRESETS[name]
    return f"{config.heads} (drawn at {SAMPLE_HEADS})" if config.infinite_heads else str(config.heads)


def laws_equal(a: TabulatedLaw, b: TabulatedLaw) -> tuple[bool, float, bool | None]:
    """(equal, largest relative difference of m(w) at the probes, exact moments equal or None if not both exact)."""
    pa, pb = np.array(a.stieltjes(np.array(PROBES))), np.array(b.stieltjes(np.array(PROBES)))
    diff = float(np.max(np.abs(pa - pb) / np.maximum(np.abs(pa), np.abs(pb))))
    exact = None
    if all(m["exact"] is not None for m in a.moment_data + b.moment_data):
        exact = all(sp.simplify(parse_number(x["exact"], "moments") - parse_number(y["exact"], "moments")) == 0
                    for x, y in zip(a.moment_data, b.moment_data))
    return diff <= PROBE_TOL and exact is not False, diff, exact


@dataclass(frozen=True)
class ClaimsResult:
    """Laws' summaries and comparisons ``comparisons[preset][i]`` at ``n[i]``."""

    n: list[int]
    draws: int
    seed: int
    theories: dict[str, TabulatedLaw]
    comparisons: dict[str, list[Comparison]]
    #: The attention matrix's law at each beta of ATTENTION_BETAS (when the preset ran).
    attention: dict[str, TabulatedLaw] = field(default_factory=dict)
    #: The causal layers of :data:`CAUSAL` against n (when the section ran).
    causal: dict[str, VerifyResult] = field(default_factory=dict)
    #: The networks of :data:`DEPTH` against n (when the section ran).
    depth: dict[str, VerifyResult] = field(default_factory=dict)


def claims(n: list[int], draws: int = 2, seed: int = 0, executor: Any = None, progress: bool = False,
           cache: str | None = None, presets: tuple[str, ...] = BIDIRECTIONAL_PRESETS, backend: str = "numpy",
           device: str = "cpu", causal: bool = True, depth: bool = True,
           causal_n: tuple[int, ...] = CAUSAL_N) -> ClaimsResult:
    """Derive every preset and draw it at every n (module docstring) with ``backend`` on ``device``
    (docs/verification.md §4.8); with ``causal``, the causal layers of :data:`CAUSAL` too (numpy) at ``causal_n``, and
    with ``depth`` the networks of :data:`DEPTH`."""
    causal_presets = [name for name in presets if name not in BIDIRECTIONAL_PRESETS]
    if causal_presets:
        raise ValueError(f"presets: {causal_presets[0]} is a causal layer, compared in the causal section, not among the presets")
    sizes = sorted(set(n))
    unfit = []
    for name in presets:
        for value in sizes:
            try:
                _drawn(name).sizes(value)
            except ValueError as exc:
                unfit.append(f"{name}: {exc}")
    if unfit:  # before any work: every preset is drawn at every n
        raise ValueError("n: every preset needs integer sizes at every n (heads-8 needs n divisible by 8, heads-infinite, "
                         f"drawn at {SAMPLE_HEADS} heads, by {SAMPLE_HEADS}): " + "; ".join(unfit))
    for label, config in CAUSAL.items() if causal else ():
        for value in sorted(set(causal_n)):
            try:
                config.sizes(value)
            except ValueError as exc:
                unfit.append(f"{label}: {exc}")
    if unfit:
        raise ValueError("causal-n: every causal layer needs integer sizes at every n (GQA's eight heads need n divisible "
                         "by 8): " + "; ".join(unfit))
    tasks: list[Task] = [(theory_task, (PRESETS[name], True, cache)) for name in presets]
    betas = ATTENTION_BETAS if "attention-matrix" in presets else ()
    tasks += [(theory_task, (PRESETS["attention-matrix"].replace(beta=beta), False, cache)) for beta in betas]
    layout = []
    for name in presets:
        # presets that the torch backend does not draw are drawn with numpy (docs/verification.md §4.8)
        chosen = (backend, device) if backend == "numpy" or torch_draws(_drawn(name)) else ("numpy", "cpu")
        for value in sizes:
            for model, group in draw_tasks(_drawn(name), value, draws, seed, *chosen).items():
                layout.append((name, value, model, len(tasks), len(group)))
                tasks += group
    check_draws([args[0] for _, args in tasks[len(presets) + len(betas):]], local_workers(executor))
    results = run_tasks(tasks, executor, progress, desc="claims")
    theories = dict(zip(presets, results[: len(presets)]))
    attention = dict(zip(betas, results[len(presets): len(presets) + len(betas)]))
    comparisons: dict[str, list[Comparison]] = {}
    for name in presets:
        for value in sizes:
            samples = {model: np.stack([r[0] for r in results[first:first + count]])
                       for key, size, model, first, count in layout if key == name and size == value}
            comparisons.setdefault(name, []).append(compare(theories[name], samples, value))
    decoder = {score: verify(config, sorted(set(causal_n)), draws, seed, executor, progress, cache=cache)
               for score, config in CAUSAL.items()} if causal else {}
    deep = {label: verify(description_from_dict(spec), sizes, draws, seed, executor, progress, cache=cache)
            for label, spec in DEPTH.items()} if depth else {}
    return ClaimsResult(sizes, draws, seed, theories, comparisons, attention, decoder, deep)


def _attention_section(result: ClaimsResult) -> list[str]:
    """The predecessor paper's claims on the attention matrix (arXiv 2510.06685): its law is not
    Marchenko–Pastur, and the right edge of its bulk lies beyond 4 v, v = e^{beta^2} - 1 the entry
    variance (the edge of an iid matrix of that variance, whose second moment M_2 would be 2 v^2)."""
    if not result.attention:
        return []
    lines = ["", "## The attention matrix (predecessor paper, arXiv 2510.06685)", "",
             "Law of the eigenvalues of n (A - J)^T (A - J), one softmax head, n = d = d_k. An iid matrix of entry",
             "variance v = e^{beta^2} - 1 has Marchenko–Pastur law with mean v, second moment M_2 = 2 v^2 and top edge 4 v.", "",
             "| beta | mean (theory) | v | M_2 (theory) | 2 v^2 (MP) | top edge (theory) | 4 v (iid edge) | beyond |",
             "|---|---|---|---|---|---|---|---|"]
    beyond = []
    not_mp = []
    for beta, t in result.attention.items():
        v = float(np.exp(float(sp.Rational(beta)) ** 2) - 1)
        mean, mu2, top = t.moment_data[0]["float"], t.moment_data[1]["float"], t.top_edge
        beyond.append(top > 4 * v)
        not_mp.append(abs(mu2 - 2 * v * v) > 1e-3 * mu2 or abs(top - 4 * v) > 1e-3 * top)
        lines.append(f"| {beta} | {mean:.6g} | {v:.6g} | {mu2:.6g} | {2 * v * v:.6g} | {top:.6g} | {4 * v:.6g} | "
                     f"{'yes' if beyond[-1] else 'NO'} |")
    lines += ["", f"Verdicts: the edge lies beyond 4 v at **{'every' if all(beyond) else 'not every'}** beta; the law is "
              f"**{'not Marchenko–Pastur' if all(not_mp) else 'Marchenko–Pastur at some beta'}** (M_2 or the edge differ "
              "from the iid matrix's by more than 0.1 %)."]
    if "attention-matrix" in result.comparisons:
        rows = result.comparisons["attention-matrix"]
        lines += ["", "Monte Carlo of the attention matrix at beta = 1 (softmax against its Gaussian equivalent), per n: "
                  + "; ".join(f"n = {c.n}: KS(softmax, GE) {c.softmax_ge['ks']:.4f}, floor {c.floor['ks']:.4f}, "
                              f"{c.outliers['softmax']['count']} softmax outliers above the bulk" for c in rows) + "."]
    return lines


def _ge_verdict(rows: list[Comparison]) -> str:
    """'holds' when KS(theory, softmax) shrinks with n or is within twice the floor at the largest n."""
    first, last = rows[0].ks["theory_softmax"], rows[-1].ks["theory_softmax"]
    if len(rows) > 1 and last < first:
        return "holds (gap shrinks)"
    if last <= 2 * rows[-1].floor["ks"]:
        return "holds (within 2x floor)"
    return "not shown at these n"


def render_markdown(result: ClaimsResult, command: str) -> str:
    """The report: header (command, sizes, draws, seed, rules), then one table per kind of claim."""
    ns = ", ".join(map(str, result.n))
    lines = [
        "# Claims of the seed paper: theory and Monte Carlo",
        "",
        f"Generated by `{command}` (n = {ns}"
        + (f", the causal section at n = {', '.join(map(str, causal))}" if (causal := causal_sizes(result.causal)) else "")
        + f"; {result.draws} draws per sample set; seed {result.seed};",
        f"presets: {', '.join(result.theories)}"
        + (f"; not run: {', '.join(p for p in BIDIRECTIONAL_PRESETS if p not in result.theories)}"
           if len(result.theories) < len(BIDIRECTIONAL_PRESETS)
           else "") + ").",
        "Every figure below is computed by that command; regenerate the file with it"
        + (" (the causal softmax laws take minutes: `gemhsa-sym derivations --fill-cache --cache DIR` keeps the "
           "library's, which the command reads with `--cache DIR`)." if result.causal else "."),
        "Spectra: eigenvalues of Y_c^T Y_c / n (of n (A - J)^T (A - J) for the attention matrix, of R^T P R / n for the",
        "residual stream). KS = Kolmogorov–Smirnov distance; theory = the derived",
        "limiting law (its CDF, atoms included); floor = KS between two independent Gaussian-equivalent",
        "sample sets of the same size. Verdict rules are in `gemhsa_sym/verification/claims.py`.",
        "",
        "## Gaussian equivalence holds for every preset",
        "",
        "KS(theory, softmax samples) at each n, beside KS(theory, GE samples), KS(softmax, GE) and the floor.",
        "",
        "| preset | H | " + " | ".join(f"n={v}: th–softmax / th–GE / softmax–GE / floor" for v in result.n)
        + " | verdict | law solved in (s) |",
        "|---|---|" + "---|" * len(result.n) + "---|---|",
    ]
    for name, rows in result.comparisons.items():
        cells = [f"{c.ks['theory_softmax']:.4f} / {c.ks['theory_ge']:.4f} / {c.softmax_ge['ks']:.4f} / "
                 f"{c.floor['ks']:.4f}" for c in rows]
        lines.append(f"| {name} | {_heads(name)} | " + " | ".join(cells) + f" | {_ge_verdict(rows)} | "
                     f"{result.theories[name].seconds:.0f} |")
    largest = result.n[-1]
    lines += [
        "",
        "## Sharing, dependence and output projections",
        "",
        f"Theory: largest relative difference of m(w) at {len(PROBES)} probe points w, and the second moments."
        f" Monte Carlo at n = {largest}: KS between the two",
        "configurations' softmax samples, beside the floor of the first.",
        "",
        "| claim | configuration vs reference | theory verdict | max rel. diff of m(w) | M_2 (theory) | "
        "exact moments equal | KS softmax vs softmax | floor | agrees with claim |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for claim, name, reference, same in CLAIM_PAIRS:
        if name not in result.theories or reference not in result.theories:
            lines.append(f"| {claim} | {name} vs {reference} | not computed in this run |" + " |" * 6)
            continue
        equal, diff, exact = laws_equal(result.theories[name], result.theories[reference])
        a, b = result.comparisons[name][-1], result.comparisons[reference][-1]
        mc = two_sample(a.samples["softmax"], b.samples["softmax"])["ks"]
        mu2 = f"{result.theories[name].moment_data[1]['float']:.6g} vs {result.theories[reference].moment_data[1]['float']:.6g}"
        lines.append(f"| {claim} | {name} vs {reference} | {'law preserved' if equal else 'law changed'} | "
                     f"{diff:.2e} | {mu2} | {'n/a' if exact is None else exact} | {mc:.4f} | {a.floor['ks']:.4f} | "
                     f"{'yes' if equal == same else 'NO'} |")
    heads = [name for name in HEAD_ALLOCATION if name in result.theories]
    if len(heads) > 1:
        th = [result.theories[name] for name in heads]
        mu2 = [t.moment_data[1]["float"] for t in th]
        top = [t.top_edge for t in th]
        narrows = all(x > y for x, y in zip(mu2, mu2[1:])) and all(x > y for x, y in zip(top, top[1:]))
        lines += [
            "",
            "## Head allocation (H d_k = d) narrows the law",
            "",
            f"Verdict: **{'narrows' if narrows else 'does not narrow'}** (M_2 and the top edge decrease strictly with H).",
            "",
            f"| preset | H | M_1 (theory) | M_2 (theory) | top edge (theory) | M_2 softmax, n = {largest} (± se; n/a below "
            f"{MIN_DRAWS} draws) | largest eigenvalue softmax |",
            "|---|---|---|---|---|---|---|",
        ]
        for name, t in zip(heads, th):
            m = result.comparisons[name][-1].moments["softmax"][1]
            se = "n/a" if m["se"] is None else f"{m['se']:.3g}"
            top_sample = float(np.max(result.comparisons[name][-1].samples["softmax"]))
            lines.append(f"| {name} | {_heads(name)} | {t.moment_data[0]['float']:.6g} | {t.moment_data[1]['float']:.6g} | "
                         f"{t.top_edge:.6g} | {m['samples']:.6g} ± {se} | {top_sample:.6g} |")
    lines += _attention_section(result)
    lines += causal_section(result.causal)
    lines += depth_section(result.depth)
    lines += ["", "## Outliers of the softmax samples", "",
              "Eigenvalues beyond the support widened by 5 %, per n (count over all draws; largest value).", "",
              "| preset | " + " | ".join(f"n={v}" for v in result.n) + " |",
              "|---|" + "---|" * len(result.n)]
    for name, rows in result.comparisons.items():
        cells = [f"{c.outliers['softmax']['count']}" + (f" (max {c.outliers['softmax']['max']:.4g})"
                                                          if c.outliers['softmax']['max'] is not None else "")
                 for c in rows]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"
