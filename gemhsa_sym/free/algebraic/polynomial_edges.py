"""Support edges refined on P(m, w) = 0: Newton's method on P = dP/dm = 0 from the folds (docs/solving.md §3.3).

A soft edge x* is a branch point of m(w): P(m*, x*) = 0 and dP/dm(m*, x*) = 0, so (m*, x*) solves two
polynomial equations, and its Jacobian [[P_m, P_w], [P_mm, P_mw]] has determinant -P_w P_mm there, nonzero
at a square-root edge. Newton's method on that system, started from the fold of the continuation, converges
quadratically to a root of disc_m P; it needs no discriminant, whose size makes it the slow part of the
complete classification. A hard edge at 0 is a root of lc_m P (m escapes to infinity), checked on the exact
terms. Unlike the classification of every real root of the discriminant, this finds no cusp and no edge the
folds missed.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from fractions import Fraction

import flint
import mpmath
import numpy as np
import sympy as sp

from gemhsa_sym.free.algebraic.elimination import Elimination, M
from gemhsa_sym.free.algebraic.polynomials import FlintBackend
from gemhsa_sym.free.expressions.system import W
from gemhsa_sym.free.numeric.results import Edge

__all__ = ["evaluated_terms", "polynomial_edges"]

#: Newton steps before an edge is declared not a simple solution of P = dP/dm = 0.
MAX_STEPS = 60


def evaluated_terms(terms: Sequence[tuple[tuple[int, ...], Fraction]], symbols: Sequence[sp.Expr], work: int) -> dict[tuple[int, int], flint.arb]:
    """sum_e c_e m^e0 w^e1 s^e2 ... with the symbols s replaced by ``symbols``' values: the coefficient ball of
    every m^i w^j, at ``work`` digits (Arb; the caller sets flint's precision)."""
    at = [flint.arb(str(sp.N(v, work))) for v in symbols]
    out: dict[tuple[int, int], flint.arb] = {}
    for exps, c in terms:
        term = flint.arb(flint.fmpq(c.numerator, c.denominator))
        for v, e in zip(at, exps[2:]):
            term *= v**e
        out[exps[:2]] = out.get(exps[:2], flint.arb(0)) + term
    return out


def _table(elimination: Elimination, work: int) -> tuple[list[list[mpmath.mpf]], bool]:
    """Coefficients c[i][j] of m^i w^j of P with the constants substituted, at ``work`` digits, and whether
    lc_m P vanishes at w = 0 (decided on the exact terms)."""
    P = elimination.polynomial
    if P is None:
        raise ValueError(f"no polynomial: {elimination.reason}")
    missing = [str(s) for s in elimination.symbolic if s not in elimination.values]
    if missing:
        raise ValueError(f"parameters: no value given for {', '.join(missing)}")
    backend = FlintBackend((M, W, *elimination.symbolic))
    terms = backend.terms(backend.from_sympy(P))
    top = max(e[0] for e, _ in terms)
    lead_vanishes_at_0 = all(e[1] > 0 for e, _ in terms if e[0] == top)
    with flint.ctx.workdps(work):
        values = evaluated_terms(terms, [elimination.values[s] for s in elimination.symbolic], work)
        degree_w = max(j for _, j in values)
        with mpmath.workdps(work):
            table = [[mpmath.mpf(0)] * (degree_w + 1) for _ in range(top + 1)]
            for (i, j), c in values.items():
                table[i][j] = mpmath.mpf(c.mid().str(work, radius=False))
    return table, lead_vanishes_at_0


def _derivatives(table: list[list[mpmath.mpf]], m: mpmath.mpf, x: mpmath.mpf) -> tuple[mpmath.mpf, ...]:
    """P, P_m, P_w, P_mm and P_mw at (m, x) (Horner in w per power of m, then in m)."""
    rows = []
    for coeffs in table:
        v = dv = mpmath.mpf(0)
        for c in reversed(coeffs):
            dv = dv * x + v
            v = v * x + c
        rows.append((v, dv))
    p = pm = pmm = pw = pmw = mpmath.mpf(0)
    for v, dv in reversed(rows):
        pmm = pmm * m + 2 * pm
        pm = pm * m + p
        p = p * m + v
        pmw = pmw * m + pw
        pw = pw * m + dv
    return p, pm, pw, pmm, pmw


def _newton(table: list[list[mpmath.mpf]], m: mpmath.mpf, x: mpmath.mpf, scale: float) -> tuple[mpmath.mpf, mpmath.mpf]:
    """The solution of P = P_m = 0 near (m, x) at the working precision; ValueError when Newton's method does not
    converge quadratically to a simple solution within :data:`MAX_STEPS` steps."""
    eps = mpmath.mpf(10) ** (-mpmath.mp.dps + 5)
    previous = mpmath.inf
    for _ in range(MAX_STEPS):
        p, pm, pw, pmm, pmw = _derivatives(table, m, x)
        det = pm * pmw - pw * pmm
        if det == 0:
            break
        dm, dx = (pmw * p - pw * pm) / det, (pm * pm - pmm * p) / det
        m, x = m - dm, x - dx
        size = max(abs(dx) / (scale + abs(x)), abs(dm) / (1 + abs(m)))
        if size <= eps:
            return m, x
        if size > previous and size > mpmath.mpf(10) ** (-mpmath.mp.dps // 2):
            break
        previous = size
    raise ValueError(f"Newton's method on P = dP/dm = 0 did not converge from x = {mpmath.nstr(x, 17)}")


#: The Stieltjes transform m(w) of the law at complex points (double precision).
Stieltjes = Callable[[np.ndarray], np.ndarray]


def polynomial_edges(folds: Sequence[Edge], stieltjes: Stieltjes, scale: float, elimination: Elimination, dps: int) -> list[Edge]:
    """The ``folds`` refined on P (module docstring) to ``dps`` digits, each checked to agree with its fold to
    the fold's digits; a hard edge at 0 is kept where lc_m P vanishes at 0. ValueError for an edge that is not a
    simple solution of P = dP/dm = 0 or disagrees with its fold."""
    work = dps + 20
    table, lead_vanishes_at_0 = _table(elimination, work)
    found: list[Edge] = []
    with mpmath.workdps(work):
        for edge in folds:
            if edge.location == 0 and edge.hard:
                if not lead_vanishes_at_0:
                    raise ValueError("the hard edge at 0 is not a root of the leading coefficient of P in m")
                found.append(dataclasses.replace(edge, digits=dps, method="polynomial"))
                continue
            x0 = mpmath.mpf(edge.location)
            m0 = complex(stieltjes(np.array([float(x0) + 1e-14j * scale]))[0])
            m, x = _newton(table, mpmath.mpf(m0.real), x0, scale)
            agree = mpmath.mpf(10) ** (-min(edge.digits, dps) + 3) * (scale + abs(x))
            if abs(x - x0) > agree:
                raise ValueError(f"the edge at {mpmath.nstr(x0, 17)}: P = dP/dm = 0 gives {mpmath.nstr(x, 17)} (m = "
                                 f"{mpmath.nstr(m, 17)}), not the fold")
            found.append(dataclasses.replace(edge, location=+x, refined=True, digits=dps, method="polynomial"))
    with mpmath.workdps(dps):
        return [dataclasses.replace(e, location=+mpmath.mpf(e.location)) for e in found]

