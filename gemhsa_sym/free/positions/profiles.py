"""Variance profiles over positions, and the Dyson equation they give (docs/equations.md §2.9).

One dimension group may carry *positions*: its index i of size alpha N is read as t = i / (alpha N)
in [0, 1]. A Gaussian matrix with rows or columns (or both) in that group may carry a variance
profile: entry (i, j) has variance scale * s(t_i, u_j) / N with

    s(t, u) = row(t) col(u) [region],   region: all, lower (u <= t), upper (u >= t),

for example the triangular Gaussian matrix (upper, row = col = 1) or the noise of a causal layer
(lower, row = 1 / t^2). The Dyson equation of docs/equations.md §2.3 becomes function-valued: every
unknown g_ab of a block pair in the positional group is a function g_ab(t), and the covariance map
integrates against the profile,

    eta(G)_ac(t) = sum_k v_k alpha(cols_k) row(t) int s-region col(u) g_bb'(u) du   (X R X^T pairing)
    eta(G)_ac(u) = sum_k v_k alpha(rows_k) col(u) int s-region row(t) g_bb'(t) dt   (X^T R X pairing),

with G(t) = (Lambda(w) - L0 - eta(G)(t))^{-1} at every position (Shlyakhtenko 1996; Hachem, Loubaton
& Najim 2007; the operator-valued semicircular elements over the diagonal algebra of positions).
It is discretised on the nodes of a composite Gauss-Legendre rule whose panels are graded
geometrically towards t = 0 (singular profiles), with product integration inside the panel of the
discontinuity u = t; the result is a :class:`~.numeric.NumericSystem` with one sector per node, which
the drivers of :mod:`.continuation` solve like any other Dyson system.

A deterministic diagonal D over the positional group (:class:`~.expressions.matrices.Diagonal`) is an
element of the diagonal algebra itself: its constant in L0 is D at every position (docs/equations.md
§2.12). Where diagonals are the only thing that varies with the position, the positions may be ordered
by the standard Gaussian g of the diagonals' entries: :meth:`Quadrature.normal` is the Gauss-Hermite rule
in g, at the positions t = Phi(g).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import sympy as sp
from numpy.polynomial import hermite_e, legendre
from scipy import sparse, special

from gemhsa_sym.free.expressions.matrices import Dim, Gaussian
from gemhsa_sym.free.expressions.pencil import Pencil
from gemhsa_sym.free.numeric.systems import DOUBLE, NumericSystem
from gemhsa_sym.parse import to_number

__all__ = ["T", "U", "REGIONS", "Profile", "Quadrature", "profiled_system", "system_size", "system_bytes"]

#: The row position t and the column position u of a profile.
T, U = sp.symbols("t u", positive=True)
#: Where a profile is non-zero: everywhere, on u <= t (lower triangle), on u >= t (upper triangle).
REGIONS: tuple[str, ...] = ("all", "lower", "upper")
#: Most memory of a discretised system's dense coefficient arrays (16 m k^2 bytes per sector of size k).
MAX_BYTES = 2**31


@dataclass(frozen=True)
class Profile:
    """s(t, u) = row(t) col(u) on ``region`` (module docstring); ``row`` in :data:`T`, ``col`` in :data:`U`."""

    row: sp.Expr = sp.S.One
    col: sp.Expr = sp.S.One
    region: str = "all"

    def __post_init__(self) -> None:
        for name, expr, var in (("row", self.row, T), ("col", self.col, U)):
            if not isinstance(expr, sp.Expr):  # numbers by the grammar of docs/conventions.md §6.8, never text
                expr = to_number(expr, f"profile: {name}")
            if expr.free_symbols - {var}:
                raise ValueError(f"profile: {name} must be an expression in {var} only, got {expr}")
            object.__setattr__(self, name, expr)
        if self.region not in REGIONS:
            raise ValueError(f"profile: unknown region {self.region!r}; choose one of {', '.join(REGIONS)}")

    def factor(self, side: str, points: np.ndarray) -> np.ndarray:
        """row(t) (``side="row"``) or col(u) at ``points``, checked positive and finite."""
        expr, var = (self.row, T) if side == "row" else (self.col, U)
        values = np.broadcast_to(np.asarray(sp.lambdify(var, expr, "numpy")(points), dtype=float), points.shape)
        if not np.all(np.isfinite(values) & (values >= 0)):
            raise ValueError(f"profile: {side} factor {expr} is not finite and non-negative on the nodes")
        return values

    @property
    def positional_rows(self) -> bool:
        """Whether s depends on the row position."""
        return self.row.free_symbols != set() or self.region != "all"

    @property
    def positional_cols(self) -> bool:
        """Whether s depends on the column position."""
        return self.col.free_symbols != set() or self.region != "all"


@dataclass(frozen=True, eq=False)
class Quadrature:
    """Nodes and weights on [0, 1] and the product-integration matrices of int_0^{t_k} (``lower``) and
    int_{t_k}^1 (``upper``): exact for functions that are polynomials of degree < order on every panel
    (a rule without them, :meth:`normal`, integrates over all positions only, and gives the standard Gaussian
    g of each node, ``gaussian``)."""

    edges: np.ndarray
    nodes: np.ndarray
    weights: np.ndarray
    lower: np.ndarray | None
    upper: np.ndarray | None
    gaussian: np.ndarray | None = None

    @classmethod
    def on(cls, edges: np.ndarray, order: int) -> Quadrature:
        """Gauss-Legendre of ``order`` nodes on every panel [edges[p], edges[p + 1]]."""
        edges = np.asarray(edges, dtype=float)
        if edges[0] != 0 or edges[-1] != 1 or np.any(np.diff(edges) <= 0):
            raise ValueError("quadrature: panel edges must increase from 0 to 1")
        x, wx = legendre.leggauss(order)
        # int_{-1}^{x_k} L_l(x) dx with L_l the Lagrange basis: Legendre coefficients of L_l are inv(V)
        coeffs = np.linalg.inv(legendre.legvander(x, order - 1))
        partial = legendre.legval(x[:, None], legendre.legint(coeffs, lbnd=-1)).T  # [k, l]
        panels = len(edges) - 1
        half = np.diff(edges) / 2
        nodes = (edges[:-1, None] + half[:, None] * (x + 1)).ravel()
        weights = (half[:, None] * wx).ravel()
        size = panels * order
        lower = np.zeros((size, size))
        for p in range(panels):
            rows = slice(p * order, (p + 1) * order)
            lower[rows, : p * order] = weights[: p * order]
            lower[rows, rows] = half[p] * partial
        return cls(edges, nodes, weights, lower, weights[None, :] - lower)

    @classmethod
    def graded(cls, per_octave: int, octaves: int, order: int = 6, breaks: tuple[float, ...] = ()) -> Quadrature:
        """Panels 2^(-j / per_octave), j = 0 .. octaves * per_octave, below them [0, 2^-octaves], with the
        ``breaks`` (discontinuities of a profile) added as edges."""
        steps = np.arange(octaves * per_octave, -1, -1)
        edges = np.union1d(np.r_[0.0, 2.0 ** (-steps / per_octave)], np.asarray(breaks, dtype=float))
        return cls.on(edges, order)

    @classmethod
    def normal(cls, order: int) -> Quadrature:
        """The Gauss-Hermite rule of ``order`` nodes g for a standard Gaussian, at the positions t = Phi(g) (module
        docstring): exact for polynomials in g of degree < 2 order; no triangular regions."""
        g, w = hermite_e.hermegauss(order)
        return cls(np.array([0.0, 1.0]), special.ndtr(g), w / w.sum(), None, None, g)

    @property
    def size(self) -> int:
        return len(self.nodes)

    def region(self, region: str, side: str) -> np.ndarray:
        """The integration matrix of ``region`` seen from the rows (``side="row"``: over u at each t)
        or from the columns (over t at each u)."""
        if region == "all":
            return np.broadcast_to(self.weights, (self.size, self.size))
        if self.lower is None or self.upper is None:
            raise ValueError(f"profile: the region {region!r} needs a rule on panels of positions, not a Gauss-Hermite rule")
        below = (region == "lower") == (side == "row")
        return self.lower if below else self.upper


def _groups(pencil: Pencil) -> tuple[dict[str, list[int]], dict[int, tuple[str, int]]]:
    """Blocks grouped by dimension group, and each block's (group, index in group)."""
    groups: dict[str, list[int]] = {}
    for i, b in enumerate(pencil.blocks):
        groups.setdefault(str(b.dim), []).append(i)
    return groups, {i: (dim, members.index(i)) for dim, members in groups.items() for i in members}


