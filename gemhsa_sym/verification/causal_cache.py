"""A causal layer's distribution function kept on disk (docs/verification.md §4.3): the softmax law
costs tens of minutes (docs/solving.md §3.13), so ``verify`` and ``claims`` read it back from
``--cache DIR`` where it was computed before for the same configuration, tolerance and package
version. An entry is validated before it is used; one that does not validate is recomputed and
replaced, with a warning naming the file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from gemhsa_sym.free.positions.profiled_law import Distribution
from gemhsa_sym.laws.causal import REPORT_TOL, causal_distribution
from gemhsa_sym.layer.config import Config
from gemhsa_sym.verification.entries import entry_file, read_entry, write_entry

__all__ = ["CAUSAL_CACHE_FORMAT", "causal_cache_file", "validated_distribution", "cached_distribution", "store_distribution"]

#: Version of the entry's layout (part of its name).
CAUSAL_CACHE_FORMAT = 1


def causal_cache_file(cache: Path, config: Config, tol: float = REPORT_TOL) -> Path:
    """Where the law of ``config`` at ``tol`` is kept in the folder ``cache``: a hash of the layout, the package
    version, the configuration and the tolerance."""
    return entry_file(cache, "causal", CAUSAL_CACHE_FORMAT, config.to_dict(), tol)


def _entry(law: Distribution, config: Config, tol: float) -> dict[str, Any]:
    return {"config": config.to_dict(), "tol": tol, "x": law.x.tolist(), "cdf": law.cdf.tolist(),
            "density": law.density.tolist(), "error": law.error, "level": law.level, "nodes": law.nodes}


def validated_distribution(data: Any, config: Config, tol: float = REPORT_TOL) -> Distribution:
    """The :class:`~gemhsa_sym.free.positions.profiled_law.Distribution` of an entry for ``config`` at ``tol``, or ValueError
    saying what is wrong with it: its configuration and tolerance, finite tables of one shape on an increasing
    positive grid, a non-negative density, and F within [0, 1] up to its achieved error, never decreasing."""
    if not isinstance(data, dict) or data.get("config") != config.to_dict() or data.get("tol") != tol:
        raise ValueError("it belongs to another configuration or tolerance")
    try:
        x, cdf, rho = (np.asarray(data[key], dtype=float) for key in ("x", "cdf", "density"))
        error, level, nodes = float(data["error"]), data["level"], data["nodes"]
    except (KeyError, TypeError, ValueError):
        raise ValueError("a field is missing or is not a number") from None
    if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in (level, nodes)):
        raise ValueError("level and nodes are not counts")
    if not (x.ndim == 1 and x.size >= 2 and x.shape == cdf.shape == rho.shape):
        raise ValueError("the tables do not match their grid")
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(cdf)) and np.all(np.isfinite(rho)) and np.isfinite(error)):
        raise ValueError("a value is not finite")
    if x[0] <= 0 or np.any(np.diff(x) <= 0) or np.any(rho < 0) or error < 0:
        raise ValueError("the grid is not increasing and positive, or the density or error is negative")
    if np.any(np.diff(cdf) < -1e-12) or cdf[0] < -error - 1e-9 or cdf[-1] > 1 + error + 1e-9:
        raise ValueError("the table is not a distribution function")
    return Distribution(x, cdf, rho, error, level, nodes)


def cached_distribution(config: Config, cache: str | Path | None, tol: float = REPORT_TOL) -> Distribution:
    """:func:`~gemhsa_sym.laws.causal.causal_distribution` of ``config``, read from and written to the folder ``cache``
    (none: computed)."""
    if cache is None:
        return causal_distribution(config, tol)
    found = read_entry(causal_cache_file(Path(cache), config, tol), lambda data: validated_distribution(data, config, tol),
                       "a valid causal law of this configuration")
    if found is not None:
        return found
    law = causal_distribution(config, tol)
    store_distribution(law, config, cache, tol)
    return law


def store_distribution(law: Distribution, config: Config, cache: str | Path, tol: float = REPORT_TOL) -> Path:
    """Keep ``law``, the law of ``config`` at ``tol``, in the folder ``cache`` (created if missing); returns its file."""
    path = causal_cache_file(Path(cache), config, tol)
    write_entry(path, _entry(law, config, tol))
    return path
