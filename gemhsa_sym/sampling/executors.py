"""Tasks on an executor: in this process, local worker processes, or a Dask cluster (docs/verification.md §4.6).

Every task carries its own seed (a ``SeedSequence`` child), and every draw pins its
BLAS threads (:mod:`gemhsa_sym.sampling.sampler`), so results do not depend on which executor
runs them or on how many workers it has.

Interrupts: the local workers ignore SIGINT (they are started with it blocked and
ignore it from their first instruction), so Ctrl-C reaches the main process only.
:func:`open_executor` then cancels what is queued and terminates its own workers
before the ``KeyboardInterrupt`` goes on; on a Dask cluster it cancels the tasks
and closes the client.
"""

from __future__ import annotations

import multiprocessing
import os
import re
import signal
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Executor, ProcessPoolExecutor, as_completed
from contextlib import contextmanager
from typing import Any

from tqdm import tqdm

from gemhsa_sym.progress import enabled as progress_shown
from gemhsa_sym.progress import lines, note

__all__ = ["SCHEDULER_TIMEOUT", "LocalPool", "Task", "check_scheduler", "local_workers", "open_executor", "run_tasks", "show_progress"]

#: A task: a picklable module-level function and its arguments.
Task = tuple[Callable[..., Any], tuple[Any, ...]]
#: Seconds to wait for a Dask scheduler to answer.
SCHEDULER_TIMEOUT = 10.0
#: The address of a Dask scheduler (docs/verification.md §4.6).
SCHEDULER_ADDRESS = re.compile(r"(tcp|tls)://(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+):[0-9]{1,5}")
#: Seconds to wait for a terminated worker to exit.
_JOIN = 5.0


def _worker_start(threads: int) -> None:
    """Worker initializer: ignore SIGINT (the main process handles it), then unblock it;
    at most ``threads`` BLAS threads for tasks that do not pin their own, and as many threads for
    the continuation kernel's chunks."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    from threadpoolctl import threadpool_limits

    from gemhsa_sym.free.numeric.kernel.threads import set_threads

    threadpool_limits(threads, user_api="blas")
    set_threads(threads)


def _ready() -> None:
    """A task that does nothing: submitted once so that every worker exists before any work."""


class LocalPool(ProcessPoolExecutor):
    """A process pool whose workers exist from construction, ignore SIGINT, and can be terminated.

    Workers are forked with SIGINT blocked (so that Ctrl-C while they start reaches only
    the main process) and split the cores' BLAS threads, and the continuation kernel's, between them.
    """

    def __init__(self, workers: int) -> None:
        threads = max(1, (os.cpu_count() or 1) // workers)
        context = multiprocessing.get_context("fork")
        super().__init__(workers, mp_context=context, initializer=_worker_start, initargs=(threads,))
        self.workers = workers
        self.processes: tuple[multiprocessing.process.BaseProcess, ...] = ()
        before = set(multiprocessing.active_children())
        blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            try:
                self.submit(_ready).result()  # with fork, the first submit starts every worker
            finally:
                self.processes = tuple(set(multiprocessing.active_children()) - before)
                signal.pthread_sigmask(signal.SIG_SETMASK, blocked)  # a pending Ctrl-C is raised here
        except BaseException:  # no caller holds the pool yet: its workers must not outlive it
            self.abort()
            raise

    def abort(self) -> None:
        """Cancel what is queued and terminate the workers now (after an interrupt or an error);
        a Ctrl-C that arrives meanwhile waits until every worker is gone."""
        blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            self.shutdown(wait=False, cancel_futures=True)
            for process in self.processes:
                if process.is_alive():
                    process.terminate()
            for process in self.processes:
                process.join(_JOIN)
                if process.is_alive():
                    process.kill()
                    process.join(_JOIN)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, blocked)


def local_workers(executor: Executor | None) -> int | None:
    """How many tasks run at once on this machine: 1 in this process, the pool's workers, None elsewhere (Dask)."""
    if executor is None:
        return 1
    return executor.workers if isinstance(executor, LocalPool) else None


