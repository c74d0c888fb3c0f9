"""The two-point Dyson equation of masked scores, and its solution level by level
(docs/equations.md §2.11, docs/solving.md §3.13).

Rows given the tokens: R = (H - w)^-1, H = sum_k phi_k C_k, phi_k = omega_k / (1 + delta_k),
delta_k = (1/n) tr(C_k R), m = -tau(R) (the deterministic equivalent of a Gram matrix with
independent rows, at the nodes t_k, weights omega_k, of a graded Gauss-Legendre rule). H given the
phi_k: the Dyson equation G = (Lambda - eta(G))^-1 of the pencil of :mod:`.masked_pencil`, side by
side, a key-side block being constant on the intervals (t_{j-1}, t_j] between nodes (only the masks
depend on the key position there), so that a pairing over the key side is an exact sum over the
intervals under both masks.

:class:`TwoPointSystem` holds the equation at one rule as a map of the values that the pairings read
(:meth:`TwoPointSystem.step`); :func:`iterates` yields Anderson-mixed iterates of that map at many w
at once; :func:`solve` owns the tolerance, reaches points near the real axis from above (a cold start
there may land on the conjugate solution) and refuses Im m > 0. :class:`MaskedScoresModel` yields
m(w) level after level for the drivers of :mod:`.profiled_law`.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass, field

import numpy as np
from scipy import sparse
from tqdm import tqdm

from .key_side import KeySide
from .masked_pencil import WEIGHTS, MaskedPencil
from .pattern_inverse import PatternInverse
from .profiles import Quadrature

__all__ = ["LEVELS", "TwoPointSystem", "TwoPointState", "iterates", "solve", "MaskedScoresModel"]

#: (Gauss-Legendre order per panel, octaves of halving panels towards t = 0) of each level: 27, 36, 54, 72 nodes.
#: The two-point blocks have a kink where two query positions meet, so m converges like order^-2 (measured,
#: docs/solving.md §3.13), whatever the octaves beyond 8: the levels raise the order.
LEVELS: tuple[tuple[int, int], ...] = ((3, 8), (4, 8), (6, 8), (8, 8))
#: Anderson memory, mixing of the plain step, and steps allowed per height.
MEMORY, MIXING, STEPS = 8, 0.5, 4000
#: Im w / |w| at which real targets are solved (the density is smoothed on that relative scale).
RESOLUTION = 1e-4
#: Ratio of successive heights Im w / |w| on the descent towards the real axis.
DESCENT = 100
#: A point's iteration is mixed only once its plain steps change the values by less than this (inside the
#: basin of the solution the plain iteration reaches; mixed from farther, it may land on another solution).
MIX_FROM = 1e-3


@dataclass(frozen=True)
class TwoPointState:
    """The values the pairings read (one row per point) and delta_k."""

    read: np.ndarray
    delta: np.ndarray


class TwoPointSystem:
    """The equation of the module docstring for ``pencil`` at the nodes of ``rule`` with Hermite data mu_1^2 / r_k
    (``scores``) and sigma^2 (``noise``).

    Every pairing of an occurrence with one of its transpose reads a block entry and lands in eta, times the
    product of the two occurrences' weights and the Gaussian's scale times the ratio of the side it reads.
    Off the key side it is a row of two sparse matrices (one gathers, one scatters); on the key side, where
    it acts on the intervals up to its last masked node, :class:`.key_side.KeySide` reads the sums over those
    intervals and writes the blocks of every interval, which are never stored."""

    def __init__(self, pencil: MaskedPencil, rule: Quadrature, scores: float, noise: float) -> None:
        if rule.size != pencil.nodes:
            raise ValueError(f"rule: {rule.size} nodes for a pencil written for {pencil.nodes}")
        order = np.argsort(rule.nodes)
        self.pencil, self.t, self.omega = pencil, rule.nodes[order], rule.weights[order]
        self.scores, self.noise = scores, noise
        K = self.t.size
        self.sides = [s for s, _ in pencil.sides]
        self.index = {s: {v: i for i, v in enumerate(vs)} for s, vs in pencil.sides}
        self.size = {s: len(vs) for s, vs in pencil.sides}
        occ, gaussians, ratios = pencil.occurrences, dict(pencil.gaussians), dict(pencil.ratios)
        kind = np.array([WEIGHTS.index(o.weight) for o in occ])
        node = np.array([max(o.node, 0) for o in occ])
        side_of = {v: side for side, vs in pencil.sides for v in vs}
        # the pairings of an occurrence with one of its transpose, by (side read, side written)
        grouped: dict[tuple[str, str], list[tuple[int, int]]] = {}
        by_gaussian: dict[tuple[str, bool], list[int]] = {}
        for x, o in enumerate(occ):
            by_gaussian.setdefault((o.gaussian, o.transposed), []).append(x)
        for x, o in enumerate(occ):
            grouped.setdefault((side_of[o.col], side_of[o.row]), []).extend((x, y) for y in by_gaussian.get((o.gaussian, not o.transposed), []))
        gathers: dict[str, list[sparse.csr_matrix]] = {side: [] for side in self.sides}
        scatters: dict[str, list[tuple[int, sparse.csr_matrix]]] = {side: [] for side in self.sides}
        key_reads: list[tuple[int, int, int]] = []
        key_writes: list[tuple[int, int, int, int]] = []
        coefficients: list[np.ndarray] = []
        offset = 0
        for inner in self.sides:
            for outer in self.sides:
                chosen = grouped.get((inner, outer), [])
                if not chosen:
                    continue
                a, b = (np.array(v) for v in zip(*chosen))
                factor = np.array([gaussians[occ[x].gaussian][2] * ratios[inner] for x in a])
                # the last interval under both masks (a masked occurrence keeps the intervals up to its node)
                last = [min([occ[z].node for z in (x, y) if occ[z].masked], default=K - 1) for x, y in chosen]
                P, si, so = len(chosen), self.size[inner], self.size[outer]
                read = [(self.index[inner][occ[x].col], self.index[inner][occ[y].row]) for x, y in chosen]
                write = [(self.index[outer][occ[x].row], self.index[outer][occ[y].col]) for x, y in chosen]
                rows = np.arange(P)
                if inner == "n":
                    key_reads += [(r, c, J) for (r, c), J in zip(read, last)]
                else:
                    flat = np.array([r * si + c for r, c in read])
                    gathers[inner].append(sparse.csr_matrix((np.ones(P), (rows, flat)), (P, si * si)))
                if outer == "n":
                    key_writes += [(offset + i, r, c, J) for i, ((r, c), J) in enumerate(zip(write, last))]
                else:
                    flat = np.array([r * so + c for r, c in write])
                    scatters[outer].append((offset, sparse.csr_matrix((np.ones(P), (flat, rows)), (so * so, P))))
                coefficients.append(np.stack([kind[a], node[a], kind[b], node[b], factor]))
                offset += P
        self.reads = offset
        # one gather per side read (its rows: the pairings that read it, contiguous in the read values), one
        # scatter per side written (its columns: all read values, zero where a pairing lands elsewhere); the key
        # side's pairings are read and written by :class:`.key_side.KeySide`
        self._gathers = [(side, sparse.vstack(g, format="csr") if side != "n" else None)
                         for side, g in gathers.items() if g or (side == "n" and key_reads)]
        self._key = KeySide(self.size["n"], np.diff(np.r_[0.0, self.t]), np.array(key_writes), np.array(key_reads), offset)
        self._scatters = []
        for side, parts in scatters.items():
            if parts:
                blocks = [sparse.coo_matrix(sc) for _, sc in parts]
                rows = np.concatenate([blk.row for blk in blocks])
                cols = np.concatenate([blk.col + at for (at, _), blk in zip(parts, blocks)])
                values = np.concatenate([blk.data for blk in blocks])
                self._scatters.append((side, sparse.csr_matrix((values, (rows, cols)), (blocks[0].shape[0], offset))))
        kind_a, node_a, kind_b, node_b, factor = np.concatenate(coefficients, axis=1)
        self._pairing = (kind_a.astype(int), node_a.astype(int), kind_b.astype(int), node_b.astype(int), factor)
        feature = self.index[pencil.feature]
        self._delta = [(np.array([feature[x] for x, _ in ps]), np.array([feature[y] for _, y in ps])) for ps in pencil.delta]
        out = pencil.side_of(pencil.output)
        self._output = (out, self.index[out][pencil.output])
        self._feature_ratio = ratios[pencil.feature]
        self._inverses = {side: PatternInverse(self._pattern(side), self._wanted(side)) for side in self.sides if side != "n"}

    def _pattern(self, side: str) -> np.ndarray:
        """Where Lambda - eta on ``side`` may differ from -I: the output, the links, the entries eta is scattered to."""
        size = self.size[side]
        pattern = np.zeros((size, size), dtype=bool)
        out, o = self._output
        if side == out:
            pattern[o, o] = True
        for row, col, _ in self.pencil.links:
            if self.pencil.side_of(row) == side:
                pattern[self.index[side][row], self.index[side][col]] = True
        for written, scatter in self._scatters:
            if written == side:
                pattern.reshape(-1)[np.unique(scatter.nonzero()[0])] = True
        return pattern

    def _wanted(self, side: str) -> np.ndarray:
        """The entries of G on ``side`` that a step reads: the pairings' entries, delta's and m's."""
        size = self.size[side]
        wanted = np.zeros((size, size), dtype=bool)
        for read, gather in self._gathers:
            if read == side:
                wanted.reshape(-1)[np.unique(gather.nonzero()[1])] = True
        if side == self.pencil.feature:
            for rows, cols in self._delta:
                wanted[rows, cols] = True
        out, o = self._output
        if side == out:
            wanted[o, o] = True
        return wanted

    def weights(self, delta: np.ndarray) -> np.ndarray:
        """The weights (1, psi_k, chi_k) at every point and node, shape (points, 3, K)."""
        phi = self.omega / (1 + delta)
        return np.stack([np.ones_like(phi), self.scores * phi / self.t**2, self.noise * phi / self.t**2], axis=1)

    def lambdas(self, w: np.ndarray) -> dict[str, np.ndarray]:
        """Lambda(w) side by side at the points w, shape (points, size, size)."""
        out, o = self._output
        lam = {}
        for side in self.sides:
            block = np.repeat(-np.eye(self.size[side], dtype=complex)[None], w.size, 0)
            if side == out:
                block[:, o, o] = -w
            for row, col, value in self.pencil.links:
                if self.pencil.side_of(row) == side:
                    block[:, self.index[side][row], self.index[side][col]] += value
            lam[side] = block
        return lam

    def start(self, w: np.ndarray) -> TwoPointState:
        """The state of G = Lambda(w)^-1 (no pairing yet) and delta = 0."""
        lam = self.lambdas(w)
        G = {side: np.linalg.inv(block) for side, block in lam.items() if side != "n"}
        return TwoPointState(self._gather(G, lam["n"], np.zeros((self.reads, w.size), dtype=complex)),
                             np.zeros((w.size, self.t.size), dtype=complex))

    def _gather(self, G: dict[str, np.ndarray], key: np.ndarray, values: np.ndarray) -> np.ndarray:
        """The read values: gathered from the blocks G, and on the key side from Lambda there (``key``) and the
        pairing values."""
        points = key.shape[0]
        return np.concatenate([self._key(key, values) if side == "n" else (gather @ G[side].reshape(points, -1).T).T
                               for side, gather in self._gathers], axis=1)

    def values(self, state: TwoPointState) -> np.ndarray:
        """Every pairing's value (pairings, points): the block entry it read times both weights and the factor."""
        weight = self.weights(state.delta)
        ka, na, kb, nb, factor = self._pairing
        return (state.read * (weight[:, ka, na] * weight[:, kb, nb] * factor)).T

    def resolvents(self, lam: dict[str, np.ndarray], values: np.ndarray) -> dict[str, np.ndarray]:
        """G = (Lambda - eta)^-1 on every side but the key side (whose blocks :class:`.key_side.KeySide` reads
        without storing them), ``lam`` from :meth:`lambdas`, eta scattered from the pairing values."""
        eta = {side: (scatter @ values).T.reshape(lam[side].shape) for side, scatter in self._scatters}
        return {side: self._inverses[side](lam[side] - eta[side] if side in eta else lam[side]) for side in self.sides if side != "n"}

    def step(self, lam: dict[str, np.ndarray], state: TwoPointState) -> tuple[TwoPointState, np.ndarray]:
        """One application of the map (the resolvents' read values and delta_k = ratio tau(b-pairs) / phi_k), and m."""
        values = self.values(state)
        G = self.resolvents(lam, values)
        phi = self.omega / (1 + state.delta)
        feature = G[self.pencil.feature]
        delta = np.stack([feature[:, rows, cols].sum(axis=1) for rows, cols in self._delta], axis=1) * self._feature_ratio / phi
        out, o = self._output
        return TwoPointState(self._gather(G, lam["n"], values), delta), -G[out][:, o, o]


