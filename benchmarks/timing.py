"""Best wall times of interleaved runs, shared by the benchmark scripts.

Runs are interleaved round by round, so a noisy stretch of a shared machine
slows every run of a round alike and the ratios between them stay meaningful.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence


def best_times(runs: Sequence[Callable[[], object]], repeat: int) -> list[float]:
    """Shortest wall time of each of ``runs`` over ``repeat`` interleaved rounds."""
    times: list[list[float]] = [[] for _ in runs]
    for _ in range(repeat):
        for run, spent in zip(runs, times, strict=True):
            start = time.perf_counter()
            run()
            spent.append(time.perf_counter() - start)
    return [min(spent) for spent in times]
