"""Scale-out on Dask: one sweep on a local cluster of one worker, then of two, in the same run.

The benchmark starts each cluster itself on 127.0.0.1 (``distributed.LocalCluster``, one thread
per worker process), runs ``sweep`` of ``--preset`` over ``--points`` values of beta (theory and
Monte Carlo at ``--n``) through ``--scheduler``'s executor, and prints the seconds of each, the
ratio one worker / two workers (target: at least 1.6 for 8 points or more) and whether the two
runs gave identical figures (every task carries its own seed, docs/verification.md §4.6; the
laws' timings are left out of the comparison). Each worker process is warmed first, as a long-lived
cluster would be: the package imported and the compiled continuation kernel loaded from numba's
cache, on a law that is not in the sweep; that start-up (``warm_s``, paid
by the workers in parallel) is printed beside and not timed. Needs the ``dask`` extra.

    python benchmarks/bench_dask.py [--preset single-head] [--points 8] [--n 500] [--draws 1] [--json]
"""

from __future__ import annotations

import argparse
import json
import logging
import time
from typing import Any

import numpy as np
import sympy as sp
from distributed import Client, LocalCluster

from gemhsa_sym.free.expressions.matrices import Dim, Gaussian
from gemhsa_sym.laws.spectral import spectral_law
from gemhsa_sym.layer.presets import PRESETS
from gemhsa_sym.sampling.executors import open_executor
from gemhsa_sym.verification.sweep import parse_vary, sweep


def _figures(result: Any) -> dict[str, Any]:
    """The sweep's JSON without the laws' timings."""
    data = result.to_json_dict()
    for point in data["points"]:
        point.get("theory", {}).pop("seconds", None)
    return data


def _warm() -> None:
    """A worker's start-up: the sweep's imports and the compiled kernel's load, on a Marchenko-Pastur law."""
    n, d = Dim("n"), Dim("d")
    spectral_law(Gaussian("X", n, d), {n: 1, d: sp.Rational(1, 2)}).density(np.array([0.5]))


def timed_sweep(workers: int, args: argparse.Namespace) -> tuple[float, float, dict[str, Any]]:
    """Seconds of the workers' warm-up and of the sweep, and its figures, on a fresh local cluster of
    ``workers`` single-threaded workers."""
    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address=None, silence_logs=logging.CRITICAL) as cluster:
        vary = [parse_vary(f"beta=0.25:1.5:{args.points}")]
        start = time.perf_counter()
        with Client(cluster) as client:
            client.run(_warm)
        warm = time.perf_counter() - start
        with open_executor(scheduler=cluster.scheduler_address) as executor:
            start = time.perf_counter()
            result = sweep(PRESETS[args.preset], vary, n=args.n, draws=args.draws, seed=0, executor=executor)
            return warm, time.perf_counter() - start, _figures(result)


def main() -> None:
    """Print the two timings, their ratio and whether the figures agree."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="single-head", choices=sorted(PRESETS))
    parser.add_argument("--points", type=int, default=8, help="values of beta (default 8)")
    parser.add_argument("--n", type=int, default=500, help="token count of the Monte Carlo points (default 500)")
    parser.add_argument("--draws", type=int, default=1, help="draws per point and model (default 1)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()
    warm_one, one, figures_one = timed_sweep(1, args)
    warm_two, two, figures_two = timed_sweep(2, args)
    out = {"preset": args.preset, "points": args.points, "n": args.n, "one_worker_s": round(one, 2),
           "two_workers_s": round(two, 2), "ratio": round(one / two, 3), "identical": figures_one == figures_two,
           "warm_s": [round(warm_one, 2), round(warm_two, 2)]}
    if args.json:
        print(json.dumps(out))
    else:
        print(f"sweep of {args.preset} over {args.points} values of beta, n = {args.n}: one worker {one:.1f} s, "
              f"two workers {two:.1f} s, ratio {one / two:.2f} (target: at least 1.6); "
              f"figures identical: {out['identical']}; workers warmed in {warm_one:.1f} s and {warm_two:.1f} s (not timed)")


if __name__ == "__main__":
    main()
