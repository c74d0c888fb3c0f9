"""Monte Carlo sampler of a random MHSA layer and of its Gaussian-equivalent model.

One configuration, one set of draws, two readings (docs/verification.md §4.1):
``model="softmax"`` is the real layer of docs/model.md §1.1 (with the configured score
and normalisation); ``model="ge"`` replaces n A^h by c_0 11^T + mu_1 S0^h + sigma Z^h
(docs/model.md §1.5) with the same tokens and weights. The output of a draw is the
spectrum of Y_c^T Y_c / n. Draws are independent children of one
``numpy.random.SeedSequence``, so results do not depend on how they are run.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from collections.abc import Sequence
from concurrent.futures import Executor, ProcessPoolExecutor
from dataclasses import dataclass
from functools import cache, partial
from pathlib import Path
from typing import Any

import numpy as np
import sympy as sp
from tqdm import tqdm

from gemhsa_sym.config import Config
from gemhsa_sym.scores import get_score

__all__ = [
    "MODELS",
    "Projection",
    "Weights",
    "draw_tokens",
    "draw_weights",
    "layer_output",
    "spectrum",
    "DrawTask",
    "run_draw",
    "run_draws",
    "local_pool",
    "SampleResult",
    "sample",
]

#: ``softmax``: the real layer (docs/model.md §1.1); ``ge``: its Gaussian equivalent (docs/model.md §1.5).
MODELS: tuple[str, ...] = ("softmax", "ge")


@dataclass(frozen=True, eq=False)
class Projection:
    """A projection W^h for every head: one matrix per sharing group, and each head's group."""

    matrices: tuple[np.ndarray, ...]
    group: tuple[int, ...]

    def head(self, h: int) -> np.ndarray:
        """The matrix of head ``h``."""
        return self.matrices[self.group[h]]


@dataclass(frozen=True, eq=False)
class Weights:
    """W_Q, W_K, W_V per head and the output blocks W_O^h (d_v x d_out) of docs/model.md §1.1."""

    query: Projection
    key: Projection
    value: Projection
    output: tuple[np.ndarray, ...]


def draw_tokens(sizes: dict[str, int], rng: np.random.Generator) -> np.ndarray:
    """Tokens X (n x d), iid N(0, 1)."""
    return rng.standard_normal((sizes["n"], sizes["d"]))


def draw_weights(config: Config, sizes: dict[str, int], rng: np.random.Generator) -> Weights:
    """The weights of docs/model.md §1.1 with the sharing and dependence of ``config`` (docs/model.md §1.3).

    One N(0, 1/d) matrix per sharing group of W_Q, W_K, W_V; tied values reuse the
    keys, correlated values are rho W_K + sqrt(1 - rho^2) W'. W_O is N(0, 1/(H d_v))
    with head blocks of d_v rows, or W_K^hT sqrt(d / (H d_v)) for ``output="keys"``.
    """
    d, d_k, d_v, d_out, heads = sizes["d"], sizes["d_k"], sizes["d_v"], sizes["d_out"], config.heads

    def draw(which: str, columns: int) -> Projection:
        partition = getattr(config, f"share_{which}")
        matrices = tuple(rng.normal(0.0, d**-0.5, (d, columns)) for _ in partition)
        return Projection(matrices, tuple(config.group_of(which, h) for h in range(heads)))

    query, key = draw("q", d_k), draw("k", d_k)
    if config.kv == "tied":
        value = key
    elif config.kv == "correlated":
        rho, fresh = float(config.rho), draw("v", d_v)
        spread = float(sp.sqrt(1 - config.rho**2))
        mixed = (rho * k + spread * w for k, w in zip(key.matrices, fresh.matrices, strict=True))
        value = Projection(tuple(mixed), key.group)
    else:
        value = draw("v", d_v)
    if config.output == "keys":
        scale = (d / (heads * d_v)) ** 0.5
        output = tuple(key.head(h).T * scale for h in range(heads))
    else:
        w_o = rng.normal(0.0, (heads * d_v) ** -0.5, (heads * d_v, d_out))
        output = tuple(w_o[h * d_v : (h + 1) * d_v] for h in range(heads))
    return Weights(query, key, value, output)


