"""Time one softmax draw of the sampler against a bare numpy baseline in the same run.

The baseline computes the same layer (docs/model.md §1.1, independent heads,
d_k = d_v = d / H, d_out = d) with the fewest numpy calls: draws, fused
projections, max-shifted softmax, output, centering, Gram matrix and eigvalsh.
Prints the ratio sampler / baseline of the best of interleaved repetitions per H
(target: at most 1.3) and, where torch is installed, the sampler's torch backend on the
cpu against its numpy backend in the same rounds (docs/verification.md §4.8; target: at
most 1.3).

    python benchmarks/bench_sampler.py [--n 2000] [--repeat 3] [--heads 1 4]
"""

from __future__ import annotations

import argparse
import importlib.util
from functools import partial

import numpy as np
from timing import best_times

from gemhsa_sym.layer.config import Config
from gemhsa_sym.sampling.sampler import sample


def baseline(n: int, heads: int, seed: int) -> np.ndarray:
    """Spectrum of one softmax MHSA draw at n = d = d_out, d_k = d_v = d / H, beta = 1."""
    rng = np.random.default_rng(seed)
    d_k = n // heads
    X = rng.standard_normal((n, n))
    w_q, w_k, w_v = (rng.standard_normal((n, heads * d_k)) / np.sqrt(n) for _ in range(3))
    w_o = rng.standard_normal((heads * d_k, n)) / np.sqrt(heads * d_k)
    Q, K, V = (X @ w_q) / np.sqrt(d_k), X @ w_k, X @ w_v
    Y = np.zeros((n, n))
    for h in range(heads):
        cols = slice(h * d_k, (h + 1) * d_k)
        S = Q[:, cols] @ K[:, cols].T
        A = np.exp(S - S.max(axis=1, keepdims=True))
        A /= A.sum(axis=1, keepdims=True)
        Y += A @ V[:, cols] @ w_o[cols]
    Yc = Y - Y.mean(axis=0)
    return np.linalg.eigvalsh(Yc.T @ Yc)


def main() -> None:
    """Print sampler time, baseline time and their ratio for each H."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2000, help="n = d = d_out (default 2000)")
    parser.add_argument("--repeat", type=int, default=3, help="repetitions, best taken (default 3)")
    parser.add_argument("--heads", type=int, nargs="+", default=[1, 4], help="head counts (default 1 4)")
    args = parser.parse_args()
    with_torch = importlib.util.find_spec("torch") is not None
    for heads in args.heads:
        config = Config.from_sizes(n=args.n, d=args.n, heads=heads)
        draw = partial(sample, config, draws=1, seed=0, progress=False)
        runs = [draw, partial(baseline, args.n, heads, 0)] + ([partial(draw, backend="torch")] if with_torch else [])
        ours, bare, *torch_cpu = best_times(runs, args.repeat)
        line = f"H={heads} n=d={args.n}: sampler {ours:.3f} s, baseline {bare:.3f} s, ratio {ours / bare:.3f}"
        if torch_cpu:
            line += f"; torch backend on the cpu {torch_cpu[0]:.3f} s, ratio torch/numpy {torch_cpu[0] / ours:.3f}"
        print(line, flush=True)


if __name__ == "__main__":
    main()
