"""The matrix Dyson equation of a pencil, as SymPy objects (docs/equations.md §2.3).

For L = L0 + sum_k (E_ab (x) X_k + E_ba (x) X_k^T) the deterministic
equivalent of E (Lambda(w) - L)^{-1} solves

    G = (Lambda(w) - L0 - eta(G))^{-1},

with G holding one normalised trace g_ab = tr(R_ab)/size per pair of blocks
in the same dimension group (blocks in different groups vanish by rotation
invariance), Lambda = diag(1 on s, w on t, 0 elsewhere), so that
g_tt = (1/q) tr (w - Y^T Y)^{-1} = m(w), and the covariance map

    eta(G)_ac = sum_k s_k [ alpha(cols_k) sum c1 c2 g_bb'  over X_k at (a, b), X_k at (c, b')
                          + alpha(rows_k) sum c1 c2 g_bb'  over X_k at (b, a), X_k at (b', c) ]

(Far, Oraby, Bryc & Speicher 2006; Mingo & Speicher 2017, ch. 9). The system
splits into one matrix equation per dimension group ("sector"). Every sector
matrix is affine in w and the unknowns, and every unknown is a linear
read-out of the sector inverses; that form also carries the reduced systems
(zeros, duplicates, exchangeable heads) built elsewhere.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import sympy as sp

from gemhsa_sym.free.expressions.matrices import Dim
from gemhsa_sym.free.expressions.pencil import Pencil

__all__ = ["W", "Sector", "DysonSystem", "dyson_system"]

#: The spectral variable: m(w) = (1/q) tr (w - Y^T Y)^{-1}.
W = sp.Symbol("w")

Entry = tuple[int, int]


@dataclass(frozen=True)
class Sector:
    """One block of the equation: G_sector = M^{-1}, M = const + w*wcoef + sum_j g_j lin_j."""

    name: str
    labels: tuple[str, ...]
    const: Mapping[Entry, sp.Expr]
    wcoef: Mapping[Entry, sp.Expr]
    lin: Mapping[Entry, Mapping[sp.Symbol, sp.Expr]]

    @property
    def size(self) -> int:
        return len(self.labels)

    @property
    def symmetric(self) -> bool:
        """Whether M = M^T (every sector of a pencil's system; a limit of infinitely many heads may
        scale rows and columns differently, docs/equations.md §2.10)."""
        def same(table: Mapping[Entry, object]) -> bool:
            return all(table.get((b, a), 0) == v for (a, b), v in table.items())

        return same(self.const) and same(self.wcoef) and same(self.lin)

    def matrix(self) -> sp.Matrix:
        """M as a SymPy matrix in w and the unknowns."""
        k = self.size
        M = sp.zeros(k, k)
        for (a, b), v in self.const.items():
            M[a, b] += v
        for (a, b), v in self.wcoef.items():
            M[a, b] += v * W
        for (a, b), terms in self.lin.items():
            M[a, b] += sp.Add(*[c * g for g, c in terms.items()])
        return M


@dataclass(frozen=True)
class DysonSystem:
    """Unknowns, sectors and read-outs: g_j = sum coeff * (M_sector^{-1})_ab over ``readout[g_j]``."""

    unknowns: tuple[sp.Symbol, ...]
    sectors: tuple[Sector, ...]
    readout: Mapping[sp.Symbol, tuple[tuple[int, int, int, sp.Expr], ...]]
    output: sp.Symbol
    parameters: tuple[sp.Symbol, ...]
    notes: tuple[str, ...] = field(default=())
    entries: Mapping[tuple[int, int, int], sp.Expr] = field(default_factory=dict)

    def unknown_matrix(self, s: int) -> sp.Matrix:
        """M_s^{-1} written with the unknowns (``entries``); other entries get auxiliary symbols K
        (symmetric where M_s is)."""
        sec = self.sectors[s]
        symmetric = sec.symmetric
        G = sp.zeros(sec.size, sec.size)
        for a in range(sec.size):
            for b in range(a if symmetric else 0, sec.size):
                value = self.entries.get((s, a, b))
                if value is None:
                    value = sp.Symbol(f"K^{{({sec.name})}}_{{{sec.labels[a]},{sec.labels[b]}}}")
                G[a, b] = value
                if symmetric:
                    G[b, a] = value
        return G

    def readout_equations(self) -> list[sp.Eq]:
        """g_j = sum c (M^{-1})_ab for the unknowns not already entries of an inverse."""
        eqs = []
        for g in self.unknowns:
            reads = self.readout[g]
            if len(reads) == 1 and reads[0][3] == 1 and self.entries.get(reads[0][:3]) == g:
                continue
            rhs = sp.Add(*[c * self.unknown_matrix(s)[a, b] for s, a, b, c in reads])
            eqs.append(sp.Eq(g, rhs))
        return eqs

    def equations(self) -> list[sp.Eq]:
        """G_s M_s = I per sector (docs/equations.md §2.3), then the read-out equations of the other unknowns."""
        return [
            sp.Eq(sp.MatMul(self.unknown_matrix(s), self.sectors[s].matrix()), sp.eye(sec.size), evaluate=False)
            for s, sec in enumerate(self.sectors)
        ] + self.readout_equations()

    def polynomial_equations(self) -> list[sp.Expr]:
        """Scalar polynomial equations: entries of G_s M_s - I and the read-outs (as lhs - rhs)."""
        eqs: list[sp.Expr] = []
        for s, sec in enumerate(self.sectors):
            P = (self.unknown_matrix(s) * sec.matrix() - sp.eye(sec.size)).applyfunc(sp.expand)
            for a in range(sec.size):
                for b in range(sec.size):
                    if P[a, b] != 0 and P[a, b] not in eqs:
                        eqs.append(P[a, b])
        eqs += [sp.expand(e.lhs - e.rhs) for e in self.readout_equations()]
        return eqs

    def __str__(self) -> str:
        lines = [f"unknowns ({len(self.unknowns)}): {', '.join(map(str, self.unknowns))}", f"m(w) = {self.output}"]
        for s, sec in enumerate(self.sectors):
            lines.append(f"sector {sec.name}: {self.unknown_matrix(s).tolist()} = M^-1 with M =")
            lines.append("  " + str(sec.matrix().tolist()))
        lines.extend(str(e) for e in self.readout_equations())
        lines.extend(self.notes)
        return "\n".join(lines)

    def _latex(self, printer: sp.printing.latex.LatexPrinter) -> str:
        rows = [
            printer._print(self.unknown_matrix(s)) + " = " + printer._print(sec.matrix()) + "^{-1}"
            for s, sec in enumerate(self.sectors)
        ]
        rows += [printer._print(e) for e in self.readout_equations()]
        return r"\begin{gathered}" + r" \\ ".join(rows) + r"\end{gathered}"


def _pair_symbol(names: tuple[str, ...], a: int, b: int) -> sp.Symbol:
    a, b = min(a, b), max(a, b)
    return sp.Symbol(f"g_{{{names[a]},{names[b]}}}")


def dyson_system(pencil: Pencil, ratios: Mapping[Dim, sp.Expr]) -> DysonSystem:
    """The unreduced Dyson system of ``pencil`` (module docstring), one sector per dimension group."""
    blocks = pencil.blocks
    missing = sorted({str(b.dim) for b in blocks} - {str(d) for d in ratios})
    if missing:
        raise ValueError(f"ratios: no size ratio given for dimension(s) {', '.join(missing)}")
    if any(c.diagonal is not None for c in pencil.constants):
        raise ValueError("polynomial: a deterministic diagonal varies along its group; its Dyson equation is the positional "
                         "one (docs/equations.md §2.12), not a system of scalars")
    alpha = {str(d): sp.sympify(v) for d, v in ratios.items()}
    names = tuple(b.name for b in blocks)
    groups: dict[str, list[int]] = {}
    for i, b in enumerate(blocks):
        groups.setdefault(str(b.dim), []).append(i)
    where = {i: (s, members.index(i)) for s, members in enumerate(groups.values()) for i in members}

    const: dict[int, dict[Entry, sp.Expr]] = {s: {} for s in range(len(groups))}
    lin: dict[int, dict[Entry, dict[sp.Symbol, sp.Expr]]] = {s: {} for s in range(len(groups))}

    def add_const(a: int, b: int, v: sp.Expr) -> None:
        s, ia = where[a]
        ib = where[b][1]
        const[s][(ia, ib)] = const[s].get((ia, ib), 0) + v

    def add_lin(a: int, c: int, b: int, bp: int, v: sp.Expr) -> None:
        """eta_ac gains v * g_{b b'}; M = ... - eta, so the sector coefficient is -v."""
        s, ia = where[a]
        ic = where[c][1]
        terms = lin[s].setdefault((ia, ic), {})
        g = _pair_symbol(names, b, bp)
        terms[g] = terms.get(g, 0) - v

    add_const(pencil.source, pencil.source, sp.S.One)
    for c in pencil.constants:
        add_const(c.row, c.col, -c.coeff)
        if c.row != c.col:
            add_const(c.col, c.row, -c.coeff)
    by_matrix: dict[object, list] = {}
    for p in pencil.placements:
        by_matrix.setdefault(p.matrix, []).append(p)
    for X, ps in by_matrix.items():
        a_rows, a_cols = alpha[str(X.rows)], alpha[str(X.cols)]
        for p1 in ps:
            for p2 in ps:
                v = p1.coeff * p2.coeff * X.scale
                add_lin(p1.row, p2.row, p1.col, p2.col, v * a_cols)  # X R X^T pairing
                add_lin(p1.col, p2.col, p1.row, p2.row, v * a_rows)  # X^T R X pairing

    sectors = []
    readout: dict[sp.Symbol, tuple[tuple[int, int, int, sp.Expr], ...]] = {}
    entries: dict[tuple[int, int, int], sp.Expr] = {}
    unknowns: list[sp.Symbol] = []
    for s, (dim, members) in enumerate(groups.items()):
        wc = {(where[pencil.sink][1], where[pencil.sink][1]): sp.S.One} if where[pencil.sink][0] == s else {}
        sectors.append(
            Sector(
                name=dim,
                labels=tuple(names[i] for i in members),
                const={k: v for k, v in const[s].items() if v != 0},
                wcoef=wc,
                lin={k: {g: c for g, c in t.items() if c != 0} for k, t in lin[s].items()},
            )
        )
        for ia, a in enumerate(members):
            for ib in range(ia, len(members)):
                g = _pair_symbol(names, a, members[ib])
                unknowns.append(g)
                readout[g] = ((s, ia, ib, sp.S.One),)
                entries[(s, ia, ib)] = g
    params = set()
    for sec in sectors:
        for v in list(sec.const.values()) + [c for t in sec.lin.values() for c in t.values()]:
            params |= sp.sympify(v).free_symbols
    return DysonSystem(
        unknowns=tuple(unknowns),
        sectors=tuple(sectors),
        readout=readout,
        output=_pair_symbol(names, pencil.sink, pencil.sink),
        parameters=tuple(sorted(params, key=str)),
        entries=entries,
    )
