"""Time the support edges from P(m, w) once P is known, per preset, against the continuation's folds.

For every preset without a mask, on a law derived afresh: the seconds of the exact elimination
(``law.algebraic``, paid once per law); then of the edges from P (``law.edges(30, method="polynomial")``: the
folds refined as solutions of P = dP/dm = 0 to 30 digits, the support scan included; target: at most 2 s); then
of the complete classification (``law.algebraic_edges``: every real root of the discriminant, classified by the
physical branch, within the time limit). The baseline, measured in the same run on another fresh law: the edges
as folds of the continuation (``law.edges``, 30 digits). Last, ``gemhsa-sym derive single-head --json`` end to
end in a fresh process, imports included (target: at most 10 s on an idle machine), beside one softmax draw at
n = 2000. With ``--json``, one object with the per-preset figures, ``"worst_edges_s"``, ``"worst_discriminant_s"``
and ``"derive_single_head_s"``.

    python benchmarks/bench_edges.py [--time-limit 20] [--json] [PRESET ...]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any, TypeVar

from gemhsa_sym.laws.attention import AttentionLaw
from gemhsa_sym.layer.presets import BIDIRECTIONAL_PRESETS, PRESETS
from gemhsa_sym.sampling.sampler import sample

T = TypeVar("T")


def timed(call: Callable[[], T]) -> tuple[T, float]:
    """The result of ``call`` and its wall time."""
    start = time.perf_counter()
    out = call()
    return out, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("presets", nargs="*", default=sorted(BIDIRECTIONAL_PRESETS), help="presets without a mask (default: all)")
    parser.add_argument("--time-limit", type=float, default=20.0, help="limit of the elimination and the discriminant, seconds")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()
    unknown = [p for p in args.presets if p not in BIDIRECTIONAL_PRESETS]
    if unknown:
        parser.error(f"presets: unknown {', '.join(unknown)}; choose from {', '.join(sorted(BIDIRECTIONAL_PRESETS))}")
    AttentionLaw(PRESETS["mqa"]).algebraic_edges(30)  # imports and first-call set-up, not counted
    figures: dict[str, dict[str, Any]] = {}
    for name in args.presets:
        law = AttentionLaw(PRESETS[name])
        elimination, p_s = timed(lambda: law.algebraic(args.time_limit))
        has_p = elimination.polynomial is not None
        refined, edges_s = timed(lambda: law.edges(30, "polynomial", args.time_limit)) if has_p else (None, None)
        found, disc_s = timed(lambda: law.algebraic_edges(30, args.time_limit)) if has_p else (None, None)
        if refined is not None and found is not None and not (len(refined) == len(found.edges) and all(
                a.side == b.side and abs(a.location - b.location) <= 1e-25 * (1 + abs(b.location)) for a, b in zip(refined, found.edges))):
            raise SystemExit(f"{name}: the edges refined on P are not the discriminant's: {refined} against {found.edges}")
        fresh = AttentionLaw(PRESETS[name])
        _, fold_s = timed(lambda: fresh.edges(dps=30))
        row = {"P_s": round(p_s, 3), "edges_from_P_s": None if refined is None else round(edges_s, 3),
               "discriminant_s": None if found is None else round(disc_s, 3),
               "folds_s": round(fold_s, 3), "ratio": None if refined is None else round(edges_s / fold_s, 3),
               "why_none": elimination.reason if not has_p else (
                   None if found is not None else f"the discriminant did not finish in {args.time_limit:g} s")}
        figures[name] = row
        if not args.json:
            got = (f"edges from P {edges_s:.2f} s, the discriminant's " + (f"{disc_s:.2f} s" if found is not None else "none")
                   if has_p else f"no edges from P ({row['why_none']})")
            print(f"{name}: P {p_s:.2f} s; {got}; folds {fold_s:.2f} s" + (f"; ratio {edges_s / fold_s:.2f}" if has_p else ""), flush=True)
    command = [sys.executable, "-m", "gemhsa_sym.cli", "derive", "single-head", "--json"]
    _, derive_s = timed(lambda: subprocess.run(command, check=True, capture_output=True))
    _, draw_s = timed(lambda: sample(PRESETS["single-head"], n=2000, draws=1, seed=0, progress=False))
    timed_edges = [f["edges_from_P_s"] for f in figures.values() if f["edges_from_P_s"] is not None]
    timed_discriminants = [f["discriminant_s"] for f in figures.values() if f["discriminant_s"] is not None]
    worst = max(timed_edges, default=None)
    if args.json:
        print(json.dumps({"presets": figures, "worst_edges_s": worst, "worst_discriminant_s": max(timed_discriminants, default=None),
                          "derive_single_head_s": round(derive_s, 3), "draw_s": round(draw_s, 3)}))
    else:
        print(f"edges from P: worst {worst} s over {len(timed_edges)} presets with P (target: at most 2 s); "
              f"{len(figures) - len(timed_edges)} without; the complete classification finished for {len(timed_discriminants)}, "
              f"worst {max(timed_discriminants, default=None)} s")
        print(f"derive single-head --json: {derive_s:.2f} s (target: at most 10 s); one softmax draw at n = 2000: {draw_s:.2f} s; "
              f"ratio {derive_s / draw_s:.2f}")


if __name__ == "__main__":
    main()
