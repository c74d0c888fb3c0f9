"""Time a whole law against one softmax draw, per preset, in the same run.

For every preset: the seconds from the configuration to the summary that ``verify`` needs
(``theory_task``: derivation, support edges, atoms, exact moments, the CDF on verify's table),
over the seconds of one softmax draw of the same configuration at n = 2000 (``sample``: tokens,
weights, layer, centring, Gram matrix and eigvalsh; infinitely many heads are drawn at the 40 heads
of the claims report). Both are timed in interleaved rounds, best
of ``--repeat``; every law is derived afresh. Prints one line per preset and the median ratio
(target: at most 0.5), or with ``--json`` one object with ``"median_ratio"`` and the per-preset
figures.

    python benchmarks/bench_law.py [--n 2000] [--repeat 1] [--json] [PRESET ...]
"""

from __future__ import annotations

import argparse
import json
import statistics
from functools import partial

from timing import best_times

from gemhsa_sym.layer.presets import BIDIRECTIONAL_PRESETS, PRESETS
from gemhsa_sym.sampling.sampler import drawn_config, sample
from gemhsa_sym.verification.claims import SAMPLE_HEADS
from gemhsa_sym.verification.theory import theory_task


def main() -> None:
    """Print law time, draw time and their ratio per preset, and the median ratio."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("presets", nargs="*", default=sorted(BIDIRECTIONAL_PRESETS), help="presets without a mask (default: all)")
    parser.add_argument("--n", type=int, default=2000, help="token count of the draw (default 2000)")
    parser.add_argument("--repeat", type=int, default=1, help="interleaved rounds, best taken (default 1)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()
    unknown = [p for p in args.presets if p not in BIDIRECTIONAL_PRESETS]
    if unknown:
        parser.error(f"presets: unknown {', '.join(unknown)}; choose from {', '.join(sorted(BIDIRECTIONAL_PRESETS))}")
    theory_task(PRESETS["single-head"])  # imports and first-call set-up, not counted
    figures = {}
    for name in args.presets:
        config = PRESETS[name]
        drawn = drawn_config(config, SAMPLE_HEADS if config.infinite_heads else None)
        law, draw = best_times([partial(theory_task, config),
                                partial(sample, drawn, n=args.n, draws=1, seed=0, progress=False)], args.repeat)
        figures[name] = {"law_s": round(law, 3), "draw_s": round(draw, 3), "ratio": round(law / draw, 3)}
        if not args.json:
            print(f"{name}: law {law:.2f} s, one softmax draw at n = {args.n}: {draw:.2f} s, ratio {law / draw:.3f}",
                  flush=True)
    median = statistics.median(f["ratio"] for f in figures.values())
    if args.json:
        print(json.dumps({"n": args.n, "median_ratio": median, "presets": figures}))
    else:
        print(f"median ratio law / draw over {len(figures)} presets: {median:.3f} (target: at most 0.5)")


if __name__ == "__main__":
    main()
