"""Files: written whole or not at all, checked before any work, read with errors that name them (docs/conventions.md §6.2).

Every output goes through a temporary file in the target's folder that is renamed over
the target; on any exception, an interrupt included, the temporary file is removed, so
neither a partial output nor a hidden temporary file is left behind. Errors name the
user's path and the option it came from, never the temporary file.
"""

from __future__ import annotations

import json
import os
import stat
import tempfile
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

__all__ = ["check_folder", "check_writable", "is_model", "read_json", "read_text", "read_toml", "write_atomic", "write_atomic_with"]


def _reason(exc: OSError) -> str:
    return exc.strerror or type(exc).__name__


def _mode(target: str) -> int:
    """The permissions a new file gets (0666 less the umask, as every tool's), or those of the file it replaces."""
    try:
        return stat.S_IMODE(os.stat(target).st_mode)
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def write_atomic_with(path: str | Path, writer: Callable[[IO[bytes]], Any], field: str = "out") -> None:
    """Call ``writer`` on a binary temporary file in the folder of ``path``, then rename it to ``path``, with the
    permissions of :func:`_mode`. A path that exists and is not a regular file (``/dev/null``, a pipe) is written
    through, never renamed over.

    ValueError naming ``field`` and ``path`` when it cannot be written; the temporary
    file is removed whatever goes wrong, KeyboardInterrupt included.
    """
    target = os.path.abspath(path)
    if os.path.exists(target) and not os.path.isfile(target) and not os.path.isdir(target):
        try:
            with open(target, "wb") as fh:
                writer(fh)
        except OSError as exc:
            raise ValueError(f"{field}: cannot write {path}: {_reason(exc)}") from None
        return
    mode = _mode(target)
    try:
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(target), prefix=f".{os.path.basename(target)}.", suffix=".tmp")
    except OSError as exc:
        raise ValueError(f"{field}: cannot write {path}: {_reason(exc)}") from None
    try:
        with os.fdopen(fd, "wb") as fh:
            writer(fh)
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except OSError as exc:
        raise ValueError(f"{field}: cannot write {path}: {_reason(exc)}") from None
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def write_atomic(path: str | Path, data: str | bytes, field: str = "out") -> None:
    """Write text (UTF-8) or bytes to ``path`` whole or not at all (:func:`write_atomic_with`)."""
    payload = data.encode("utf-8") if isinstance(data, str) else data
    write_atomic_with(path, lambda fh: fh.write(payload), field)


def check_writable(path: str | Path, field: str) -> None:
    """ValueError naming ``field`` unless a file can be written at ``path``: not a folder, in an existing,
    writable folder (checked before any work, so that no computation is thrown away)."""
    target = Path(path)
    if str(path) == "" or target.is_dir():
        raise ValueError(f"{field}: {path!r} is a folder, not a file")
    folder = target.parent if str(target.parent) else Path(".")
    if not folder.is_dir():
        raise ValueError(f"{field}: cannot write {path}: the folder {str(folder)!r} does not exist")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise ValueError(f"{field}: cannot write {path}: the folder {str(folder)!r} is not writable")
    if target.exists() and not os.access(target, os.W_OK):
        raise ValueError(f"{field}: cannot write {path}: the file is not writable")


def check_folder(path: str | Path, field: str) -> None:
    """ValueError naming ``field`` unless ``path`` is a folder that takes a file: tried with a file that is removed at
    once, in the folder made for the try where it is missing and removed again (permissions alone do not tell: /proc is
    'writable' to root)."""
    target = Path(path).absolute()
    if target.exists() and not target.is_dir():
        raise ValueError(f"{field}: {path!r} is a file, not a folder")
    missing = [p for p in (target, *target.parents) if not p.exists()]
    try:
        target.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=target):
            pass
    except OSError as exc:
        raise ValueError(f"{field}: cannot write in the folder {str(path)!r}: {_reason(exc)}") from None
    finally:
        for folder in missing:  # deepest first
            try:
                folder.rmdir()
            except OSError:
                pass


def read_text(path: str | Path, field: str) -> str:
    """The UTF-8 text of ``path``; ValueError naming ``field`` and the path otherwise."""
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
    except OSError as exc:
        raise ValueError(f"{field}: cannot read {path}: {_reason(exc)}") from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{field}: {path} is not UTF-8 text (byte {exc.start})") from None


def read_toml(path: str | Path, field: str = "config") -> dict[str, Any]:
    """The TOML table of ``path``; ValueError naming ``field`` and the path for unreadable, non-UTF-8 or invalid TOML."""
    text = read_text(path, field)
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"{field}: {path} is not valid TOML: {exc}") from None
    except RecursionError:
        raise ValueError(f"{field}: {path} nests its tables or arrays too deeply to be a configuration") from None


def read_json(path: str | Path, field: str) -> Any:
    """The JSON data of ``path``; ValueError naming ``field`` and the path where it is unreadable or not JSON (a truncated
    record says so, with its file)."""
    try:
        return json.loads(read_text(path, field))
    except json.JSONDecodeError as exc:
        raise ValueError(f"{field}: {path} is not valid JSON ({exc.msg}, line {exc.lineno})") from None
    except RecursionError:
        raise ValueError(f"{field}: {path} nests its data too deeply") from None


def is_model(data: Any) -> bool:
    """Whether TOML data is a polynomial model (a top-level ``polynomial`` key, docs/exports.md §5.4), not an attention
    configuration: the one test of which kind a file is."""
    return isinstance(data, dict) and "polynomial" in data
