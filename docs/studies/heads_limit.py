"""How the law of H heads approaches the limit of infinitely many heads (docs/extensions.md §8.5).

For a configuration with H d_k = d (default: the mha preset) and H = 1, 2, 4, ..., 1024, prints the law's
second moment, the top edge of its support, and the Kolmogorov-Smirnov distance between its CDF and the
limit's (the largest |F_H(x) - F_oo(x)| on a grid of the union of both supports), beside the limit's own
figures; with --plot, the distance and the top edge against H on log axes. Theory only (gemhsa_sym's public
API: ``derive``, ``SpectralLaw.cdf``, ``support``, ``moments``); no Monte Carlo.

    python docs/studies/heads_limit.py --max-heads 1024 --json --plot heads_limit.png
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from gemhsa_sym.laws.attention import AttentionLaw
from gemhsa_sym.layer.presets import PRESETS

#: Points of the grid on which the two CDFs are compared.
GRID = 4001


def figures(config_name: str, max_heads: int) -> dict:
    """The limit's and every H's second moment, top edge and KS distance to the limit."""
    config = PRESETS[config_name]
    limit = AttentionLaw(config.with_heads("oo"))
    laws = {}
    start = time.perf_counter()
    heads = [2**k for k in range(int(np.log2(max_heads)) + 1)]
    for h in heads:
        laws[h] = AttentionLaw(config.with_heads(h))
    top = max(law.support()[-1][1] for law in [limit, *laws.values()])
    x = np.linspace(0.0, 1.01 * top, GRID)
    reference = limit.cdf(x)
    rows = []
    for h in heads:
        law = laws[h]
        rows.append({"heads": h, "mu_2": float(law.moments(2)[1]), "top_edge": float(law.support()[-1][1]),
                     "ks_to_limit": float(np.max(np.abs(law.cdf(x) - reference)))})
    return {"config": config_name, "limit": {"mu_2": float(limit.moments(2)[1]), "mu_2_exact": str(limit.moments(2)[1]),
                                              "top_edge": float(limit.support()[-1][1])},
            "rows": rows, "seconds": time.perf_counter() - start}


def plot(result: dict, path: str) -> None:
    """The KS distance to the limit and the top edge against H, log axes."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    h = [r["heads"] for r in result["rows"]]
    fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.6), constrained_layout=True)
    left.loglog(h, [r["ks_to_limit"] for r in result["rows"]], "o-", label="KS(law of H heads, limit)")
    left.loglog(h, [result["rows"][0]["ks_to_limit"] / x for x in h], ":", color="grey", label="slope -1")
    left.set_xlabel("heads H")
    left.set_ylabel("KS distance to H = oo")
    left.legend()
    right.semilogx(h, [r["top_edge"] for r in result["rows"]], "o-", label="top edge, H heads")
    right.axhline(result["limit"]["top_edge"], color="black", lw=0.8, label=f"H = oo: {result['limit']['top_edge']:.4f}")
    right.set_xlabel("heads H")
    right.set_ylabel("top edge of the support")
    right.legend()
    fig.suptitle(f"{result['config']} with H d_k = d: the law of H heads and its limit")
    fig.savefig(path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="mha", choices=sorted(PRESETS), help="a preset with H d_k = d (default mha)")
    parser.add_argument("--max-heads", type=int, default=1024, help="largest H, a power of 2 (default 1024)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--plot", metavar="FILE", help="write the figure (.png or .pdf)")
    args = parser.parse_args()
    result = figures(args.config, args.max_heads)
    if args.plot:
        plot(result, args.plot)
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(f"{'H':>6} {'mu_2':>10} {'top edge':>10} {'KS to oo':>10}")
    for r in result["rows"]:
        print(f"{r['heads']:>6} {r['mu_2']:>10.5f} {r['top_edge']:>10.5f} {r['ks_to_limit']:>10.3e}")
    lim = result["limit"]
    print(f"{'oo':>6} {lim['mu_2']:>10.5f} {lim['top_edge']:>10.5f}   (mu_2 = {lim['mu_2_exact']})")
    print(f"in {result['seconds']:.1f} s")


if __name__ == "__main__":
    main()