@cache
def _ge_coefficients(score: str, beta: sp.Expr, normalisation: str) -> tuple[float, float, float]:
    """(c_0, mu_1, sigma) of the Gaussian-equivalent replacement (docs/model.md §1.5)."""
    from gemhsa_sym.hermite import hermite_data

    c0, mu1, sigma2 = hermite_data(score, beta, normalisation).numeric()
    return c0, mu1, sigma2**0.5


def _attention_head(config: Config, q: np.ndarray, k: np.ndarray, v: np.ndarray) -> np.ndarray:
    """A^h V^h of the real layer, for queries ``q`` already scaled by beta / sqrt(d_k)."""
    score = get_score(config.score)
    s = q @ k.T
    if config.normalisation == "row" and score.shift_invariant:
        s -= s.max(axis=1, keepdims=True)
    f = score.numeric(s)
    head = f @ v
    head /= f.sum(axis=1, keepdims=True) if config.normalisation == "row" else len(f)
    return head


def _ge_head(
    q: np.ndarray, k: np.ndarray, v: np.ndarray, c0: float, sigma: float, rng: np.random.Generator
) -> np.ndarray:
    """(1/n) (c_0 11^T + mu_1 S0 + sigma Z) V, for queries ``q`` already scaled by mu_1 / sqrt(d_k)."""
    n = len(q)
    head = q @ (k.T @ v)
    head += c0 * v.sum(axis=0)
    head += sigma * (rng.standard_normal((n, n)) @ v)
    head /= n
    return head


def layer_output(
    config: Config,
    weights: Weights,
    X: np.ndarray,
    model: str = "softmax",
    rng: np.random.Generator | None = None,
) -> np.ndarray:
    """The uncentered output Y = sum_h A^h V^h W_O^h (n x d_out) of docs/model.md §1.1.

    ``model="softmax"``: A^h = rownorm(f(S^h)) with S^h = beta Q^h K^hT / sqrt(d_k)
    (max-shifted for shift-invariant f such as exp), or f(S^h) / n for
    ``normalisation="none"``. ``model="ge"``: n A^h = c_0 11^T + mu_1 S0^h + sigma Z^h
    with a fresh n x n N(0, 1) matrix Z^h per head drawn from ``rng`` (docs/model.md §1.5).
    """
    if model not in MODELS:
        raise ValueError(f"model: unknown model {model!r}; choose one of {', '.join(MODELS)}")
    if model == "softmax":
        scale = float(config.beta)
        head = partial(_attention_head, config)
    elif rng is None:
        raise ValueError("rng: the Gaussian-equivalent model draws noise Z; pass a numpy Generator")
    else:
        c0, scale, sigma = _ge_coefficients(config.score, config.beta, config.normalisation)
        head = partial(_ge_head, c0=c0, sigma=sigma, rng=rng)
    scale /= weights.query.matrices[0].shape[1] ** 0.5
    queries = [X @ w for w in weights.query.matrices]
    for q in queries:
        q *= scale
    keys = [X @ w for w in weights.key.matrices]
    values = keys if weights.value is weights.key else [X @ w for w in weights.value.matrices]
    Y = np.zeros((len(X), weights.output[0].shape[1]))
    for h, w_o in enumerate(weights.output):
        q, k = queries[weights.query.group[h]], keys[weights.key.group[h]]
        Y += head(q, k, values[weights.value.group[h]]) @ w_o
    return Y


def spectrum(Y: np.ndarray) -> np.ndarray:
    """Eigenvalues of Y_c^T Y_c / n, Y_c = sqrt(n) (I - 11^T/n) Y (docs/model.md §1.1), ascending.

    Always d_out values: computed from the smaller Gram matrix, padded with the
    zero eigenvalues when d_out > n.
    """
    centred = Y - Y.mean(axis=0)
    n, d_out = centred.shape
    if d_out <= n:
        return np.linalg.eigvalsh(centred.T @ centred)
    nonzero = np.linalg.eigvalsh(centred @ centred.T)
    return np.sort(np.concatenate([np.zeros(d_out - n), nonzero]))


@dataclass(frozen=True)
class DrawTask:
    """One independent draw: configuration, token count, model and its own seed."""

    config: Config
    n: int
    model: str
    seed: np.random.SeedSequence


def run_draw(task: DrawTask) -> np.ndarray:
    """Spectrum of one draw; tokens, weights, then the model's noise, from ``task.seed``."""
    rng = np.random.default_rng(task.seed)
    sizes = task.config.sizes(task.n)
    X = draw_tokens(sizes, rng)
    weights = draw_weights(task.config, sizes, rng)
    return spectrum(layer_output(task.config, weights, X, task.model, rng))


