"""The spectra of independent draws, their summary and their file (docs/verification.md §4.1)."""

from __future__ import annotations

import json
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from gemhsa_sym.files import write_atomic_with
from gemhsa_sym.layer.config import Config
from gemhsa_sym.layer.network import Network, description_from_dict

__all__ = ["SampleResult"]


@dataclass(frozen=True, eq=False)
class SampleResult:
    """Spectra of independent draws: ``eigenvalues[i]`` holds the d_out eigenvalues of draw i."""

    config: Config | Network
    sizes: dict[str, int]
    model: str
    seed: int
    eigenvalues: np.ndarray
    backend: str = "numpy"
    device: str = "cpu"

    @property
    def draws(self) -> int:
        """Number of draws."""
        return self.eigenvalues.shape[0]

    @property
    def pooled(self) -> np.ndarray:
        """All eigenvalues of all draws, sorted."""
        return np.sort(self.eigenvalues, axis=None)

    def moments(self, k: int = 4) -> np.ndarray:
        """The first ``k`` moments of the pooled eigenvalues (mean of x^j, j = 1..k)."""
        return np.array([np.mean(self.eigenvalues**j) for j in range(1, k + 1)])

    def to_json_dict(self) -> dict[str, Any]:
        """Summary without the eigenvalues: moments (pooled, and their spread over draws), range."""
        per_draw = np.array([[np.mean(ev**j) for j in range(1, 5)] for ev in self.eigenvalues])
        spread = per_draw.std(axis=0, ddof=1).tolist() if self.draws > 1 else None
        return {
            "model": self.model,
            "seed": self.seed,
            "backend": self.backend,
            "device": self.device,
            "n": self.sizes["n"],
            "draws": self.draws,
            "sizes": dict(self.sizes),
            "config": self.config.to_dict(),
            "moments": self.moments(4).tolist(),
            "moments_sd_over_draws": spread,
            "min": float(self.eigenvalues.min()),
            "max": float(self.eigenvalues.max()),
        }

    def save_npz(self, path: str | Path, field: str = "path") -> None:
        """Write eigenvalues and metadata to ``path``, whole or not at all (errors name ``field``)."""
        meta = json.dumps(self.to_json_dict())
        write_atomic_with(path, lambda fh: np.savez(fh, eigenvalues=self.eigenvalues, meta=meta), field)

    @classmethod
    def load_npz(cls, path: str | Path) -> SampleResult:
        """Read a file written by :meth:`save_npz` (no pickled data is ever read); ValueError naming the file where it is
        not one."""
        try:
            with np.load(path, allow_pickle=False) as data:
                meta = json.loads(str(data["meta"]))
                eigenvalues = np.asarray(data["eigenvalues"], dtype=float)
            if eigenvalues.ndim != 2:
                raise ValueError("the eigenvalues are not one row per draw")
            return cls(description_from_dict(meta["config"]), meta["sizes"], meta["model"], meta["seed"], eigenvalues,
                       meta.get("backend", "numpy"), meta.get("device", "cpu"))
        except (OSError, EOFError, KeyError, TypeError, ValueError, zipfile.BadZipFile) as exc:
            raise ValueError(f"path: {path} is not a sample written by gemhsa-sym sample --out ({type(exc).__name__}: "
                             f"{str(exc)[:120]})") from None
