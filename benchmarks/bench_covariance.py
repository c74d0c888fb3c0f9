"""Time the law of a token covariance of many levels against the plain layer's, measured in the same run.

For one head at beta = 1 with the values 2k/L (k = 1..L) in L blocks of equal weight, the record's work (the law built, three exact moments, the edges, the elimination and the minimal system
as they are tried or declined) in a fresh law, over the same for the plain layer (``single-head`` written as one level
of value 1, which no library record answers), best of interleaved rounds:

- ``ratio_L``: seconds of L levels over seconds of the plain layer, for each L of ``--levels`` (docs/extensions.md §8.3).

    python benchmarks/bench_covariance.py [--levels 8 16] [--repeat 2] [--json]
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable

from timing import best_times

from gemhsa_sym.laws.attention import AttentionLaw
from gemhsa_sym.layer.presets import PRESETS


def record_work(levels: int | None) -> Callable[[], None]:
    """The record of a fresh law of ``single-head`` with ``levels`` token levels (values 2k / levels), or one of value 1."""
    values = ["1"] if levels is None else [f"{2 * k}/{levels}" for k in range(1, levels + 1)]
    weights = ["1"] if levels is None else [f"1/{levels}"] * levels
    config = PRESETS["single-head"].replace(tokens="covariance", token_covariance={"values": values, "weights": weights})

    def work() -> None:
        AttentionLaw(config).record()

    return work


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--levels", type=int, nargs="+", default=[8, 16])
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    record_work(None)()  # the kernel compiled and the Hermite data cached before timing
    times = best_times([record_work(None), *(record_work(L) for L in args.levels)], args.repeat)
    figures: dict[str, float] = {"plain_s": times[0]}
    for L, seconds in zip(args.levels, times[1:]):
        figures |= {f"levels_{L}_s": seconds, f"ratio_{L}": seconds / times[0]}
    if args.json:
        print(json.dumps(figures))
        return
    for key, value in figures.items():
        print(f"{key:>14}  {value:.4g}")


if __name__ == "__main__":
    main()
