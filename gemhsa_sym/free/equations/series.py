"""Exact moments: the Dyson system as a formal power series in u = 1/w (docs/solving.md §3.1).

Every unknown of the system (see :mod:`.system`) is a normalised trace of a
block of E (Lambda(w) - L)^{-1}, hence a formal power series in u whose
coefficients count non-crossing pairings of the pencil's Gaussians. The
Dyson map g -> R(g, w) is applied to series truncated after u^K, starting at
g = 0: pairings nested j deep enter at iteration j, and the pencil's inner
blocks are nilpotent (Q = -I + N), so each coefficient is exact after
finitely many iterations; the iteration stops at the first exact fixed point
of the truncated map. Then m(w) = sum_k mu_k u^(k+1) gives the moments.

The fixed point is found order by order: the coefficients of u^k depend on those of
lower order and, through the nilpotent part, on themselves, so they are iterated
once all lower ones are exact. Then only A_k changes from one iterate to the next,
and only in the sectors whose unknowns changed.

Rows of a sector that carry w are multiplied by u, so that the sector matrix
M' = D M is a power series with invertible constant term; M^{-1} = M'^{-1} D,
and M'^{-1} is the series X_0 = A_0^{-1}, X_k = -X_0 sum_{j=1..k} A_j X_{k-j}.
Coefficients live in a polynomial ring QQ[generators] (python-flint's
multivariate polynomials, :mod:`.series_ring`): parameters, reciprocals (1/H),
radicals and constants (sqrt(3), e, sqrt(e - 2)) are generators of their own,
without relations, so no division is ever needed; A_0 has a nonzero rational
determinant (inner blocks are unipotent), checked at every iteration.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

import sympy as sp

from gemhsa_sym.free.equations.series_ring import Rows, SeriesRing, matadd, matmul, matneg
from gemhsa_sym.free.expressions.system import DysonSystem

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


def coefficient_ring(system: DysonSystem) -> tuple[SeriesRing, dict[sp.Expr, sp.Symbol]]:
    """QQ[generators] holding every coefficient of ``system``, and the generator of each atom."""
    coeffs = [v for sec in system.sectors for v in sec.const.values()]
    coeffs += [c for sec in system.sectors for t in sec.lin.values() for c in t.values()]
    coeffs += [v for sec in system.sectors for v in sec.wcoef.values()]
    coeffs += [r[3] for reads in system.readout.values() for r in reads]
    gens = _generators(coeffs)
    return SeriesRing(tuple(gens.values())), gens


def series_iterates(system: DysonSystem, order: int,
                    schedule: Sequence[Sequence[sp.Symbol]] | None = None) -> Iterator[dict[sp.Symbol, Series]]:
    """Iterates of the truncated Dyson map (module docstring) as series to u^order with coefficients
    in :func:`coefficient_ring`, solved order by order; the last one is the exact fixed point.

    The coefficients of u^k are iterated once those below are exact: then A_j and X_j are fixed for
    j < k, and a sector costs two matrix products, X_k = -X_0 (F_k + A_k X_0) with
    F_k = sum_{j=1..k-1} A_j X_{k-j} computed once per order, and nothing at all when the unknowns
    its A_k reads did not change. One iterate updates the groups of ``schedule`` in turn, each from
    the values the groups before it have just given (for a minimal system its own map,
    docs/equations.md §2.7); without, every unknown from the last iterate."""
    K, gens = coefficient_ring(system)

    def conv(e: sp.Expr) -> object:
        return K.from_sympy(sp.sympify(e).xreplace(gens))

    sectors = []
    for sec in system.sectors:
        scaled = frozenset(a for (a, _), v in sec.wcoef.items() if v != 0)
        const = {k: conv(v) for k, v in sec.const.items()}
        lin = {k: [(g, conv(c)) for g, c in t.items()] for k, t in sec.lin.items()}
        wco = {k: conv(v) for k, v in sec.wcoef.items()}
        sectors.append((sec.size, scaled, const, lin, wco))
    reads = {g: [(s, a, b, conv(c)) for s, a, b, c in r] for g, r in system.readout.items()}
    # the unknowns whose order-k coefficients enter A_k of each sector (its unscaled rows)
    inputs = [sorted({sym for (a, _), terms in lin.items() if a not in scaled for sym, _ in terms}, key=str)
              for _, scaled, _, lin, _ in sectors]
    g: dict[sp.Symbol, Series] = {u: [K.zero] * (order + 1) for u in system.unknowns}
    A: list[list[Rows]] = [[] for _ in sectors]  # exact A_j, j < k, per sector
    X: list[list[Rows]] = [[] for _ in sectors]  # exact X_j, j < k, per sector
    last: dict[int, tuple[tuple, Rows, Rows]] = {}  # key, A_k, X_k

    def coefficient(g: dict[sp.Symbol, Series], s: int, k: int) -> Rows:
        """A_k of sector s: its unscaled rows read g at order k, its scaled rows at order k - 1."""
        size, scaled, const, lin, wco = sectors[s]
        rows = [[K.zero] * size for _ in range(size)]
        for a in range(size):
            j = k - 1 if a in scaled else k
            for b in range(size):
                if j < 0:
                    rows[a][b] = wco.get((a, b), K.zero)
                    continue
                value = const.get((a, b), K.zero) if j == 0 else K.zero
                for sym, c in lin.get((a, b), ()):
                    if g[sym][j]:
                        value = value + c * g[sym][j]
                rows[a][b] = value
        return rows

    def solve(g: dict[sp.Symbol, Series], s: int, k: int, fixed: dict[int, Rows]) -> Rows:
        """X_k of sector s at ``g`` as rows (A_0^{-1} at order 0, else -X_0 (F_k + A_k X_0)), kept with A_k
        in ``last`` and recomputed only when the unknowns it reads have changed."""
        key = (k, *(g[sym][k] for sym in inputs[s]))
        if s in last and last[s][0] == key:
            return last[s][2]
        a_k = coefficient(g, s, k)
        if k == 0:
            x_k, det = K.inverse(a_k)
            if x_k is None:
                raise SeriesError(f"the sector matrix at w = infinity has determinant {det}, not a nonzero number")
        else:
            x_k = matneg(matmul(X[s][0], matadd(fixed[s], matmul(a_k, X[s][0], K.zero)), K.zero))
        last[s] = (key, a_k, x_k)
        return x_k

    def read(sym: sp.Symbol, k: int, g: dict[sp.Symbol, Series], fixed: dict[int, Rows]) -> object:
        """Order k of the read-out of ``sym``: M^{-1} = M'^{-1} D, so scaled columns read X_{k-1}."""
        out = K.zero
        for s, a, b, c in reads[sym]:
            if b in sectors[s][1]:
                v = X[s][k - 1][a][b] if k else K.zero
            else:
                v = solve(g, s, k, fixed)[a][b]
            if v:
                out = out + c * v
        return out

    steps = schedule if schedule is not None else (system.unknowns,)
    for k in range(order + 1):
        fixed = {}
        for s, (size, *_) in enumerate(sectors):
            acc = [[K.zero] * size for _ in range(size)]
            for j in range(1, k):
                acc = matadd(acc, matmul(A[s][j], X[s][k - j], K.zero))
            fixed[s] = acc
        while True:
            new = {sym: list(v) for sym, v in g.items()}
            for step in steps:
                values = {sym: read(sym, k, new, fixed) for sym in step}
                for sym, v in values.items():
                    new[sym][k] = v
            yield new
            done = all(new[sym][k] == g[sym][k] for sym in g)
            g = new
            if done:
                break
        for s in range(len(sectors)):
            solve(g, s, k, fixed)
            A[s].append(last[s][1])
            X[s].append(last[s][2])


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
