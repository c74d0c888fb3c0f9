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
import sys
from collections.abc import Sequence
from concurrent.futures import Executor
from dataclasses import dataclass
from functools import cache, partial
from pathlib import Path
from typing import Any

import numpy as np
import sympy as sp
from threadpoolctl import threadpool_limits
from tqdm import tqdm

from gemhsa_sym.config import Config
from gemhsa_sym.executors import local_workers, open_executor
from gemhsa_sym.files import write_atomic_with
from gemhsa_sym.hermite import hermite_data
from gemhsa_sym.resources import check_memory
from gemhsa_sym.scores import get_score

__all__ = [
    "MODELS",
    "Projection",
    "Weights",
    "draw_tokens",
    "draw_weights",
    "layer_output",
    "spectrum",
    "ge_coefficients",
    "MAX_COEFFICIENT",
    "DRAW_THREADS",
    "DrawTask",
    "draw_bytes",
    "check_draws",
    "run_draw",
    "run_draws",
    "SampleResult",
    "sample",
]

#: Largest Gaussian-equivalence coefficient drawn: above it the spectrum overflows double precision.
MAX_COEFFICIENT = 1e100
#: BLAS threads of one draw, whatever the executor (figures do not depend on it).
DRAW_THREADS = 1
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


def _group_index(partition: tuple[tuple[int, ...], ...], heads: int) -> tuple[int, ...]:
    """The sharing group of every head, in the order of :meth:`Config.group_of`, in one pass."""
    index = [0] * heads
    for g, group in enumerate(partition):
        for h in group:
            index[h] = g
    return tuple(index)


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
        return Projection(matrices, _group_index(partition, heads))

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


def ge_coefficients(config: Config) -> tuple[float, float, float]:
    """(c_0, mu_1, sigma) of the Gaussian-equivalent replacement (docs/model.md §1.5) in double
    precision; ValueError naming beta where they overflow it (:data:`MAX_COEFFICIENT`)."""
    return _ge_coefficients(config.score, config.beta, config.normalisation)


@cache
def _ge_coefficients(score: str, beta: sp.Expr, normalisation: str) -> tuple[float, float, float]:
    """Cached body of :func:`ge_coefficients`."""
    c0, mu1, sigma2 = hermite_data(score, beta, normalisation).numeric()
    if not all(np.isfinite(v) and abs(v) <= MAX_COEFFICIENT for v in (c0, mu1, sigma2)):
        raise ValueError(
            f"beta: the Gaussian equivalent of the {score} score at beta = {beta} overflows double precision "
            f"(sigma^2 = {sp.N(hermite_data(score, beta, normalisation).sigma2, 3)}); it can be drawn while "
            f"c_0, mu_1 and sigma^2 stay below {MAX_COEFFICIENT:g}"
        )
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
        c0, scale, sigma = ge_coefficients(config)
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
    """One independent draw: configuration, token count, model, its own seed and its BLAS threads."""

    config: Config
    n: int
    model: str
    seed: np.random.SeedSequence
    threads: int = DRAW_THREADS


def run_draw(task: DrawTask) -> np.ndarray:
    """Spectrum of one draw; tokens, weights, then the model's noise, from ``task.seed``.

    BLAS runs on ``task.threads`` threads whatever the executor: sums split over another
    number of threads round differently, and the figures must not depend on the executor.
    """
    rng = np.random.default_rng(task.seed)
    sizes = task.config.sizes(task.n)
    with threadpool_limits(task.threads, user_api="blas"):
        X = draw_tokens(sizes, rng)
        weights = draw_weights(task.config, sizes, rng)
        return spectrum(layer_output(task.config, weights, X, task.model, rng))


def draw_bytes(config: Config, sizes: dict[str, int], model: str) -> int:
    """An upper estimate of the memory of one draw (docs/conventions.md §6.8): tokens, every
    weight matrix, the projected tokens, one head's n x n scores (two for the softmax layer,
    one more for the noise Z of the Gaussian equivalent), the output and the eigensolver's work."""
    n, d, d_k, d_v, d_out = (sizes[k] for k in ("n", "d", "d_k", "d_v", "d_out"))
    heads = config.heads
    groups = {key: len(getattr(config, f"share_{key}")) for key in ("q", "k", "v")}
    weights = d * d_k * (groups["q"] + groups["k"]) + d * d_v * groups["v"] * (2 if config.kv == "correlated" else 1)
    weights += heads * d_v * d_out
    projected = n * d_k * (groups["q"] + groups["k"]) + n * d_v * groups["v"]
    per_head = 3 * n * n + 2 * n * max(d_v, d_out) + d_k * d_v
    small = min(n, d_out)
    output = 3 * n * d_out + 4 * small * small
    return 8 * (n * d + weights + projected + per_head + output)


def check_draws(tasks: Sequence[DrawTask], workers: int | None) -> None:
    """Before any work: the draws can be made (sizes, the Gaussian equivalent's coefficients) and the
    largest of them, ``workers`` at once, fits in the available memory (None: they run elsewhere)."""
    biggest = 0
    for task in tasks:
        sizes = task.config.sizes(task.n)
        if sizes["n"] < 2:
            raise ValueError(f"n: the centred output needs at least 2 tokens, got {sizes['n']}")
        if task.model == "ge":
            ge_coefficients(task.config)
        biggest = max(biggest, draw_bytes(task.config, sizes, task.model))
    if workers is not None and tasks:
        check_memory(workers * biggest, "a draw" if workers == 1 else f"{workers} draws at once")


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

    def save_npz(self, path: str | Path, field: str = "path") -> None:
        """Write eigenvalues and metadata to ``path``, whole or not at all (errors name ``field``)."""
        meta = json.dumps(self.to_json_dict())
        write_atomic_with(path, lambda fh: np.savez(fh, eigenvalues=self.eigenvalues, meta=meta), field)

    @classmethod
    def load_npz(cls, path: str | Path) -> SampleResult:
        """Read a file written by :meth:`save_npz`."""
        with np.load(path) as data:
            meta = json.loads(str(data["meta"]))
            eigenvalues = data["eigenvalues"]
        return cls(Config.from_dict(meta["config"]), meta["sizes"], meta["model"], meta["seed"], eigenvalues)


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

    Draw i uses child i of ``SeedSequence(seed)`` and DRAW_THREADS BLAS threads, so the
    result depends only on (config, n, draws, seed, model), bit for bit, whatever runs it:
    ``jobs > 1`` runs draws in a local process pool, and any ``concurrent.futures.Executor``
    may be passed instead. The memory of the draws that run at once is checked against the
    available memory before any is drawn. The progress bar (default) shows on multi-draw
    runs when stderr is a terminal.
    """
    if model not in MODELS:
        raise ValueError(f"model: unknown model {model!r}; choose one of {', '.join(MODELS)}")
    for key, value, least in (("draws", draws, 1), ("seed", seed, 0), ("jobs", jobs, 1)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < least:
            raise ValueError(f"{key}: need an integer >= {least}, got {value!r}")
    sizes = config.sizes(n)
    tasks = [DrawTask(config, sizes["n"], model, child) for child in np.random.SeedSequence(seed).spawn(draws)]
    check_draws(tasks, min(jobs, draws) if executor is None else local_workers(executor))
    if progress is None:
        progress = draws > 1 and sys.stderr.isatty()
    if executor is None:
        with open_executor(min(jobs, draws)) as pool:
            spectra = run_draws(tasks, pool, progress)
    else:
        spectra = run_draws(tasks, executor, progress)
    return SampleResult(config, sizes, model, int(seed), np.stack(spectra))
