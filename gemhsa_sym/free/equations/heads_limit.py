"""Infinitely many heads: the limit H -> infinity of an exchangeable Dyson system (docs/equations.md §2.10).

The reduced system of a sum of H exchangeable heads (:mod:`.exchangeable`) is rational in H. Its
unknowns do not all stay finite as H grows: a normalised trace over a per-head width d / H can grow
like H, a trace between two different heads falls like 1 / H. The limit is taken in three steps.

1. **Exponents of the unknowns.** Every unknown is a power series in 1/w whose coefficients are
   rational in H (:mod:`.series`); its exponent p_j is the largest degree in H of its first
   coefficients (the parameters other than H at their values). Then g_j = H^(p_j) h_j. Degrees
   are counted in T = sqrt(H), in which every coefficient is rational.
2. **Scaling of the sectors.** Each sector matrix M (affine in w and the unknowns) is scaled to
   M' = H^l M H^r by diagonal powers of H, chosen by linear programmes: every entry of M' stays
   bounded and sum(l + r) is largest, so that the determinant's leading terms (the best matchings
   of the entries' degrees) survive and M' has an invertible limit (the tropical diagonal scaling
   of a matrix); then each read-out term c (M^{-1})_ab = c H^(r_a + l_b) (M'^{-1})_ab, divided by
   H^(p_j), must stay bounded and is made as large as that allows. Read-outs that need different
   scalings of one sector get one copy of it each.
3. **The limit** of every coefficient (the leading coefficients of its numerator and denominator in
   T) gives a Dyson system of the same form without H: sectors affine in w and the h_j, read-outs
   of their inverses. Its sector matrices at w = infinity must be invertible (checked by its moment
   series), and its m(w) must be the limit of the finite-H values: :func:`check_limit` compares it
   with 2 m_{2H}(w) - m_H(w) of the finite system at H = 4096 (Richardson's extrapolation in 1/H;
   the moments are rational in H, so m_H = m + c / H + O(1/H^2)).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
import sympy as sp
from scipy.optimize import linprog

from gemhsa_sym.free.equations.series import SeriesError, coefficient_ring, moment_series, series_iterates
from gemhsa_sym.free.equations.series_ring import SeriesRing
from gemhsa_sym.free.expressions.system import DysonSystem, Sector
from gemhsa_sym.free.numeric.continuation import follow_branch
from gemhsa_sym.free.numeric.results import probe_points, top_of
from gemhsa_sym.free.numeric.systems import DOUBLE, NumericSystem

__all__ = ["CHECK_HEADS", "CHECK_TOL", "HeadsLimit", "LimitError", "check_limit", "heads_limit"]

#: Orders of the series whose coefficients' degrees in H give the exponents of the unknowns.
ORDER = 4
#: The finite numbers of heads whose m(w), extrapolated in 1/H, the limit must reproduce, and the
#: relative difference accepted (the extrapolation errs by O(1/H^2)).
CHECK_HEADS = (2**12, 2**13)
CHECK_TOL = 1e-5


class LimitError(ArithmeticError):
    """The exchangeable system has no limit of the form of a Dyson system as H grows."""


@dataclass(frozen=True)
class HeadsLimit:
    """The limit system and the exponents of its unknowns: g_j = H^(exponents[g_j]) h_j."""

    system: DysonSystem
    exponents: Mapping[sp.Symbol, sp.Rational]


def _describe(exponents: Mapping[sp.Symbol, int]) -> str:
    """The rescaled unknowns in words."""
    scaled = [f"{g} stands for H^{sp.Rational(-p, 2)} {g}" for g, p in exponents.items() if p]
    return "limit H -> oo of the exchangeable system" + (f"; {', '.join(scaled)}" if scaled else "")


#: The square root of H: coefficients hold sqrt(H) (per-head widths d / H under a square root), and
#: every degree is counted in T = sqrt(H), where coefficients are rational.
T = sp.Symbol("T", positive=True)
#: 1/T, a generator of its own in the series' coefficient ring (as reciprocals are, :mod:`.series`).
_INVERSE = sp.Symbol("T_inv", positive=True)


def _laurent(expr: sp.Expr) -> sp.Expr:
    """``expr`` with every negative power T^-k written as T_inv^k."""
    return sp.sympify(expr).replace(lambda x: x.is_Pow and x.base == T and x.exp.is_negative,
                                    lambda x: _INVERSE ** (-x.exp))


def _degree(expr: sp.Expr) -> float:
    """The degree in T of a rational function of T (-inf for 0)."""
    expr = sp.cancel(sp.sympify(expr))
    if expr == 0:
        return -np.inf
    num, den = sp.fraction(expr)
    return sp.Poly(num, T).degree() - sp.Poly(den, T).degree()


def _leading(expr: sp.Expr, shift: int) -> sp.Expr:
    """lim_{T -> oo} T^shift expr for a rational function expr of T whose degree is at most -shift."""
    expr = sp.cancel(sp.sympify(expr))
    if expr == 0:
        return sp.S.Zero
    num, den = (sp.Poly(part, T) for part in sp.fraction(expr))
    degree = num.degree() - den.degree() + shift
    if degree > 0:
        raise LimitError(f"a coefficient grows like H^{sp.Rational(degree, 2)}: {expr.subs(T, sp.sqrt(sp.Symbol('H')))}")
    return sp.S.Zero if degree < 0 else sp.factor(num.LC() / den.LC())


def _series_degree(ring: SeriesRing, c: Any, back: Mapping[sp.Symbol, sp.Expr]) -> float:
    """The degree in T of a series coefficient c, a polynomial in the ring's generators (T, T_inv and
    constants, ``back`` giving each generator's expression): its terms grouped by their net power of T,
    the highest group that does not vanish once the constants take their values (a group is compared
    with 0 by SymPy, so relations between radicals count); -inf for 0. A generator whose expression holds
    T (a reciprocal of a polynomial in T) makes it the degree of the whole rational function instead."""
    if not c:
        return -np.inf
    if any(e.has(T) for g, e in back.items() if g != _INVERSE):
        return _degree(ring.to_sympy(c).xreplace(back))
    at = {g: j for j, g in enumerate(ring.gens)}
    up, down = at.get(T), at.get(_INVERSE)
    groups: dict[int, list[sp.Expr]] = {}
    for exps, coeff in zip(c.monoms(), c.coeffs()):
        net = int(exps[up] if up is not None else 0) - int(exps[down] if down is not None else 0)
        rest = sp.Mul(*(back.get(g, g) ** int(e) for j, (g, e) in enumerate(zip(ring.gens, exps)) if j not in (up, down)))
        groups.setdefault(net, []).append(sp.Rational(int(coeff.p), int(coeff.q)) * rest)
    for net in sorted(groups, reverse=True):
        if sp.expand(sp.Add(*groups[net])) != 0:
            return net
    return -np.inf


def _powers(degrees: list[float]) -> str:
    """Degrees in T as powers of H."""
    return ", ".join(f"H^{sp.Rational(int(d), 2)}" for d in degrees)


def _exponents(system: DysonSystem, values: Mapping[sp.Symbol, sp.Expr]) -> dict[sp.Symbol, int]:
    """p_j (in powers of T): the largest degree of the first :data:`ORDER` series coefficients of each unknown."""
    special = _mapped(system, lambda e: _laurent(sp.expand(sp.sympify(e).subs(values))))
    ring, gens = coefficient_ring(special)
    back = {s: e for e, s in gens.items() if s != e} | {_INVERSE: 1 / T}
    last: dict[sp.Symbol, list] = {}
    for iterate in series_iterates(special, ORDER):
        last = iterate
    moments = [_series_degree(ring, c, back) for c in last[system.output][2:]]
    if max(moments) > 0:
        raise LimitError(f"the law has no limit as H grows: its moments M_1 .. M_{len(moments)} grow like "
                         f"{_powers(moments)}")
    degrees = {}
    for g, series in last.items():
        found = [_series_degree(ring, c, back) for c in series]
        if max(found) == -np.inf:
            raise LimitError(f"{g} vanishes to order {ORDER} in 1/w: its exponent in H is not determined")
        if max(found[:-1]) > -np.inf and found[-1] > max(found[:-1]):
            shown = [d for d in found if d > -np.inf]
            raise LimitError(f"{g} has no power law in H at fixed w: its series coefficients grow like {_powers(shown)}")
        degrees[g] = int(max(found))
    return degrees


def _mapped(system: DysonSystem, f: Callable[[sp.Expr], sp.Expr]) -> DysonSystem:
    """``system`` with f applied to every coefficient."""
    sectors = tuple(Sector(sec.name, sec.labels, {k: f(v) for k, v in sec.const.items()},
                           {k: f(v) for k, v in sec.wcoef.items()},
                           {k: {g: f(c) for g, c in t.items()} for k, t in sec.lin.items()}) for sec in system.sectors)
    readout = {g: tuple((s, a, b, f(c)) for s, a, b, c in reads) for g, reads in system.readout.items()}
    return DysonSystem(system.unknowns, sectors, readout, system.output, system.parameters, system.notes, system.entries)


def _lp(objective: np.ndarray, rows: list[np.ndarray], rhs: list[float]) -> np.ndarray | None:
    """argmin objective . x subject to rows . x <= rhs, or None where infeasible."""
    result = linprog(objective, A_ub=np.array(rows), b_ub=np.array(rhs), bounds=[(-64, 64)] * len(objective),
                     method="highs")
    return result.x if result.status == 0 else None


Scaling = tuple[tuple[Fraction, ...], tuple[Fraction, ...]]


def _constraints(sec: Sector, p: Mapping[sp.Symbol, int]) -> tuple[list[np.ndarray], list[float]]:
    """l_a + r_b <= -(degree of M_ab in T), with the unknowns' exponents; variables (l, r)."""
    rows, rhs = [], []
    for (a, b) in sorted({*sec.const, *sec.wcoef, *sec.lin}):
        terms = [_degree(sec.const.get((a, b), 0)), _degree(sec.wcoef.get((a, b), 0))]
        terms += [_degree(c) + p[g] for g, c in sec.lin.get((a, b), {}).items()]
        if max(terms) > -np.inf:
            rows.append(_pair(sec.size, a, sec.size + b)), rhs.append(-float(max(terms)))
    return rows, rhs


