"""Arguments and checks shared by the sub-commands (docs/conventions.md §6.8).

Every option is validated when it is parsed, by a type function that raises
``argparse.ArgumentTypeError`` with the tool's own message, and every output path
is checked before any work.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from gemhsa_sym.files import check_folder, check_writable
from gemhsa_sym.free.numeric.results import MAX_DPS
from gemhsa_sym.layer.config import MAX_HEADS, Config
from gemhsa_sym.layer.network import Network
from gemhsa_sym.layer.polynomial_model import PolynomialModel
from gemhsa_sym.layer.presets import load_config, load_input
from gemhsa_sym.layer.sharing import INFINITE_HEADS
from gemhsa_sym.sampling.executors import SCHEDULER_TIMEOUT, check_scheduler
from gemhsa_sym.sampling.sampler import BACKENDS, DEVICES, check_backend
from gemhsa_sym.verification.plots import check_plot

__all__ = [
    "MAX_DRAWS", "MAX_GRID", "MAX_JOBS", "MAX_SEED", "add_backend_arguments", "add_config_arguments",
    "add_execution_arguments", "check_backend_arguments", "check_outputs", "choice", "config_from_args", "digits",
    "finite", "grid", "input_from_args", "int_list", "integer", "overrides", "seconds",
]

#: Most draws per sample set, worker processes, grid points; largest seed.
MAX_DRAWS = 100_000
MAX_JOBS = 256
MAX_GRID = 1_000_000
MAX_SEED = 2**63 - 1


def heads_count(text: str) -> int | str:
    """A type function: a number of heads from 1 to MAX_HEADS, or "oo" (infinitely many, docs/extensions.md §8.5)."""
    if text.strip() == INFINITE_HEADS:
        return INFINITE_HEADS
    return integer("heads", 1, MAX_HEADS)(text)


def integer(name: str, least: int, most: int) -> Callable[[str], int]:
    """A type function: an integer from ``least`` to ``most``."""

    def parse(text: str) -> int:
        try:
            value = int(text.strip())
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if not least <= value <= most:
            raise argparse.ArgumentTypeError(f"must be an integer from {least} to {most}, got {value}")
        return value

    parse.__name__ = name
    return parse


def finite(name: str, least: float, most: float = math.inf, open_low: bool = False) -> Callable[[str], float]:
    """A type function: a finite float in [least, most] (or (least, most] with ``open_low``)."""

    def parse(text: str) -> float:
        try:
            value = float(text.strip())
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
        if not math.isfinite(value) or value < least or (open_low and value == least) or value > most:
            low = f"({least:g}" if open_low else f"[{least:g}"
            raise argparse.ArgumentTypeError(f"must be a finite number in {low}, {most:g}], got {text!r}")
        return value

    parse.__name__ = name
    return parse


def choice(name: str, options: Sequence[str]) -> Callable[[str], str]:
    """A type function: one of ``options``."""

    def parse(text: str) -> str:
        value = text.strip()
        if value not in options:
            raise argparse.ArgumentTypeError(f"expected one of {', '.join(options)}, got {text!r}")
        return value

    parse.__name__ = name
    return parse


#: Digits of the support edges.
digits = integer("dps", 1, MAX_DPS)
#: Seconds for a bounded attempt (elimination, connecting to a scheduler): (0, 3600].
seconds = finite("seconds", 0.0, 3600.0, open_low=True)


def int_list(name: str = "n", least: int = 2, most: int = 10**6) -> Callable[[str], list[int]]:
    """A type function: ``500,1000,2000`` as a list of integers from ``least`` to ``most``."""

    def parse(text: str) -> list[int]:
        try:
            values = [int(item) for item in text.split(",")]
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer or a comma-separated list of integers, got {text!r}") from None
        bad = [v for v in values if not least <= v <= most]
        if bad:
            raise argparse.ArgumentTypeError(f"every value must be an integer from {least} to {most}, got {bad[0]}")
        return values

    parse.__name__ = name
    return parse


def grid(text: str) -> np.ndarray:
    """A type function: ``A:B:K``, K points from A to B (finite, A < B, 1 <= K <= MAX_GRID)."""
    parts = text.split(":")
    try:
        if len(parts) != 3:
            raise ValueError
        a, b, k = float(parts[0]), float(parts[1]), int(parts[2])
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected A:B:K with numbers A < B and an integer K, got {text!r}") from None
    if not (math.isfinite(a) and math.isfinite(b) and a < b and 1 <= k <= MAX_GRID):
        raise argparse.ArgumentTypeError(f"expected finite A < B and 1 <= K <= {MAX_GRID}, got {text!r}")
    return np.linspace(a, b, k)


def field_changes(items: Sequence[str]) -> dict[str, str]:
    """Field changes from the ``--set FIELD=VALUE`` items."""
    changes = {}
    for item in items:
        field, sep, value = item.partition("=")
        if not sep or not field.strip():
            raise ValueError(f"set: expected FIELD=VALUE, got {item!r}")
        changes[field.strip()] = value.strip()
    return changes


def overrides(args: argparse.Namespace) -> dict[str, str]:
    """Field changes from ``--set FIELD=VALUE`` (repeatable) and ``--beta``."""
    changes = field_changes(args.set)
    if args.beta is not None:
        changes["beta"] = args.beta
    return changes


def add_config_arguments(parser: argparse.ArgumentParser, models: bool = False) -> None:
    """CONFIG, ``--beta`` and ``--set``; with ``models``, CONFIG may be a polynomial model file (docs/exports.md §5.4)."""
    if models:
        parser.add_argument("config", metavar="CONFIG", help="preset name (see `gemhsa-sym presets`), configuration TOML "
                            "file, or polynomial model TOML file (a top-level polynomial = \"...\", e.g. derivations/wishart-product.toml)")
    else:
        parser.add_argument("config", metavar="CONFIG", help="preset name (see `gemhsa-sym presets`) or TOML file")
    parser.add_argument("--beta", help="inverse temperature, overriding the config's (e.g. 1.5 or 3/2)")
    parser.add_argument(
        "--set", metavar="FIELD=VALUE", action="append", default=[],
        help="override a configuration field, e.g. --set heads=8 --set share_k=all (repeatable); heads keeps H d_k = d "
             "where the configuration has it (d_k = d/H, d_v following), unless d_k is set too (docs/model.md)"
             + ("; of a polynomial model a ratio or a scale, e.g. --set dimensions.N2=3 --set gaussians.X1.scale=1/2" if models else ""),
    )


def config_from_args(args: argparse.Namespace) -> Config | Network:
    """The configuration or network named by CONFIG with the ``--set``/``--beta`` changes applied."""
    config = load_config(args.config)
    changes = overrides(args)
    return config.replace(**changes) if changes else config


def input_from_args(args: argparse.Namespace, attention_only: Mapping[str, bool]) -> Config | Network | PolynomialModel:
    """The configuration or polynomial model named by CONFIG (:func:`~gemhsa_sym.layer.presets.load_input`) with the
    ``--set``/``--beta`` changes applied. For a model, ValueError naming the first option of ``attention_only``
    (option -> whether it was given), or ``--beta``, that was given (docs/exports.md §5.4)."""
    source = load_input(args.config)
    if isinstance(source, PolynomialModel):
        given = [option for option, used in {"--beta": args.beta is not None, **attention_only}.items() if used]
        if given:
            raise ValueError(f"{given[0]}: only for an attention configuration; {args.config} is a polynomial model")
    changes = overrides(args)
    return source.replace(**changes) if changes else source


def add_execution_arguments(parser: argparse.ArgumentParser) -> None:
    """``--jobs``, ``--scheduler``, ``--scheduler-timeout`` and ``--quiet``."""
    parser.add_argument("--jobs", type=integer("jobs", 1, MAX_JOBS), default=1, help="local worker processes (default 1)")
    parser.add_argument(
        "--scheduler", metavar="ADDRESS", type=_scheduler,
        help="submit the tasks to this Dask distributed scheduler (needs the 'dask' extra) instead of local processes",
    )
    parser.add_argument("--scheduler-timeout", type=seconds, default=SCHEDULER_TIMEOUT, metavar="SECONDS",
                        help=f"give up on a scheduler that does not answer within this time (default {SCHEDULER_TIMEOUT:g})")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")


def add_backend_arguments(parser: argparse.ArgumentParser) -> None:
    """``--backend`` and ``--device`` of the draws (docs/verification.md §4.8)."""
    parser.add_argument("--backend", type=choice("backend", BACKENDS), default="numpy", metavar="{" + ",".join(BACKENDS) + "}",
                        help="what computes each draw's layer and spectrum from the same inputs: numpy, or torch "
                             "(the 'torch' extra; figures equal numpy's up to rounding) (default numpy)")
    parser.add_argument("--device", type=choice("device", DEVICES), default="cpu", metavar="{" + ",".join(DEVICES) + "}",
                        help="where the torch backend computes: cpu, or cuda for large n (one job) (default cpu)")


def check_backend_arguments(args: argparse.Namespace, workers: int | None) -> None:
    """Before any work: ``--backend`` and ``--device`` go together and, where the draws run on this machine
    (``workers`` local processes; None on a scheduler), torch imports and the device is there."""
    check_backend(args.backend, args.device, workers)


def _scheduler(text: str) -> str:
    """``--scheduler`` through :func:`~gemhsa_sym.sampling.executors.check_scheduler`, its error as argparse's."""
    try:
        return check_scheduler(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix("scheduler: ")) from None


def check_outputs(files: Sequence[tuple[str, Any]] = (), folders: Sequence[tuple[str, Any]] = (),
                  plots: Sequence[tuple[str, Any]] = ()) -> None:
    """Before any work: each (option, path) given can be written (files, folders, figures)."""
    for field, path in files:
        if path is not None and path != "-":
            check_writable(path, field)
    for field, path in folders:
        if path is not None:
            check_folder(path, field)
    for field, path in plots:
        if path is not None:
            check_plot(path, field)
