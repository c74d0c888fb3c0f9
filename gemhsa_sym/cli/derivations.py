"""``gemhsa-sym derivations``: regenerate or check the committed derivations library."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from gemhsa_sym.cli.common import MAX_JOBS, check_outputs, integer
from gemhsa_sym.library import LIBRARY
from gemhsa_sym.library.check import check, fill_cache, write, write_verifications
from gemhsa_sym.sampling.executors import open_executor


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``derivations`` sub-command."""
    parser = subparsers.add_parser(
        "derivations",
        help="regenerate (--write) or verify (--check) the derivations library",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=(
            "The derivations library is a folder of named configurations (TOML: attention\n"
            "configurations or polynomial models) with, beside each, its generated record\n"
            "(.json: P(m, w), exact moments, edges to 30 digits, atoms) and LaTeX document\n"
            "(.tex). --check regenerates every record and fails (exit 1) on any difference\n"
            "from the committed files; --write refreshes them. --verify runs the Monte Carlo of\n"
            "each derivation (gemhsa-sym verify at n = 1000, 2000, 2 draws per set, seed 0; a law\n"
            "of infinitely many heads drawn at 40 heads) and writes NAME.verify.json beside it;\n"
            "its figures enter the document's 'How it was checked' (--check reads them, it does\n"
            "not redraw them).\n\n"
            "A causal layer's law has no P(m, w) or moments and takes minutes: --write\n"
            "computes it (or reads it from --cache DIR, where verify and claims keep it), and\n"
            "--check reads the committed distribution function back, regenerates the rest of\n"
            "the record from it and solves m(w) again at four probe points (seconds).\n"
            "--fill-cache --cache DIR checks the committed causal laws so and keeps them in DIR,\n"
            "where verify, claims and --write find them instead of solving again. A network read\n"
            "after layer 2 (key weights, as stack-2) has a record of the same kind: --write solves\n"
            "it in tens of seconds, --check reads its table back, solves the probes and the\n"
            "moments again."
        ),
    )
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--check", action="store_true", help="regenerate and compare; exit 1 on a difference")
    mode.add_argument("--write", action="store_true", help="regenerate and overwrite the .json and .tex files")
    mode.add_argument("--verify", action="store_true", help="run the Monte Carlo and write NAME.verify.json and the .tex files")
    mode.add_argument("--fill-cache", action="store_true", help="check the committed causal laws and keep them in --cache DIR")
    parser.add_argument("--dir", default=str(LIBRARY), help="the library folder (default: the library shipped with the package, "
                        "which is the repository's derivations/ folder in a checkout)")
    parser.add_argument("--only", nargs="+", metavar="NAME", help="only these derivations (file names without .toml)")
    parser.add_argument("--jobs", type=integer("jobs", 1, MAX_JOBS), default=1, help="local worker processes for --verify (default 1)")
    parser.add_argument("--cache", metavar="DIR", help="folder where causal laws are kept: --write and --verify read a law "
                        "from there, or compute it and keep it there")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Check or write the library."""
    folder = Path(args.dir)
    if not folder.is_dir():
        raise FileNotFoundError(f"dir: no derivations folder at {folder}")
    if args.fill_cache and args.cache is None:
        raise ValueError("cache: --fill-cache needs --cache DIR, the folder to keep the laws in")
    check_outputs(folders=[("cache", args.cache)])

    def progress(name: str) -> None:
        doing = "checking" if args.check or args.fill_cache else "drawing" if args.verify else "writing"
        print(f"{doing} {name} ...", file=sys.stderr, flush=True)

    if args.verify:
        with open_executor(args.jobs) as executor:
            names = write_verifications(folder, args.only, executor, progress, args.cache)
        print(f"wrote {len(names)} verification records in {folder}")
        return 0
    if args.fill_cache:
        names = fill_cache(folder, args.cache, args.only, progress)
        print(f"kept {len(names)} causal laws in {args.cache}: {', '.join(names) or 'none'}")
        return 0
    if args.write:
        names = write(folder, args.only, progress, args.cache)
        print(f"wrote {len(names)} derivations in {folder}")
        return 0
    diffs = check(folder, args.only, progress)
    for d in diffs:
        print(d)
    print(f"{'OK' if not diffs else f'{len(diffs)} difference(s)'}: derivations in {folder}")
    return 1 if diffs else 0
