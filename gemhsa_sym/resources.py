"""Memory: what this machine has available, and refusing work that would not fit (docs/conventions.md §6.8).

A draw's memory is estimated from its sizes before anything is allocated
(:func:`gemhsa_sym.sampling.sampler.draw_bytes`); :func:`check_memory` refuses it with the
estimate and the available memory (this machine's, or a device's free memory),
instead of letting the machine swap or the process be killed.
"""

from __future__ import annotations

import os
import resource

__all__ = ["available_memory", "check_memory", "human_bytes"]


def _machine_memory() -> int | None:
    """Bytes of this machine's memory available to new allocations (Linux MemAvailable), or None where unknown."""
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def _address_space_left() -> int | None:
    """Bytes this process may still map under its address-space limit (``ulimit -v``, RLIMIT_AS), or None without one."""
    try:
        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
        if soft == resource.RLIM_INFINITY:
            return None
        with open("/proc/self/statm", encoding="ascii") as fh:
            mapped = int(fh.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
        return max(soft - mapped, 0)
    except (OSError, ValueError, IndexError, AttributeError):
        return None


def available_memory() -> int | None:
    """Bytes of memory available to new allocations: the machine's, or less where the process has an address-space
    limit (RLIMIT_AS); None where neither is known."""
    known = [b for b in (_machine_memory(), _address_space_left()) if b is not None]
    return min(known) if known else None


def human_bytes(count: float) -> str:
    """``1.5 GiB``-style text."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if abs(count) < 1024 or unit == "PiB":
            return f"{count:.3g} {unit}" if unit != "B" else f"{int(count)} B"
        count /= 1024
    return f"{count:.3g} PiB"


def check_memory(need: float, what: str, field: str = "n", have: int | None = None,
                 place: str = "this machine") -> None:
    """ValueError naming ``field`` when ``need`` bytes exceed the memory available at ``place``:
    ``have`` bytes, by default this machine's (:func:`available_memory`)."""
    if have is None and place == "this machine":
        have = available_memory()
    if have is not None and need > have:
        raise ValueError(f"{field}: {what} needs about {human_bytes(need)} of memory; "
                         f"{place} has {human_bytes(have)} available")
