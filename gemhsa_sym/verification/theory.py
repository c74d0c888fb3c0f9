"""The law's table for verification, computed once and kept in ``--cache DIR`` (docs/verification.md §4.3).

Solving a law is the expensive step (seconds for a spectral law, minutes for a causal softmax
layer), so it runs once per configuration, possibly in a worker process, and returns the law's
:class:`~gemhsa_sym.laws.tabulated.TabulatedLaw` (:meth:`tabulate`, one protocol for every law). With a
cache folder, a table computed before for the same configuration, options and package version is read
back after :func:`~gemhsa_sym.laws.tabulated.validated`; one that does not validate is recomputed and
replaced, with a warning naming the file. ``gemhsa-sym derivations --fill-cache`` stores the library's
causal laws there (:func:`store_table`).
"""

from __future__ import annotations

import time
from pathlib import Path

from gemhsa_sym.laws.causal_law import CausalLaw
from gemhsa_sym.laws.resolve import law_of
from gemhsa_sym.laws.tabulated import TabulatedLaw, validated
from gemhsa_sym.layer.config import Config
from gemhsa_sym.layer.polynomial_model import PolynomialModel
from gemhsa_sym.verification.entries import entry_file, read_entry, write_entry

__all__ = ["CACHE_FORMAT", "cache_file", "cached_causal_law", "store_table", "theory_or_reason", "theory_task"]

#: Version of the cache files; bumped whenever :class:`TabulatedLaw` changes.
CACHE_FORMAT = 5


def cache_file(cache: Path, source: Config | PolynomialModel, cdf: bool) -> Path:
    """Where the table of ``source`` (with or without its cdf) is kept in the folder ``cache``: the name is a hash
    of the cache format, the package version, the configuration and the options."""
    return entry_file(cache, "theory", CACHE_FORMAT, source.to_dict(), cdf)


def store_table(table: TabulatedLaw, source: Config | PolynomialModel, cache: str | Path) -> Path:
    """Keep ``table``, the table of ``source``'s law, in the folder ``cache`` (created if missing); returns its file."""
    path = cache_file(Path(cache), source, True)
    write_entry(path, table.to_json_dict())
    return path


def _kept_table(path: Path, source: Config | PolynomialModel, cdf: bool) -> TabulatedLaw | None:
    """The table kept at ``path`` for ``source``, validated (:func:`~gemhsa_sym.laws.tabulated.validated`), or None."""
    return read_entry(path, lambda data: validated(data, source.to_dict(), cdf), "a valid table of this configuration's law")


def theory_task(source: Config | PolynomialModel, cdf: bool = True, cache: str | None = None) -> TabulatedLaw:
    """Derive the law of ``source`` and tabulate it (a task for an executor); read from and kept in the folder
    ``cache`` when given (module docstring)."""
    path = None if cache is None else cache_file(Path(cache), source, cdf)
    if path is not None and (table := _kept_table(path, source, cdf)) is not None:
        return table
    start = time.perf_counter()
    table = law_of(source).tabulate(cdf=cdf)
    table = TabulatedLaw(**{**table.__dict__, "seconds": time.perf_counter() - start})
    if path is not None:
        write_entry(path, table.to_json_dict())
    return table


def cached_causal_law(config: Config, cache: str | Path) -> CausalLaw:
    """The law of the causal layer ``config``: from its table in the folder ``cache`` where one was kept for it (by
    :func:`theory_task` or :func:`store_table`; validated, its origin "cache"), else solved and its table kept there."""
    table = _kept_table(cache_file(Path(cache), config, True), config, True)
    if table is not None:
        return CausalLaw.from_table(config, table)
    law = law_of(config)
    store_table(law.tabulate(), config, cache)
    return law


def theory_or_reason(source: Config | PolynomialModel, cdf: bool = True,
                     cache: str | None = None) -> tuple[TabulatedLaw | None, str | None]:
    """:func:`theory_task`, or (None, why) where the engine writes no law for ``source`` (NotImplementedError
    naming the field: a causal layer whose masked scores have no equation)."""
    try:
        return theory_task(source, cdf, cache), None
    except NotImplementedError as exc:
        return None, str(exc)
