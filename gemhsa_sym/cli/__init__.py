"""Command-line interface: ``gemhsa-sym COMMAND ...``, a thin layer over the library.

Errors reach the user as one line: a bad option or configuration (``ValueError``
naming the field), a missing file, a missing extra or an unreachable scheduler exit
with status 2 before any work; a computation that fails exits with status 1; an
interrupt stops the workers, prints one line and exits with status 130.
``--debug`` shows the traceback instead.
"""

from __future__ import annotations

import argparse
import importlib
import os
import signal
import sys
import warnings
from collections.abc import Sequence
from typing import NoReturn

from gemhsa_sym import progress

#: Sub-command modules; each defines ``register(subparsers)``.
COMMANDS: tuple[str, ...] = ("presets", "sample", "derive", "derivations", "verify", "sweep", "threshold", "claims", "depth")
#: Exit statuses: bad input, a computation that failed, an interrupt.
USAGE, FAILED, INTERRUPTED = 2, 1, 130


class Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line (``prog: error: message``), exit status 2."""

    def error(self, message: str) -> NoReturn:
        print(f"{self.prog}: error: {message}", file=sys.stderr)
        sys.exit(USAGE)


def build_parser() -> argparse.ArgumentParser:
    """The top-level parser with one sub-parser per command module."""
    parser = Parser(
        prog="gemhsa-sym",
        description=(
            "Limiting singular-value laws of random multi-head self-attention: "
            "Gaussian-equivalent model, free-probability equations, their solution, "
            "and Monte Carlo checks against the real softmax layer."
        ),
    )
    parser.add_argument("--debug", action="store_true", help="show the traceback of an error")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMANDS:
        importlib.import_module(f"gemhsa_sym.cli.{name}").register(sub)
    for command in sub.choices.values():
        command.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                             help="show the traceback of an error")
    return parser


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _show_warning(message: Warning | str, category: type[Warning], filename: str, lineno: int,
                  file: object = None, line: str | None = None) -> None:
    """Warnings as one line on stderr, ``gemhsa-sym: warning: ...``."""
    print(f"gemhsa-sym: warning: {message}", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command (module docstring); returns the exit status."""
    with warnings.catch_warnings():
        warnings.showwarning = _show_warning
        progress.catch_interrupts()
        return _main(argv)


def entry() -> NoReturn:
    """The ``gemhsa-sym`` console script: :func:`main`, then exit without reacting to a late Ctrl-C
    (the work is done and written; the interpreter only tears down).

    After an interrupt the status is 130 by ``os._exit``: the run has already cleaned up, and an
    interrupt that arrived while an extension module ran Python code on import would otherwise
    make the interpreter end itself by SIGINT instead of with the status (docs/conventions.md §6.8).
    """
    code = main()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if code == INTERRUPTED:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)


def _by_interrupt(exc: BaseException | None) -> bool:
    """Whether ``exc`` is a KeyboardInterrupt or was raised from one: Python 3.11 wraps an exception
    raised by a ``__set_name__`` hook in a RuntimeError, so a Ctrl-C that lands while a module that
    defines a class with a cached property is imported arrives as one."""
    while exc is not None:
        if isinstance(exc, KeyboardInterrupt):
            return True
        exc = exc.__cause__
    return False


def _interrupted() -> int:
    """The one line of an interrupted run, and its status."""
    print("gemhsa-sym: interrupted", file=sys.stderr)
    return INTERRUPTED


def _main(argv: Sequence[str] | None) -> int:
    """:func:`main` with warnings shown as one line."""
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:  # --help (0) or a parse error, already printed as one line (2)
        return exc.code if isinstance(exc.code, int) else USAGE
    except (KeyboardInterrupt, RuntimeError) as exc:
        if not _by_interrupt(exc):
            raise
        return _interrupted()
    try:
        progress.configure(getattr(args, "quiet", False))
        return int(args.run(args) or 0)
    except KeyboardInterrupt:
        return _interrupted()
    except (ValueError, FileNotFoundError, NotImplementedError, ConnectionError) as exc:
        if args.debug:
            raise
        print(f"gemhsa-sym: error: {_first_line(exc)}", file=sys.stderr)
        return USAGE
    except Exception as exc:  # a computation that failed: one line, the traceback with --debug
        if _by_interrupt(exc):
            return _interrupted()
        if args.debug:
            raise
        print(f"gemhsa-sym: error: {type(exc).__name__}: {_first_line(exc)} (run with --debug for the traceback)",
              file=sys.stderr)
        return FAILED
