"""Time the two-point equation of a causal layer's masked scores (docs/solving.md §3.13) against a
baseline from the same run.

Task: m(w) of the single causal softmax head (beta = 1, unit ratios) at the first level's nodes, at
``--points`` points of a log grid from 1e-4 to 1e4 at Im w = 1e-4 x (the points a distribution
function needs), by :func:`~gemhsa_sym.free.positions.two_point_solver.solve` (Anderson-mixed iterates, a shrinking
batch). Baseline: the same descent from above with plain damped steps (half steps, the whole batch
until every point has converged), through the same :meth:`TwoPointSystem.step`. Printed: seconds,
point-steps, the ratio of the times and the largest relative difference of m.

Second task, one step's key side at the last level's size (K = 72 intervals, the single head's 73
key variables, two columns written per interval as its pencil's masks write them, every entry
read with every last interval): :class:`~gemhsa_sym.free.positions.key_side.KeySide` (the Woodbury chain)
against the baseline of inverting every interval's block (one batched numpy inverse) and summing
the intervals under each read's mask. Printed: milliseconds per point, their ratio, the largest
relative difference.

Third task, exchangeable heads (docs/solving.md §3.14): one step of four heads (H d_k = d) at 36 nodes
on 32 points, the pencil of two heads standing for all against the baseline with every head written
out, after both have iterated to the same state. Printed: milliseconds per point, their ratio, and
the largest relative difference of m after solving both.

    python benchmarks/bench_two_point.py [--points 17] [--json]
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from gemhsa_sym.free.positions.key_side import KeySide
from gemhsa_sym.free.positions.masked_pencil import heads_pencil
from gemhsa_sym.free.positions.profiles import Quadrature
from gemhsa_sym.free.positions.two_point import TwoPointState, TwoPointSystem
from gemhsa_sym.free.positions.two_point_solver import DESCENT, solve
from gemhsa_sym.laws.causal import causal_model
from gemhsa_sym.layer.config import Config


def plain(system: TwoPointSystem, w: np.ndarray, tol: float = 1e-9) -> tuple[np.ndarray, int]:
    """The baseline: damped half steps at every height of the descent, the whole batch at once."""
    depth = int(np.ceil(np.log(np.max(np.abs(w) / w.imag)) / np.log(DESCENT)))
    state, total = system.start(w), 0
    for height in float(DESCENT) ** -np.arange(0, depth + 1):
        lam = system.lambdas(w.real + 1j * np.maximum(w.imag, height * np.abs(w)))
        while True:
            new, m = system.step(lam, state)
            total += w.size
            change = np.max(np.abs(np.c_[new.read - state.read, new.delta - state.delta])
                            / (1 + np.abs(np.c_[state.read, state.delta])), axis=1)
            state = TwoPointState((new.read + state.read) / 2, (new.delta + state.delta) / 2)
            if np.all(change < tol):
                break
    return m, total


def key_side(points: int = 16, K: int = 72, seed: int = 0) -> dict[str, float]:
    """The second task of the module docstring: milliseconds per point of both ways, and their difference."""
    rng = np.random.default_rng(seed)
    size = K + 1
    # interval j: the pairings of node j write column 0 (p) and column j + 1 (q_j), in every row
    writes = np.array([(0, a, c, j) for j in range(K) for c in (0, j + 1) for a in range(size)])
    writes[:, 0] = np.arange(len(writes))
    reads = np.array([(a, b, J) for a in range(size) for b in range(size) for J in (a - 1 if a else K - 1,)])
    values = 0.5 / size * (rng.standard_normal((len(writes), points)) + 1j * rng.standard_normal((len(writes), points)))
    lam = np.repeat(-np.eye(size, dtype=complex)[None], points, 0)
    lengths = np.diff(np.r_[0.0, np.geomspace(1e-3, 1, K)])
    chain = KeySide(size, lengths, writes, reads, len(writes))
    start = time.perf_counter()
    fast = chain(lam, values)
    fast_s = time.perf_counter() - start
    start = time.perf_counter()
    D = np.zeros((points, K, size, size), dtype=complex)  # D_j, then E_j = sum of D_J over J >= j
    np.add.at(D, (slice(None), writes[:, 3], writes[:, 1], writes[:, 2]), values[writes[:, 0]].T)
    E = np.cumsum(D[:, ::-1], axis=1)[:, ::-1]
    G = np.linalg.inv(lam[:, None] - E)
    prefix = np.cumsum(lengths[None, :, None, None] * G, axis=1)
    slow = prefix[:, reads[:, 2], reads[:, 0], reads[:, 1]]
    slow_s = time.perf_counter() - start
    return {"key_intervals": K, "key_size": size, "key_chain_ms_per_point": 1e3 * fast_s / points,
            "key_dense_ms_per_point": 1e3 * slow_s / points, "key_ratio": fast_s / slow_s,
            "key_max_rel_diff": float(np.max(np.abs(fast - slow)) / np.max(np.abs(slow)))}


def heads(points: int = 32, heads: int = 4, order: int = 4) -> dict[str, float]:
    """The third task of the module docstring: milliseconds per step and point of both pencils, and m's difference."""
    rule = Quadrature.graded(1, 8, order)
    ratios = {"d": 1.0, "d_k": 1 / heads, "d_v": 1 / heads, "d_out": 1.0}
    w = np.geomspace(0.01, 100, points) * (1 + 0.1j)
    timings, m = [], []
    for reduced in (True, False):
        system = TwoPointSystem(heads_pencil(rule.size, heads, ratios, reduced), rule, 4.0, np.e - 2)
        lam, state = system.lambdas(w), system.start(w)
        state, _ = system.step(lam, state)
        start = time.perf_counter()
        for _ in range(3):
            state, _ = system.step(lam, state)
        timings.append((time.perf_counter() - start) / 3 / points)
        m.append(solve(system, w[:: points // 4])[0])
    return {"heads": heads, "heads_nodes": rule.size, "heads_reduced_ms_per_point": 1e3 * timings[0],
            "heads_full_ms_per_point": 1e3 * timings[1], "heads_ratio": timings[0] / timings[1],
            "heads_max_rel_diff": float(np.max(np.abs(m[0] - m[1]) / np.abs(m[1])))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=17, help="points of the log grid (default 17)")
    parser.add_argument("--json", action="store_true", help="one JSON object instead of text")
    args = parser.parse_args()
    system = causal_model(Config(mask="causal")).system(0)
    x = np.geomspace(1e-4, 1e4, args.points)
    w = x + 1e-4j * x
    start = time.perf_counter()
    fast, fast_steps = solve(system, w)
    fast_s = time.perf_counter() - start
    start = time.perf_counter()
    slow, slow_steps = plain(system, w)
    slow_s = time.perf_counter() - start
    figures = {"nodes": system.t.size, "points": args.points, "solve_s": fast_s, "solve_point_steps": fast_steps,
               "plain_s": slow_s, "plain_point_steps": slow_steps, "ratio": fast_s / slow_s,
               "max_rel_diff": float(np.max(np.abs(fast - slow) / np.abs(slow))), **key_side(), **heads()}
    if args.json:
        print(json.dumps(figures))
        return
    print(f"two-point equation, {figures['nodes']} nodes, {args.points} points at Im w = 1e-4 x")
    print(f"solve (Anderson, shrinking batch): {fast_s:.2f} s, {fast_steps} point-steps")
    print(f"plain damped steps (baseline):     {slow_s:.2f} s, {slow_steps} point-steps")
    print(f"ratio {figures['ratio']:.3f}; largest relative difference of m {figures['max_rel_diff']:.1e}")
    print(f"key side, {figures['key_intervals']} intervals of {figures['key_size']} variables: Woodbury chain "
          f"{figures['key_chain_ms_per_point']:.2f} ms per point, every interval inverted "
          f"{figures['key_dense_ms_per_point']:.2f} ms (baseline); ratio {figures['key_ratio']:.3f}, "
          f"largest relative difference {figures['key_max_rel_diff']:.1e}")
    print(f"{figures['heads']} heads, {figures['heads_nodes']} nodes: two heads standing for all "
          f"{figures['heads_reduced_ms_per_point']:.2f} ms per point and step, every head written out "
          f"{figures['heads_full_ms_per_point']:.2f} ms (baseline); ratio {figures['heads_ratio']:.3f}, "
          f"largest relative difference of m {figures['heads_max_rel_diff']:.1e}")


if __name__ == "__main__":
    main()
