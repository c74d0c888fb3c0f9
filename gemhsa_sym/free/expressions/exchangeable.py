"""Sums of exchangeable copies: Y = sum over H = G*m heads of a template.

Each Gaussian of the template is either ``head`` (independent per head),
``group`` (shared within each of G groups of m heads) or ``global`` (one for
all). The head-permutation symmetry makes every pair of heads fall into one
of three orbitals: same head (O0, valency 1), same group (O1, m - 1), other
group (O2, (G - 1) m). The pencil of the sum has outer blocks s, t and H
copies of the template's inner blocks; its Dyson solution is constant on
orbitals, so the unknowns are g_oo', g_ob and g^O_bb', whatever H is.

The sector matrix over the H copies lies in the commutative algebra spanned
by the orbital matrices A_O, whose eigenspaces are: constant (multiplicity
1; eigenvalues k_O), constant within groups with zero total (G - 1;
1, m - 1, -m), zero within groups (G (m - 1); 1, -1, 0). The inverse is taken
per eigenspace (a fixed-size matrix each) and the orbital values read back
through the idempotents E = (mult/H) sum_O (lambda_O/k_O) A_O; outer blocks
couple to the constant eigenspace only (Delsarte's association schemes; the
"exchangeable blocks" reduction of docs/equations.md §2.5).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import sympy as sp
from sympy.matrices.expressions import MatrixExpr

from gemhsa_sym.free.expressions.matrices import Dim, Gaussian, gaussians_of
from gemhsa_sym.free.expressions.pencil import Pencil
from gemhsa_sym.free.expressions.system import DysonSystem, Sector

__all__ = ["ExchangeableSum", "LEVELS", "exchangeable_system"]

LEVELS = ("head", "group", "global")
_ORBITS = ("same", "group", "other")


@dataclass(frozen=True)
class ExchangeableSum:
    """Y = sum_{h=1}^{H} template^{(h)}, H = groups * group_size, with sharing ``levels``."""

    template: MatrixExpr
    groups: sp.Expr
    group_size: sp.Expr
    levels: tuple[tuple[Gaussian, str], ...]

    def __post_init__(self) -> None:
        names = {g for g, _ in self.levels}
        for g, lvl in self.levels:
            if lvl not in LEVELS:
                raise ValueError(f"levels: {g} has unknown sharing level {lvl!r}; use one of {LEVELS}")
        missing = set(gaussians_of(self.template)) - names
        if missing:
            raise ValueError(f"levels: no sharing level given for {', '.join(sorted(map(str, missing)))}")

    @property
    def heads(self) -> sp.Expr:
        return sp.sympify(self.groups) * sp.sympify(self.group_size)

    @property
    def rows(self) -> Dim:
        return self.template.rows

    @property
    def cols(self) -> Dim:
        return self.template.cols

    def level(self, g: Gaussian) -> str:
        return dict(self.levels)[g]

    def expand(self, values: Mapping[sp.Symbol, object] | None = None) -> MatrixExpr:
        """The explicit sum with one Gaussian per head/group (needs integer H and G)."""
        G = sp.sympify(self.groups).subs(values or {})
        m = sp.sympify(self.group_size).subs(values or {})
        if not (G.is_Integer and m.is_Integer):
            raise ValueError("heads: the explicit sum needs integer numbers of groups and heads per group")
        terms = []
        for h in range(int(G) * int(m)):
            sub = {}
            for g, lvl in self.levels:
                tag = {"head": f"{h + 1}", "group": f"g{h // int(m) + 1}", "global": None}[lvl]
                if tag is not None:
                    sub[g] = Gaussian(f"{g.name}^{{({tag})}}", g.rows, g.cols, g.scale)
            terms.append(self.template.xreplace(sub))
        return sp.MatAdd(*terms).doit() if len(terms) > 1 else terms[0]

    def __str__(self) -> str:
        return f"Sum_{{h=1..{self.heads}}} [{self.template}]"

    def _latex(self, printer: sp.printing.latex.LatexPrinter) -> str:
        return r"\sum_{h=1}^{" + printer._print(self.heads) + "}" + r"\left(" + printer._print(self.template) + r"\right)"


def _orbit_data(G: sp.Expr, m: sp.Expr) -> tuple[dict[str, sp.Expr], list[tuple[str, sp.Expr, dict[str, sp.Expr]]]]:
    """Valencies k_O and eigenspaces (name, multiplicity, eigenvalue of each A_O)."""
    valency = {"same": sp.S.One, "group": m - 1, "other": (G - 1) * m}
    spaces = [
        ("const", sp.S.One, {"same": sp.S.One, "group": m - 1, "other": (G - 1) * m}),
        ("groups", G - 1, {"same": sp.S.One, "group": m - 1, "other": -m}),
        ("within", G * (m - 1), {"same": sp.S.One, "group": sp.S.NegativeOne, "other": sp.S.Zero}),
    ]
    return valency, spaces


def _relation(level: str) -> tuple[str, ...]:
    """Orbitals (h, h') on which the two copies of a Gaussian of this level are the same matrix."""
    return {"head": ("same",), "group": ("same", "group"), "global": _ORBITS}[level]


def exchangeable_system(model: ExchangeableSum, pencil: Pencil, ratios: Mapping[Dim, sp.Expr], values: Mapping[sp.Symbol, object] | None = None) -> DysonSystem:
    """The Dyson system of the sum, with one copy of the template's unknowns per orbital.

    ``pencil`` linearises the template; its blocks s, t are outer, the others are
    copied per head. Orbitals or eigenspaces that are empty for the given
    ``values`` (H = 1, one group, ...) are left out.
    """
    vals = values or {}
    G, m = sp.sympify(model.groups), sp.sympify(model.group_size)
    H = G * m
    valency, spaces = _orbit_data(G, m)

    def nonzero(e: sp.Expr) -> bool:
        return sp.simplify(sp.sympify(e).subs(vals)) != 0

    orbits = [o for o in _ORBITS if nonzero(valency[o])]
    spaces = [sp_ for sp_ in spaces if nonzero(sp_[1])]
    alpha = {str(d): sp.sympify(v) for d, v in ratios.items()}
    blocks = pencil.blocks
    outer = {pencil.source, pencil.sink}
    names = tuple(b.name for b in blocks)
    groups: dict[str, tuple[list[int], list[int]]] = {}
    for i, b in enumerate(blocks):
        o_list, b_list = groups.setdefault(str(b.dim), ([], []))
        (o_list if i in outer else b_list).append(i)

    def sym(a: int, b: int, orbit: str | None) -> sp.Symbol:
        a, b = min(a, b), max(a, b)
        tag = "" if orbit is None else {"same": "", "group": "^{g}", "other": "^{o}"}[orbit]
        return sp.Symbol(f"g_{{{names[a]},{names[b]}}}{tag}")

    def unknown(a: int, b: int, orbit: str) -> sp.Symbol:
        """The unknown holding G between block a at head h and block b at head h' in ``orbit``."""
        if a in outer and b in outer:
            return sym(a, b, None)
        if a in outer or b in outer:
            return sym(a, b, None)
        return sym(a, b, orbit)

    # eta and constants per target type: ("oo", a, c), ("ob", a, c) with a outer, ("bo", a, c), ("bb", a, c, orbit)
    eta: dict[tuple, dict[sp.Symbol, sp.Expr]] = {}
    const: dict[tuple, sp.Expr] = {}

    def target(a: int, c: int, orbit: str) -> tuple:
        if a in outer and c in outer:
            return ("oo", a, c)
        if a in outer:
            return ("ob", a, c)
        if c in outer:
            return ("bo", a, c)
        return ("bb", a, c, orbit)

    def add(tgt: tuple, g: sp.Symbol, v: sp.Expr) -> None:
        terms = eta.setdefault(tgt, {})
        terms[g] = terms.get(g, 0) + v

    def pair(X: Gaussian, r1: int, c1: int, r2: int, c2: int, v: sp.Expr) -> None:
        """eta(r1, r2) += v * G(c1, c2), summed over the head pairs where both copies are X."""
        rel = [o for o in _relation(model.level(X)) if o in orbits]
        if r1 in outer and r2 in outer:
            # sum over (h1, h2) with (h1, h2) in rel: H k_O pairs per orbital
            for o in rel:
                add(("oo", r1, r2), unknown(c1, c2, o), v * H * valency[o])
        elif r1 in outer or r2 in outer:
            # one head fixed by the non-outer target, the other summed: k_O choices
            for o in rel:
                add(target(r1, r2, "same"), unknown(c1, c2, o), v * valency[o])
        else:
            for o in rel:
                add(("bb", r1, r2, o), unknown(c1, c2, o), v)

    for c in pencil.constants:
        for a, b in {(c.row, c.col), (c.col, c.row)}:
            t = target(a, b, "same")
            const[t] = const.get(t, 0) - c.coeff * (H if t[0] == "oo" else 1)
    for X in gaussians_of(model.template):
        ps = [p for p in pencil.placements if p.matrix == X]
        for p1 in ps:
            for p2 in ps:
                v = p1.coeff * p2.coeff * X.scale
                pair(X, p1.row, p1.col, p2.row, p2.col, v * alpha[str(X.cols)])
                pair(X, p1.col, p1.row, p2.col, p2.row, v * alpha[str(X.rows)])

    sectors: list[Sector] = []
    readout: dict[sp.Symbol, list[tuple[int, int, int, sp.Expr]]] = {}
    entries: dict[tuple[int, int, int], sp.Expr] = {}
    for dim, (o_list, b_list) in groups.items():
        for space, mult, lam in spaces:
            if space != "const" and not b_list:
                continue
            labels = ([names[o] for o in o_list] if space == "const" else []) + [names[b] for b in b_list]
            idx = {blk: k for k, blk in enumerate((o_list if space == "const" else []) + b_list)}
            cst: dict[tuple[int, int], sp.Expr] = {}
            wco: dict[tuple[int, int], sp.Expr] = {}
            lin: dict[tuple[int, int], dict[sp.Symbol, sp.Expr]] = {}

            def put(i: int, j: int, c0: sp.Expr, terms: Mapping[sp.Symbol, sp.Expr], scale: sp.Expr) -> None:
                if c0 != 0:
                    cst[(i, j)] = sp.expand(cst.get((i, j), 0) + scale * c0)
                for g, v in terms.items():
                    entry = lin.setdefault((i, j), {})
                    entry[g] = sp.expand(entry.get(g, 0) - scale * v)

            for a in idx:
                for c in idx:
                    if a in outer and c in outer:
                        t = ("oo", a, c)
                        put(idx[a], idx[c], const.get(t, 0), eta.get(t, {}), 1)
                    elif a in outer:
                        t = ("ob", a, c)
                        put(idx[a], idx[c], const.get(t, 0), eta.get(t, {}), H)
                    elif c in outer:
                        t = ("bo", a, c)
                        put(idx[a], idx[c], const.get(t, 0), eta.get(t, {}), 1)
                    else:
                        for o in orbits:
                            t = ("bb", a, c, o)
                            put(idx[a], idx[c], const.get(t, 0), eta.get(t, {}), lam[o])
            if space == "const":
                if pencil.source in idx:
                    cst[(idx[pencil.source], idx[pencil.source])] = cst.get((idx[pencil.source], idx[pencil.source]), 0) + 1
                if pencil.sink in idx:
                    wco[(idx[pencil.sink], idx[pencil.sink])] = sp.S.One
            s = len(sectors)
            sectors.append(Sector(f"{dim}:{space}", tuple(labels), {k: v for k, v in cst.items() if v != 0}, wco,
                                  {k: {g: c for g, c in t.items() if c != 0} for k, t in lin.items()}))
            for a in idx:
                for c in idx:
                    if idx[a] > idx[c]:
                        continue
                    if space == "const" and (a in outer or c in outer):
                        if a in outer and c in outer:
                            readout.setdefault(sym(a, c, None), []).append((s, idx[a], idx[c], sp.S.One))
                            entries[(s, idx[a], idx[c])] = sym(a, c, None)
                        else:
                            o_blk, b_blk = (a, c) if a in outer else (c, a)
                            readout.setdefault(sym(a, c, None), []).append((s, idx[b_blk], idx[o_blk], sp.S.One))
                        continue
                    for o in orbits:
                        coeff = sp.cancel(mult * lam[o] / (H * valency[o]))
                        if coeff != 0:
                            readout.setdefault(sym(a, c, o), []).append((s, idx[a], idx[c], coeff))
    unknowns = tuple(readout)
    params = set()
    for sec in sectors:
        for v in list(sec.const.values()) + [c for t in sec.lin.values() for c in t.values()]:
            params |= sp.sympify(v).free_symbols
    return DysonSystem(
        unknowns=unknowns,
        sectors=tuple(sectors),
        readout={g: tuple(r) for g, r in readout.items()},
        output=sym(pencil.sink, pencil.sink, None),
        parameters=tuple(sorted(params, key=str)),
        entries=entries,
        notes=(f"exchangeable heads: H = {H} in {G} group(s); orbitals {', '.join(orbits)}",),
    )