def check_scheduler(address: str) -> str:
    """A Dask scheduler's address as ``tcp://HOST:PORT`` or ``tls://HOST:PORT`` (``HOST:PORT`` is taken as tcp);
    ValueError naming the option for anything else, before any connection is tried."""
    text = address.strip() if isinstance(address, str) else ""
    full = text if "://" in text else f"tcp://{text}"
    if not SCHEDULER_ADDRESS.fullmatch(full) or not 0 < int(full.rsplit(":", 1)[1]) < 65536:
        raise ValueError(f"scheduler: {address!r} is not the address of a Dask scheduler; expected tcp://HOST:PORT "
                         "(or tls://HOST:PORT), as `dask scheduler` prints it")
    return full


@contextmanager
def _dask_executor(scheduler: str, timeout: float) -> Iterator[Executor]:
    """The executor of a Dask ``Client`` connected to ``scheduler`` within ``timeout`` seconds: the client is made in a
    thread that is given up on at the timeout, since a server that accepts and stays silent can hold Dask's own
    handshake longer."""
    address = check_scheduler(scheduler)
    try:
        from distributed import Client
    except ImportError:
        raise NotImplementedError(
            "scheduler: the Dask executor needs the 'dask' extra: pip install 'gemhsa_sym[dask]'"
        ) from None
    made: dict[str, Any] = {}

    def connect() -> None:
        try:
            made["client"] = Client(address, timeout=timeout, set_as_default=False)
        except Exception as exc:  # reported by the caller, which names the scheduler
            made["error"] = exc

    thread = threading.Thread(target=connect, daemon=True, name="gemhsa-sym dask client")
    thread.start()
    thread.join(timeout + 1.0)
    if "client" not in made:
        exc = made.get("error")
        reason = "no answer" if exc is None else (str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
        raise ConnectionError(f"scheduler: no Dask scheduler answered at {scheduler!r} within {timeout:g} s ({reason})")
    client = made["client"]
    executor = client.get_executor()
    try:
        yield executor
    except BaseException:
        executor.shutdown(wait=False, cancel_futures=True)
        raise
    finally:
        client.close(timeout=timeout)


@contextmanager
def open_executor(jobs: int = 1, scheduler: str | None = None,
                  timeout: float = SCHEDULER_TIMEOUT) -> Iterator[Executor | None]:
    """None (run in this process) for one job, a :class:`LocalPool` for ``jobs > 1``, or the executor
    of a Dask distributed ``Client`` connected to ``scheduler`` (ConnectionError after ``timeout`` s).

    On any exception, KeyboardInterrupt included, queued tasks are cancelled and the local
    workers terminated before the exception goes on.
    """
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise ValueError(f"jobs: need an integer >= 1, got {jobs!r}")
    if not (isinstance(timeout, (int, float)) and 0 < timeout < float("inf")):
        raise ValueError(f"scheduler_timeout: need a positive number of seconds, got {timeout!r}")
    if scheduler is not None:
        with _dask_executor(scheduler, float(timeout)) as executor:
            yield executor
    elif jobs > 1:
        pool = LocalPool(jobs)
        try:
            yield pool
        except BaseException:
            pool.abort()
            raise
        pool.shutdown(wait=True)
    else:
        yield None


def show_progress(quiet: bool) -> bool:
    """Progress goes to stderr where :mod:`gemhsa_sym.progress` shows it (a terminal, or ``GEMHSA_SYM_PROGRESS=lines``)
    and not ``quiet``."""
    return not quiet and progress_shown()


def run_tasks(tasks: Sequence[Task], executor: Executor | None = None, progress: bool = False,
              desc: str = "tasks") -> list[Any]:
    """Results of ``tasks`` in order; one progress bar (stderr) counts finished tasks, or with plain progress lines
    (:func:`gemhsa_sym.progress.lines`) one line per finished task."""
    plain = progress and lines()
    bar = tqdm(total=len(tasks), disable=not progress or plain, desc=desc, unit="task", file=sys.stderr)

    def done(count: int) -> None:
        bar.update()
        if plain:
            note(f"{desc}: {count} of {len(tasks)} done")

    with bar:
        if executor is None:
            results = []
            for fn, args in tasks:
                results.append(fn(*args))
                done(len(results))
            return results
        futures = [executor.submit(fn, *args) for fn, args in tasks]
        try:
            for count, _ in enumerate(as_completed(futures), 1):
                done(count)
        except BaseException:
            for future in futures:
                future.cancel()
            raise
        return [future.result() for future in futures]
