"""``gemhsa-sym threshold``: where the softmax layer stops approaching its Gaussian equivalent, on a grid of beta and n."""

from __future__ import annotations

import argparse
import json

from gemhsa_sym.cli.common import (
    MAX_DRAWS,
    MAX_SEED,
    add_backend_arguments,
    add_execution_arguments,
    check_backend_arguments,
    check_outputs,
    field_changes,
    int_list,
    integer,
)
from gemhsa_sym.layer.config import Config
from gemhsa_sym.layer.network import Network
from gemhsa_sym.layer.presets import load_input
from gemhsa_sym.sampling.executors import open_executor, show_progress
from gemhsa_sym.verification.sweep import parse_vary
from gemhsa_sym.verification.threshold import format_threshold, threshold


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``threshold`` sub-command."""
    parser = subparsers.add_parser(
        "threshold",
        help="KS(softmax, GE) and KS(theory, softmax) on a grid of beta and n, with fitted exponents of n",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=(
            "At every beta of --beta and every n of --n, draw the softmax layer of CONFIG and its Gaussian\n"
            "equivalent (GE) with the same seeds, beside the law and an independent GE set (the floor), as\n"
            "`verify` does. Per beta: KS(softmax, GE), KS(theory, softmax), the floor and the softmax outliers\n"
            "above the bulk against n, each KS fitted as C n^a. Gaussian equivalence predicts a near -1/2;\n"
            "an exponent above -1/4 means the gap has stopped shrinking at these n, which the verdict says in\n"
            "words, against the scale sqrt(log n) beyond which a softmax row no longer averages many keys.\n"
            "--plot draws a heatmap of KS(softmax, GE) over (beta, n) and the exponents against beta.\n"
            "Example: gemhsa-sym threshold single-head --beta 0.5:2:4 --n 500,1000,2000 --draws 2 --jobs 2"
        ),
    )
    parser.add_argument("config", metavar="CONFIG", help="preset name (see `gemhsa-sym presets`) or configuration TOML file")
    parser.add_argument("--beta", type=_betas, required=True, metavar="A:B:K|V1,V2,...",
                        help="the inverse temperatures: K points from A to B, or a list (exact text such as 3/2 kept)")
    parser.add_argument("--set", metavar="FIELD=VALUE", action="append", default=[],
                        help="override a configuration field, e.g. --set heads=4 (repeatable)")
    parser.add_argument("--n", type=int_list("n"), default=[500, 1000, 2000, 4000], metavar="N[,N...]",
                        help="token counts (default 500,1000,2000,4000)")
    parser.add_argument("--draws", type=integer("draws", 1, MAX_DRAWS), default=2, help="draws per sample set (default 2)")
    parser.add_argument("--seed", type=integer("seed", 0, MAX_SEED), default=0, help="root seed (default 0)")
    parser.add_argument("--cache", metavar="DIR", help="reuse (and store) the laws' summaries in DIR")
    parser.add_argument("--plot", metavar="FILE", help="write a figure (.png or .pdf; needs the 'plot' extra)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    add_backend_arguments(parser)
    add_execution_arguments(parser)
    parser.set_defaults(run=run)


def _betas(text: str) -> list[str]:
    """``--beta`` through :func:`parse_vary`, its error as argparse's."""
    try:
        return parse_vary(f"beta={text}")[1]
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix("vary: ").replace("FIELD=", "").replace("beta=", "")) from None


def run(args: argparse.Namespace) -> int:
    """Measure on the grid, then print the table or JSON and optionally plot."""
    check_outputs(folders=[("cache", args.cache)], plots=[("plot", args.plot)])
    source = load_input(args.config)
    if not isinstance(source, Config):
        raise ValueError(f"config: {args.config} is a {'network' if isinstance(source, Network) else 'polynomial model'}; "
                         "the threshold needs a softmax layer")
    changes = field_changes(args.set)
    config = source.replace(**changes) if changes else source
    check_backend_arguments(args, None if args.scheduler else args.jobs)
    with open_executor(args.jobs, args.scheduler, args.scheduler_timeout) as executor:
        result = threshold(config, args.beta, args.n, draws=args.draws, seed=args.seed, executor=executor,
                           progress=show_progress(args.quiet), cache=args.cache, backend=args.backend, device=args.device)
    if args.plot:
        from gemhsa_sym.verification.plots import plot_threshold

        plot_threshold(result, args.plot)
    if args.json:
        print(json.dumps(result.to_json_dict()))
    else:
        print(format_threshold(result))
        if args.plot:
            print(f"plot     {args.plot}")
    return 0
