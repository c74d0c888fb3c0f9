"""Cost of many exchangeable heads: derivation plus a density at H heads against one head.

The family is that of the presets ``single-head``, ``mha`` and ``heads-8``: independent
heads with H d_k = H d_v = d = n = d_out, softmax at beta = 1. One task is ``derive``
(Gaussian-equivalent model, pencil, reduced Dyson system) followed by the density on
400 points of (0, 55] (the support of the one-head law is [0, 50.45]; more heads narrow
it). The exchangeable-head reduction keeps the system's size independent of H, so the
ratio of the H-head time to the one-head time, both measured in this run and
interleaved, should stay near 1. One head is a degenerate case of the reduction (one
orbital: no sectors for differences between heads, 18 unknowns in 5 sectors against
22 in 9 for every H >= 2), so the ratio to two heads is printed as well.

    python benchmarks/bench_heads.py [--heads 64] [--points 400] [--repeat 3]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from gemhsa_sym.laws.attention import AttentionLaw
from gemhsa_sym.layer.config import Config


def task(heads: int, grid: np.ndarray) -> tuple[float, int]:
    """Seconds for derivation plus density with ``heads`` heads, and the number of unknowns."""
    start = time.perf_counter()
    law = AttentionLaw(Config(heads=heads))
    law.density(grid)
    return time.perf_counter() - start, len(law.system.unknowns)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--heads", type=int, default=64)
    parser.add_argument("--points", type=int, default=400)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    grid = np.linspace(0.0, 55.0, args.points + 1)[1:]
    task(1, grid)  # warm caches (Hermite data, imports) before timing
    ratios: dict[int, list[float]] = {1: [], 2: []}
    for k in range(args.repeat):
        seconds = {h: task(h, grid) for h in (1, 2, args.heads)}
        line = ", ".join(f"H = {h} {t:.2f} s ({size} unknowns)" for h, (t, size) in seconds.items())
        for base, found in ratios.items():
            found.append(seconds[args.heads][0] / seconds[base][0])
        print(f"run {k + 1}: {line}", flush=True)
    for base, found in ratios.items():
        print(f"ratio H = {args.heads} / H = {base}: min {min(found):.2f}, median {float(np.median(found)):.2f}")


if __name__ == "__main__":
    main()
