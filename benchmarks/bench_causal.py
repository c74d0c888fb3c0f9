"""Time a causal layer's law (docs/extensions.md §8.6) against one draw of the causal softmax layer in the same run.

For each configuration: the seconds of its law's distribution function solved afresh at ``--tol`` (the report
tolerance by default; the two-point equation of its masked scores, level by level, docs/solving.md §3.13), the
achieved error of F, and the seconds of one draw of the real causal layer at n = ``--n`` (numpy, eigenvalues
included), measured just before it. Printed per configuration: both times, their ratio and the achieved error;
then ``median_ratio`` over the configurations.

The configurations: ``causal-single-head``, ``causal-mha`` and two heads with d_k = d_v = d / 2 at beta = 3/4 (a
configuration in no library).

    python benchmarks/bench_causal.py [--configs NAME ...] [--tol 1e-3] [--n 2000] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

from gemhsa_sym.laws.causal import REPORT_TOL
from gemhsa_sym.laws.causal_law import CausalLaw
from gemhsa_sym.layer.config import Config
from gemhsa_sym.layer.presets import PRESETS
from gemhsa_sym.sampling.sampler import sample

CONFIGS: dict[str, Config] = {
    "causal-single-head": PRESETS["causal-single-head"],
    "causal-mha": PRESETS["causal-mha"],
    "two-heads-beta-3/4": PRESETS["single-head"].replace(mask="causal", heads=2, d_k="1/2", d_v="1/2", beta="3/4"),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--configs", nargs="+", choices=sorted(CONFIGS), default=list(CONFIGS))
    parser.add_argument("--tol", type=float, default=REPORT_TOL)
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    figures: dict[str, dict[str, float]] = {}
    for name in args.configs:
        config = CONFIGS[name]
        start = time.perf_counter()
        sample(config, args.n, draws=1, seed=0, model="softmax", progress=False)
        draw = time.perf_counter() - start
        start = time.perf_counter()
        law = CausalLaw(config, tol=args.tol).distribution()
        seconds = time.perf_counter() - start
        figures[name] = {"law_s": seconds, "draw_s": draw, "ratio": seconds / draw, "error": float(law.error),
                         "nodes": law.nodes}
    out = {"tol": args.tol, "n": args.n, "configs": figures,
           "median_ratio": statistics.median(f["ratio"] for f in figures.values())}
    if args.json:
        print(json.dumps(out))
        return
    for name, f in figures.items():
        print(f"{name:>20}  law {f['law_s']:8.1f} s  draw {f['draw_s']:6.2f} s  ratio {f['ratio']:8.1f}  "
              f"error of F {f['error']:.2g} ({f['nodes']} nodes)")
    print(f"{'median_ratio':>20}  {out['median_ratio']:.1f}")


if __name__ == "__main__":
    main()
