"""Tasks on an executor: serial, local processes, or a Dask distributed cluster.

Every task carries its own seed (a ``SeedSequence`` child), so results do not
depend on which executor runs them or on how many workers it has.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Executor, as_completed
from contextlib import contextmanager
from typing import Any

from tqdm import tqdm

from gemhsa_sym.sampler import local_pool

__all__ = ["Task", "open_executor", "run_tasks", "show_progress"]

#: A task: a picklable module-level function and its arguments.
Task = tuple[Callable[..., Any], tuple[Any, ...]]


@contextmanager
def open_executor(jobs: int = 1, scheduler: str | None = None) -> Iterator[Executor | None]:
    """None (run in this process) for one job, a local process pool for ``jobs > 1``,
    or the executor of a Dask distributed ``Client`` connected to ``scheduler``."""
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise ValueError(f"jobs: need an integer >= 1, got {jobs!r}")
    if scheduler is not None:
        try:
            from distributed import Client
        except ImportError:
            raise NotImplementedError(
                "scheduler: the Dask executor needs the 'dask' extra: pip install 'gemhsa_sym[dask]'"
            ) from None
        with Client(scheduler) as client:
            yield client.get_executor()
    elif jobs > 1:
        with local_pool(jobs) as pool:
            yield pool
    else:
        yield None


def show_progress(quiet: bool) -> bool:
    """Progress bars go to stderr, only when it is a terminal and not ``quiet``."""
    return not quiet and sys.stderr.isatty()


def run_tasks(tasks: Sequence[Task], executor: Executor | None = None, progress: bool = False,
              desc: str = "tasks") -> list[Any]:
    """Results of ``tasks`` in order; one progress bar (stderr) counts finished tasks."""
    bar = tqdm(total=len(tasks), disable=not progress, desc=desc, unit="task", file=sys.stderr)
    with bar:
        if executor is None:
            results = []
            for fn, args in tasks:
                results.append(fn(*args))
                bar.update()
            return results
        futures = [executor.submit(fn, *args) for fn, args in tasks]
        for _ in as_completed(futures):
            bar.update()
        return [future.result() for future in futures]
