"""The sampler's torch backend: one draw's layer and spectrum on a torch device (docs/verification.md §4.8).

The inputs are the numpy backend's, bit for bit: :func:`gemhsa_sym.sampling.sampler.run_draw` draws the tokens and
weights with numpy's ``Generator`` from the draw's ``SeedSequence`` and the Gaussian-equivalent noise is
drawn here, head by head, from the same generator (:meth:`AttentionLayer.ge_noise`). They are moved to the
device and the layer of docs/model.md §1.1 (or its Gaussian equivalent, docs/model.md §1.8) and the
spectrum are computed there in float64, from the same :class:`~gemhsa_sym.layer.readings.AttentionLayer` (weights,
score, the polynomial's monomials), so the figures equal the numpy backend's up to the rounding of the
linear algebra libraries. This module is imported only when the torch backend is asked for.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import torch

from gemhsa_sym.layer.readings import MODELS, AttentionLayer, Projection, Weights, evaluate_term
from gemhsa_sym.layer.scores import get_score

__all__ = ["device_problem", "draw_spectrum", "free_memory", "pinned_threads", "tensor_spectrum"]

FLOAT = torch.float64


def device_problem(device: str) -> str | None:
    """Why ``device`` ("cpu" or "cuda") cannot run draws here, or None when it can."""
    if device == "cuda" and not torch.cuda.is_available():
        return f"no CUDA device is available to torch {torch.__version__}"
    return None


def free_memory(device: str) -> int | None:
    """Bytes free for new tensors on ``device``: for cuda the device's free memory plus what torch's
    allocator holds unused; None for the cpu (the host's memory, :func:`gemhsa_sym.resources.available_memory`)."""
    if device != "cuda":
        return None
    free, _ = torch.cuda.mem_get_info()
    return int(free + torch.cuda.memory_reserved() - torch.cuda.memory_allocated())


class _Pins:
    """torch's intra-op threads pinned while draws run, restored when the last one ends (threads of one
    process may run draws at once: the first saves the previous count, the last restores it)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.active = 0
        self.previous = 1

    @contextmanager
    def __call__(self, threads: int) -> Iterator[None]:
        with self.lock:
            if self.active == 0:
                self.previous = torch.get_num_threads()
            self.active += 1
            torch.set_num_threads(threads)
        try:
            yield
        finally:
            with self.lock:
                self.active -= 1
                if self.active == 0:
                    torch.set_num_threads(self.previous)


#: ``with pinned_threads(k):`` torch computes on k threads of the cpu (docs/verification.md §4.6).
pinned_threads = _Pins()


def _tensor(array: np.ndarray, device: torch.device) -> torch.Tensor:
    """``array`` on ``device`` in float64 (shared with numpy on the cpu, copied to a cuda device)."""
    return torch.as_tensor(array, dtype=FLOAT, device=device)


def _project(x: torch.Tensor, projection: Projection) -> torch.Tensor:
    """X W for every sharing group's W in one product: a (groups, n, columns) view."""
    matrices = [_tensor(w, x.device) for w in projection.matrices]
    w = matrices[0] if len(matrices) == 1 else torch.cat(matrices, dim=1)
    return (x @ w).view(x.shape[0], len(matrices), -1).transpose(0, 1)


def _heads(stack: torch.Tensor, projection: Projection, heads: range) -> torch.Tensor:
    """The group matrices of ``heads`` from a stack of :func:`_project`, one per head: a view when the heads'
    groups are consecutive, else gathered (heads that share a group get copies of one matrix)."""
    groups = [projection.group[h] for h in heads]
    if groups == list(range(groups[0], groups[0] + len(groups))):
        return stack[groups[0] : groups[0] + len(groups)]
    return stack[torch.tensor(groups, device=stack.device)]


def _softmax(layer: AttentionLayer, weights: Weights, x: torch.Tensor, batch: int) -> torch.Tensor:
    """The real layer's uncentred output, as :meth:`AttentionLayer.output` with ``model="softmax"``: the
    projections of all sharing groups in one product each, then ``batch`` heads at a time by batched
    products, their outputs A^h V^h side by side times the rows of W_O^h in one product."""
    config, n = layer.config, x.shape[0]
    score = get_score(config.score)
    row = config.normalisation == "row"
    queries = _project(x, weights.query)
    queries *= float(config.beta) / weights.query.matrices[0].shape[1] ** 0.5
    keys = _project(x, weights.key)
    values = keys if weights.value is weights.key else _project(x, weights.value)
    output = torch.cat([_tensor(w, x.device) for w in weights.output])  # (H d_v, d_out): the blocks W_O^h
    d_v = weights.output[0].shape[0]
    Y = torch.zeros((n, output.shape[1]), dtype=FLOAT, device=x.device)
    for start in range(0, config.heads, batch):
        heads = range(start, min(start + batch, config.heads))
        s = torch.bmm(_heads(queries, weights.query, heads), _heads(keys, weights.key, heads).transpose(1, 2))
        if row and score.shift_invariant:
            s -= s.amax(dim=2, keepdim=True)
        f = score.tensor(s) if score.tensor is not None else _tensor(score.numeric(s.cpu().numpy()), x.device)
        del s
        head = torch.bmm(f, _heads(values, weights.value, heads))
        head /= f.sum(dim=2, keepdim=True) if row else n
        del f
        side_by_side = head.transpose(0, 1).reshape(n, len(heads) * d_v)
        Y.addmm_(side_by_side, output[heads.start * d_v : heads.stop * d_v])
    return Y


def _equivalent(layer: AttentionLayer, weights: Weights, x: torch.Tensor, rng: np.random.Generator) -> torch.Tensor:
    """The Gaussian-equivalent output, as :meth:`AttentionLayer.output` with ``model="ge"``: the polynomial's
    per-head term (:meth:`AttentionLayer.ge_term`) on head h's realisation (:meth:`AttentionLayer.ge_head`)
    with Z^h drawn from ``rng`` in head order, each product by ``torch.linalg.multi_dot``."""
    device, n = x.device, x.shape[0]
    term = layer.ge_term()
    tokens = x / np.sqrt(n)
    moved: dict[int, torch.Tensor] = {}

    def on_device(value: Any) -> torch.Tensor:
        if isinstance(value, torch.Tensor):
            return value
        if id(value) not in moved:  # a matrix shared by heads moves once
            moved[id(value)] = _tensor(value, device)
        return moved[id(value)]

    Y = torch.zeros((n, weights.output[0].shape[1]), dtype=FLOAT, device=device)
    for h in range(layer.config.heads):
        noise = _tensor(layer.ge_noise(n, rng), device)
        real = {g: on_device(value) for g, value in layer.ge_head(weights, h, tokens, noise).items()}
        Y += evaluate_term(term, real, torch.linalg.multi_dot)
        del noise, real  # this head's Z goes before the next one is drawn
    return Y


def _gram(c: torch.Tensor, blocks: int = 4) -> torch.Tensor:
    """The lower triangle of c^T c (the upper is zero): ``blocks`` block rows of columns, each product only
    up to the diagonal, about 5/8 of the full product's work (what ``eigvalsh`` reads)."""
    d = c.shape[1]
    gram = torch.zeros((d, d), dtype=FLOAT, device=c.device)
    step = -(-d // blocks)
    for i in range(0, d, step):
        j = min(i + step, d)
        gram[i:j, :j] = c[:, i:j].T @ c[:, :j]
    return gram


def tensor_spectrum(Y: torch.Tensor) -> np.ndarray:
    """:func:`gemhsa_sym.sampling.sampler.spectrum` on the device: the d_out eigenvalues of Y_c^T Y_c / n, ascending,
    by ``torch.linalg.eigvalsh`` of the smaller Gram matrix (its lower triangle), padded with zeros when d_out > n."""
    centred = Y - Y.mean(dim=0)
    n, d_out = centred.shape
    if d_out <= n:
        return torch.linalg.eigvalsh(_gram(centred), UPLO="L").cpu().numpy()
    nonzero = torch.linalg.eigvalsh(_gram(centred.T), UPLO="L").cpu().numpy()
    return np.sort(np.concatenate([np.zeros(d_out - n), nonzero]))


def draw_spectrum(layer: AttentionLayer, weights: Weights, X: np.ndarray, model: str, rng: np.random.Generator,
                  device: str = "cpu", threads: int = 1, batch: int = 1) -> np.ndarray:
    """The spectrum of one draw of ``layer`` on ``device``: tokens ``X`` and ``weights`` as drawn by the numpy
    backend, the Gaussian equivalent's noise from ``rng``; on the cpu on ``threads`` threads; the softmax
    layer's heads ``batch`` at a time (:func:`gemhsa_sym.sampling.sampler.head_batch`)."""
    if model not in MODELS:
        raise ValueError(f"model: unknown model {model!r}; choose one of {', '.join(MODELS)}")
    problem = device_problem(device)
    if problem is not None:
        raise ValueError(f"device: {problem}")
    if device == "cpu":
        with pinned_threads(threads), torch.inference_mode():
            return _spectrum_of(layer, weights, X, model, rng, torch.device("cpu"), batch)
    with torch.inference_mode():
        return _spectrum_of(layer, weights, X, model, rng, torch.device(device), batch)


def _spectrum_of(layer: AttentionLayer, weights: Weights, X: np.ndarray, model: str, rng: np.random.Generator,
                 device: torch.device, batch: int) -> np.ndarray:
    """:func:`draw_spectrum` once the device and its threads are set."""
    x = _tensor(X, device)
    Y = _softmax(layer, weights, x, batch) if model == "softmax" else _equivalent(layer, weights, x, rng)
    return tensor_spectrum(Y)
