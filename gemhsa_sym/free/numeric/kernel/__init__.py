"""The compiled kernel of the continuation (numba, cached on disk after its first compile).

numba keeps its cache beside the modules (``__pycache__``) or, where that folder cannot be written (a system-wide
install), in the user's cache folder. Where neither can be written (no writable home either), numba would refuse to
compile at all ("no locator available"); before any kernel module imports numba, :func:`cache_folder` points
``NUMBA_CACHE_DIR`` at a folder of the system's temporary directory instead, saying so in one line on stderr.
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

__all__ = ["cache_folder"]


def _writable(folder: Path) -> bool:
    """Whether a file can be made in ``folder`` (made where it is missing), tried rather than read off permissions."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder):
            return True
    except OSError:
        return False


def cache_folder(here: Path, user: Path, writable: Callable[[Path], bool] = _writable) -> Path | None:
    """The folder numba must be told to cache in: None where it finds one itself (``here``, the kernel's ``__pycache__``,
    or ``user``, its user-wide cache) or ``NUMBA_CACHE_DIR`` is set; else a folder of the temporary directory."""
    if os.environ.get("NUMBA_CACHE_DIR") or writable(here) or writable(user):
        return None
    return Path(tempfile.gettempdir()) / f"gemhsa_sym-numba-{os.getuid() if hasattr(os, 'getuid') else 'user'}"


_FALLBACK = cache_folder(Path(__file__).parent / "__pycache__",
                         Path(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")) / "numba")
if _FALLBACK is not None:
    os.environ["NUMBA_CACHE_DIR"] = str(_FALLBACK)
    print(f"gemhsa-sym: neither the package's folder nor the user's cache can be written; numba caches the kernel in "
          f"{_FALLBACK}", file=sys.stderr)