def _flat(state: TwoPointState) -> np.ndarray:
    return np.concatenate([state.read, state.delta], axis=1)


def iterates(system: TwoPointSystem, w: np.ndarray, state: TwoPointState) -> Iterator[tuple[TwoPointState, np.ndarray, np.ndarray]]:
    """(state, m, change) after every step: damped steps (:data:`MIXING`) until a point's change falls below
    :data:`MIX_FROM`, then Anderson mixing of its last :data:`MEMORY` residuals (Walker & Ni 2011, type II,
    regularised normal equations), the history restarted where the change grew tenfold over its best;
    ``change`` is the largest change of a value relative to 1 + |value|."""
    points, reads = w.size, system.reads
    x = _flat(state)
    dX = np.zeros((points, MEMORY, x.shape[1]), dtype=complex)  # ring of differences of x and of the residual
    dF = np.zeros_like(dX)
    gram = np.zeros((points, MEMORY, MEMORY), dtype=complex)  # <dF_i, dF_j>, kept up to date slot by slot
    valid = np.zeros((points, MEMORY), dtype=bool)
    best = np.full(points, np.inf)
    previous: tuple[np.ndarray, np.ndarray] | None = None
    eye = np.eye(MEMORY)
    lam = system.lambdas(w)
    for step in range(STEPS):
        new, m = system.step(lam, TwoPointState(x[:, :reads], x[:, reads:]))
        f = _flat(new) - x
        size = np.max(np.abs(f) / (1 + np.abs(x)), axis=1)
        yield new, m, size
        valid[(size > 10 * best) | (size > MIX_FROM)] = False
        best = np.minimum(best, size)
        if previous is not None:
            slot = step % MEMORY
            dX[:, slot], dF[:, slot] = x - previous[0], f - previous[1]
            row = np.matmul(dF, dF[:, slot, :, None].conj())[..., 0].conj()
            gram[:, :, slot], gram[:, slot, :] = row, row.conj()
            valid[:, slot] = size <= MIX_FROM
        previous = (x, f)
        both = valid[:, :, None] & valid[:, None, :]
        g = np.where(both, gram, 0) + np.where(valid, np.trace(gram, axis1=1, axis2=2).real[:, None] * 1e-10 + 1e-300,
                                               1.0)[:, :, None] * eye
        rhs = np.where(valid, np.matmul(dF, f[..., None].conj())[..., 0].conj(), 0)
        gamma = np.linalg.solve(g, rhs[..., None])
        gamma = gamma.transpose(0, 2, 1)
        x = x + MIXING * f - (gamma @ dX)[:, 0] - MIXING * (gamma @ dF)[:, 0]