def system_size(pencil: Pencil, positions: Dim, nodes: int) -> int:
    """The number of unknowns of the discretised system on ``nodes`` positions, before reduction."""
    groups, _ = _groups(pencil)
    per = {dim: len(m) * (len(m) + 1) // 2 for dim, m in groups.items()}
    return sum(v * (nodes if dim == str(positions) else 1) for dim, v in per.items()) + (
        1 if str(pencil.blocks[pencil.sink].dim) == str(positions) else 0)


def system_bytes(pencil: Pencil, positions: Dim, nodes: int) -> int:
    """An upper estimate of the memory of the discretised system's coefficient arrays, before reduction."""
    groups, _ = _groups(pencil)
    entries = sum(len(m) ** 2 * (nodes if dim == str(positions) else 1) for dim, m in groups.items())
    return 16 * 2 * system_size(pencil, positions, nodes) * entries


def profiled_system(pencil: Pencil, ratios: Mapping[Dim, sp.Expr], positions: Dim,
                    profiles: Mapping[Gaussian, Profile], quadrature: Quadrature) -> NumericSystem:
    """The discretised Dyson system of ``pencil`` (module docstring) in double precision: one sector per
    dimension group, one per node for the group ``positions``; m(w) is its output unknown (the
    quadrature of g_tt(t) where the sink is positional)."""
    alpha = {str(d): float(v) for d, v in ratios.items()}
    missing = sorted({str(b.dim) for b in pencil.blocks} - set(alpha))
    if missing:
        raise ValueError(f"ratios: no size ratio given for dimension(s) {', '.join(missing)}")
    pos = str(positions)
    for X, prof in profiles.items():
        if (prof.positional_rows and str(X.rows) != pos) or (prof.positional_cols and str(X.cols) != pos):
            raise ValueError(f"profile: {X.name} varies along a side that is not the positional group {pos}")
    need = system_bytes(pencil, positions, quadrature.size)
    if need > MAX_BYTES:
        raise MemoryError(f"quadrature: {quadrature.size} nodes would take {need / 2**30:.1f} GiB of coefficients "
                          f"(at most {MAX_BYTES / 2**30:.0f} GiB): the model is too large for this level")
    groups, where = _groups(pencil)
    K = quadrature.size
    count = {dim: (K if dim == pos else 1) for dim in groups}
    offset, total = {}, 0
    for dim, members in groups.items():  # flat entries of M: group, node, a, c
        offset[dim] = total
        total += count[dim] * len(members) ** 2

    def entry(dim: str, node: np.ndarray | int, a: int, c: int) -> np.ndarray | int:
        k = len(groups[dim])
        return offset[dim] + (node * k + a) * k + c

    unknown: dict[tuple[str, int, int], np.ndarray] = {}  # (group, a <= b) -> the unknown at every node
    index = 0
    for dim, members in groups.items():
        for a in range(len(members)):
            for b in range(a, len(members)):
                unknown[(dim, a, b)] = np.arange(index, index + count[dim])
                index += count[dim]
    sink_dim, sink_index = where[pencil.sink]
    output = index if sink_dim == pos else int(unknown[(sink_dim, sink_index, sink_index)][0])
    m = index + (1 if sink_dim == pos else 0)
    A = {dim: np.zeros((count[dim], len(members), len(members)), dtype=complex) for dim, members in groups.items()}
    E = {dim: np.zeros_like(a) for dim, a in A.items()}

    def const(block_a: int, block_b: int, value: complex | np.ndarray) -> None:
        dim, ia = where[block_a]
        A[dim][:, ia, where[block_b][1]] += value

    const(pencil.source, pencil.source, 1.0)
    for c in pencil.constants:
        value: complex | np.ndarray = -complex(c.coeff)
        if c.diagonal is not None:  # an element of the positions' diagonal algebra: D(t) at every node
            if str(c.diagonal.rows) != pos or quadrature.gaussian is None:
                raise ValueError(f"diagonals: {c.diagonal.name} is read on a Gauss-Hermite rule over the positional group "
                                 f"{pos} (Quadrature.normal)")
            value = value * c.diagonal.values(quadrature.gaussian)
        const(c.row, c.col, value)
        if c.row != c.col:
            const(c.col, c.row, value)
    E[sink_dim][:, sink_index, sink_index] = 1.0

    def kernel(X: Gaussian, side: str) -> np.ndarray:
        """[target node, source node] weights of the pairing that lands on ``side`` of X."""
        prof = profiles.get(X, Profile())
        target_pos = str(X.rows if side == "row" else X.cols) == pos
        source_pos = str(X.cols if side == "row" else X.rows) == pos
        own, other = ("row", "col") if side == "row" else ("col", "row")
        t_factor = prof.factor(own, quadrature.nodes) if target_pos else np.ones(1)
        s_factor = prof.factor(other, quadrature.nodes) if source_pos else np.ones(1)
        if target_pos and source_pos:
            return t_factor[:, None] * quadrature.region(prof.region, side) * s_factor[None, :]
        if source_pos:
            return (quadrature.weights * s_factor)[None, :]
        return t_factor[:, None]

    rows: list[np.ndarray] = []
    cols: list[np.ndarray] = []
    vals: list[np.ndarray] = []

    def pair(X: Gaussian, side: str, a: int, c: int, b: int, bp: int, v: float) -> None:
        """eta_ac (blocks on ``side`` of X) gains v * int kernel g_bb' (blocks on the other side); M = ... - eta."""
        weights = kernel(X, side) * v
        t_dim, ia = where[a]
        s_dim, ib = where[b]
        ic, ibp = where[c][1], where[bp][1]
        sources = unknown[(s_dim, min(ib, ibp), max(ib, ibp))]
        targets = np.asarray(entry(t_dim, np.arange(count[t_dim]), ia, ic))
        full = np.broadcast_to(weights, (targets.size, sources.size))
        rows.append(np.repeat(targets, sources.size))
        cols.append(np.tile(sources, targets.size))
        vals.append(-full.ravel())

    by_matrix: dict[Gaussian, list] = {}
    for p in pencil.placements:
        by_matrix.setdefault(p.matrix, []).append(p)
    for X, ps in by_matrix.items():
        scale = float(X.scale)
        for p1 in ps:
            for p2 in ps:
                v = float(p1.coeff * p2.coeff) * scale
                pair(X, "row", p1.row, p2.row, p1.col, p2.col, v * alpha[str(X.cols)])  # X R X^T
                pair(X, "col", p1.col, p2.col, p1.row, p2.row, v * alpha[str(X.rows)])  # X^T R X
    C = sparse.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(total, m), dtype=complex)
    t_rows, t_cols, t_vals = [], [], []
    for (dim, a, b), idx in unknown.items():
        t_rows.append(idx)
        t_cols.append(np.asarray(entry(dim, np.arange(count[dim]), a, b)))
        t_vals.append(np.ones(idx.size))
    if sink_dim == pos:
        t_rows.append(np.full(K, output))
        t_cols.append(np.asarray(entry(pos, np.arange(K), sink_index, sink_index)))
        t_vals.append(quadrature.weights)
    Tm = sparse.csr_matrix((np.concatenate(t_vals), (np.concatenate(t_rows), np.concatenate(t_cols))), shape=(m, total),
                           dtype=complex)
    keep = _structural_support(groups, A, E, offset, C, Tm, output)
    # unknowns that no sector matrix reads are read-outs only: Newton needs those M depends on, and m
    read = np.flatnonzero(np.asarray(abs(C).sum(axis=0)).ravel() > 0)
    keep = keep[np.isin(keep, read) | (keep == output)]
    C, Tm = C[:, keep].toarray(), Tm[keep].toarray()
    sectors: list[tuple[np.ndarray, ...]] = []
    for dim, members in groups.items():
        k = len(members)
        for node in range(count[dim]):
            flat = slice(entry(dim, node, 0, 0), entry(dim, node, 0, 0) + k * k)
            sectors.append((A[dim][node], E[dim][node], C[flat].T.reshape(-1, k, k), Tm[:, flat].reshape(-1, k, k)))
    return NumericSystem.of(*(list(part) for part in zip(*sectors)), int(np.searchsorted(keep, output)), DOUBLE)