def _pair(k: int, i: int, j: int) -> np.ndarray:
    """The row of x_i + x_j over the 2k variables (l, r)."""
    row = np.zeros(2 * k)
    row[i] += 1
    row[j] += 1
    return row


def _scalings(system: DysonSystem, p: Mapping[sp.Symbol, int]) -> dict[tuple[int, int, int, sp.Symbol], Scaling]:
    """For every read-out term (sector s, entry (a, b), unknown g) a scaling M' = H^l M H^r of sector s
    (module docstring, step 2) under which the term is bounded and as large as it can be; terms
    share a scaling where one serves."""
    chosen: dict[tuple[int, int, int, sp.Symbol], Scaling] = {}
    for s, sec in enumerate(system.sectors):
        k = sec.size
        rows, rhs = _constraints(sec, p)
        best = _lp(-np.ones(2 * k), rows, rhs)  # the matching: sum of l + r largest
        if best is None:
            raise LimitError(f"sector {sec.name}: no bounded scaling by powers of H")
        rows.append(-np.ones(2 * k)), rhs.append(-float(np.sum(best)) + 1e-9)
        copies: list[Scaling] = []
        for g, entries in system.readout.items():
            for t, a, b, c in entries:
                if t != s:
                    continue
                pair = _pair(k, k + a, b)  # K_ab = H^(r_a + l_b) K'_ab
                x = _lp(-pair, [*rows, pair], [*rhs, p[g] - _degree(c)])
                if x is None:
                    raise LimitError(f"{g}: its read-out from sector {sec.name} has no bounded limit")
                reach = float(x[k + a] + x[b])
                fit = [d for d in copies if abs(float(d[1][a] + d[0][b]) - reach) < 1e-9]
                if not fit:
                    x = x + np.r_[np.full(k, -x[:k].max()), np.full(k, x[:k].max())]  # gauge l - c, r + c: max l = 0
                    exact = tuple(Fraction(v).limit_denominator(2) for v in x)
                    if any(abs(float(d) - v) > 1e-6 for d, v in zip(exact, x)):
                        raise LimitError(f"sector {sec.name}: the scaling by powers of sqrt(H) is not half-integral")
                    copies.append((exact[:k], exact[k:]))
                    fit = [copies[-1]]
                chosen[(s, a, b, g)] = fit[0]
    return chosen


