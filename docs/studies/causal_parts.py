"""Which parts of the causal Gaussian equivalent carry the limiting spectral law.

One head of a causal (decoder) softmax attention layer at unit ratios n = d = d_k = d_v = d_out:
tokens X (n x d) iid N(0, 1), W_Q, W_K, W_V iid N(0, 1/d), W_O iid N(0, 1/d_v), scores
S = X W_Q (X W_K)^T / sqrt(d_k). The spectral object is the package's (gemhsa_sym.sampling.sampler.spectrum):
the eigenvalues of Y_c^T Y_c with Y_c = Y minus its column means (= the Y_c^T Y_c / n of
docs/model.md §1.1 with Y_c = sqrt(n) (I - 11^T/n) Y). With D = diag(1/i), tril keeping j <= i and
(c0, mu1, sigma^2) = (1, beta, e^{beta^2} - 1 - beta^2), every draw gives, on the same tokens and weights:

  (a)  full GE            Y = D tril(c0 11^T + mu1 S + sigma Z) X W_V W_O
  (b)  GE without c0      Y = D tril(mu1 S + sigma Z) X W_V W_O
  (c)  c0 part alone      Y = c0 D tril(11^T) X W_V W_O          (running means of the projected tokens)
  (d)  noise only         Y = D tril(sqrt(mu1^2 + sigma^2) Z') X W_V W_O, Z' a fresh N(0, 1) matrix
  (d0) noise plus c0      Y = (c) + (d)
  (e)  softmax layer      Y = A X W_V W_O, A_ij = softmax_{j <= i}(beta S_ij), 0 for j > i
  (f)  fresh queries      (b) with S replaced by G W_Q (X W_K)^T / sqrt(d_k), G a fresh N(0, 1) token matrix:
                          the masked scores keep their keys and values but no longer share the queries'
                          tokens, so that row i is Gaussian given the tokens, with covariance set by the
                          prefix K_{<=i}^T V_{<=i} (docs/extensions.md §8.6)

and an independent second set of draws (other seeds: new tokens, weights and noise) gives (a') and (b'),
so that KS(a, a') is the Monte Carlo floor of the two-sample Kolmogorov-Smirnov distance between pooled
spectra, and KS(a, b') compares (a) and (b) without shared randomness.

Printed per n: KS distances, quantiles of every pooled spectrum, how many eigenvalues of (a) and (b)
lie above the 99.9% quantile of (b), and for (c): its top eigenvalues, trace / d, its count above
that quantile, the share of its squared Frobenius norm in its top 1, 5, 20 eigenvalues, and its squared
Frobenius norm over n log n beside the expectation d_out tr(L^T P L) / (n log n), L = D tril(11^T),
P = I - 11^T/n (the weights' ||W_V W_O||_F^2 replaced by its mean d_out).

Draw i of the first set uses child i of SeedSequence(seed) in the package's order (X, W_Q, W_K, W_V,
W_O, Z), so its (a) and (e) are gemhsa_sym's ``sample(Config(mask="causal"), n, seed=seed)`` draws of
``ge`` and ``softmax`` up to rounding; the fresh Z' of (d) and then G of (f) are drawn after them; the second set uses
children draws..2 draws-1. numpy and scipy.stats.ks_2samp only. Run single-threaded for speed on a
shared machine, e.g.

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python docs/studies/causal_parts.py --n 500 1000 2000 --draws 2
"""

from __future__ import annotations

import argparse
import json
import math
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from scipy.stats import ks_2samp

QUANTILES: tuple[float, ...] = (0.1, 0.5, 0.9, 0.99)
EDGE_QUANTILE = 0.999
TOP_SHARES: tuple[int, ...] = (1, 5, 20)
MAIN_MODELS: tuple[str, ...] = ("a", "b", "c", "d", "d0", "e", "f")
SECOND_MODELS: tuple[str, ...] = ("a", "b")
KS_PAIRS: tuple[tuple[str, str], ...] = (
    ("a", "b"), ("a", "b'"), ("a", "d"), ("b", "d"), ("a", "d0"), ("a", "e"), ("b", "e"), ("b", "f"), ("a", "a'"), ("b", "b'"),
)


def coefficients(beta: float) -> tuple[float, float, float]:
    """(c0, mu1, sigma) of the softmax score's Gaussian equivalent at inverse temperature ``beta``."""
    return 1.0, beta, math.sqrt(math.exp(beta**2) - 1.0 - beta**2)


def spectrum(Y: np.ndarray) -> np.ndarray:
    """Eigenvalues of Y_c^T Y_c, Y_c = Y minus its column means (gemhsa_sym.sampling.sampler.spectrum), ascending."""
    centred = Y - Y.mean(axis=0)
    return np.linalg.eigvalsh(centred.T @ centred)