def solve(system: TwoPointSystem, w: np.ndarray, tol: float = 1e-9,
          finished: Callable[[int], object] = lambda count: None) -> tuple[np.ndarray, int]:
    """m at the points w (upper half plane) and the point-steps taken: the iteration runs at Im w = |w|,
    |w| / :data:`DESCENT`, ... down to each point's own Im w, every height started from the one above (the
    first from Lambda^-1), to a change below ``tol``; the points still iterating are batched, and the batch
    is shrunk once a quarter of it has converged (``finished`` is told how many reached their own Im w).
    ArithmeticError where a point does not converge in :data:`STEPS` steps or lands on Im m > 0."""
    w = np.asarray(w, dtype=complex)
    if np.any(w.imag <= 0):
        raise ValueError("w: the two-point equation is solved in the upper half plane (Im w > 0)")
    depth = int(np.ceil(np.log(np.max(np.abs(w) / w.imag)) / np.log(DESCENT)))
    begin = system.start(w)
    read, delta, m = begin.read.copy(), begin.delta.copy(), np.zeros(w.shape, dtype=complex)
    total = 0
    for level, height in enumerate(float(DESCENT) ** -np.arange(0, depth + 1)):
        at = w.real + 1j * np.maximum(w.imag, height * np.abs(w))
        todo = np.flatnonzero(w.imag < DESCENT * height * np.abs(w)) if level else np.arange(w.size)
        while todo.size:
            for steps, (state, values, change) in enumerate(iterates(system, at[todo], TwoPointState(read[todo], delta[todo]))):
                total += todo.size
                done = change < tol
                if np.all(done) or (np.count_nonzero(done) >= todo.size / 4) or steps == STEPS - 1:
                    break
            if not np.any(done):
                raise ArithmeticError(f"the two-point iteration did not converge in {STEPS} steps at w = {at[todo[0]]:.6g}")
            read[todo], delta[todo], m[todo] = state.read, state.delta, values
            finished(int(np.count_nonzero(done & (at[todo] == w[todo]))))
            todo = todo[~done]
    if np.any(m.imag > 1e-9 * np.abs(m)):
        bad = w[m.imag > 1e-9 * np.abs(m)]
        raise ArithmeticError(f"the two-point iteration left the physical solution (Im m > 0) at w = {bad[0]:.6g}")
    return m, total