def heads_limit(system: DysonSystem, H: sp.Symbol, values: Mapping[sp.Symbol, sp.Expr]) -> HeadsLimit:
    """The limit H -> oo of ``system`` (module docstring); ``values`` give the other parameters
    where the exponents are read; the limit keeps them symbolic. LimitError where no limit of
    this form exists."""
    if H not in system.parameters:
        raise LimitError(f"the system does not depend on {H}")
    system = _mapped(system, lambda e: sp.sympify(e).subs(H, T**2))
    p = _exponents(system, {k: v for k, v in values.items() if k != H})
    if p[system.output] != 0:
        raise LimitError(f"m(w) grows like {_powers([p[system.output]])}: the law has no limit")
    chosen = _scalings(system, p)
    copies: dict[tuple[int, Scaling], int] = {}  # (sector, scaling) -> index of its limit sector
    sectors: list[Sector] = []
    for (s, _, _, _), (l, r) in chosen.items():
        if (s, (l, r)) in copies:
            continue
        sec = system.sectors[s]
        shift = {(a, b): l[a] + r[b] for a in range(sec.size) for b in range(sec.size)}
        const = {e: v for e, c in sec.const.items() if (v := _leading(c, shift[e])) != 0}
        wcoef = {e: v for e, c in sec.wcoef.items() if (v := _leading(c, shift[e])) != 0}
        lin = {}
        for e, terms in sec.lin.items():
            kept = {g: v for g, c in terms.items() if (v := _leading(c * T ** p[g], shift[e])) != 0}
            if kept:
                lin[e] = kept
        twin = sum(1 for t, _ in copies if t == s)
        copies[(s, (l, r))] = len(sectors)
        sectors.append(Sector(sec.name + "'" * twin, sec.labels, const, wcoef, lin))
    readout = {}
    for g, entries in system.readout.items():
        kept = []
        for s, a, b, c in entries:
            l, r = chosen[(s, a, b, g)]
            if (v := _leading(c, r[a] + l[b] - p[g])) != 0:
                kept.append((copies[(s, (l, r))], a, b, v))
        if not kept:
            raise LimitError(f"every read-out of {g} vanishes in the limit")
        readout[g] = tuple(kept)
    entries = {r[:3]: g for g, reads in readout.items() for r in reads if len(reads) == 1 and r[3] == 1}
    params = {x for sec in sectors for v in [*sec.const.values(), *(c for t in sec.lin.values() for c in t.values())]
              for x in sp.sympify(v).free_symbols}
    limit = HeadsLimit(DysonSystem(system.unknowns, tuple(sectors), readout, system.output,
                                   tuple(sorted(params, key=str)), (_describe(p),), entries),
                       {g: sp.Rational(v, 2) for g, v in p.items()})
    try:
        for _ in series_iterates(limit.system, 1):
            pass
    except SeriesError as exc:
        raise LimitError(f"the limit system is singular at w = infinity: {exc}") from None
    return limit


