"""The two-point Dyson equation of masked scores as a map (docs/equations.md §2.11, docs/solving.md
§3.13, §3.14).

Rows given the tokens: R = (H - w)^-1, H = sum_k phi_k C_k, phi_k = omega_k / (1 + delta_k),
delta_k = (1/n) tr(C_k R), m = -tau(R) (the deterministic equivalent of a Gram matrix with
independent rows, at the nodes t_k, weights omega_k, of a graded Gauss-Legendre rule). H given the
phi_k: the Dyson equation G = (Lambda - eta(G))^-1 of the pencil of :mod:`.masked_pencil`, side by
side, a key-side block being constant on the intervals (t_{j-1}, t_j] between nodes (only the masks
depend on the key position there), so that a pairing over the key side is an exact sum over the
intervals under both masks. The output may lie on the key side (the causal attention matrix, §2.11): m
then averages R over the key positions, the keys past the last node an interval of their own.

:class:`TwoPointSystem` holds the equation at one rule as a map of the values that the pairings read
(:meth:`TwoPointSystem.step`); :mod:`.two_point_solver` iterates it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import sparse

from gemhsa_sym.free.positions.head_orbits import Block, multiplicity, side_blocks
from gemhsa_sym.free.positions.key_side import KeySide
from gemhsa_sym.free.positions.masked_pencil import WEIGHTS, MaskedPencil
from gemhsa_sym.free.positions.pattern_inverse import PatternInverse
from gemhsa_sym.free.positions.profiles import Quadrature

__all__ = ["TwoPointSystem", "TwoPointState"]

@dataclass(frozen=True)
class TwoPointState:
    """The values the pairings read (one row per point) and delta_k."""

    read: np.ndarray
    delta: np.ndarray


class TwoPointSystem:
    """The equation of the module docstring for ``pencil`` at the nodes of ``rule`` with Hermite data mu_1^2 / r_k
    (``scores``) and sigma^2 (``noise``).

    Every pairing of an occurrence with one of its transpose reads a block entry and lands in eta, times the
    product of the two occurrences' weights, the Gaussian's scale times the ratio of the side it reads, and the
    number of heads it stands for (:func:`.head_orbits.multiplicity`; pencils of exchangeable heads). A side's
    matrix is inverted in its invariant blocks (:func:`.head_orbits.side_blocks`; one block without heads). Off
    the key side a pairing is a row of two sparse matrices (one gathers, one scatters); on the key side, where it
    acts on the intervals up to its last masked node, :class:`.key_side.KeySide` reads the sums over those
    intervals and writes the blocks of every interval, which are never stored."""

    def __init__(self, pencil: MaskedPencil, rule: Quadrature, scores: float, noise: float) -> None:
        if rule.size != pencil.nodes:
            raise ValueError(f"rule: {rule.size} nodes for a pencil written for {pencil.nodes}")
        order = np.argsort(rule.nodes)
        self.pencil, self.t, self.omega = pencil, rule.nodes[order], rule.weights[order]
        self.scores, self.noise = scores, noise
        K, heads, label = self.t.size, pencil.exchangeable, pencil.label
        self.sides = [s for s, _ in pencil.sides]
        self.index = {s: {v: i for i, v in enumerate(vs)} for s, vs in pencil.sides}
        self.size = {s: len(vs) for s, vs in pencil.sides}
        self.blocks = {s: side_blocks([(label(v), pencil.template(v)) for v in vs], heads) for s, vs in pencil.sides}
        occ, gaussians, ratios = pencil.occurrences, dict(pencil.gaussians), dict(pencil.ratios)
        kind = np.array([WEIGHTS.index(o.weight) for o in occ])
        node = np.array([max(o.node, 0) for o in occ])
        head = [next((x for x in (label(o.gaussian), label(o.row), label(o.col)) if x is not None), None) for o in occ]
        side_of = {v: side for side, vs in pencil.sides for v in vs}
        # the pairings of an occurrence with one of its transpose, by (side read, side written), once per orbit of heads
        grouped: dict[tuple[str, str], list[tuple[int, int, int]]] = {}
        by_gaussian: dict[tuple[str, bool], list[int]] = {}
        for x, o in enumerate(occ):
            by_gaussian.setdefault((o.gaussian, o.transposed), []).append(x)
        for x, o in enumerate(occ):
            for y in by_gaussian.get((o.gaussian, not o.transposed), []):
                count = multiplicity((label(o.row), label(occ[y].col)), (head[x], head[y]), heads)
                if count:
                    grouped.setdefault((side_of[o.col], side_of[o.row]), []).append((x, y, count))
        gathers: dict[str, list[sparse.csr_matrix]] = {side: [] for side in self.sides}
        scatters: dict[str, list[tuple[np.ndarray, np.ndarray]]] = {side: [] for side in self.sides}
        key_reads: list[tuple[int, int, int]] = []
        key_writes: list[tuple[int, int, int, int]] = []
        coefficients: list[np.ndarray] = []
        offset = 0
        for inner in self.sides:
            for outer in self.sides:
                chosen = grouped.get((inner, outer), [])
                if not chosen:
                    continue
                a, b, count = (np.array(v) for v in zip(*chosen))
                factor = np.array([gaussians[occ[x].gaussian][2] * ratios[inner] * occ[x].scale * occ[y].scale
                                   for x, y in zip(a, b)]) * count
                # the last interval under both masks (a masked occurrence keeps the intervals up to its node)
                last = [min([occ[z].node for z in (x, y) if occ[z].masked], default=K - 1) for x, y, _ in chosen]
                P, si, so = len(chosen), self.size[inner], self.size[outer]
                read = [(self.index[inner][occ[x].col], self.index[inner][occ[y].row]) for x, y, _ in chosen]
                write = [(self.index[outer][occ[x].row], self.index[outer][occ[y].col]) for x, y, _ in chosen]
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
                    scatters[outer].append((flat, rows + offset))
                coefficients.append(np.stack([kind[a], node[a], kind[b], node[b], factor]))
                offset += P
        self.reads = offset
        # per side read: one gather per block (its rows: the pairings that read the side, contiguous in the read
        # values); per side written: one scatter per block (its columns: all read values); the key side's pairings
        # are read and written by one :class:`.key_side.KeySide` per block
        self._gathers = [(side, None if side == "n" else [sparse.vstack(gathers[side], format="csr") @ block.back
                                                          for block in self.blocks[side]])
                         for side in self.sides if gathers[side] or (side == "n" and key_reads)]
        self._scatters = {}
        for side, parts in scatters.items():
            if parts:
                flat, at = (np.concatenate(v) for v in zip(*parts))
                scatter = sparse.csr_matrix((np.ones(flat.size), (flat, at)), (self.size[side] ** 2, offset))
                self._scatters[side] = [block.into @ scatter for block in self.blocks[side]]
        out = pencil.side_of(pencil.output)
        self._output, self._keyed = out, out == "n"
        # the key side's own entries, read and written by its chain beside the pairings': the weighted links there (each
        # kept up to its node, at value indices after the pairings'), and where the output lies there its tau and delta's
        # pairs there (docs/solving.md §3.13); with the output there, the keys past the last node, which no query node sees,
        # are one more interval
        links = [(self.index["n"][row], self.index["n"][col], value, WEIGHTS.index(weight), node)
                 for row, col, value, weight, node in pencil.weighted if side_of[row] == "n"]
        key_writes += [(offset + i, row, col, node) for i, (row, col, _, _, node) in enumerate(links)]
        # (value, weight kind, node) of each
        self._links = (np.array([link[2] for link in links], dtype=float), np.array([link[3] for link in links], dtype=int),
                       np.array([link[4] for link in links], dtype=int))
        last = K if self._keyed else K - 1
        extra = [(self.index["n"][pencil.output],) * 2 + (last,)] if self._keyed else []
        keyed = [(k, x, y) for k, pairs in enumerate(pencil.delta) for x, y in pairs if side_of[x] == "n"]
        self._key_delta = (None if not keyed else sparse.csr_matrix(
            ([float(multiplicity((), (label(x), label(y)), heads)) for _, x, y in keyed],
             ([k for k, _, _ in keyed], len(extra) + np.arange(len(keyed)))), (K, len(extra) + len(keyed))))
        extra += [(self.index["n"][x], self.index["n"][y], k) for k, x, y in keyed]
        self._key_extra = len(extra)
        self._key = self._key_blocks(np.array(key_writes, dtype=int).reshape(-1, 4),
                                     np.array(key_reads + extra, dtype=int).reshape(-1, 3))
        kind_a, node_a, kind_b, node_b, factor = np.concatenate(coefficients, axis=1)
        self._pairing = (kind_a.astype(int), node_a.astype(int), kind_b.astype(int), node_b.astype(int), factor)
        # (1/n) tr(C_k R) phi_k: the pairs' tau, each times the ratio of its side
        self._delta: dict[str, list[sparse.csr_matrix]] = {}
        for side in dict.fromkeys(pencil.side_of(x) for pairs in pencil.delta for x, _ in pairs if pencil.side_of(x) != "n"):
            at, f = self.index[side], self.size[side]
            entries = [(k, at[x] * f + at[y], multiplicity((), (label(x), label(y)), heads) * ratios[side])
                       for k, pairs in enumerate(pencil.delta) for x, y in pairs if side_of[x] == side]
            k, flat, count = (np.array(v) for v in zip(*entries))
            trace = sparse.csr_matrix((count.astype(float), (k, flat)), (K, f * f))
            self._delta[side] = [trace @ block.back for block in self.blocks[side]]
        o = self.index[out][pencil.output] * (self.size[out] + 1)
        self._m = [] if self._keyed else [block.back[o] for block in self.blocks[out]]
        self._lambda = {side: [self._lambda_parts(side, block) for block in self.blocks[side]] for side in self.sides}
        self._weighted = {side: [self._weighted_part(side, block) for block in self.blocks[side]] for side in self.sides}
        self._inverses = {side: [PatternInverse(*self._pattern(side, index)) for index in range(len(self.blocks[side]))]
                          for side in self.sides if side != "n"}

    def _key_blocks(self, writes: np.ndarray, reads: np.ndarray) -> list[tuple[KeySide, sparse.csr_matrix]]:
        """Per block of the key side: the chain of its intervals, with the pairings' writes taken into the block, and
        the matrix that combines its reads into the pairings' (reads, block reads)."""
        if "n" not in self.sides or not (writes.size or reads.size):
            return []
        s, lengths = self.size["n"], np.diff(np.r_[0.0, self.t, [1.0] if self._keyed else []])
        chains = []
        for block in self.blocks["n"]:
            taken = block.into.tocsc()[:, writes[:, 1] * s + writes[:, 2]].tocoo()  # (block entry, write)
            rows = np.column_stack([writes[taken.col, 0], taken.row // block.size, taken.row % block.size,
                                    writes[taken.col, 3]])
            picked = sparse.csr_matrix((np.ones(len(reads)), (np.arange(len(reads)), reads[:, 0] * s + reads[:, 1])),
                                       (len(reads), s * s)) @ block.back
            picked = picked.tocoo()
            wanted = np.unique(np.column_stack([picked.col, reads[picked.row, 2]]), axis=0)
            position = {(int(e), int(J)): i for i, (e, J) in enumerate(wanted)}
            combine = sparse.csr_matrix((picked.data, (picked.row, [position[int(e), int(reads[r, 2])]
                                                                    for r, e in zip(picked.row, picked.col)])),
                                        (len(reads), len(wanted)))
            block_reads = np.column_stack([wanted[:, 0] // block.size, wanted[:, 0] % block.size, wanted[:, 1]])
            chain = KeySide(block.size, lengths, rows, block_reads, self.reads + self._links[0].size, taken.data)
            chains.append((chain, combine))
        return chains

    def _lambda_parts(self, side: str, block: Block) -> tuple[np.ndarray, np.ndarray]:
        """Lambda(w) on a block of ``side`` as a + w b (flattened): -1 on the diagonal and the links, -w at the output."""
        size = self.size[side]
        constant, slope = -np.eye(size), np.zeros((size, size))
        heads, label = self.pencil.exchangeable, self.pencil.label
        if side == self._output:
            o = self.index[side][self.pencil.output]
            constant[o, o], slope[o, o] = 0.0, -1.0
        for row, col, value in self.pencil.links:
            if self.pencil.side_of(row) == side and multiplicity((label(row), label(col)), (), heads):
                constant[self.index[side][row], self.index[side][col]] += value
        return block.into @ constant.reshape(-1), block.into @ slope.reshape(-1)

    def _weighted_part(self, side: str, block: Block) -> sparse.csr_matrix | None:
        """The weighted links on a block of ``side``: the matrix from the weights (flattened, kind by kind over the
        nodes) to the block's entries (flattened); None where the side has none."""
        K, heads, label = self.t.size, self.pencil.exchangeable, self.pencil.label
        entries = [(self.index[side][row] * self.size[side] + self.index[side][col], WEIGHTS.index(weight) * K + node, value)
                   for row, col, value, weight, node in self.pencil.weighted
                   if self.pencil.side_of(row) == side != "n" and multiplicity((label(row), label(col)), (), heads)]
        if not entries:
            return None
        flat, column, value = (np.array(v) for v in zip(*entries))
        links = sparse.csr_matrix((value.astype(float), (flat, column)), (self.size[side] ** 2, len(WEIGHTS) * K))
        return (block.into @ links).tocsr()

    def _with_weighted(self, lam: dict[str, list[np.ndarray]], weight: np.ndarray) -> dict[str, list[np.ndarray]]:
        """``lam`` plus the weighted links at the points' ``weight`` (:meth:`weights`)."""
        flat = weight.reshape(weight.shape[0], -1).T
        return {side: [b if part is None else b + (part @ flat).T.reshape(b.shape) for b, part in zip(blocks, self._weighted[side])]
                for side, blocks in lam.items()}

    def _pattern(self, side: str, index: int) -> tuple[np.ndarray, np.ndarray]:
        """Where the block of Lambda - eta on ``side`` may differ from -I (the output, the links, the entries eta is
        scattered to), and the entries of its inverse that a step reads (the pairings', delta's and m's)."""
        block = self.blocks[side][index]
        a, b = self._lambda[side][index]
        pattern = (np.abs(a + np.eye(block.size).reshape(-1)) > 0) | (b != 0)
        if self._weighted[side][index] is not None:
            pattern[np.unique(self._weighted[side][index].nonzero()[0])] = True
        if side in self._scatters:
            pattern[np.unique(self._scatters[side][index].nonzero()[0])] = True
        used = [gathers[index] for read, gathers in self._gathers if read == side and gathers is not None]
        used += [self._delta[side][index]] if side in self._delta else []
        used += [self._m[index]] if side == self._output else []
        wanted = np.zeros(block.size**2, dtype=bool)
        for matrix in used:
            wanted[np.unique(matrix.nonzero()[1])] = True
        return pattern.reshape(block.size, block.size), wanted.reshape(block.size, block.size)

    def weights(self, delta: np.ndarray) -> np.ndarray:
        """The weights (1, psi_k, chi_k, phi_k, g_k) of :data:`.masked_pencil.WEIGHTS` at every point and node, shape
        (points, 5, K)."""
        phi = self.omega / (1 + delta)
        return np.stack([np.ones_like(phi), self.scores * phi / self.t**2, self.noise * phi / self.t**2, phi,
                         np.broadcast_to(np.sqrt(self.scores) / self.t, phi.shape).astype(phi.dtype)], axis=1)

    def lambdas(self, w: np.ndarray) -> dict[str, list[np.ndarray]]:
        """Lambda(w) block by block, side by side, at the points w: shape (points, size, size) each."""
        return {side: [(a[None] + w[:, None] * b[None]).reshape(w.size, block.size, block.size).astype(complex)
                       for (a, b), block in zip(self._lambda[side], self.blocks[side])] for side in self.sides}

    def start(self, w: np.ndarray) -> TwoPointState:
        """The state of G = Lambda(w)^-1 (no pairing yet) and delta = 0."""
        delta = np.zeros((w.size, self.t.size), dtype=complex)
        lam = self._with_weighted(self.lambdas(w), self.weights(delta))
        G = {side: [np.linalg.inv(block) for block in blocks] for side, blocks in lam.items() if side != "n"}
        values = np.zeros((self.reads + self._links[0].size, w.size), dtype=complex)
        return TwoPointState(self._gather(G, lam.get("n", []), values)[0], delta)

    def _gather(self, G: dict[str, list[np.ndarray]], key: list[np.ndarray], values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The read values and the key side's own reads (its output's tau, then delta's pairs there): gathered from
        the blocks' inverses G, and on the key side from the blocks of Lambda there (``key``) and the values its chain
        writes (the pairings', then the links')."""
        points = values.shape[1]
        parts, extra = [], np.zeros((points, 0), dtype=complex)
        if self._key:
            read = sum((combine @ chain(lam, values).T).T for (chain, combine), lam in zip(self._key, key))
            extra = read[:, read.shape[1] - self._key_extra:]
        for side, gathers in self._gathers:
            if side == "n":
                parts.append(read[:, :read.shape[1] - self._key_extra])
            else:
                parts.append(sum((gather @ g.reshape(points, -1).T).T for gather, g in zip(gathers, G[side])))
        return np.concatenate(parts, axis=1), extra

    def values(self, state: TwoPointState, weight: np.ndarray | None = None) -> np.ndarray:
        """Every pairing's value (pairings, points): the block entry it read times both weights (``weight``, from
        :meth:`weights` where not given) and the factor."""
        weight = self.weights(state.delta) if weight is None else weight
        ka, na, kb, nb, factor = self._pairing
        return (state.read * (weight[:, ka, na] * weight[:, kb, nb] * factor)).T

    def resolvents(self, lam: dict[str, list[np.ndarray]], values: np.ndarray) -> dict[str, list[np.ndarray]]:
        """The inverses of the blocks of Lambda - eta on every side but the key side (whose blocks
        :class:`.key_side.KeySide` reads without storing them), ``lam`` from :meth:`lambdas`, eta scattered from the
        pairing values."""
        G = {}
        for side in self.sides:
            if side == "n":
                continue
            blocks = lam[side]
            if side in self._scatters:
                blocks = [b - (scatter @ values).T.reshape(b.shape) for b, scatter in zip(blocks, self._scatters[side])]
            G[side] = [inverse(b) for inverse, b in zip(self._inverses[side], blocks)]
        return G

    def step(self, lam: dict[str, list[np.ndarray]], state: TwoPointState) -> tuple[TwoPointState, np.ndarray]:
        """One application of the map (the resolvents' read values and delta_k = ratio tau(b-pairs) / phi_k), and m;
        ``lam`` from :meth:`lambdas`, to which the weighted links are added at the state's weights."""
        weight = self.weights(state.delta)
        values = self.values(state, weight)
        lam = self._with_weighted(lam, weight)
        G = self.resolvents(lam, values)
        points = values.shape[1]
        phi = self.omega / (1 + state.delta)
        value, kind, node = self._links
        links = -(weight[:, kind, node] * value).T  # written like pairings, which Lambda - eta subtracts
        read, extra = self._gather(G, lam.get("n", []), np.concatenate([values, links]))
        trace = sum((d @ g.reshape(points, -1).T).T for side, parts in self._delta.items() for d, g in zip(parts, G[side]))
        if self._key_delta is not None:
            trace = trace + (self._key_delta @ extra.T).T
        m = (-extra[:, 0] if self._keyed else
             -sum(g.reshape(points, -1) @ row.toarray()[0] for row, g in zip(self._m, G[self._output])))
        return TwoPointState(read, trace / phi), m
