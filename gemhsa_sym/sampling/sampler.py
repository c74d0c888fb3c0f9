"""Monte Carlo sampler of a random MHSA layer and of its Gaussian-equivalent model.

One configuration, one set of draws, two readings (docs/verification.md §4.1) of its
:class:`~gemhsa_sym.layer.readings.AttentionLayer`: ``model="softmax"`` is the real layer of
docs/model.md §1.1 (with the configured score and normalisation); ``model="ge"`` is its
Gaussian-equivalent polynomial realised on the same tokens and weights (docs/model.md §1.8).
The output of a draw is the spectrum of Y_c^T Y_c / n. A polynomial model file is drawn by its own
sampler instead (:class:`PolynomialDraw`, the eigenvalues of Y^T Y; docs/exports.md §5.4). Draws are
independent children of one ``numpy.random.SeedSequence``, so results do not depend on how they are
run. The layer and the spectrum are computed by numpy, or by torch on the cpu or a cuda device from the same inputs
(``backend="torch"``, :mod:`gemhsa_sym.sampling.torch_backend`, docs/verification.md §4.8).
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import Executor
from dataclasses import dataclass
from types import ModuleType

import numpy as np
from threadpoolctl import threadpool_limits

from gemhsa_sym.layer.config import Config
from gemhsa_sym.layer.modes import VALUE_RULES
from gemhsa_sym.layer.network import Network
from gemhsa_sym.layer.network_equivalent import equivalent_of
from gemhsa_sym.layer.polynomial_model import PolynomialModel
from gemhsa_sym.layer.readings import MODELS, ge_coefficients, layer_of
from gemhsa_sym.progress import enabled as progress_shown
from gemhsa_sym.resources import check_memory
from gemhsa_sym.sampling.executors import local_workers, open_executor, run_tasks
from gemhsa_sym.sampling.network import draw_network, network_bytes
from gemhsa_sym.sampling.polynomial import draw_polynomial
from gemhsa_sym.sampling.result import SampleResult

__all__ = [
    "MODELS",
    "readings",
    "BACKENDS",
    "DEVICES",
    "spectrum",
    "DRAW_THREADS",
    "HEAD_BATCH_BYTES",
    "DrawTask",
    "PolynomialDraw",
    "draw_sets",
    "drawn_config",
    "head_batch",
    "draw_bytes",
    "check_backend",
    "check_draws",
    "gram_spectrum",
    "torch_draws",
    "run_draw",
    "run_draws",
    "equivalent_spectrum",
    "network_spectra",
    "sample",
]

#: BLAS threads of one draw, whatever the executor (figures do not depend on it).
DRAW_THREADS = 1
#: What computes a draw's layer and spectrum (docs/verification.md §4.8), and where (torch only: cuda).
BACKENDS: tuple[str, ...] = ("numpy", "torch")
DEVICES: tuple[str, ...] = ("cpu", "cuda")
#: Bytes of the scores and attention (two n x n float64 matrices per head) of the softmax heads the torch
#: backend takes at once.
HEAD_BATCH_BYTES = 2**30


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
    """One independent draw: configuration (or network), token count, model, its own seed, its BLAS threads,
    and the backend and device that compute it (docs/verification.md §4.8)."""

    config: Config | Network
    n: int
    model: str
    seed: np.random.SeedSequence
    threads: int = DRAW_THREADS
    backend: str = "numpy"
    device: str = "cpu"


@dataclass(frozen=True)
class PolynomialDraw:
    """One independent draw of a polynomial model's own sampler at sizes ratio * n, with its own seed and
    its BLAS threads (numpy on the cpu)."""

    model: PolynomialModel
    n: int
    seed: np.random.SeedSequence
    threads: int = DRAW_THREADS


def drawn_config(config: Config | PolynomialModel, heads: int | None) -> Config | PolynomialModel:
    """What the samplers draw for ``config``: itself, or, for infinitely many heads, its copy with ``heads`` heads
    (docs/extensions.md §8.5); ValueError naming sample_heads where that is not given, or given for a finite
    configuration or a polynomial model."""
    if not config.infinite_heads:
        if heads is not None:
            raise ValueError("sample_heads: only for a configuration with infinitely many heads, not "
                             + (f"one with {config.heads}" if isinstance(config, Config) else "a polynomial model"))
        return config
    if heads is None:
        raise ValueError("sample_heads: infinitely many heads cannot be drawn; give the finite number of heads to draw "
                         "(--sample-heads H), whose distance to the limit the comparison then shows")
    return config.with_heads(heads)


def readings(source: Config | Network) -> tuple[str, ...]:
    """The models of :data:`MODELS` that read ``source``: the ``softmax`` layer (or network) and its Gaussian equivalent
    ``ge``, and for a causal layer its equivalent without the uniform part too (``ge_without_uniform``)."""
    return layer_of(source).readings if isinstance(source, Config) else MODELS[:2]


def draw_sets(source: Config | Network | PolynomialModel, n: int, seeds: Sequence[np.random.SeedSequence],
              backend: str = "numpy", device: str = "cpu") -> dict[str, list[DrawTask] | list[PolynomialDraw]]:
    """The draws of every reading of ``source`` from ``seeds`` (:func:`readings`), or of the ``polynomial`` model's
    own sampler (which refuses another backend or device)."""
    if isinstance(source, (Config, Network)):
        return {model: [DrawTask(source, n, model, seed, backend=backend, device=device) for seed in seeds]
                for model in readings(source)}
    if (backend, device) != ("numpy", "cpu"):
        raise ValueError(f"backend: a polynomial model is drawn by its own sampler, numpy on the cpu; got {backend} on {device}")
    return {"polynomial": [PolynomialDraw(source, n, seed) for seed in seeds]}


def _torch_backend() -> ModuleType:
    """:mod:`gemhsa_sym.sampling.torch_backend`, imported on first use; NotImplementedError where torch is missing."""
    try:
        from gemhsa_sym.sampling import torch_backend
    except ImportError as exc:
        raise NotImplementedError(
            f"backend: the torch backend needs torch ({str(exc).splitlines()[0]}): pip install 'gemhsa_sym[torch]'"
        ) from None
    return torch_backend


def torch_draws(config: Config) -> bool:
    """Whether the torch backend draws ``config``: the centred output of a bidirectional layer with Gaussian tokens
    and no residual stream."""
    return (config.target_rule.output_side and config.token_rule.torch and config.residual is None
            and not config.mask_rule.causal)


def gram_spectrum(M: np.ndarray) -> np.ndarray:
    """Eigenvalues of M^T M, ascending: the spectral object of the attention matrix M = sqrt(n) (A - J)
    (docs/extensions.md §8.1), not centred."""
    return np.linalg.eigvalsh(M.T @ M)


def head_batch(n: int, heads: int) -> int:
    """How many softmax heads the torch backend takes at once at ``n`` tokens: as many as
    :data:`HEAD_BATCH_BYTES` holds, at least one."""
    return max(1, min(heads, HEAD_BATCH_BYTES // (16 * n * n)))


def run_draw(task: DrawTask | PolynomialDraw) -> np.ndarray:
    """Spectrum of one draw; tokens, weights, then the model's noise, from ``task.seed`` (a polynomial
    model's Gaussians in the order of :func:`~gemhsa_sym.sampling.polynomial.sample_polynomial`).

    BLAS (and torch on the cpu) runs on ``task.threads`` threads whatever the executor: sums
    split over another number of threads round differently, and the figures must not depend
    on the executor. The torch backend takes the same tokens, weights and noise, drawn by numpy.
    """
    if isinstance(task, PolynomialDraw):
        with threadpool_limits(task.threads, user_api="blas"):
            return task.model.draw(task.n, task.seed)
    rng = np.random.default_rng(task.seed)
    sizes = task.config.sizes(task.n)
    if isinstance(task.config, Network):
        with threadpool_limits(task.threads, user_api="blas"):
            if task.model == "ge":
                return equivalent_spectrum(task.config, task.n, task.seed)
            return network_spectra(task.config, sizes, rng)
    layer = layer_of(task.config)
    with threadpool_limits(task.threads, user_api="blas"):
        X = layer.draw_tokens(sizes, rng)
        weights = layer.draw_weights(sizes, rng)
        if task.backend == "torch":
            batch = head_batch(sizes["n"], task.config.heads)
            return _torch_backend().draw_spectrum(layer, weights, X, task.model, rng, task.device, task.threads, batch)
        Y = layer.output(weights, X, task.model, rng)
        return spectrum(Y) if layer.centred else gram_spectrum(Y)


def network_spectra(network: Network, sizes: dict[str, int], rng: np.random.Generator) -> np.ndarray:
    """The spectrum of out^T P out / n after the layer ``network`` reads (times n^collapse, :attr:`Network.collapse`), of
    one draw from ``rng``: the tokens, every layer's weights, then the blocks up to that layer (docs/extensions.md §8.7)."""
    n = sizes["n"]
    return spectrum(draw_network(network, sizes, rng, network.read_layer)[-1] / np.sqrt(n)) * float(n) ** network.collapse