def _structural_support(groups: Mapping[str, list[int]], A: Mapping[str, np.ndarray], E: Mapping[str, np.ndarray],
                        offset: Mapping[str, int], C: sparse.csr_matrix, T: sparse.csr_matrix, output: int) -> np.ndarray:
    """The unknowns the fixed-point iteration g <- R(g, w) from g = 0 can make non-zero, sorted.

    An entry of M^{-1} can be non-zero only inside a connected component of the graph of M's
    non-zero pattern; iterating that pattern from the unknowns' empty set reaches a support S with
    R(S) in S. The iteration from 0 converges to the physical solution at large |w| (the reasoning
    of docs/equations.md §2.4), so that solution, and by analyticity every point of the branch,
    vanishes off S: the other unknowns are dropped.
    """
    m = C.shape[1]
    support = np.zeros(m, dtype=bool)
    while True:
        touched = np.asarray(abs(C[:, support]).sum(axis=1)).ravel() > 0
        reach_flat = []
        for dim in groups:
            a, k = A[dim], A[dim].shape[-1]
            pattern = (a != 0) | (E[dim] != 0) | touched[offset[dim] : offset[dim] + a.size].reshape(a.shape)
            reach = (pattern | np.swapaxes(pattern, 1, 2) | np.eye(k, dtype=bool)).astype(np.int64)
            for _ in range(k):  # transitive closure: reach[a, b] iff a and b are connected
                reach = ((reach @ reach) > 0).astype(np.int64)
            reach_flat.append(reach.ravel() > 0)
        grown = np.asarray(abs(T) @ np.concatenate(reach_flat).astype(float)).ravel() > 0
        grown[output] = True
        if np.array_equal(grown, support):
            return np.flatnonzero(support)
        support = grown
