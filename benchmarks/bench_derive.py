"""Time ``gemhsa-sym derive`` end to end in a fresh process: every preset from the library, the same presets derived
afresh, and three configurations of one's own.

Each run is ``gemhsa-sym derive ... --json --quiet`` in a new Python process, imports included, with the numeric
kernel already compiled (one warm-up run first, not counted). Figures:

- ``"library_max_s"``: the slowest preset read from the library's record (docs/exports.md §5.3; target at most 2 s);
- ``"recompute_max_s"``, ``"recompute_median_s"``: the presets without a mask with ``--recompute`` (target at most
  15 s); a causal preset's law takes tens of minutes to solve afresh and is not recomputed here;
- ``"new_max_s"``: tied-kv at beta = 3/4, residual at alpha = 1/2 and correlated-kv with rho = 1/3, which no record
  holds (target at most 15 s);
- the baseline, measured in the same run: ``gemhsa-sym presets`` in a fresh process (Python's start and the
  package's imports), and every figure's ratio to it.

    python benchmarks/bench_derive.py [--json] [--time-limit 20] [--skip-recompute]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from typing import Any

from gemhsa_sym.layer.presets import BIDIRECTIONAL_PRESETS, PRESETS

#: Configurations of one's own: a preset with a changed parameter, which the library does not hold.
NEW: dict[str, tuple[str, ...]] = {
    "tied-kv, beta = 3/4": ("tied-kv", "--beta", "3/4"),
    "residual, alpha = 1/2": ("residual", "--set", "residual=1/2"),
    "correlated-kv, rho = 1/3": ("correlated-kv", "--set", "rho=1/3"),
}
#: The longest a single run may take, seconds.
RUN_LIMIT = 900


def run(*argv: str) -> tuple[float, dict[str, Any] | None]:
    """Wall time of ``gemhsa-sym ARGV`` in a fresh process, and its JSON output where it prints one."""
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "gemhsa_sym.cli", *argv], capture_output=True, text=True,
                          timeout=RUN_LIMIT, check=False)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"gemhsa-sym {' '.join(argv)} failed ({done.returncode}): {done.stderr.strip()[-500:]}")
    return seconds, json.loads(done.stdout) if done.stdout.lstrip().startswith("{") else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--time-limit", default="20", help="derive's --time-limit (default 20)")
    parser.add_argument("--skip-recompute", action="store_true", help="only the library and the new configurations")
    args = parser.parse_args()
    say = (lambda text: None) if args.json else (lambda text: print(text, flush=True))
    run("derive", "single-head", "--json", "--quiet", "--recompute")  # the kernel compiled and loaded once, not counted
    baseline, _ = run("presets")
    say(f"baseline: gemhsa-sym presets in a fresh process {baseline:.2f} s")
    figures: dict[str, Any] = {"baseline_s": round(baseline, 3), "library": {}, "recompute": {}, "new": {}}
    for name in sorted(PRESETS):
        seconds, report = run("derive", name, "--json", "--quiet")
        source = (report or {}).get("timing", {}).get("source", "the library's record")
        figures["library"][name] = {"s": round(seconds, 3), "source": source}
        say(f"library   {name:24s} {seconds:6.2f} s  ratio {seconds / baseline:5.2f}  ({source})")
    for name in [] if args.skip_recompute else sorted(BIDIRECTIONAL_PRESETS):
        seconds, report = run("derive", name, "--json", "--quiet", "--recompute", "--time-limit", args.time_limit)
        method = (report or {}).get("polynomial_info", {}).get("method")
        figures["recompute"][name] = {"s": round(seconds, 3), "P": method}
        say(f"recompute {name:24s} {seconds:6.2f} s  ratio {seconds / baseline:5.2f}  (P: {method or 'none'})")
    for label, argv in NEW.items():
        seconds, report = run("derive", *argv, "--json", "--quiet", "--time-limit", args.time_limit)
        method = (report or {}).get("polynomial_info", {}).get("method")
        figures["new"][label] = {"s": round(seconds, 3), "P": method}
        say(f"new       {label:24s} {seconds:6.2f} s  ratio {seconds / baseline:5.2f}  (P: {method or 'none'})")
    for kind in ("library", "recompute", "new"):
        times = [row["s"] for row in figures[kind].values()]
        figures[f"{kind}_max_s"] = max(times, default=None)
        figures[f"{kind}_max_ratio"] = None if not times else round(max(times) / baseline, 3)
    recomputed = [row["s"] for row in figures["recompute"].values()]
    figures["recompute_median_s"] = round(statistics.median(recomputed), 3) if recomputed else None
    if args.json:
        print(json.dumps(figures))
    else:
        print(f"library: worst {figures['library_max_s']} s (target at most 2); recompute: worst {figures['recompute_max_s']} s, "
              f"median {figures['recompute_median_s']} s (target at most 15); new: worst {figures['new_max_s']} s (target at "
              "most 15)")


if __name__ == "__main__":
    main()