def equivalent_spectrum(network: Network, n: int, seed: np.random.SeedSequence) -> np.ndarray:
    """The spectrum of one realisation of the network's first-block equivalent (docs/extensions.md §8.7) at n tokens: its
    polynomial's Gaussians drawn at sizes ratio * n, rounded (the neurons' bias levels have widths d_ff times
    Gauss-Hermite weights)."""
    equivalent = equivalent_of(network)
    sizes = {str(dim): int(round(float(ratio * n))) for dim, ratio in equivalent.ratios.items()}
    return draw_polynomial(equivalent.polynomial, sizes, equivalent.values, n, seed)


def draw_bytes(config: Config, sizes: dict[str, int], model: str, backend: str = "numpy") -> int:
    """An upper estimate of the memory of one draw (docs/conventions.md §6.8): tokens, every
    weight matrix, the projected tokens, one head's n x n scores (two for the softmax layer,
    one more for the noise Z of the Gaussian equivalent), the output and the eigensolver's work.
    The torch backend's softmax layer holds the scores of :func:`head_batch` heads at once and a second
    copy of the weights."""
    n, d, d_k, d_v, d_out = (sizes[k] for k in ("n", "d", "d_k", "d_v", "d_out"))
    heads = config.heads
    groups = {key: len(getattr(config, f"share_{key}")) for key in ("q", "k", "v")}
    rule = VALUE_RULES[config.kv]
    weights = d * d_k * (groups["q"] + groups["k"]) + d * d_v * groups["v"] * (2 if rule.fresh and rule.follows_keys else 1)
    weights += heads * d_v * d_out
    projected = n * d_k * (groups["q"] + groups["k"]) + n * d_v * groups["v"]
    per_head = 3 * n * n + 2 * n * max(d_v, d_out) + d_k * d_v
    if backend == "torch" and model == "softmax":
        batch = head_batch(n, heads)
        per_head += (batch - 1) * 2 * n * n + batch * n * (2 * d_k + 3 * d_v)
        weights *= 2  # the groups' matrices side by side, W_O's blocks stacked
    small = min(n, d_out)
    output = 3 * n * d_out + 4 * small * small
    return 8 * (n * d + weights + projected + per_head + output)


