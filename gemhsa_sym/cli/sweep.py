"""``gemhsa-sym sweep``: moments and edges of the law across parameters, with Monte Carlo points."""

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
    input_from_args,
    integer,
)
from gemhsa_sym.sampling.executors import open_executor, show_progress
from gemhsa_sym.verification.sweep import MC_KEYS, SweepResult, parse_vary, sweep


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``sweep`` sub-command."""
    parser = subparsers.add_parser(
        "sweep",
        help="theory curves of moments and edges across parameters, Monte Carlo on top",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=(
            "For every point of the grid of --vary values (their product when repeated): the law's\n"
            "first four moments and top edge, and Monte Carlo means with standard errors over\n"
            "draws of the softmax layer and its Gaussian equivalent (largest eigenvalue for the edge).\n"
            "A FIELD is a key of the configuration's TOML. For a polynomial model file it is the dotted\n"
            "TOML path of a dimension's ratio or a Gaussian's scale (dimensions.N2=1:4:4,\n"
            "gaussians.X1.scale=1/4,1/2,1), and the Monte Carlo points are its own sampler's draws\n"
            "(sizes ratio * n); --beta, --backend torch and --device cuda are refused.\n"
            "Point i draws from child i of SeedSequence(seed): results do not depend on --jobs."
        ),
    )
    add_config_arguments(parser, models=True)
    parser.add_argument("--vary", action="append", type=_vary, required=True, metavar="FIELD=A:B:K|V1,V2,...",
                        help="a parameter and its values, e.g. beta=0.25:1.5:6 or heads=1,2,4,8; of a polynomial model "
                             "dimensions.NAME=... or gaussians.NAME.scale=... (repeatable)")
    parser.add_argument("--n", type=integer("n", 2, 10**6), default=1000,
                        help="token count of the Monte Carlo points; for a polynomial model, the n of its sizes ratio * n (default 1000)")
    parser.add_argument("--draws", type=integer("draws", 1, MAX_DRAWS), default=2, help="draws per point and model (default 2)")
    parser.add_argument("--seed", type=integer("seed", 0, MAX_SEED), default=0, help="root seed (default 0)")
    parser.add_argument("--no-mc", action="store_true", help="theory only")
    parser.add_argument("--no-theory", action="store_true", help="Monte Carlo only")
    parser.add_argument("--cache", metavar="DIR", help="reuse (and store) the laws' summaries in DIR")
    parser.add_argument("--plot", metavar="FILE", help="write a figure (.png or .pdf; needs the 'plot' extra)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    add_backend_arguments(parser)
    add_execution_arguments(parser)
    parser.set_defaults(run=run)


def _vary(spec: str) -> tuple[str, list[str]]:
    """``--vary`` through :func:`parse_vary`, its error as argparse's."""
    try:
        return parse_vary(spec)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix("vary: ")) from None


def _table(result: SweepResult) -> str:
    """One row per point: the varied values, theory and Monte Carlo (mean ± se) of each quantity."""
    lines = [f"config   {result.config.name or 'configuration'}: {result.config.summary()}"]
    if result.n is not None:
        lines.append(f"Monte Carlo: n = {result.n}, {result.draws} draw(s) per point and model, seed {result.seed}")
    for point in result.points:
        lines.append(", ".join(f"{k}={v}" for k, v in point.values.items()))
        lines.append(f"  that is {point.config.summary()}")
        for key in MC_KEYS:
            cells = [f"  {key:<9}"]
            if point.theory is not None:
                cells.append(f"theory {point.theory_value(key):<12.6g}" if point.has_theory(key) else f"theory {'none':<12}")
            if point.mc is not None:
                for model in point.mc:
                    mean, se = point.mc_value(model, key)
                    cells.append(f"{model} {mean:.6g} ± {'n/a' if se is None else f'{se:.2g}'}")
            lines.append("  ".join(cells))
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    """Sweep, then print the table or JSON and optionally plot."""
    check_outputs(folders=[("cache", args.cache)], plots=[("plot", args.plot)])
    config = input_from_args(args, {"--backend": args.backend != "numpy", "--device": args.device != "cpu"})
    check_backend_arguments(args, None if args.scheduler else args.jobs)
    with open_executor(args.jobs, args.scheduler, args.scheduler_timeout) as executor:
        result = sweep(config, args.vary, n=None if args.no_mc else args.n, draws=args.draws, seed=args.seed,
                       theory=not args.no_theory, executor=executor, progress=show_progress(args.quiet),
                       cache=args.cache, backend=args.backend, device=args.device)
    if args.plot:
        from gemhsa_sym.verification.plots import plot_sweep

        plot_sweep(result, args.plot)
    print(json.dumps(result.to_json_dict()) if args.json else _table(result))
    return 0
