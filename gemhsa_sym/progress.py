"""Progress of long work, on stderr (docs/conventions.md §6.9).

Work that may take more than a couple of seconds announces itself: the numeric kernel's first compile,
an elimination of P(m, w) and a discriminant (with their time limits), the continuation of a law, the
levels of a causal law, the draws. The command line turns it on when stderr is a terminal and
``--quiet`` is not given (:func:`configure`); ``GEMHSA_SYM_PROGRESS=lines`` asks for the same lines
when stderr is not a terminal (a script, a log, a test that waits for a stage), and
``GEMHSA_SYM_PROGRESS=off`` silences it. From Python it is off until :func:`configure` is called.
Nothing here changes an answer.

A Ctrl-C also passes through here: :func:`catch_interrupts` (the command line) records it before raising
KeyboardInterrupt, and every stage line and every wait of the engine (:func:`check_interrupt`) raises it again,
so that a library that swallows the exception (a bare ``except:``) cannot make the run go on.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["ENVIRONMENT", "MODES", "catch_interrupts", "check_interrupt", "configure", "enabled", "lines", "note", "stage"]

#: The environment variable that asks for plain lines or silence.
ENVIRONMENT = "GEMHSA_SYM_PROGRESS"
#: The modes: nothing, lines on a terminal, plain lines anywhere.
MODES: tuple[str, ...] = ("off", "terminal", "lines")
_state = {"mode": "off", "interrupted": False}


def _on_interrupt(signum: int, frame: object) -> None:
    _state["interrupted"] = True
    raise KeyboardInterrupt


def catch_interrupts() -> None:
    """Record every Ctrl-C of this process before raising KeyboardInterrupt (module docstring); only the main thread
    can install a handler, so from another thread this leaves Python's own."""
    _state["interrupted"] = False
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, _on_interrupt)


def check_interrupt() -> None:
    """KeyboardInterrupt if a Ctrl-C came (and was swallowed on its way)."""
    if _state["interrupted"]:
        raise KeyboardInterrupt


def configure(quiet: bool) -> str:
    """Set the mode for a command (module docstring) and return it; ValueError naming the variable when it is set to
    something other than ``lines`` or ``off``."""
    asked = os.environ.get(ENVIRONMENT, "")
    if asked not in ("", "lines", "off"):
        raise ValueError(f"{ENVIRONMENT}: expected 'lines' or 'off', got {asked!r}")
    if quiet or asked == "off":
        mode = "off"
    elif asked == "lines":
        mode = "lines"
    else:
        mode = "terminal" if sys.stderr.isatty() else "off"
    _state["mode"] = mode
    return mode


def enabled() -> bool:
    """Whether progress is shown."""
    return _state["mode"] != "off"


def lines() -> bool:
    """Whether progress is plain lines (no bar that redraws itself)."""
    return _state["mode"] == "lines"


def note(text: str) -> None:
    """One line of progress (after :func:`check_interrupt`)."""
    check_interrupt()
    if enabled():
        print(f"gemhsa-sym: {text}", file=sys.stderr, flush=True)


@contextmanager
def stage(what: str) -> Iterator[None]:
    """Announce ``what`` before it runs and its seconds after it (module docstring)."""
    check_interrupt()
    if not enabled():
        yield
        return
    note(f"{what} ...")
    start = time.perf_counter()
    yield
    note(f"{what}: done in {time.perf_counter() - start:.1f} s")
