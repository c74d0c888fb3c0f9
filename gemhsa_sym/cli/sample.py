"""``gemhsa-sym sample``: Monte Carlo spectra of a configuration (docs/verification.md §4.1)."""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from gemhsa_sym.cli.common import (
    MAX_DRAWS,
    MAX_JOBS,
    MAX_SEED,
    add_backend_arguments,
    add_config_arguments,
    check_backend_arguments,
    check_outputs,
    config_from_args,
    integer,
    overrides,
)
from gemhsa_sym.layer.config import Config
from gemhsa_sym.sampling.sampler import MODELS, sample


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
            "Draw i uses child i of SeedSequence(seed) and one BLAS thread: the eigenvalues are\n"
            "bit for bit the same whatever --jobs. --backend torch computes the layer and the\n"
            "spectrum with torch from the same inputs, on the cpu or (--device cuda) a GPU: the\n"
            "eigenvalues equal numpy's up to rounding. The memory of the draws that run at once is\n"
            "checked against the available memory (a GPU's free memory) before any work."
        ),
    )
    add_config_arguments(parser)
    parser.add_argument("--n", type=integer("n", 2, 10**6), help="token count n; other sizes scale with it (default: the config's)")
    parser.add_argument("--draws", type=integer("draws", 1, MAX_DRAWS), default=1, help="independent draws (default 1)")
    parser.add_argument("--seed", type=integer("seed", 0, MAX_SEED), default=0, help="root seed (default 0)")
    parser.add_argument("--model", choices=MODELS, default="softmax", help="what to draw: softmax, the real layer (default); ge, its Gaussian equivalent; "
                             "ge_without_uniform, a causal layer's equivalent without its uniform part c_0 / i (the one "
                             "its law describes)")
    parser.add_argument("--jobs", type=integer("jobs", 1, MAX_JOBS), default=1, help="worker processes (default 1)")
    add_backend_arguments(parser)
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a summary")
    parser.add_argument("--out", metavar="FILE.npz", help="save the eigenvalues of every draw and the metadata")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Sample, then print JSON or a summary and optionally save the spectra."""
    check_outputs(files=[("out", args.out)])
    check_backend_arguments(args, min(args.jobs, args.draws))
    config = config_from_args(args)
    changes = overrides(args)
    start = time.perf_counter()
    result = sample(
        config, n=args.n, draws=args.draws, seed=args.seed, model=args.model,
        jobs=args.jobs, progress=False if args.quiet else None, backend=args.backend, device=args.device,
    )
    elapsed = time.perf_counter() - start
    if args.out:
        result.save_npz(args.out, "out")
    summary = result.to_json_dict()
    if args.json:
        print(json.dumps(summary))
        return 0
    sizes = ", ".join(f"{key}={value}" for key, value in result.sizes.items())
    moments = ", ".join(f"{m:.6g}" for m in summary["moments"])
    label = " ".join([args.config, *(f"{key}={value}" for key, value in changes.items())])
    print(f"config   {label}: {config.summary()}")
    print(f"sizes    {sizes}")
    print(f"model    {result.model}, {result.draws} draw(s), seed {result.seed}, {result.backend} on {result.device}, "
          f"{elapsed:.2f} s")
    print(f"spectrum {config.spectral_object}")
    if isinstance(config, Config) and config.mask_rule.causal:  # a heavy tail: the sample moments grow with n (docs/extensions.md §8.6)
        quantiles = ", ".join(f"{q:.6g}" for q in np.quantile(result.pooled, (0.1, 0.5, 0.9, 0.99)))
        print(f"quantile {quantiles}  (q = 0.1, 0.5, 0.9, 0.99, pooled; the causal law has no moments)")
    else:
        print(f"moments  {moments}  (k = 1..4, pooled)")
    print(f"range    [{summary['min']:.6g}, {summary['max']:.6g}]")
    if args.out:
        print(f"saved    {args.out}")
    return 0
