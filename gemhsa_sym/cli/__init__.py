"""Command-line interface: ``gemhsa-sym COMMAND ...``, a thin layer over the library."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

#: Sub-command modules; each defines ``register(subparsers)``.
COMMANDS: tuple[str, ...] = ("presets", "sample", "derive", "derivations", "verify", "sweep", "claims")


def build_parser() -> argparse.ArgumentParser:
    """The top-level parser with one sub-parser per command module."""
    parser = argparse.ArgumentParser(
        prog="gemhsa-sym",
        description=(
            "Limiting singular-value laws of random multi-head self-attention: "
            "Gaussian-equivalent model, free-probability equations, their solution, "
            "and Monte Carlo checks against the real softmax layer."
        ),
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMANDS:
        importlib.import_module(f"gemhsa_sym.cli.{name}").register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``gemhsa-sym`` console script."""
    args = build_parser().parse_args(argv)
    try:
        return int(args.run(args) or 0)
    except (ValueError, FileNotFoundError, NotImplementedError) as exc:
        print(f"gemhsa-sym: error: {exc}", file=sys.stderr)
        return 2