@dataclass(frozen=True, eq=False)
class MaskedScoresModel:
    """The law of masked scores for a pencil builder (nodes -> :class:`~.masked_pencil.MaskedPencil`) and Hermite
    data; :meth:`levels` yields m(w) at the rules of :data:`LEVELS` in turn, as the drivers of
    :mod:`.profiled_law` ask."""

    pencil: Callable[[int], MaskedPencil]
    scores: float
    noise: float
    _systems: dict[int, TwoPointSystem] = field(default_factory=dict, repr=False, compare=False)

    def quadrature(self, level: int) -> Quadrature:
        """The rule of ``level``."""
        order, octaves = LEVELS[level]
        return Quadrature.graded(1, octaves, order)

    def system(self, level: int) -> TwoPointSystem:
        """The equation at ``level`` (built once)."""
        if level not in self._systems:
            rule = self.quadrature(level)
            self._systems[level] = TwoPointSystem(self.pencil(rule.size), rule, self.scores, self.noise)
        return self._systems[level]

    def levels(self, w: np.ndarray, floor: float | np.ndarray) -> Generator[tuple[int, int, np.ndarray], np.ndarray | None, None]:
        """(level, nodes, m(w)) for every level in turn: from the second on, the Richardson extrapolation
        (p^2 m_p - q^2 m_q) / (p^2 - q^2) of this level's m_p and the last one's m_q (orders p > q), which removes
        the order^-2 term. A boolean mask sent to the generator names the points the next levels solve (the
        others keep their last value). A point below ``floor`` (real targets) is solved at Im w = max(floor,
        :data:`RESOLUTION` |w|), where the density is resolved on that scale. A progress bar counts the points on a
        terminal."""
        below = w.imag < floor
        at = np.where(below, w.real + 1j * np.maximum(floor, RESOLUTION * np.abs(w)), w)
        raw, value = np.zeros(w.shape, dtype=complex), np.zeros(w.shape, dtype=complex)
        active, coarser = np.ones(w.shape, dtype=bool), None
        for level, (order, _) in enumerate(LEVELS):
            nodes = self.quadrature(level).size
            with tqdm(total=int(active.sum()), desc=f"two-point equation, {nodes} nodes", unit="point", disable=None,
                      leave=False, file=sys.stderr) as bar:
                m = solve(self.system(level), at[active], finished=bar.update)[0]
            value[active] = m if coarser is None else (order**2 * m - coarser**2 * raw[active]) / (order**2 - coarser**2)
            raw[active], coarser = m, order
            sent = yield level, nodes, value.copy()
            if sent is not None:
                active = np.asarray(sent, dtype=bool) & active
                if not np.any(active):
                    return
