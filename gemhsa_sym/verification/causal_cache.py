"""A causal layer's distribution function kept on disk (docs/verification.md §4.3): the softmax law
costs tens of minutes (docs/solving.md §3.13), so ``verify`` and ``claims`` read it back from
``--cache DIR`` where it was computed before for the same configuration, tolerance and package
version. An entry is validated before it is used; one that does not validate is recomputed and
replaced, with a warning naming the file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gemhsa_sym.free.positions.profiled_law import Distribution
from gemhsa_sym.laws.causal import REPORT_TOL, causal_distribution, validated_distribution
from gemhsa_sym.layer.config import Config
from gemhsa_sym.verification.entries import entry_file, read_entry, write_entry

__all__ = ["CAUSAL_CACHE_FORMAT", "causal_cache_file", "cached_distribution", "store_distribution"]

#: Version of the entry's layout (part of its name).
CAUSAL_CACHE_FORMAT = 1


def causal_cache_file(cache: Path, config: Config, tol: float = REPORT_TOL) -> Path:
    """Where the law of ``config`` at ``tol`` is kept in the folder ``cache``: a hash of the layout, the package
    version, the configuration and the tolerance."""
    return entry_file(cache, "causal", CAUSAL_CACHE_FORMAT, config.to_dict(), tol)


def _entry(law: Distribution, config: Config, tol: float) -> dict[str, Any]:
    return {"config": config.to_dict(), "tol": tol, "x": law.x.tolist(), "cdf": law.cdf.tolist(),
            "density": law.density.tolist(), "error": law.error, "level": law.level, "nodes": law.nodes}


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