def run_draws(
    tasks: Sequence[DrawTask], executor: Executor | None = None, progress: bool = False
) -> list[np.ndarray]:
    """Spectra of ``tasks`` in order, in this process or on any ``concurrent.futures`` executor."""
    results = map(run_draw, tasks) if executor is None else executor.map(run_draw, tasks)
    return list(tqdm(results, total=len(tasks), disable=not progress, desc="draws", unit="draw"))


@dataclass(frozen=True, eq=False)
class SampleResult:
    """Spectra of independent draws: ``eigenvalues[i]`` holds the d_out eigenvalues of draw i."""

    config: Config
    sizes: dict[str, int]
    model: str
    seed: int
    eigenvalues: np.ndarray

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
            "n": self.sizes["n"],
            "draws": self.draws,
            "sizes": dict(self.sizes),
            "config": self.config.to_dict(),
            "moments": self.moments(4).tolist(),
            "moments_sd_over_draws": spread,
            "min": float(self.eigenvalues.min()),
            "max": float(self.eigenvalues.max()),
        }

    def save_npz(self, path: str | Path) -> None:
        """Write eigenvalues and metadata to ``path`` (via a temporary file and a rename)."""
        path = Path(path)
        meta = json.dumps(self.to_json_dict())
        with tempfile.NamedTemporaryFile(dir=path.parent, prefix=f".{path.name}.", delete=False) as tmp:
            np.savez(tmp, eigenvalues=self.eigenvalues, meta=meta)
        os.replace(tmp.name, path)

    @classmethod
    def load_npz(cls, path: str | Path) -> SampleResult:
        """Read a file written by :meth:`save_npz`."""
        with np.load(path) as data:
            meta = json.loads(str(data["meta"]))
            eigenvalues = data["eigenvalues"]
        return cls(Config.from_dict(meta["config"]), meta["sizes"], meta["model"], meta["seed"], eigenvalues)


def _limit_blas_threads(threads: int) -> None:
    """Worker initializer: at most ``threads`` BLAS threads, so that workers share the cores."""
    from threadpoolctl import threadpool_limits

    threadpool_limits(threads, user_api="blas")


def local_pool(workers: int) -> ProcessPoolExecutor:
    """A process pool of ``workers`` whose workers split the cores' BLAS threads between them."""
    threads = max(1, (os.cpu_count() or 1) // workers)
    return ProcessPoolExecutor(workers, initializer=_limit_blas_threads, initargs=(threads,))


def sample(
    config: Config,
    n: int | None = None,
    draws: int = 1,
    seed: int = 0,
    model: str = "softmax",
    jobs: int = 1,
    progress: bool | None = None,
    executor: Executor | None = None,
) -> SampleResult:
    """``draws`` independent spectra of ``config`` at token count ``n`` (default ``config.size_n``).

    Draw i uses child i of ``SeedSequence(seed)``, so the result depends only on
    (config, n, draws, seed, model). ``jobs > 1`` runs draws in a process pool whose
    workers split the cores' BLAS threads between them; any
    ``concurrent.futures.Executor`` may be passed instead. The progress bar
    (default) shows on multi-draw runs when stderr is a terminal.
    """
    if model not in MODELS:
        raise ValueError(f"model: unknown model {model!r}; choose one of {', '.join(MODELS)}")
    for key, value, least in (("draws", draws, 1), ("seed", seed, 0), ("jobs", jobs, 1)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < least:
            raise ValueError(f"{key}: need an integer >= {least}, got {value!r}")
    sizes = config.sizes(n)
    if model == "ge":
        _ge_coefficients(config.score, config.beta, config.normalisation)
    tasks = [DrawTask(config, sizes["n"], model, child) for child in np.random.SeedSequence(seed).spawn(draws)]
    if progress is None:
        progress = draws > 1 and sys.stderr.isatty()
    if executor is None and jobs > 1 and draws > 1:
        with local_pool(min(jobs, draws)) as pool:
            spectra = run_draws(tasks, pool, progress)
    else:
        spectra = run_draws(tasks, executor, progress)
    return SampleResult(config, sizes, model, int(seed), np.stack(spectra))
