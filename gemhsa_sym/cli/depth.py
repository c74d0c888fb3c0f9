"""``gemhsa-sym depth``: the law of a network against depth (docs/extensions.md §8.7)."""

from __future__ import annotations

import argparse
import json

from gemhsa_sym.cli.common import (
    MAX_DRAWS,
    MAX_SEED,
    add_config_arguments,
    add_execution_arguments,
    check_outputs,
    config_from_args,
    int_list,
    integer,
)
from gemhsa_sym.layer.network import MAX_LAYERS, Network, eigenvalues
from gemhsa_sym.sampling.executors import open_executor, show_progress
from gemhsa_sym.verification.depth import COLLAPSE_RATE, FROZEN_CHANGE, QUANTILES, DepthResult, depth


def _layers(text: str) -> tuple[int, int]:
    """``A:B`` (or ``B``): the layers shown, 1 <= A <= B <= MAX_LAYERS."""
    parts = text.split(":")
    try:
        first, last = (1, int(parts[0])) if len(parts) == 1 else (int(parts[0]), int(parts[1]))
    except (ValueError, IndexError):
        raise argparse.ArgumentTypeError(f"expected A:B (or B) with integers 1 <= A <= B <= {MAX_LAYERS}, got {text!r}") from None
    if len(parts) > 2 or not 1 <= first <= last <= MAX_LAYERS:
        raise argparse.ArgumentTypeError(f"expected A:B (or B) with integers 1 <= A <= B <= {MAX_LAYERS}, got {text!r}")
    return first, last


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``depth`` sub-command."""
    parser = subparsers.add_parser(
        "depth",
        help="the law of a network of transformer blocks against depth: collapse, freezing, spreading",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=(
            "Draw the real network of CONFIG (a configuration with block fields: layers, norm,\n"
            "norm_position, d_ff, activation, alpha_mlp, attention; docs/extensions.md §8.7) with\n"
            "--layers B layers at every --n, and report after each layer the law of out^T P out / n:\n"
            "its mean (the tokens' spread), top eigenvalue and quantiles, and the size per entry of\n"
            "the tokens' common vector and of the centred part. The law after each layer (where the\n"
            "engine has it: the first block's; layer 2's, whose keys the common vector weights; and\n"
            "later pre-norm layers, which add nothing centred, with layer 2's) is printed above the\n"
            "table, with the reason where there is none. Over the token counts, the mean after each\n"
            f"layer is fitted against n: a layer whose mean falls faster than n^{COLLAPSE_RATE:g} has\n"
            f"collapsed; one that changes the mean by less than {FROZEN_CHANGE:.0%} at every n is frozen.\n"
            "With two n the exponent is exact for any power law, so no error is given; give three.\n"
            "Draw i at n uses child i of SeedSequence([seed, n]): the figures do not depend on --jobs."
        ),
    )
    add_config_arguments(parser)
    parser.add_argument("--layers", type=_layers, default=None, metavar="A:B",
                        help="the layers shown (the network is drawn with B layers; default: the config's)")
    parser.add_argument("--n", type=int_list("n"), default=[300, 600], metavar="N[,N...]", help="token counts (default 300,600)")
    parser.add_argument("--draws", type=integer("draws", 1, MAX_DRAWS), default=1, help="draws per n (default 1)")
    parser.add_argument("--seed", type=integer("seed", 0, MAX_SEED), default=0, help="root seed (default 0)")
    parser.add_argument("--plot", metavar="FILE", help="write a figure (.png, .pdf or .svg; needs the 'plot' extra)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    add_execution_arguments(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Draw, then print the table or JSON and optionally plot."""
    check_outputs(plots=[("plot", args.plot)])
    network = config_from_args(args)
    first = 1
    if args.layers is not None:
        first, last = args.layers
        network = network.replace(layers=last) if isinstance(network, Network) else Network(network, layers=last)
    if not isinstance(network, Network):
        raise ValueError(f"config: {args.config} is one plain layer; give --layers or block fields (docs/extensions.md §8.7)")
    if network.read is not None:
        network = network.replace(target="output")
    with open_executor(args.jobs, args.scheduler, args.scheduler_timeout) as executor:
        result = depth(network, args.n, args.draws, args.seed, executor, show_progress(args.quiet), laws=first)
    if args.plot:
        from gemhsa_sym.verification.plots import plot_depth

        plot_depth(result, args.plot)
    if args.json:
        print(json.dumps(result.to_json_dict()))
        return 0
    print(_table(result, args.config, first))
    if args.plot:
        print(f"plot     {args.plot}")
    return 0


def _table(result: DepthResult, label: str, first: int) -> str:
    """The figures per layer and n, the verdicts and the summary."""
    lines = [f"network  {label}: {result.network.summary()}", f"spectrum eigenvalues of out^T P out / n after each layer, P = I - 11^T/n; "
             f"{result.draws} draw(s) per n, seed {result.seed}"]
    for theory in result.theory[first - 1:]:
        power = theory["collapse"]
        collapsed = (f"mean of {eigenvalues(power).removeprefix('the ')} (collapsed: " + ", ".join(
            f"{theory['mean'] / n**power:.4g} at n = {n}" for n in result.n) + ") " if power else "mean ")
        lines.append(f"theory   after layer {theory['layer']}: " + (
            f"no law ({theory['reason']})" if theory["mean"] is None else f"{collapsed}{theory['mean']:.6g}, "
            + ("no upper edge (lognormal key weights)" if theory["top"] is None else f"top edge {theory['top']:.6g}")))
    quantiles = "/".join(f"q{q:g}" for q in QUANTILES)
    lines.append(f"{'layer':>5} {'n':>6} {'mean':>11} {'top':>11} {quantiles:>26} {'common':>9} {'centred':>9}")
    for layer in range(first - 1, result.network.layers):
        for n in result.n:
            mean, top, common, centred = result.figures[n][:, layer].mean(axis=0)
            q = "/".join(f"{v:.3g}" for v in result.quantiles[n][layer])
            lines.append(f"{layer + 1:>5} {n:>6} {mean:>11.4g} {top:>11.4g} {q:>26} {common:>9.3g} {centred:>9.3g}")
    for v in result.verdicts()[first - 1:]:
        rate = v["rate"]
        fitted = ("" if rate is None else f"mean ~ n^{rate['exponent']:.2f}"
                  + (f" ± {rate['error']:.2f}" if rate["error"] is not None else " (two n: no error)"))
        change = "" if v["change"] is None else f"change from layer {v['layer'] - 1}: " + ", ".join(f"{c:.2%}" for c in v["change"])
        lines.append(f"layer {v['layer']}: {v['verdict']:<9} {fitted}{'; ' if fitted and change else ''}{change}")
    lines.append(f"verdict  {result.summary()}")
    return "\n".join(lines)
