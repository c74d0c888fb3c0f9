"""``gemhsa-sym presets``: list the named configurations, or print one as TOML."""

from __future__ import annotations

import argparse

from gemhsa_sym.layer.presets import PRESETS, load_config


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``presets`` sub-command."""
    parser = subparsers.add_parser(
        "presets",
        help="list the named configurations",
        description=(
            "List the named configurations (beta = 1, n = d = d_out, softmax with row "
            "normalisation) with a one-line description each. Any of them can be given "
            "where a CONFIG is expected; --toml prints one as a TOML file to start from."
        ),
    )
    parser.add_argument("--toml", metavar="NAME", help="print preset NAME as TOML")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Print the preset list, or one preset as TOML."""
    if args.toml is not None:
        print(load_config(args.toml).to_toml(), end="")
        return 0
    width = max(map(len, PRESETS))
    for name, config in PRESETS.items():
        print(f"{name:<{width}}  {config.summary()}")
    return 0
