"""Time the law of a token covariance of many levels against the plain layer's, measured in the same run.

For one head at beta = 1 with the values 2k/L (k = 1..L) in L blocks of equal weight, the record's work (the law built, three exact moments, the edges, the elimination and the minimal system
as they are tried or declined) in a fresh law, over the same for the plain layer (``single-head`` written as one level
of value 1, which no library record answers), best of interleaved rounds:

- ``ratio_L``: seconds of L levels over seconds of the plain layer, for each L of ``--levels`` (docs/extensions.md §8.3);
- ``solve_speedup``: one Newton solve of the largest L's Jacobian at 45 digits (w = 3 + i), python-flint's dense
  elimination over the sparse refinement (docs/solving.md §3.4), best of ``--repeat`` each.

    python benchmarks/bench_covariance.py [--levels 8 16 50] [--repeat 2] [--json]
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable

import mpmath
import numpy as np
from timing import best_times

from gemhsa_sym.free.numeric.flint_linalg import solve as dense_solve
from gemhsa_sym.free.numeric.sparse import refined_solve
from gemhsa_sym.free.numeric.systems import MP
from gemhsa_sym.laws.attention import AttentionLaw
from gemhsa_sym.layer.config import Config
from gemhsa_sym.layer.presets import PRESETS


def _config(levels: int | None) -> Config:
    """``single-head`` with ``levels`` token levels (values 2k / levels), or one of value 1."""
    values = ["1"] if levels is None else [f"{2 * k}/{levels}" for k in range(1, levels + 1)]
    weights = ["1"] if levels is None else [f"1/{levels}"] * levels
    return PRESETS["single-head"].replace(tokens="covariance", token_covariance={"values": values, "weights": weights})


def record_work(levels: int | None) -> Callable[[], None]:
    """The record of a fresh law of ``single-head`` with ``levels`` token levels, or one of value 1."""
    config = _config(levels)

    def work() -> None:
        AttentionLaw(config).record()

    return work


def solve_works(levels: int) -> list[Callable[[], None]]:
    """The dense and the sparse solve of the Jacobian of ``levels`` token levels at 45 digits."""
    solver = AttentionLaw(_config(levels)).solver("dyson")
    w = np.array([3.0 + 1.0j])
    g = solver.branch(w, dyson=True)
    with mpmath.workdps(45):
        F, J = solver.mp(45).residual_jacobian(MP.array(w), MP.array(g))
        F = F + mpmath.mpf(10) ** -3

    def dense() -> None:
        with mpmath.workdps(45):
            dense_solve(J, F)

    def sparse() -> None:
        with mpmath.workdps(45):
            refined_solve(J[0], F[0])

    return [dense, sparse]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--levels", type=int, nargs="+", default=[8, 16, 50])
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    record_work(None)()  # the kernel compiled and the Hermite data cached before timing
    times = best_times([record_work(None), *(record_work(L) for L in args.levels)], args.repeat)
    figures: dict[str, float] = {"plain_s": times[0]}
    for L, seconds in zip(args.levels, times[1:]):
        figures |= {f"levels_{L}_s": seconds, f"ratio_{L}": seconds / times[0]}
    dense, sparse = best_times(solve_works(max(args.levels)), args.repeat)
    figures |= {"solve_dense_s": dense, "solve_sparse_s": sparse, "solve_speedup": dense / sparse}
    if args.json:
        print(json.dumps(figures))
        return
    for key, value in figures.items():
        print(f"{key:>14}  {value:.4g}")


if __name__ == "__main__":
    main()
