"""Grid densities of the presets from the root of P(m, w) against the Dyson system.

For each preset: ``derive``, the support's top edge, then a density on ``--points``
points of (0, 1.1 top] from the Dyson system (the law before any elimination), the
elimination of P (``law.algebraic()``, paid once per law), and the same density from
the root of P. Prints the two times and their ratio, measured in the same run, and the
largest differences between the two densities (relative to the largest density) and
between the two Stieltjes transforms at 20 points off the axis and 10 points down the
imaginary axis (relative).

    python benchmarks/bench_root_of_p.py [--points 1000] [--repeat 1] [PRESET ...]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from timing import best_times

from gemhsa_sym.laws.attention import AttentionLaw
from gemhsa_sym.layer.presets import BIDIRECTIONAL_PRESETS, PRESETS


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("presets", nargs="*", metavar="PRESET", help="presets to run (default: all)")
    parser.add_argument("--points", type=int, default=1000, help="grid points (default 1000)")
    parser.add_argument("--repeat", type=int, default=1, help="timed calls per path, best kept (default 1)")
    args = parser.parse_args()
    unknown = sorted(set(args.presets) - set(BIDIRECTIONAL_PRESETS))
    if unknown:
        parser.error(f"unknown presets: {', '.join(unknown)}; choose from {', '.join(BIDIRECTIONAL_PRESETS)}")
    print("| preset | P degree (m, w) | P found in (s) | Dyson (s) | root of P (s) | ratio | density diff | m diff |")
    print("|---|---|---|---|---|---|---|---|", flush=True)
    for name in args.presets or list(BIDIRECTIONAL_PRESETS):
        probe = AttentionLaw(PRESETS[name])
        top = float(probe.edges(dps=16)[-1].location)
        x = np.linspace(0, 1.1 * top, args.points + 1)[1:]
        w = np.concatenate([x[:: max(1, args.points // 20)] * (1 + 0.05j), 1j * probe.scale * 10.0 ** -np.arange(10)])
        m_dyson = probe.stieltjes(w)
        laws = [AttentionLaw(PRESETS[name]) for _ in range(args.repeat)]
        densities: list[np.ndarray] = []
        dyson = best_times([lambda: densities.append(laws.pop().density(x))], args.repeat)[0]
        rho = densities[-1]
        laws = [AttentionLaw(PRESETS[name]) for _ in range(args.repeat)]
        start = time.perf_counter()
        found = [law.algebraic() for law in laws]
        eliminated = (time.perf_counter() - start) / len(laws)
        if found[0].polynomial is None:
            print(f"| {name} | none: {found[0].reason} | {eliminated:.1f} | {dyson:.3f} | | | | |", flush=True)
            continue
        root = best_times([lambda: densities.append(laws.pop().density(x, method="polynomial"))], args.repeat)[0]
        rho_p = densities[-1]
        m_diff = np.max(np.abs(probe.stieltjes(w, method="polynomial") - m_dyson) / np.abs(m_dyson))
        print(
            f"| {name} | {found[0].degree_m}, {found[0].degree_w} | {eliminated:.1f} | {dyson:.3f} | {root:.3f} "
            f"| {root / dyson:.2f} | {np.max(np.abs(rho_p - rho)) / np.max(rho):.1e} | {m_diff:.1e} |",
            flush=True,
        )

if __name__ == "__main__":
    main()
