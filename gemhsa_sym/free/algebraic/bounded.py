"""Symbolic work bounded in time: a function run in a child process that is stopped at a limit
(docs/solving.md §3.2).

The child ignores SIGINT (the parent stops it on an interrupt) and ends itself, by the
default action of SIGALRM (which needs no Python code to run), a few seconds after the time
limit, should its parent have died without stopping it. Work that checks the clock itself
raises :class:`Timeout` (see :func:`deadline_check`).
"""

from __future__ import annotations

import multiprocessing
import signal
import time
from collections.abc import Callable
from typing import Any

from gemhsa_sym.progress import check_interrupt

__all__ = ["POLL", "Timeout", "deadline_check", "run_bounded"]

#: Seconds of each wait for the child's answer (module docstring of :func:`run_bounded`).
POLL = 0.1


class Timeout(Exception):
    """The work ran past its time limit."""


def deadline_check(deadline: float) -> Callable[[], None]:
    """A function that raises :class:`Timeout` once ``deadline`` (time.monotonic) has passed."""
    def check() -> None:
        if time.monotonic() > deadline:
            raise Timeout
    return check


def _child(conn: Any, run: Callable[..., Any], args: tuple, time_limit: float) -> None:
    """Run ``run(*args)`` and send the result (or the error) through ``conn`` (module docstring)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGALRM, signal.SIG_DFL)
    signal.alarm(int(time_limit) + 5)
    try:
        conn.send(("ok", run(*args)))
    except Timeout:
        conn.send(("timeout", None))
    except Exception as exc:  # reported to the parent, which owns the decision
        conn.send(("error", f"{type(exc).__name__}: {exc}"))
    finally:
        conn.close()


def run_bounded(run: Callable[..., Any], args: tuple, time_limit: float) -> tuple[str, Any]:
    """``run(*args)`` in a child process (fork) stopped at ``time_limit`` seconds: ("ok", result),
    ("timeout", None) or ("error", message); inline where fork is missing."""
    if "fork" not in multiprocessing.get_all_start_methods():
        try:
            return "ok", run(*args)
        except Timeout:
            return "timeout", None
        except ArithmeticError as exc:
            return "error", str(exc)
    ctx = multiprocessing.get_context("fork")
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(child, run, args, time_limit), daemon=True)
    proc.start()
    child.close()
    deadline = time.monotonic() + time_limit + 1.0
    try:
        while time.monotonic() < deadline:  # short waits: a Ctrl-C that the kernel gives to another thread of this
            check_interrupt()               # process interrupts no blocking call, so the main thread looks for it often
            if parent.poll(POLL):
                return parent.recv()
        return "timeout", None
    except EOFError:
        return "error", f"the child process ended unexpectedly (exit code {proc.exitcode})"
    finally:
        parent.close()
        if proc.is_alive():
            proc.terminate()
            proc.join(2.0)
            if proc.is_alive():
                proc.kill()
        proc.join()
