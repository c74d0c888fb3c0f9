"""The derivations library: named configurations and their committed, regenerable results.

A folder (``derivations/`` in the repository) holds one readable TOML file per
named derivation and, beside it, the generated ``.json`` record
(:meth:`~gemhsa_sym.free.law.SpectralLaw.record`: exact strings for P(m, w) and
the moments, edges to 30 digits) and ``.tex`` document
(:func:`~gemhsa_sym.free.document.document` of that record). A TOML file is either
an attention configuration (:class:`~gemhsa_sym.config.Config`) or a polynomial
model of the free-probability engine (:mod:`gemhsa_sym.model_files`), told apart
by :func:`~gemhsa_sym.presets.read_input`.

:func:`check` regenerates every record and compares it with the committed
files: exact fields must be equal, numbers equal to their stated precision,
and the committed document must be the document of the committed record.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import sympy as sp

from .derive import law_of
from .files import read_text, write_atomic
from .free.document import document
from .free.law import SpectralLaw
from .free.record import LawRecord, record_from_json
from .presets import read_input

__all__ = ["DPS", "Difference", "check", "check_file", "load", "records", "write"]

#: Digits of the support edges in the records.
DPS = 30
#: Relative agreement asked of regenerated numbers: edges (to DPS digits) and other floats.
EDGE_TOL = 10.0 ** (5 - DPS)
FLOAT_TOL = 1e-9
#: Keys whose values are floats computed numerically (compared to FLOAT_TOL, not exactly).
_FLOAT_KEYS = {"float", "mass", "error"}


@dataclass(frozen=True)
class Difference:
    """A regenerated record that differs from the committed one."""

    name: str
    where: str
    committed: Any
    regenerated: Any

    def __str__(self) -> str:
        return f"{self.name}: {self.where}: committed {self.committed!r}, regenerated {self.regenerated!r}"


def check_file(path: Path) -> None:
    """Read a library file as :func:`load` does, without solving: ValueError naming the field otherwise."""
    read_input(path)


def load(path: Path) -> SpectralLaw:
    """The law of one TOML file: an attention configuration or a polynomial model (:func:`~gemhsa_sym.presets.read_input`)."""
    return law_of(read_input(path))


def records(folder: Path, only: Sequence[str] | None = None) -> Iterator[tuple[str, Path]]:
    """(name, TOML path) of the named derivations in ``folder`` (all, or those in ``only``), sorted by name."""
    paths = {p.stem: p for p in Path(folder).glob("*.toml")}
    missing = sorted(set(only or ()) - set(paths))
    if missing:
        raise ValueError(f"only: no derivation named {', '.join(missing)} in {folder}")
    for name in sorted(only or paths):
        yield name, paths[name]


def _record(path: Path) -> LawRecord:
    """The record of one named derivation, named after its file."""
    return dataclasses.replace(load(path).record(DPS), name=path.stem)


def _dump(record: dict[str, Any]) -> str:
    return json.dumps(record, indent=2) + "\n"


def write(folder: Path, only: Sequence[str] | None = None, progress: Callable[[str], None] = lambda name: None) -> list[str]:
    """Regenerate and write the records and documents; returns the names written."""
    names = []
    for _, path in records(folder, only):  # every file is read before any is solved
        check_file(path)
    for name, path in records(folder, only):
        progress(name)
        record = _record(path)
        write_atomic(path.with_suffix(".json"), _dump(record.to_json()))
        write_atomic(path.with_suffix(".tex"), document(record))
        names.append(name)
    return names


def _compare(name: str, where: str, old: Any, new: Any, out: list[Difference]) -> None:
    if isinstance(old, dict) and isinstance(new, dict):
        for key in sorted(set(old) | set(new)):
            _compare(name, f"{where}.{key}" if where else key, old.get(key), new.get(key), out)
    elif isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        for k, (a, b) in enumerate(zip(old, new)):
            _compare(name, f"{where}[{k}]", a, b, out)
    elif where.rsplit(".", 1)[-1] in _FLOAT_KEYS and isinstance(old, (int, float)) and isinstance(new, (int, float)):
        if not math.isclose(old, new, rel_tol=FLOAT_TOL, abs_tol=FLOAT_TOL):
            out.append(Difference(name, where, old, new))
    elif where.endswith(".location") or (where.startswith(("cusps", "gaps")) and isinstance(old, str)):
        try:
            a, b = sp.Float(str(old), DPS), sp.Float(str(new), DPS)
        except (ValueError, TypeError, sp.SympifyError):
            if old != new:
                out.append(Difference(name, where, old, new))
            return
        if abs(a - b) > EDGE_TOL * (1 + abs(a)):
            out.append(Difference(name, where, old, new))
    elif old != new:
        out.append(Difference(name, where, old, new))


def check(folder: Path, only: Sequence[str] | None = None, progress: Callable[[str], None] = lambda name: None) -> list[Difference]:
    """Regenerate the records and compare with the committed ``.json`` and ``.tex`` (module docstring)."""
    diffs: list[Difference] = []
    for _, path in records(folder, only):  # every file is read before any is solved
        check_file(path)
    for name, path in records(folder, only):
        progress(name)
        json_path, tex_path = path.with_suffix(".json"), path.with_suffix(".tex")
        if not json_path.exists() or not tex_path.exists():
            diffs.append(Difference(name, "files", "missing", f"{json_path.name}, {tex_path.name}"))
            continue
        committed = json.loads(read_text(json_path, "record"))
        _compare(name, "", committed, _record(path).to_json(), diffs)
        if read_text(tex_path, "document") != document(record_from_json(committed)):
            diffs.append(Difference(name, "document", tex_path.name, "differs from the document of the committed record"))
    return diffs
