"""``gemhsa-sym verify``: the derived law beside Monte Carlo of the softmax layer and its Gaussian equivalent."""

from __future__ import annotations

import argparse
import json

from gemhsa_sym.cli.common import (
    MAX_DRAWS,
    MAX_SEED,
    add_backend_arguments,
    add_config_arguments,
    add_execution_arguments,
    check_backend_arguments,
    check_outputs,
    finite,
    input_from_args,
    int_list,
    integer,
)
from gemhsa_sym.layer.config import MAX_HEADS
from gemhsa_sym.sampling.executors import open_executor, show_progress
from gemhsa_sym.sampling.sampler import drawn_config
from gemhsa_sym.verification.compare import verify
from gemhsa_sym.verification.report import format_report


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``verify`` sub-command."""
    parser = subparsers.add_parser(
        "verify",
        help="theory beside Monte Carlo: KS, W1, floor, moments, edges, outliers, atoms",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=(
            "Derive the law of CONFIG and draw the softmax layer and its Gaussian equivalent (GE)\n"
            "with the same seeds, plus an independent GE set for the Monte Carlo floor. Reports KS and\n"
            "Wasserstein-1 distances theory-softmax, theory-GE and the floor (GE against GE); the\n"
            "first four moments (theory against the mean over draws, with its standard error);\n"
            "support edges against the extreme bulk eigenvalues; outliers beyond the support\n"
            "(counted, never dropped); atoms against the numerically zero eigenvalues.\n"
            "With several --n (e.g. 500,1000,2000) it also fits the KS distances against n.\n"
            "A polynomial model file (polynomial = \"...\", e.g. derivations/marchenko-pastur.toml) is\n"
            "drawn by its own sampler instead: the eigenvalues of Y^T Y at sizes ratio * n with entries\n"
            "N(0, scale / n), one sample set (MC) and an independent one for the floor; --beta,\n"
            "--backend torch and --device cuda are refused.\n"
            "A causal layer (--set mask=causal) has a law without moments where the engine has one (any\n"
            "heads, sharing, values and outputs, residual stream, Gaussian tokens with a covariance or not;\n"
            "softmax takes tens of\n"
            "minutes, kept by --cache DIR): it is compared\n"
            "by KS distances, quantiles 0.1/0.5/0.9/0.99 and tail exponents (Hill's estimator on the\n"
            "samples), and --plot draws the CDFs and the tails on log-log axes. KS(softmax, GE) against n\n"
            "with its fitted exponent says whether the\n"
            "layer approaches the conjectured Gaussian equivalent, and how fast; where there is no law\n"
            "(orthonormal tokens, for example) the samples alone are compared.\n"
            "A configuration with infinitely many heads (heads = \"oo\", e.g. heads-infinite) is drawn with the\n"
            "finite number of heads --sample-heads H (per-head widths d / H where the limit has H d_k = d):\n"
            "the distances then include the law's own change from H to infinitely many heads.\n"
            "The exit status is 0 whatever the figures say."
        ),
    )
    add_config_arguments(parser, models=True)
    parser.add_argument("--n", type=int_list("n"), default=[2000], metavar="N[,N...]",
                        help="token counts; for a polynomial model, the n of its sizes ratio * n (default 2000)")
    parser.add_argument("--draws", type=integer("draws", 1, MAX_DRAWS), default=3, help="independent draws per sample set (default 3)")
    parser.add_argument("--seed", type=integer("seed", 0, MAX_SEED), default=0, help="root seed (default 0)")
    parser.add_argument("--sample-heads", type=integer("sample_heads", 1, MAX_HEADS), metavar="H",
                        help="heads to draw for a configuration with infinitely many (required there, refused elsewhere)")
    parser.add_argument("--edge-tol", type=finite("edge_tol", 0.0, 10.0), default=0.05,
                        help="relative widening of the support before an eigenvalue counts as an outlier (default 0.05, at most 10)")
    parser.add_argument("--cache", metavar="DIR", help="reuse (and store) the law's summary in DIR")
    parser.add_argument("--plot", metavar="FILE", help="write a figure (.png or .pdf; needs the 'plot' extra)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    add_backend_arguments(parser)
    add_execution_arguments(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Verify, then print the table or JSON and optionally plot."""
    check_outputs(folders=[("cache", args.cache)], plots=[("plot", args.plot)])
    config = input_from_args(args, {"--backend": args.backend != "numpy", "--device": args.device != "cpu"})
    check_backend_arguments(args, None if args.scheduler else args.jobs)
    drawn = drawn_config(config, args.sample_heads)  # before any work: a limit needs its finite H, nothing else takes one
    for size in args.n:
        drawn.sizes(size)
    with open_executor(args.jobs, args.scheduler, args.scheduler_timeout) as executor:
        result = verify(config, args.n, draws=args.draws, seed=args.seed, executor=executor,
                        progress=show_progress(args.quiet), edge_tol=args.edge_tol, cache=args.cache,
                        backend=args.backend, device=args.device, sample_heads=args.sample_heads)
    if args.plot:
        from gemhsa_sym.verification.plots import plot_verify

        plot_verify(result, args.plot)
    if args.json:
        print(json.dumps(result.to_json_dict()))
    else:
        print(format_report(result))
        if args.plot:
            print(f"plot     {args.plot}")
    return 0