def check_backend(backend: str, device: str, workers: int | None = 1) -> None:
    """Before any work: ``backend`` and ``device`` are known and go together (numpy: cpu only) and,
    where the draws run on this machine (``workers`` not None), torch imports (NotImplementedError
    otherwise), the device is there, and draws on cuda run in this process (``workers`` 1)."""
    if backend not in BACKENDS:
        raise ValueError(f"backend: unknown backend {backend!r}; choose one of {', '.join(BACKENDS)}")
    if device not in DEVICES:
        raise ValueError(f"device: unknown device {device!r}; choose one of {', '.join(DEVICES)}")
    if backend == "numpy" and device != "cpu":
        raise ValueError(f"device: the numpy backend runs on the cpu; draw on {device} with the torch backend")
    if backend == "numpy" or workers is None:
        return
    problem = _torch_backend().device_problem(device)
    if problem is not None:
        raise ValueError(f"device: {problem}")
    if device == "cuda" and workers > 1:
        raise ValueError(f"jobs: draws on the cuda device run in this process, one at a time; use 1 job, not {workers}")


def check_draws(tasks: Sequence[DrawTask | PolynomialDraw], workers: int | None) -> None:
    """Before any work: the draws can be made (sizes, the Gaussian equivalent's coefficients, backend and
    device: :func:`check_backend`) and the largest of them, ``workers`` at once, fits in the available
    memory: this machine's, or for cuda the device's free memory (``workers`` None: they run elsewhere)."""
    for backend, device in sorted({(task.backend, task.device) for task in tasks if isinstance(task, DrawTask)}):
        check_backend(backend, device, workers)
    biggest: dict[str, int] = {}
    for task in tasks:
        if isinstance(task, PolynomialDraw):
            biggest["cpu"] = max(biggest.get("cpu", 0), task.model.draw_bytes(task.n))
            continue
        if isinstance(task.config, Network):
            if task.backend != "numpy":
                raise NotImplementedError("backend: a network is drawn by numpy")
            if task.model == "ge":
                equivalent_of(task.config)  # NotImplementedError with the reason where it is not built
            biggest[task.device] = max(biggest.get(task.device, 0), network_bytes(task.config, task.config.sizes(task.n)))
            continue
        if task.backend == "torch" and not torch_draws(task.config):
            raise NotImplementedError("backend: the torch backend draws the centred output of a bidirectional layer with "
                                      "Gaussian tokens and without residual stream; use the numpy backend")
        sizes = task.config.sizes(task.n)
        if sizes["n"] < 2:
            raise ValueError(f"n: the centred output needs at least 2 tokens, got {sizes['n']}")
        if task.model != "softmax":
            ge_coefficients(task.config)
        need = draw_bytes(task.config, sizes, task.model, task.backend)
        biggest[task.device] = max(biggest.get(task.device, 0), need)
    if workers is None:
        return
    what = "a draw" if workers == 1 else f"{workers} draws at once"
    for device, need in sorted(biggest.items()):
        if device == "cuda":
            check_memory(workers * need, what, have=_torch_backend().free_memory(device), place="the cuda device")
        else:
            check_memory(workers * need, what)