def causal_average(M: np.ndarray, VW: np.ndarray) -> np.ndarray:
    """D tril(M) VW with D = diag(1/i): row i averages rows j <= i of VW with weights M_ij (M is overwritten)."""
    n = len(M)
    M[np.triu_indices(n, 1)] = 0.0
    out = M @ VW
    out /= np.arange(1, n + 1, dtype=float)[:, None]
    return out


def running_mean(VW: np.ndarray) -> np.ndarray:
    """D tril(11^T) VW: row i is the mean of rows 1..i of VW."""
    return np.cumsum(VW, axis=0) / np.arange(1, len(VW) + 1, dtype=float)[:, None]


def draw_parts(n: int, seed: np.random.SeedSequence, beta: float, full: bool) -> dict[str, np.ndarray]:
    """Spectra of one draw's models (module docstring): all of them (``full``) or only (a) and (b)."""
    c0, mu1, sigma = coefficients(beta)
    d = d_k = d_v = d_out = n
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    W_Q = rng.normal(0.0, d**-0.5, (d, d_k))
    W_K = rng.normal(0.0, d**-0.5, (d, d_k))
    W_V = rng.normal(0.0, d**-0.5, (d, d_v))
    W_O = rng.normal(0.0, d_v**-0.5, (d_v, d_out))
    Z = rng.standard_normal((n, n))
    S = (X @ W_Q) @ (X @ W_K).T
    S /= math.sqrt(d_k)
    VW = (X @ W_V) @ W_O
    score = mu1 * causal_average(S.copy(), VW)
    noise = sigma * causal_average(Z, VW)
    del Z
    uniform = c0 * running_mean(VW)
    b = score + noise
    out = {"a": spectrum(b + uniform), "b": spectrum(b)}
    if not full:
        return out
    out["c"] = spectrum(uniform)
    del b, score
    total = math.sqrt(mu1**2 + sigma**2) * causal_average(rng.standard_normal((n, n)), VW)
    out["d"] = spectrum(total)
    out["d0"] = spectrum(total + uniform)
    del total
    fresh = (rng.standard_normal((n, d)) @ W_Q) @ (X @ W_K).T
    fresh /= math.sqrt(d_k)
    out["f"] = spectrum(mu1 * causal_average(fresh, VW) + noise)
    del fresh, noise
    S *= beta
    S[np.triu_indices(n, 1)] = -np.inf
    S -= S.max(axis=1, keepdims=True)
    np.exp(S, out=S)
    S /= S.sum(axis=1, keepdims=True)
    out["e"] = spectrum(S @ VW)
    return out


def expected_uniform_trace(n: int, d_out: int) -> float:
    """d_out tr(L^T P L), L = D tril(11^T), P = I - 11^T/n: the mean squared Frobenius norm of the centred
    c0 part (c0 = 1) given ||W_V W_O||_F^2 = d_out. tr(L^T L) = H_n and (L^T 1)_j = H_n - H_{j-1}."""
    harmonic = np.concatenate([[0.0], np.cumsum(1.0 / np.arange(1, n + 1))])
    column_sums = harmonic[n] - harmonic[:n]
    return d_out * (harmonic[n] - float(column_sums @ column_sums) / n)


def quantiles(x: np.ndarray) -> dict[str, float]:
    """The :data:`QUANTILES` of ``x``."""
    return {f"q{q:g}": float(np.quantile(x, q)) for q in QUANTILES}


def uniform_figures(per_draw: Sequence[np.ndarray], edge: float, n: int, c0: float) -> dict[str, Any]:
    """The figures of the c0 part (c): per draw, its top 10 eigenvalues, trace / d, count above ``edge``,
    Frobenius shares of its top eigenvalues, squared Frobenius norm over n log n; and their means."""
    draws = []
    for ev in per_draw:
        top = np.sort(ev)[::-1]
        frob = float(top.sum())
        draws.append({
            "top10": [float(v) for v in top[:10]],
            "trace_over_d": frob / n,
            "above_edge_b": int(np.sum(ev > edge)),
            "top_share": {str(k): float(top[:k].sum() / frob) for k in TOP_SHARES},
            "frob2_over_nlogn": frob / (n * math.log(n)),
        })
    expected = c0**2 * expected_uniform_trace(n, n)
    return {
        "draws": draws,
        "mean_trace_over_d": float(np.mean([x["trace_over_d"] for x in draws])),
        "mean_frob2_over_nlogn": float(np.mean([x["frob2_over_nlogn"] for x in draws])),
        "expected_frob2_over_nlogn": expected / (n * math.log(n)),
        "expected_trace_over_d": expected / n,
        "mean_top_share": {str(k): float(np.mean([x["top_share"][str(k)] for x in draws])) for k in TOP_SHARES},
    }


