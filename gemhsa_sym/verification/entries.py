"""Entries of the ``--cache DIR`` folder (docs/conventions.md §6.8): one JSON file per key, named by a hash
of the key and the package version, read back only through a validation, and written whole or not at all.

The laws' tables of :mod:`.theory` are kept this way; the caller supplies the key, the validation and what its
entries are called in warnings.
"""

from __future__ import annotations

import hashlib
import json
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from gemhsa_sym import __version__
from gemhsa_sym.files import read_text, write_atomic

__all__ = ["entry_file", "read_entry", "write_entry"]

T = TypeVar("T")


def entry_file(cache: Path, kind: str, layout: int, *key: Any) -> Path:
    """The file of ``key`` (JSON data) in the folder ``cache``: ``KIND-HASH.json``, the hash of the entries'
    ``layout`` (their format's version), the package version and the key."""
    text = json.dumps([layout, __version__, *key], sort_keys=True)
    return cache / f"{kind}-{hashlib.sha256(text.encode()).hexdigest()[:20]}.json"


def read_entry(path: Path, validate: Callable[[Any], T], what: str) -> T | None:
    """``validate`` of the entry at ``path``; None when there is none, or when it does not validate (a warning
    naming the file says it is not ``what`` and why, and that it is recomputed)."""
    if not path.is_file():
        return None
    try:
        return validate(json.loads(read_text(path, "cache")))
    except ValueError as exc:  # json.JSONDecodeError is a ValueError
        reason = str(exc).removeprefix("cache: ")
        warnings.warn(f"cache: {path} is not {what} ({reason}); recomputing it", stacklevel=2)
        return None


def write_entry(path: Path, data: Any) -> None:
    """Keep ``data`` as the entry at ``path`` (its folder created if missing), atomically."""
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, json.dumps(data), "cache")