def run_draws(
    tasks: Sequence[DrawTask], executor: Executor | None = None, progress: bool = False
) -> list[np.ndarray]:
    """Spectra of ``tasks`` in order, in this process or on any ``concurrent.futures`` executor (a progress bar, or one
    progress line per draw where :func:`gemhsa_sym.progress.lines` asks for lines)."""
    return run_tasks([(run_draw, (task,)) for task in tasks], executor, progress, desc="draws")


def sample(
    config: Config | Network,
    n: int | None = None,
    draws: int = 1,
    seed: int = 0,
    model: str = "softmax",
    jobs: int = 1,
    progress: bool | None = None,
    executor: Executor | None = None,
    backend: str = "numpy",
    device: str = "cpu",
) -> SampleResult:
    """``draws`` independent spectra of ``config`` at token count ``n`` (default ``config.size_n``).

    Draw i uses child i of ``SeedSequence(seed)`` and DRAW_THREADS BLAS threads, so the
    result depends only on (config, n, draws, seed, model, backend, device), bit for bit,
    whatever runs it: ``jobs > 1`` runs draws in a local process pool, and any
    ``concurrent.futures.Executor`` may be passed instead. ``backend="torch"`` computes the
    layer and the spectrum with torch on ``device`` ("cpu" or "cuda") from the same inputs,
    so its figures equal numpy's up to rounding (docs/verification.md §4.8). The backend, the
    device and the memory of the draws that run at once are checked before any is drawn. The
    progress bar (default) shows on multi-draw runs when stderr is a terminal.
    """
    if model not in MODELS:
        raise ValueError(f"model: unknown model {model!r}; choose one of {', '.join(readings(config))}")
    if model not in readings(config):
        raise ValueError(f"model: {model!r} does not read this {'layer' if isinstance(config, Config) else 'network'} "
                         f"(it reads a causal layer); choose one of {', '.join(readings(config))}")
    for key, value, least in (("draws", draws, 1), ("seed", seed, 0), ("jobs", jobs, 1)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < least:
            raise ValueError(f"{key}: need an integer >= {least}, got {value!r}")
    sizes = config.sizes(n)
    tasks = [DrawTask(config, sizes["n"], model, child, backend=backend, device=device)
             for child in np.random.SeedSequence(seed).spawn(draws)]
    check_draws(tasks, min(jobs, draws) if executor is None else local_workers(executor))
    if progress is None:
        progress = draws > 1 and progress_shown()
    if executor is None:
        with open_executor(min(jobs, draws)) as pool:
            spectra = run_draws(tasks, pool, progress)
    else:
        spectra = run_draws(tasks, executor, progress)
    return SampleResult(config, sizes, model, int(seed), np.stack(spectra), backend, device)
