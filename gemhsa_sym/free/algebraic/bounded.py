"""Symbolic work bounded in time: a function run in a child process that is stopped at a limit
(docs/solving.md §3.2).

The child is forked with SIGINT blocked and then ignores it (the parent stops it on an interrupt; a
Ctrl-C during the fork would otherwise run the parent's handler in the child), and ends itself, by the
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

__all__ = ["POLL", "Bounded", "Timeout", "deadline_check", "run_bounded"]

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
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    signal.signal(signal.SIGALRM, signal.SIG_DFL)
    signal.alarm(int(time_limit) + 5)
    try:
        answer = run(*args)
        signal.alarm(0)  # done in time: the answer waits in the pipe until the parent reads it (a dead parent breaks it)
        conn.send(("ok", answer))
    except Timeout:
        conn.send(("timeout", None))
    except Exception as exc:  # reported to the parent, which owns the decision
        conn.send(("error", f"{type(exc).__name__}: {exc}"))
    finally:
        conn.close()


class Bounded:
    """``run(*args)`` started now in a child process (fork), stopped at ``time_limit`` seconds from now; :meth:`result`
    waits for its answer, so that other work can run beside it (on another core); :meth:`close` (or leaving a ``with``
    block) stops it. Inline, when :meth:`result` is called, where fork is missing."""

    def __init__(self, run: Callable[..., Any], args: tuple, time_limit: float) -> None:
        self.run, self.args, self.time_limit = run, args, time_limit
        self.proc: Any = None
        if "fork" in multiprocessing.get_all_start_methods():
            ctx = multiprocessing.get_context("fork")
            self.parent, child = ctx.Pipe(duplex=False)
            self.proc = ctx.Process(target=_child, args=(child, run, args, time_limit), daemon=True)
            self.deadline = time.monotonic() + time_limit + 1.0
            blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
            try:
                try:
                    self.proc.start()
                finally:
                    child.close()
                    signal.pthread_sigmask(signal.SIG_SETMASK, blocked)  # a pending Ctrl-C is raised here
            except BaseException:  # no caller holds the job yet: its child must not outlive it
                self.close()
                raise

    def result(self) -> tuple[str, Any]:
        """("ok", result), ("timeout", None) or ("error", message); an answer the child gave within its limit is
        returned even when this is called after the limit."""
        if self.proc is None:
            try:
                return "ok", self.run(*self.args)
            except Timeout:
                return "timeout", None
            except ArithmeticError as exc:
                return "error", str(exc)
        try:
            while True:  # short waits: a Ctrl-C that the kernel gives to another thread of this process interrupts no
                check_interrupt()  # blocking call, so look for it often; an answer given in time counts however late it is read
                if self.parent.poll(POLL):
                    return self.parent.recv()
                if time.monotonic() >= self.deadline:
                    return "timeout", None
        except EOFError:
            return "error", f"the child process ended unexpectedly (exit code {self.proc.exitcode})"
        finally:
            self.close()

    def close(self) -> None:
        """Stop the child (if it still runs) and release the pipe."""
        if self.proc is None:
            return
        blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})  # a Ctrl-C now waits until the child is gone
        try:
            self.parent.close()
            if self.proc.is_alive():
                self.proc.terminate()
                self.proc.join(2.0)
                if self.proc.is_alive():
                    self.proc.kill()
            if self.proc.pid is not None:
                self.proc.join()
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, blocked)

    def __enter__(self) -> Bounded:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def run_bounded(run: Callable[..., Any], args: tuple, time_limit: float) -> tuple[str, Any]:
    """``run(*args)`` in a child process (fork) stopped at ``time_limit`` seconds: ("ok", result),
    ("timeout", None) or ("error", message); inline where fork is missing."""
    with Bounded(run, args, time_limit) as job:
        return job.result()
