"""Time P(m, w) guessed from the modular series against the resultants, per preset.

For each preset, the series guess (:func:`gemhsa_sym.free.algebraic.guessing.guess_polynomial`, parameters
symbolic) and ``law.algebraic(time_limit=--limit)`` (the resultants first, the guess after them
when they do not finish) run in the same process; the ratio guess / resultants is printed where
the resultants finish, and the degrees of P and its number of terms everywhere
(docs/solving.md §3.12).

    python benchmarks/bench_guess.py [--limit 20] [--presets mha tied-kv ...] [--json]
"""

from __future__ import annotations

import argparse
import json
import time

from gemhsa_sym.free.algebraic.guessing import guess_polynomial
from gemhsa_sym.laws.attention import AttentionLaw
from gemhsa_sym.layer.presets import PRESETS


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=float, default=20.0, help="time limit of each attempt of law.algebraic, seconds")
    parser.add_argument("--presets", nargs="+", default=["single-head", "mha", "tied-kv", "correlated-kv"], choices=sorted(PRESETS))
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()
    rows = {}
    for name in args.presets:
        law = AttentionLaw(PRESETS[name])
        symbols = tuple(sorted(law.system.parameters, key=str))
        start = time.perf_counter()
        terms = guess_polynomial(law.system, {}, symbols)
        guess = time.perf_counter() - start
        e = law.algebraic(time_limit=args.limit)
        resultants = e.seconds if e.method == "resultants" and e.polynomial is not None else None
        rows[name] = {"guess_s": guess, "algebraic_s": e.seconds, "method": e.method if e.polynomial is not None else None,
                      "resultants_s": resultants, "ratio_guess_over_resultants": None if resultants is None else guess / resultants,
                      "degree_m": max(t[0] for t in terms), "degree_w": max(t[1] for t in terms), "terms": len(terms)}
        if not args.json:
            r = rows[name]
            ratio = "resultants did not finish" if resultants is None else f"guess / resultants {r['ratio_guess_over_resultants']:.2f}"
            print(f"{name:14s} P degree ({r['degree_m']}, {r['degree_w']}), {r['terms']} terms: guess {guess:6.2f} s, "
                  f"law.algebraic {e.seconds:6.2f} s ({r['method']}); {ratio}")
    if args.json:
        print(json.dumps({"limit_s": args.limit, "presets": rows}, indent=2))


if __name__ == "__main__":
    main()
