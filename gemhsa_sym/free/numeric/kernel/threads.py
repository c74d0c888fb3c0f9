"""Threads for the chunks of one follow of the compiled kernel (docs/solving.md §3.5).

A long grid is cut into chunks (:func:`.continuation.chunks`), each followed on its own; the
calling thread and up to ``most - 1`` helper threads take the chunks in turn, so that a helper the
system schedules late costs nothing (the caller takes its chunks meanwhile). The helpers are kept
from one call to the next, since a thread's start waits until it first runs (about 2 ms on busy
cores), and are forgotten in a child process after a fork, where copies of them do not run. How many
threads never changes an answer: the chunks do not depend on it.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

__all__ = ["run_chunks", "set_threads", "threads"]

T = TypeVar("T")


class _Helpers:
    """The most threads a follow uses (None: the cores this process may use) and the helper pool."""

    def __init__(self) -> None:
        self.most: int | None = None
        self.pool: ThreadPoolExecutor | None = None
        self.size = 0

    def get(self, count: int) -> ThreadPoolExecutor:
        """A pool of at least ``count`` helper threads (the one kept, or a larger one)."""
        if self.pool is None or self.size < count:
            if self.pool is not None:
                self.pool.shutdown(wait=False)
            self.pool, self.size = ThreadPoolExecutor(count, thread_name_prefix="gemhsa-kernel"), count
        return self.pool

    def forget(self) -> None:
        """After a fork, in the child: the parent's helper threads do not exist here."""
        self.pool, self.size = None, 0


_HELPERS = _Helpers()
os.register_at_fork(after_in_child=_HELPERS.forget)


def set_threads(most: int | None) -> None:
    """From now on, each follow in this process runs its chunks on at most ``most`` threads (None: as
    many as the cores the process may use); the workers of a local process pool take their share of
    the cores (:class:`gemhsa_sym.sampling.executors.LocalPool`)."""
    if most is not None and most < 1:
        raise ValueError(f"threads: expected at least 1, got {most}")
    _HELPERS.most = most


def threads() -> int:
    """The most threads one follow uses now."""
    return _HELPERS.most or len(os.sched_getaffinity(0))


def run_chunks(tasks: Sequence[Callable[[], T]]) -> list[T]:
    """Every task's result, in order: the calling thread and up to threads() - 1 helpers take the tasks
    in turn (module docstring). An exception in one stops the others taking more, and is raised once
    they have finished the task in hand."""
    count = min(len(tasks), threads())
    if count <= 1:
        return [task() for task in tasks]
    results: list[T | None] = [None] * len(tasks)
    claim = itertools.count()  # its next() is atomic: each task is taken once
    stop = [False]

    def work() -> None:
        while not stop[0] and (i := next(claim)) < len(tasks):
            results[i] = tasks[i]()

    pool = _HELPERS.get(count - 1)
    helpers = [pool.submit(work) for _ in range(count - 1)]
    try:
        work()
    except BaseException:
        stop[0] = True
        raise
    finally:
        for helper in helpers:
            helper.result()
    return results  # type: ignore[return-value]
