"""The derivations library as data: where it is, its entries, their records and verification records
(docs/exports.md §5.3).

The library ships inside the package (``gemhsa_sym/library/records``, the repository's ``derivations/``
folder), found by :data:`LIBRARY` wherever the package is installed; a folder of one's own is read the
same way. :func:`library_law` answers a library entry from its committed record, after validating the
record against the entry's configuration (and, for a derived law, the package version): a causal law
from its distribution function, another law with the record's P(m, w) and the record itself.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from gemhsa_sym import __version__
from gemhsa_sym.export.positional_record import record_law
from gemhsa_sym.export.record import AttentionRecord, record_from_json
from gemhsa_sym.files import read_json
from gemhsa_sym.laws.attention import AttentionLaw
from gemhsa_sym.laws.causal import REPORT_TOL
from gemhsa_sym.laws.causal_law import CausalLaw
from gemhsa_sym.laws.key_weighted import TOL, KeyWeightedLaw
from gemhsa_sym.laws.protocol import Law
from gemhsa_sym.laws.resolve import law_of
from gemhsa_sym.layer.config import Config
from gemhsa_sym.layer.network import Network
from gemhsa_sym.layer.network_equivalent import equivalent_of
from gemhsa_sym.layer.presets import read_input
from gemhsa_sym.library import LIBRARY

__all__ = ["LIBRARY", "causal_source", "check_file", "key_weighted_source", "library_law", "library_record", "load", "records",
           "verification"]

def check_file(path: Path) -> None:
    """Read a library file as :func:`load` does, without solving: ValueError naming the field otherwise."""
    read_input(path)


def load(path: Path) -> Law:
    """The law of one TOML file: an attention configuration or a polynomial model (:func:`~gemhsa_sym.layer.presets.read_input`)."""
    return law_of(read_input(path))


def records(folder: Path, only: Sequence[str] | None = None) -> Iterator[tuple[str, Path]]:
    """(name, TOML path) of the named derivations in ``folder`` (all, or those in ``only``), sorted by name."""
    paths = {p.stem: p for p in Path(folder).glob("*.toml")}
    missing = sorted(set(only or ()) - set(paths))
    if missing:
        raise ValueError(f"only: no derivation named {', '.join(missing)} in {folder}")
    for name in sorted(only or paths):
        yield name, paths[name]


def verification(path: Path) -> dict[str, Any] | None:
    """The verification record beside the TOML file ``path`` (``NAME.verify.json``), or None; a ValueError
    naming the file when it is not one."""
    file = path.with_suffix(".verify.json")
    if not file.exists():
        return None
    data = read_json(file, "verification")
    rows = data.get("by_n") if isinstance(data, dict) else None
    if not (isinstance(rows, list) and rows and isinstance(data.get("seed"), int) and all(
            isinstance(r, dict) and isinstance(r.get("n"), int) and isinstance(r.get("draws"), int)
            and isinstance(r.get("ks"), (dict, type(None))) and isinstance(r.get("floor"), dict)
            and isinstance(r.get("outliers"), (dict, type(None))) for r in rows)):
        raise ValueError(f"{file.name}: not a verification record (the JSON of gemhsa-sym verify)")
    return data


def causal_source(source: Any) -> Config | None:
    """The configuration of a causal layer, None for any other source (:func:`~gemhsa_sym.layer.presets.read_input`)."""
    return source if isinstance(source, Config) and source.mask_rule.causal else None


def key_weighted_source(source: Any) -> Network | None:
    """The network of an entry whose law is key-weighted (read after layer 2, docs/extensions.md §8.7), None for any other
    source."""
    if isinstance(source, Network) and source.read_layer > 1 and equivalent_of(source).key_weights:
        return source
    return None


def library_record(name: str, config: Config, folder: Path = LIBRARY) -> AttentionRecord | None:
    """The committed record of the library entry ``name`` where it is the record of ``config``'s law written by this
    version of the package (docs/exports.md §5.3): None where the entry has none or is causal, and, with a warning
    naming the file and why, where its record is of another configuration or version or is not a record."""
    file = Path(folder) / f"{name}.json"
    if config.mask_rule.causal or not file.is_file():
        return None
    data = read_json(file, "record")
    why = ("it is not an attention layer's record" if not isinstance(data, dict) or "config" not in data
           else "it is the record of another configuration" if data["config"] != config.to_dict()
           else f"it was written by version {data.get('version') or 'unknown'}, this is {__version__}"
           if data.get("version") != __version__ else None)
    if why is None:
        try:
            record = record_from_json(data)
        except (TypeError, ValueError, KeyError, AttributeError) as exc:
            why = f"it is not a record ({type(exc).__name__}: {exc})"
        else:
            if isinstance(record, AttentionRecord):
                return record
            why = "it is not an attention layer's record"
    warnings.warn(f"library: {file} is not used ({why}); deriving the law afresh", stacklevel=2)
    return None


def library_law(name: str, folder: Path = LIBRARY) -> Law | None:
    """The law of the library entry ``name`` read from its committed record: for a causal layer (whose law costs minutes
    to solve) and a network read after layer 2 (key weights, tens of seconds) the law of its distribution function after
    :func:`~gemhsa_sym.export.positional_record.record_law` validates it; for another layer the derived law that takes
    its P(m, w) (checked on the physical solution) and its record from :func:`library_record`. None where ``name`` is
    no entry's name or the entry has no record that qualifies."""
    if not name.replace("-", "").isalnum():
        return None
    toml, record = Path(folder) / f"{name}.toml", Path(folder) / f"{name}.json"
    if not toml.is_file() or not record.is_file():
        return None
    source = read_input(toml)
    if isinstance(source, Config) and not source.mask_rule.causal:
        known = library_record(name, source, folder)
        return None if known is None else AttentionLaw(source, known=known)
    if not (isinstance(source, Config) or key_weighted_source(source) is not None):
        return None
    data = read_json(record, "record")
    try:
        table = record_law(data, source, REPORT_TOL if isinstance(source, Config) else TOL)
    except ValueError as exc:
        raise ValueError(f"{record}: not the record of this entry's law ({exc})") from None
    if isinstance(source, Network):
        moments = data.get("moments") if isinstance(data, dict) else None
        if not (isinstance(moments, list) and all(isinstance(m, dict) and isinstance(m.get("float"), float)
                                                   and math.isfinite(m["float"]) for m in moments)):
            raise ValueError(f"{record}: not the record of this entry's law (its moments are not numbers)")
        return KeyWeightedLaw(source, TOL, table, origin="library", moments=tuple(m["float"] for m in moments))
    return CausalLaw(source, table, origin="library")