def check_limit(limit: DysonSystem, finite: DysonSystem, H: sp.Symbol, values: Mapping[sp.Symbol, sp.Expr],
                scale: float) -> float:
    """The largest relative difference, at three points at the law's own size sqrt(mu_2), between the limit's
    m(w) and the extrapolation from :data:`CHECK_HEADS` heads of the finite system (module docstring);
    LimitError above :data:`CHECK_TOL` or where a branch fails."""
    unit = float(np.sqrt(float(sp.sympify(moment_series(limit, 2)[1]).subs(values))))
    w = probe_points(unit, 3)
    floor = np.full(w.shape, 1e-13 * scale)

    def m(system: DysonSystem, at: Mapping[sp.Symbol, sp.Expr]) -> np.ndarray:
        branch = follow_branch(NumericSystem.build(system, at, DOUBLE), w, top=top_of(scale), floor=floor)
        if not np.all(branch.ok):
            raise LimitError(f"the check of the limit lost the physical branch at w = {w[~branch.ok]}")
        return branch.m

    small, large = (m(finite, {**values, H: sp.Integer(h)}) for h in CHECK_HEADS)
    expected = 2 * large - small
    error = float(np.max(np.abs(m(limit, values) - expected) / (1 + np.abs(expected))))
    if error > CHECK_TOL:
        raise LimitError(f"the limit's m(w) differs from the extrapolation of {CHECK_HEADS} heads by {error:.2e} "
                         f"(relative; at most {CHECK_TOL:g} accepted)")
    return error
