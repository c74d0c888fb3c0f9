"""Arguments and helpers shared by the sub-commands."""

from __future__ import annotations

import argparse

from gemhsa_sym.config import Config, load_config


def overrides(args: argparse.Namespace) -> dict[str, str]:
    """Field changes from ``--set FIELD=VALUE`` (repeatable) and ``--beta``."""
    changes = {}
    for item in args.set:
        field, sep, value = item.partition("=")
        if not sep:
            raise ValueError(f"set: expected FIELD=VALUE, got {item!r}")
        changes[field.strip()] = value.strip()
    if args.beta is not None:
        changes["beta"] = args.beta
    return changes


def add_config_arguments(parser: argparse.ArgumentParser) -> None:
    """CONFIG, ``--beta`` and ``--set``."""
    parser.add_argument("config", metavar="CONFIG", help="preset name (see `gemhsa-sym presets`) or TOML file")
    parser.add_argument("--beta", help="inverse temperature, overriding the config's (e.g. 1.5 or 3/2)")
    parser.add_argument(
        "--set", metavar="FIELD=VALUE", action="append", default=[],
        help="override a configuration field, e.g. --set heads=8 --set share_k=all (repeatable)",
    )


def config_from_args(args: argparse.Namespace) -> Config:
    """The configuration named by CONFIG with the ``--set``/``--beta`` changes applied."""
    config = load_config(args.config)
    changes = overrides(args)
    return config.replace(**changes) if changes else config


def add_execution_arguments(parser: argparse.ArgumentParser) -> None:
    """``--jobs``, ``--scheduler`` and ``--quiet``."""
    parser.add_argument("--jobs", type=int, default=1, help="local worker processes (default 1)")
    parser.add_argument(
        "--scheduler", metavar="ADDRESS",
        help="submit the tasks to this Dask distributed scheduler (needs the 'dask' extra) instead of local processes",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bar")


def int_list(spec: str) -> list[int]:
    """``500,1000,2000`` as a list of integers."""
    try:
        values = [int(item) for item in spec.split(",")]
    except ValueError:
        raise ValueError(f"n: expected an integer or a comma-separated list of integers, got {spec!r}") from None
    if any(v < 2 for v in values):
        raise ValueError(f"n: token counts must be at least 2, got {spec!r}")
    return values
