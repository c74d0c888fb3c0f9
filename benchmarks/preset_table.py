"""Every preset's derived law against its samplers, with the Monte Carlo floor and timings.

For each preset at beta = 1 (and ``single-head``, ``mha`` at beta = 1/2), prints one
Markdown row: the Kolmogorov–Smirnov distance between the law's CDF and the pooled
eigenvalues of Gaussian-equivalent (GE) and softmax samples at token count n (same
seed, so the same tokens and weights), the floor (two-sample KS between two GE sample
sets with different seeds), the relative errors of the law's mean and second moment
against the GE samples', and the seconds to derive (model, pencil, reduced system) and
to solve (support edges, then the CDF). A preset with infinitely many heads is drawn at
SAMPLE_HEADS heads, as in the claims report and the library's verification records (its
row says so): its KS figures include that finite number's distance to the limit.

    python benchmarks/preset_table.py [--n 2000] [--draws 3] [--seed 11] [--jobs 1] [PRESET ...]
"""

from __future__ import annotations

import argparse
import time

from scipy import stats

from gemhsa_sym.laws.attention import AttentionLaw
from gemhsa_sym.layer.config import Config
from gemhsa_sym.layer.presets import BIDIRECTIONAL_PRESETS, PRESETS
from gemhsa_sym.sampling.sampler import drawn_config, sample
from gemhsa_sym.verification.claims import SAMPLE_HEADS

#: (preset, beta) rows of the table.
ROWS: tuple[tuple[str, str], ...] = tuple((name, "1") for name in BIDIRECTIONAL_PRESETS) + (("single-head", "1/2"), ("mha", "1/2"))
#: Seed offset of the second, independent GE sample set (the floor).
FLOOR_SEED_OFFSET = 1000

HEADER = (
    "| preset | beta | KS vs GE | KS vs softmax | floor (GE vs GE) | KS GE vs softmax "
    "| mean err | 2nd moment err | derive (s) | edges (s) | CDF (s) |\n"
    "|---|---|---|---|---|---|---|---|---|---|---|"
)


def row(config: Config, n: int, draws: int, seed: int, jobs: int) -> str:
    """One Markdown row of the table for ``config``."""
    start = time.perf_counter()
    law = AttentionLaw(config)
    derived = time.perf_counter() - start
    start = time.perf_counter()
    law.edges(dps=16)
    edged = time.perf_counter() - start
    start = time.perf_counter()
    law.cdf(0.0)
    cdf_built = time.perf_counter() - start

    drawn = drawn_config(config, SAMPLE_HEADS if config.infinite_heads else None)
    ge = sample(drawn, n, draws, seed, model="ge", jobs=jobs, progress=False)
    soft = sample(drawn, n, draws, seed, model="softmax", jobs=jobs, progress=False)
    other = sample(drawn, n, draws, seed + FLOOR_SEED_OFFSET, model="ge", jobs=jobs, progress=False)
    ks_ge = stats.kstest(ge.pooled, law.cdf).statistic
    ks_soft = stats.kstest(soft.pooled, law.cdf).statistic
    floor = stats.ks_2samp(ge.pooled, other.pooled).statistic
    ks_models = stats.ks_2samp(ge.pooled, soft.pooled).statistic
    mean_err, second_err = law.numeric_moments(2) / ge.moments(2) - 1
    return (
        f"| {config.name}{f' (drawn at H = {SAMPLE_HEADS})' if config.infinite_heads else ''} | {config.beta} | {ks_ge:.4f} | {ks_soft:.4f} | {floor:.4f} | {ks_models:.4f} "
        f"| {mean_err:+.2%} | {second_err:+.2%} | {derived:.1f} | {edged:.1f} | {cdf_built:.1f} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("presets", nargs="*", metavar="PRESET", help="presets to run (default: all rows)")
    parser.add_argument("--n", type=int, default=2000, help="token count n = d = d_out (default 2000)")
    parser.add_argument("--draws", type=int, default=3, help="draws per sample set (default 3)")
    parser.add_argument("--seed", type=int, default=11, help="seed of the GE and softmax samples (default 11)")
    parser.add_argument("--jobs", type=int, default=1, help="worker processes of the sampler (default 1)")
    args = parser.parse_args()
    unknown = sorted(set(args.presets) - set(BIDIRECTIONAL_PRESETS))
    if unknown:
        parser.error(f"unknown presets: {', '.join(unknown)}; choose from {', '.join(BIDIRECTIONAL_PRESETS)}")
    rows = [r for r in ROWS if not args.presets or r[0] in args.presets]
    print(f"n = {args.n}, {args.draws} draws per sample set, seeds {args.seed} and {args.seed + FLOOR_SEED_OFFSET}")
    print(HEADER, flush=True)
    for name, beta in rows:
        print(row(PRESETS[name].replace(beta=beta), args.n, args.draws, args.seed, args.jobs), flush=True)


if __name__ == "__main__":
    main()
