"""Exact moments: the Dyson system as a formal power series in u = 1/w (docs/solving.md §3.1).

Every unknown of the system (see :mod:`.system`) is a normalised trace of a
block of E (Lambda(w) - L)^{-1}, hence a formal power series in u whose
coefficients count non-crossing pairings of the pencil's Gaussians. The
Dyson map g -> R(g, w) is applied to series truncated after u^K, starting at
g = 0: pairings nested j deep enter at iteration j, and the pencil's inner
blocks are nilpotent (Q = -I + N), so each coefficient is exact after
finitely many iterations; the iteration stops at the first exact fixed point
of the truncated map. Then m(w) = sum_k mu_k u^(k+1) gives the moments.

Rows of a sector that carry w are multiplied by u, so that the sector matrix
M' = D M is a power series with invertible constant term; M^{-1} = M'^{-1} D,
and M'^{-1} is the series X_0 = A_0^{-1}, X_k = -X_0 sum_{j=1..k} A_j X_{k-j}.
Coefficients live in a polynomial ring QQ[generators] of SymPy's domains:
parameters, reciprocals (1/H), radicals and constants (sqrt(3), e,
sqrt(e - 2)) are generators of their own, without relations, so no division
is ever needed; A_0 has a nonzero rational determinant (inner blocks are
unipotent), checked at every iteration.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

import sympy as sp
from sympy.polys.matrices import DomainMatrix

from .system import DysonSystem

__all__ = ["SeriesError", "coefficient_ring", "moment_series", "series_iterates"]

#: Iterations of the truncated Dyson map after which the series is declared divergent.
MAX_ITERATIONS = 400


class SeriesError(ArithmeticError):
    """The truncated Dyson map has no exact fixed point (or the result is not a law)."""


def _generators(exprs: Iterable[sp.Expr]) -> dict[sp.Expr, sp.Symbol]:
    """Symbols, reciprocals, radicals and constants of which ``exprs`` are polynomials."""
    found: dict[sp.Expr, sp.Symbol] = {}

    def visit(e: sp.Expr) -> None:
        if e.is_Rational:
            return
        if e.is_Add or e.is_Mul:
            for a in e.args:
                visit(a)
        elif e.is_Pow and e.exp.is_Integer and e.exp > 0:
            visit(e.base)
        elif e.is_Pow and e.exp.is_Integer:
            if 1 / e.base not in found:  # a reciprocal is a generator of its own: no division needed
                found[1 / e.base] = sp.Symbol(f"_r{len(found)}")
        elif e not in found:
            found[e] = e if e.is_Symbol else sp.Symbol(f"_r{len(found)}")

    for e in exprs:
        visit(sp.sympify(e))
    return found


Series = list  # order + 1 domain elements: coefficients of u^0 .. u^K


def coefficient_ring(system: DysonSystem) -> tuple[sp.Domain, dict[sp.Expr, sp.Symbol]]:
    """QQ[generators] holding every coefficient of ``system``, and the generator of each atom."""
    coeffs = [v for sec in system.sectors for v in sec.const.values()]
    coeffs += [c for sec in system.sectors for t in sec.lin.values() for c in t.values()]
    coeffs += [v for sec in system.sectors for v in sec.wcoef.values()]
    coeffs += [r[3] for reads in system.readout.values() for r in reads]
    gens = _generators(coeffs)
    return (sp.QQ[tuple(gens.values())] if gens else sp.QQ), gens


def series_iterates(system: DysonSystem, order: int,
                    schedule: Sequence[Sequence[sp.Symbol]] | None = None) -> Iterator[dict[sp.Symbol, Series]]:
    """Iterates of the truncated Dyson map (module docstring) from g = 0, as series to u^order
    with coefficients in :func:`coefficient_ring`; the last one is the exact fixed point.

    With a ``schedule`` (groups of unknowns), one iterate updates the groups in turn, each from
    the values the groups before it have just given (the map of a minimal system,
    docs/equations.md §2.7); without, every unknown from the last iterate."""
    K, gens = coefficient_ring(system)

    def conv(e: sp.Expr) -> object:
        return K.from_sympy(sp.sympify(e).xreplace(gens))

    sectors = []
    for sec in system.sectors:
        scaled = {a for (a, _), v in sec.wcoef.items() if v != 0}
        const = {k: conv(v) for k, v in sec.const.items()}
        lin = {k: [(g, conv(c)) for g, c in t.items()] for k, t in sec.lin.items()}
        wco = {k: conv(v) for k, v in sec.wcoef.items()}
        sectors.append((sec.size, scaled, const, lin, wco))
    reads = {g: [(s, a, b, conv(c)) for s, a, b, c in r] for g, r in system.readout.items()}
    zero = [K.zero] * (order + 1)
    g: dict[sp.Symbol, Series] = {u: list(zero) for u in system.unknowns}

    def entry_series(g: dict[sp.Symbol, Series], k: tuple[int, int], const: dict, lin: dict, shift: bool) -> Series:
        out = list(zero)
        if k in const:
            out[0] += const[k]
        for sym, c in lin.get(k, ()):
            for j, v in enumerate(g.get(sym, zero)):
                if v:
                    out[j] += c * v
        return [K.zero] + out[:-1] if shift else out

    def inverse(g: dict[sp.Symbol, Series], size: int, scaled: set, const: dict, lin: dict, wco: dict) -> list:
        """M^{-1} of one sector at ``g``, as series per entry."""
        A = [[[K.zero] * size for _ in range(size)] for _ in range(order + 1)]
        for a in range(size):
            for b in range(size):
                ser = entry_series(g, (a, b), const, lin, a in scaled)
                if a in scaled and (a, b) in wco:
                    ser[0] += wco[(a, b)]
                for j in range(order + 1):
                    A[j][a][b] = ser[j]
        mats = [DomainMatrix(rows, (size, size), K) for rows in A]
        adj, det = mats[0].inv_den()
        if not det or not K.is_unit(det):
            raise SeriesError(f"the sector matrix at w = infinity has determinant {K.to_sympy(det)}, not a nonzero number")
        X0 = adj.mul(K.quo(K.one, det))
        X = [X0]
        for k in range(1, order + 1):
            acc = DomainMatrix.zeros((size, size), K)
            for j in range(1, k + 1):
                if any(any(row) for row in A[j]):
                    acc = acc + mats[j] * X[k - j]
            X.append(-(X0 * acc))
        lists = [x.to_list() for x in X]
        # M^{-1} = M'^{-1} D: columns of scaled rows gain a factor u
        return [[[lists[j][a][b] if b not in scaled else (lists[j - 1][a][b] if j else K.zero)
                  for j in range(order + 1)] for b in range(size)] for a in range(size)]

    steps = schedule if schedule is not None else (system.unknowns,)
    while True:
        new = dict(g)
        for step in steps:
            source = new if schedule is not None else g
            inverses = {s: inverse(source, *sectors[s]) for s in sorted({r[0] for sym in step for r in reads[sym]})}
            for sym in step:
                out = list(zero)
                for s, a, b, c in reads[sym]:
                    for j, v in enumerate(inverses[s][a][b]):
                        if v:
                            out[j] += c * v
                new[sym] = out
        yield new
        if new == g:
            return
        g = new


def moment_series(system: DysonSystem, k: int, schedule: Sequence[Sequence[sp.Symbol]] | None = None) -> list[sp.Expr]:
    """Exact moments mu_1..mu_k of the law of Y^T Y, from m(w) = sum_j mu_j w^-(j+1)
    (the iterates of :func:`series_iterates`, with its ``schedule``)."""
    if k < 1:
        raise ValueError("k: need at least one moment")
    K, gens = coefficient_ring(system)
    back = {s: e for e, s in gens.items() if s != e}
    g: dict[sp.Symbol, Series] = {}
    for it, g in enumerate(series_iterates(system, k + 1, schedule)):
        if it > MAX_ITERATIONS:
            raise SeriesError(f"the truncated Dyson map did not reach a fixed point in {MAX_ITERATIONS} iterations")
    m: Sequence = g[system.output]
    if m[0] != K.zero or m[1] != K.one:
        raise SeriesError(f"m(w) does not start as 1/w: leading coefficients {K.to_sympy(m[0])}, {K.to_sympy(m[1])}")
    return [_tidy(K.to_sympy(v).xreplace(back)) for v in m[2:]]


def _tidy(e: sp.Expr) -> sp.Expr:
    """A canonical readable form: cancelled, then expanded over the radicals."""
    e = sp.cancel(e)
    num, den = sp.fraction(e)
    return sp.expand(num) / sp.expand(den) if den != 1 else sp.expand(num)
