"""``gemhsa-sym claims``: regenerate the Markdown report of the seed paper's claims."""

from __future__ import annotations

import argparse
import os

from gemhsa_sym.cli.common import (
    MAX_DRAWS,
    MAX_SEED,
    add_backend_arguments,
    add_execution_arguments,
    check_backend_arguments,
    check_outputs,
    int_list,
    integer,
)
from gemhsa_sym.files import write_atomic
from gemhsa_sym.layer.presets import BIDIRECTIONAL_PRESETS
from gemhsa_sym.sampling.executors import open_executor, show_progress
from gemhsa_sym.verification.claims import claims, render_markdown
from gemhsa_sym.verification.positional_claims import CAUSAL_N


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``claims`` sub-command."""
    parser = subparsers.add_parser(
        "claims",
        help="Markdown table of the seed paper's claims with the theory's verdicts and Monte Carlo",
        description=(
            "Derive every preset, draw it at every --n (softmax, Gaussian equivalent, independent GE for the "
            "floor) and write a Markdown report: Gaussian equivalence per preset (KS against n beside the floor), "
            "K/V sharing, Q sharing, K-V dependence, key-dependent W_O and head allocation, each with a computed "
            "verdict; the attention matrix against the iid edge; and, with every preset, causal attention (the causal "
            "softmax layer against its conjectured Gaussian equivalent, and the laws of the softmax and square scores "
            "against their samples; the softmax law takes minutes), and depth (networks read after layer 1, 2 and 4 against the "
            "real network). heads-infinite is drawn at 40 heads, so every n must be divisible by 40 and by 8. Slow: one law "
            "per preset."
        ),
    )
    parser.add_argument("--n", type=int_list("n"), default=[600, 1000, 2000], metavar="N[,N...]",
                        help="token counts, each giving integer sizes for every preset (default 600,1000,2000)")
    parser.add_argument("--causal-n", type=int_list("causal-n"), default=list(CAUSAL_N), metavar="N[,N...]",
                        help="token counts of the causal section (default " + ",".join(map(str, CAUSAL_N))
                             + ": the causal laws' error of F, at most 1e-3, is resolved against the floor there)")
    parser.add_argument("--draws", type=integer("draws", 1, MAX_DRAWS), default=2, help="draws per sample set (default 2)")
    parser.add_argument("--seed", type=integer("seed", 0, MAX_SEED), default=0, help="root seed (default 0)")
    parser.add_argument("--presets", type=_presets, default=BIDIRECTIONAL_PRESETS, metavar="NAME[,NAME...]",
                        help="presets without a mask to derive and draw (default all; the causal layers have their own "
                             "section, run with all); claims about others are marked not computed")
    parser.add_argument("--cache", metavar="DIR", help="reuse (and store) the laws' summaries in DIR")
    parser.add_argument("--out", default=os.path.join("derivations", "claims.md"), metavar="FILE",
                        help="Markdown file to write (default derivations/claims.md; '-' for standard output)")
    add_backend_arguments(parser)
    add_execution_arguments(parser)
    parser.set_defaults(run=run)


def _presets(spec: str) -> tuple[str, ...]:
    """``mha,mqa`` as preset names, checked."""
    names = tuple(name.strip() for name in spec.split(",") if name.strip())
    unknown = [name for name in names if name not in BIDIRECTIONAL_PRESETS]
    if unknown or not names:
        raise argparse.ArgumentTypeError(f"unknown preset {(unknown or [spec])[0]!r}; choose from {', '.join(BIDIRECTIONAL_PRESETS)} "
                                         "(a causal layer enters the causal section)")
    return names


def run(args: argparse.Namespace) -> int:
    """Compute and write the report."""
    check_outputs(files=[("out", args.out)], folders=[("cache", args.cache)])
    check_backend_arguments(args, None if args.scheduler else args.jobs)
    with open_executor(args.jobs, args.scheduler, args.scheduler_timeout) as executor:
        result = claims(args.n, draws=args.draws, seed=args.seed, executor=executor,
                        progress=show_progress(args.quiet), cache=args.cache, presets=args.presets,
                        backend=args.backend, device=args.device, causal=args.presets == BIDIRECTIONAL_PRESETS,
                        depth=args.presets == BIDIRECTIONAL_PRESETS, causal_n=tuple(args.causal_n))
    command = f"gemhsa-sym claims --n {','.join(map(str, result.n))} --draws {result.draws} --seed {result.seed}"
    if result.causal:
        command += f" --causal-n {','.join(map(str, sorted(set(args.causal_n))))}"
    if args.presets != BIDIRECTIONAL_PRESETS:
        command += f" --presets {','.join(args.presets)}"
    if args.backend != "numpy":
        command += f" --backend {args.backend} --device {args.device}"
    text = render_markdown(result, command)
    if args.out == "-":
        print(text, end="")
    else:
        write_atomic(args.out, text, "out")
        print(f"wrote {args.out}")
    return 0
