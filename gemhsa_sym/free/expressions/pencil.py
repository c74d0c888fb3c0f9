"""Automatic self-adjoint linear pencils of the hermitisation of a polynomial.

The polynomial Y is read as a path sum over a series-parallel graph: sums
are parallel edges, products are chains through intermediate nodes, every
leaf (a Gaussian, its transpose, c*I or c*D for a deterministic diagonal D) is one edge. With inner nodes
1..m, edges i -> j give Q = -I + N (N nilpotent), edges from the source give
u, edges into the sink give v, and Y = Y_lin - u Q^{-1} v. The self-adjoint
pencil of [[0, Y], [Y^T, 0]] has blocks (s, t, V_1..V_m, U_1..U_m):

    L = [[0, Y_lin, 0, u], [Y_lin^T, 0, v^T, 0], [0, v, 0, Q], [u^T, 0, Q^T, 0]]

(Helton, Mai & Speicher 2018; docs/equations.md §2.2). Its Schur complement onto the
outer blocks is the hermitisation, which :meth:`Pencil.schur_complement`
recomputes symbolically from the pencil entries, and :meth:`Pencil.check` verifies on random
instances: the Schur complement of the pencil's own numeric matrix is [[0, Y], [Y^T, 0]].
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import sympy as sp
from sympy.matrices.expressions import MatAdd, MatMul, MatrixExpr, Transpose

from gemhsa_sym.free.expressions.matrices import Diagonal, Dim, Gaussian, RandomInstance, is_polynomial, without_powers

__all__ = ["Block", "Placement", "Constant", "Pencil", "linearise"]

#: Random instances of :meth:`Pencil.check`, and the difference it accepts relative to the sum of the sizes of the
#: polynomial's terms (float64 round-off of products of a few dozen small matrices; a wrong coefficient or a missing
#: term differs by its own size).
CHECK_INSTANCES = 2
CHECK_SEED = 2018
CHECK_TOLERANCE = 1e-8


@dataclass(frozen=True)
class Block:
    """One block row/column of the pencil, living in dimension group ``dim``."""

    name: str
    dim: Dim


@dataclass(frozen=True)
class Placement:
    """``coeff * matrix`` at block position (row, col), and its transpose at (col, row)."""

    matrix: Gaussian
    row: int
    col: int
    coeff: sp.Expr


@dataclass(frozen=True)
class Constant:
    """``coeff * I`` (or ``coeff * diagonal``, a deterministic :class:`Diagonal`) at block position (row, col) and at
    (col, row); both blocks share a dim."""

    row: int
    col: int
    coeff: sp.Expr
    diagonal: Diagonal | None = None


@dataclass(frozen=True)
class Pencil:
    """A self-adjoint linear pencil L = L0 + sum of Gaussian placements (docs/equations.md §2.2)."""

    polynomial: MatrixExpr
    blocks: tuple[Block, ...]
    placements: tuple[Placement, ...]
    constants: tuple[Constant, ...]
    source: int = 0
    sink: int = 1

    @property
    def inner(self) -> int:
        """Number of inner nodes m (the pencil has 2 + 2m blocks)."""
        return (len(self.blocks) - 2) // 2

    def _entries(self) -> dict[tuple[int, int], MatrixExpr]:
        """Block (row, col) -> matrix expression, for the upper pattern written by the builder."""
        out: dict[tuple[int, int], list[MatrixExpr]] = {}
        for p in self.placements:
            out.setdefault((p.row, p.col), []).append(p.coeff * p.matrix)
        for c in self.constants:
            out.setdefault((c.row, c.col), []).append(c.coeff * (sp.Identity(self.blocks[c.row].dim) if c.diagonal is None
                                                                 else c.diagonal))
        return {k: (MatAdd(*v).doit() if len(v) > 1 else v[0]) for k, v in out.items()}

    def _block(self, entries: dict[tuple[int, int], MatrixExpr], r: int, c: int) -> MatrixExpr | None:
        """The (r, c) block of L: the stored (r, c) entry plus the transpose of a stored (c, r) one.

        Both exist when a matrix and its transpose join the same pair of nodes (Z + Z^T).
        """
        parts = [entries[(r, c)]] if (r, c) in entries else []
        if (c, r) in entries and c != r:
            parts.append(Transpose(entries[(c, r)]).doit())
        if not parts:
            return None
        return parts[0] if len(parts) == 1 else MatAdd(*parts).doit()

    def _edges(self) -> tuple[dict[int, MatrixExpr], dict[int, MatrixExpr], dict[tuple[int, int], MatrixExpr]]:
        """The matrices on the edges source -> i (u_i), i -> sink (v_i) and i -> j (N_ij) of inner nodes."""
        m, ent = self.inner, self._entries()
        V, U = [2 + i for i in range(m)], [2 + m + i for i in range(m)]
        u = {i: e for i in range(m) if (e := self._block(ent, self.source, U[i])) is not None}
        v = {i: e for i in range(m) if (e := self._block(ent, V[i], self.sink)) is not None}
        n = {(i, j): e for i in range(m) for j in range(m) if i != j and (e := self._block(ent, V[i], U[j])) is not None}
        return u, v, n

    def paths(self) -> tuple[dict[int, MatrixExpr], dict[int, MatrixExpr], dict[tuple[int, int], MatrixExpr]]:
        """Path sums of the graph (-Q^{-1} = sum_k N^k): from the source to each inner node i (A_i),
        from i to the sink (B_i) and from i to j (P_ij), where a path exists (docs/equations.md §2.8)."""
        u, v, n = (({k: e.doit() for k, e in edges.items()}) for edges in self._edges())
        m = self.inner
        between: dict[tuple[int, int], MatrixExpr | None] = {}

        def path(i: int, j: int) -> MatrixExpr | None:
            if (i, j) not in between:
                terms = [n[(i, j)]] if (i, j) in n else []
                terms += [_product(n[(i, k)], rest) for k in range(m) if (i, k) in n and (rest := path(k, j)) is not None]
                between[(i, j)] = _sum(terms)
            return between[(i, j)]

        prefix = {j: e for j in range(m) if (e := _sum(([u[j]] if j in u else [])
                                                       + [_product(u[i], p) for i in u if (p := path(i, j)) is not None])) is not None}
        suffix = {i: e for i in range(m) if (e := _sum(([v[i]] if i in v else [])
                                                       + [_product(p, v[j]) for j in v if (p := path(i, j)) is not None])) is not None}
        return prefix, suffix, {(i, j): p for i in range(m) for j in range(m) if i != j and (p := path(i, j)) is not None}

    def schur_complement(self) -> MatrixExpr:
        """Y recomputed from the pencil: Y_lin - u Q^{-1} v with Q^{-1} = -sum_k N^k."""
        u, _, _ = self._edges()
        _, suffix, _ = self.paths()
        terms = []
        y_lin = self._block(self._entries(), self.source, self.sink)
        if y_lin is not None:
            terms.append(y_lin)
        terms += [u[j] * suffix[j] for j in u if j in suffix]
        if not terms:
            return sp.ZeroMatrix(self.polynomial.rows, self.polynomial.cols)
        return MatAdd(*terms).doit()

    def check(self) -> None:
        """Raise AssertionError unless, on :data:`CHECK_INSTANCES` random instances (every dimension group of size 2 to
        4, Gaussians and the coefficients' parameters drawn at random, seeded), the Schur complement of the numeric
        pencil onto its outer blocks is [[0, Y], [Y^T, 0]] with Y the polynomial (module docstring): an identity of
        polynomials checked where it would fail with probability one if it were false (docs/equations.md §2.2)."""
        rng = np.random.default_rng(np.random.SeedSequence(CHECK_SEED))
        coefficients = (*(p.coeff for p in self.placements), *(c.coeff for c in self.constants))
        names = sorted({str(s) for e in coefficients for s in e.free_symbols}
                       | {str(s) for s in self.polynomial.free_symbols if isinstance(s, sp.Symbol) and not isinstance(s, Dim)})
        for _ in range(CHECK_INSTANCES):
            scalars = {name: complex(v) for name, v in zip(names, rng.uniform(0.5, 1.5, len(names)))}
            instance = RandomInstance(rng, scalars)
            Y = instance.evaluate(self.polynomial)
            L = self._matrix(instance)
            rows = Y.shape[0]
            outer = rows + Y.shape[1]
            schur = L[:outer, :outer] - L[:outer, outer:] @ np.linalg.solve(L[outer:, outer:], L[outer:, :outer])
            want = np.zeros_like(schur)
            want[:rows, rows:], want[rows:, :rows] = Y, Y.T
            size = np.max(instance.evaluate(self.polynomial, absolute=True))  # the terms' sizes, as round-off sees them
            error = np.max(np.abs(schur - want)) / max(size, np.finfo(float).tiny)
            if not error <= CHECK_TOLERANCE:
                raise AssertionError(f"pencil Schur complement differs from the polynomial {self.polynomial} on a random "
                                     f"instance: relative difference {error:.3g}")

    def _matrix(self, instance: RandomInstance) -> np.ndarray:
        """The pencil's matrix L0 + sum of placements at ``instance`` (outer blocks first)."""
        widths = [instance.size(b.dim) for b in self.blocks]
        starts = np.concatenate([[0], np.cumsum(widths)])
        L = np.zeros((starts[-1], starts[-1]), dtype=complex)

        def put(r: int, c: int, block: np.ndarray) -> None:
            L[starts[r]:starts[r + 1], starts[c]:starts[c + 1]] += block
            L[starts[c]:starts[c + 1], starts[r]:starts[r + 1]] += block.T

        for p in self.placements:
            put(p.row, p.col, instance.number(p.coeff) * instance.evaluate(p.matrix))
        for c in self.constants:
            put(c.row, c.col, instance.number(c.coeff) * (np.eye(widths[c.row]) if c.diagonal is None
                                                          else instance.evaluate(c.diagonal)))
        return L


def _product(a: MatrixExpr, b: MatrixExpr) -> MatrixExpr:
    """a b in SymPy's canonical form, for factors already in it: the factors' own factors joined and the top level
    rewritten (a path sum's factors are path sums built before it, so a deep rewrite would walk them again)."""
    return MatMul(*(a.args if isinstance(a, MatMul) else (a,)), *(b.args if isinstance(b, MatMul) else (b,))).doit(deep=False)


def _sum(terms: list[MatrixExpr]) -> MatrixExpr | None:
    """The sum of ``terms`` (each in canonical form) in canonical form, or None for no terms."""
    if not terms:
        return None
    return MatAdd(*(t for term in terms for t in (term.args if isinstance(term, MatAdd) else (term,)))).doit(deep=False)


@dataclass
class _Graph:
    """Series-parallel graph under construction: nodes are dims, edges carry labels."""

    dims: list[Dim]
    edges: list[tuple[int, int, object, sp.Expr, bool]] = field(default_factory=list)

    def node(self, dim: Dim) -> int:
        self.dims.append(dim)
        return len(self.dims) - 1

    def build(self, expr: MatrixExpr, a: int, b: int, coeff: sp.Expr) -> None:
        """Add edges between nodes a and b whose path sum is coeff * expr."""
        if isinstance(expr, (sp.ZeroMatrix,)) or coeff == 0:
            return
        if isinstance(expr, Transpose) and not isinstance(expr.arg, Gaussian):
            self.build(expr.doit(), a, b, coeff)
        elif isinstance(expr, MatAdd):
            for term in expr.args:
                self.build(term, a, b, coeff)
        elif isinstance(expr, MatMul):
            c, mats = expr.as_coeff_matrices()
            mats = [mm for mm in mats if not isinstance(mm, sp.Identity)]
            coeff = coeff * c
            if not mats:
                self.edges.append((a, b, None, coeff, False))
                return
            nodes = [a] + [self.node(mm.cols) for mm in mats[:-1]] + [b]
            for k, mm in enumerate(mats):
                self.build(mm, nodes[k], nodes[k + 1], coeff if k == 0 else sp.S.One)
        elif isinstance(expr, (Gaussian, Diagonal)):
            self.edges.append((a, b, expr, coeff, False))
        elif isinstance(expr, Transpose):
            self.edges.append((a, b, expr.arg, coeff, True))
        elif isinstance(expr, sp.Identity):
            self.edges.append((a, b, None, coeff, False))
        else:
            raise NotImplementedError(f"cannot linearise the matrix expression {expr} of type {type(expr).__name__}")


def linearise(polynomial: MatrixExpr, diagonals: bool = False) -> Pencil:
    """The self-adjoint pencil of the hermitisation of ``polynomial`` (module docstring); with ``diagonals`` the
    polynomial may hold deterministic diagonals, which become constants (read by the positional Dyson equation only,
    docs/equations.md §2.12)."""
    if not is_polynomial(polynomial, diagonals):
        raise TypeError(f"not a polynomial in Gaussian matrices: {polynomial}")
    names: dict[str, Gaussian | Diagonal] = {}
    for g in sp.preorder_traversal(polynomial):
        if isinstance(g, (Gaussian, Diagonal)):
            if names.setdefault(g.name, g) != g:
                raise ValueError(f"two different matrices are both called {g.name}: {names[g.name]!r} and {g!r}")
    graph = _Graph([polynomial.rows, polynomial.cols])
    graph.build(without_powers(polynomial), 0, 1, sp.S.One)
    m = len(graph.dims) - 2
    blocks = [Block("s", graph.dims[0]), Block("t", graph.dims[1])]
    blocks += [Block(f"v{i + 1}", graph.dims[2 + i]) for i in range(m)]
    blocks += [Block(f"u{i + 1}", graph.dims[2 + i]) for i in range(m)]

    def row_block(node: int) -> int:
        """Block where edges leaving ``node`` start: s for the source, V_i for inner nodes."""
        return 0 if node == 0 else node  # inner node k (k >= 2) is V_{k-1} at block k

    def col_block(node: int) -> int:
        """Block where edges entering ``node`` end: t for the sink, U_i for inner nodes."""
        return 1 if node == 1 else node + m

    placements: list[Placement] = []
    constants = [Constant(2 + i, 2 + m + i, sp.S.NegativeOne) for i in range(m)]
    for a, b, mat, coeff, transposed in graph.edges:
        r, c = row_block(a), col_block(b)
        if mat is None or isinstance(mat, Diagonal):
            constants.append(Constant(r, c, coeff, mat))
        elif transposed:
            placements.append(Placement(mat, c, r, coeff))
        else:
            placements.append(Placement(mat, r, c, coeff))
    return Pencil(polynomial, tuple(blocks), tuple(placements), tuple(constants))
