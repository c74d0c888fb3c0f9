"""``gemhsa-sym sample``: Monte Carlo spectra of a configuration (docs/verification.md §4.1)."""

from __future__ import annotations

import argparse
import json
import time

from gemhsa_sym.cli.common import overrides
from gemhsa_sym.config import load_config
from gemhsa_sym.sampler import MODELS, sample


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``sample`` sub-command."""
    parser = subparsers.add_parser(
        "sample",
        help="Monte Carlo spectrum of the softmax layer or of its Gaussian equivalent",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=(
            "Draw the layer Y = sum_h A^h V^h W_O^h of CONFIG with iid Gaussian tokens X\n"
            "(N(0,1)) and weights (N(0,1/d); W_O N(0,1/(H d_v))) and report the eigenvalues of\n"
            "Y_c^T Y_c / n, where Y_c = sqrt(n) (I - 11^T/n) Y is the column-centred output:\n"
            "the squared singular values of Y_c / sqrt(n), d_out of them per draw.\n"
            "--model softmax draws the real layer; --model ge replaces n A^h by\n"
            "c_0 11^T + mu_1 S0^h + sigma Z^h (Gaussian equivalence) with the same X and weights.\n"
            "Other normalisations are rescalings: Y_c^T Y_c has n times these eigenvalues.\n"
            "Draw i uses child i of SeedSequence(seed): results do not depend on --jobs."
        ),
    )
    parser.add_argument("config", metavar="CONFIG", help="preset name (see `gemhsa-sym presets`) or TOML file")
    parser.add_argument("--n", type=int, help="token count n; other sizes scale with it (default: the config's)")
    parser.add_argument("--draws", type=int, default=1, help="independent draws (default 1)")
    parser.add_argument("--seed", type=int, default=0, help="root seed (default 0)")
    parser.add_argument("--model", choices=MODELS, default="softmax", help="layer to draw (default softmax)")
    parser.add_argument("--beta", help="inverse temperature, overriding the config's (e.g. 1.5 or 3/2)")
    parser.add_argument(
        "--set", metavar="FIELD=VALUE", action="append", default=[],
        help="override a configuration field, e.g. --set heads=8 --set share_k=all (repeatable)",
    )
    parser.add_argument("--jobs", type=int, default=1, help="worker processes (default 1)")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a summary")
    parser.add_argument("--out", metavar="FILE.npz", help="save the eigenvalues of every draw and the metadata")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Sample, then print JSON or a summary and optionally save the spectra."""
    config = load_config(args.config)
    changes = overrides(args)
    if changes:
        config = config.replace(**changes)
    start = time.perf_counter()
    result = sample(
        config, n=args.n, draws=args.draws, seed=args.seed, model=args.model,
        jobs=args.jobs, progress=False if args.quiet else None,
    )
    elapsed = time.perf_counter() - start
    if args.out:
        result.save_npz(args.out)
    summary = result.to_json_dict()
    if args.json:
        print(json.dumps(summary))
        return 0
    sizes = ", ".join(f"{key}={value}" for key, value in result.sizes.items())
    moments = ", ".join(f"{m:.6g}" for m in summary["moments"])
    label = " ".join([args.config, *(f"{key}={value}" for key, value in changes.items())])
    print(f"config   {label}: {config.summary()}")
    print(f"sizes    {sizes}")
    print(f"model    {result.model}, {result.draws} draw(s), seed {result.seed}, {elapsed:.2f} s")
    print("spectrum eigenvalues of Y_c^T Y_c / n")
    print(f"moments  {moments}  (k = 1..4, pooled)")
    print(f"range    [{summary['min']:.6g}, {summary['max']:.6g}]")
    if args.out:
        print(f"saved    {args.out}")
    return 0