def study(n: int, draws: int, seed: int, beta: float) -> dict[str, Any]:
    """Every figure of the module docstring at ``n`` tokens, ``draws`` draws per set."""
    start = time.perf_counter()
    children = np.random.SeedSequence(seed).spawn(2 * draws)
    first = [draw_parts(n, s, beta, full=True) for s in children[:draws]]
    second = [draw_parts(n, s, beta, full=False) for s in children[draws:]]
    pooled = {m: np.sort(np.concatenate([r[m] for r in first])) for m in MAIN_MODELS}
    pooled |= {f"{m}'": np.sort(np.concatenate([r[m] for r in second])) for m in SECOND_MODELS}
    edge = float(np.quantile(pooled["b"], EDGE_QUANTILE))
    ks, ks_at = {}, {}
    for x, y in KS_PAIRS:
        test = ks_2samp(pooled[x], pooled[y], method="asymp")  # the statistic only; p-values unused
        ks[f"KS({x},{y})"] = float(test.statistic)
        ks_at[f"KS({x},{y})"] = float(np.searchsorted(pooled[x], test.statistic_location, side="right") / len(pooled[x]))
    edge99 = float(np.quantile(pooled["b"], 0.99))
    above = {m: int(np.sum(v > edge)) for m, v in pooled.items()}
    above99 = {m: int(np.sum(v > edge99)) for m, v in pooled.items()}
    return {
        "n": n,
        "draws": draws,
        "eigenvalues_pooled": draws * n,
        "seconds": time.perf_counter() - start,
        "ks": ks,
        "ks_location_cdf": ks_at,
        "quantiles": {m: quantiles(v) for m, v in pooled.items()},
        "max": {m: float(v[-1]) for m, v in pooled.items()},
        "edge_b_q999": edge,
        "above_edge_b": above,
        "edge_b_q99": edge99,
        "above_q99_b": above99,
        "c_part": uniform_figures([r["c"] for r in first], edge, n, coefficients(beta)[0]),
    }


def report(result: dict[str, Any]) -> str:
    """The printed table of one n."""
    lines = [f"== n = d = d_k = d_v = d_out = {result['n']}, {result['draws']} draws per set "
             f"({result['eigenvalues_pooled']} pooled eigenvalues), {result['seconds']:.0f} s"]
    lines.append("  KS distance (first sample's CDF where the sup is attained):")
    for k, v in result["ks"].items():
        lines.append(f"    {k:10s} {v:.4f}  (at F = {result['ks_location_cdf'][k]:.3f})")
    lines.append(f"  {'model':6s}" + "".join(f"{k:>11s}" for k in result["quantiles"]["a"]) + f"{'max':>11s}"
                 + f"{'#>q99(b)':>10s}{'#>q999(b)':>10s}")
    for m, q in result["quantiles"].items():
        lines.append(f"  {m:6s}" + "".join(f"{v:11.4g}" for v in q.values()) + f"{result['max'][m]:11.5g}"
                     + f"{result['above_q99_b'][m]:10d}{result['above_edge_b'][m]:10d}")
    c = result["c_part"]
    lines.append(f"  99% / 99.9% quantiles of (b): {result['edge_b_q99']:.4g} / {result['edge_b_q999']:.4g}")
    for i, x in enumerate(c["draws"]):
        lines.append(f"  (c) draw {i}: top10 " + " ".join(f"{v:.1f}" for v in x["top10"]))
        lines.append(f"      trace/d {x['trace_over_d']:.4f}, #>q999(b) {x['above_edge_b']}, Frobenius share of top "
                     + ", ".join(f"{k}: {v:.3f}" for k, v in x["top_share"].items())
                     + f", ||c||_F^2/(n log n) {x['frob2_over_nlogn']:.4f}")
    lines.append(f"  (c) mean trace/d {c['mean_trace_over_d']:.4f} (expected {c['expected_trace_over_d']:.4f}); "
                 f"||c||_F^2/(n log n) {c['mean_frob2_over_nlogn']:.4f} (expected {c['expected_frob2_over_nlogn']:.4f})")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, nargs="+", default=[500, 1000, 2000], help="token counts (= every width)")
    parser.add_argument("--draws", type=int, default=2, help="draws per set (two sets)")
    parser.add_argument("--seed", type=int, default=1, help="root of numpy's SeedSequence")
    parser.add_argument("--beta", type=float, default=1.0, help="inverse temperature")
    parser.add_argument("--json", type=Path, default=None, help="write every figure to this JSON file")
    args = parser.parse_args(argv)
    c0, mu1, sigma = coefficients(args.beta)
    print(f"causal GE parts: beta {args.beta}, c0 {c0}, mu1 {mu1}, sigma^2 {sigma**2:.5f}, seed {args.seed}")
    results = []
    for n in args.n:
        results.append(study(n, args.draws, args.seed, args.beta))
        print(report(results[-1]), flush=True)
    if args.json is not None:
        args.json.write_text(json.dumps({"beta": args.beta, "seed": args.seed, "coefficients": [c0, mu1, sigma],
                                         "results": results}, indent=1))


if __name__ == "__main__":
    main()
