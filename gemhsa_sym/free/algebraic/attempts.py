"""One attempt at P(m, w) for the output of a Dyson system, on a :class:`Job` in a child process
(docs/solving.md §3.2, §3.12): resultants or the series guess.

**Resultants.** By Cramer's rule every unknown read out of a sector inverse is a rational
function of the others: with D_s = det M_s and adj the adjugate,

    g_j * prod_s D_s - sum_{(s, a, b, c)} c * adj(M_s)_ba * prod_{s' != s} D_s' = 0,

one polynomial equation per unknown in the unknowns, w and the parameters
(the product runs over the sectors that g_j reads). The unknowns other than
m = the system's output are eliminated one at a time by resultants
(Res_x(p, q) lies in the ideal of p and q). Every resultant is factored over
the rationals and only the irreducible factors that vanish at the physical
solution are kept; the physical solution is known numerically to 40 digits
at a few points of the upper half plane, so spurious components (det M_s = 0,
other sheets) are dropped at every step. The first equation left in m and w
alone is irreducible and vanishes on the physical branch: it is the minimal
polynomial P of m(w) over Q(w, parameters).

**The series guess** (:mod:`.guessing`): P from the series of m(w) modulo primes, verified, then the
factor of it that is irreducible and vanishes on the physical solution, as for the resultants.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import mpmath
import sympy as sp

from gemhsa_sym.free.algebraic.bounded import deadline_check
from gemhsa_sym.free.algebraic.cramer import cramer_equations
from gemhsa_sym.free.algebraic.guessing import Shape, guess_polynomial
from gemhsa_sym.free.algebraic.polynomials import PolynomialBackend, polynomial_backend
from gemhsa_sym.free.expressions.system import DysonSystem

__all__ = ["CHECK_DPS", "METHODS", "VANISH", "Job", "physical_factor", "run_guess", "run_resultants"]

#: Digits of the physical solutions used to choose factors, and the vanishing threshold.
CHECK_DPS = 40
VANISH = mpmath.mpf(10) ** -20
#: Candidates tried per step: the cheapest by a degree estimate, within a factor
#: LOOKAHEAD_SPREAD of the cheapest; the smallest result wins.
LOOKAHEAD = 3
LOOKAHEAD_SPREAD = 2

def _double_residual(B: PolynomialBackend, p: Any, point: Sequence[complex]) -> float:
    """The relative residual in double precision (a quick test; inf when it overflows)."""
    total, scale = 0j, 0.0
    try:
        for mono, c in B.terms(p):
            t = complex(float(c))
            for i, e in enumerate(mono):
                if e:
                    t *= point[i] ** e
            total += t
            scale += abs(t)
    except OverflowError:
        return float("inf")
    return abs(total) / scale if scale else 0.0


def _relative_residual(B: PolynomialBackend, p: Any, point: Sequence[mpmath.mpc]) -> mpmath.mpf:
    """|p(point)| over the sum of the moduli of its terms (at the caller's precision)."""
    total, scale = mpmath.mpc(0), mpmath.mpf(0)
    powers: dict[tuple[int, int], mpmath.mpc] = {}
    for mono, c in B.terms(p):
        t = mpmath.mpf(c.numerator) / c.denominator
        for i, e in enumerate(mono):
            if e:
                key = (i, e)
                if key not in powers:
                    powers[key] = point[i] ** e
                t *= powers[key]
        total += t
        scale += abs(t)
    return abs(total) / scale if scale else mpmath.mpf(0)


def physical_factor(B: PolynomialBackend, p: Any, points: Sequence[Sequence[mpmath.mpc]], unknowns: set[int]) -> Any | None:
    """The smallest irreducible factor of p in the ``unknowns`` that vanishes at every physical point
    (to VANISH relative, at CHECK_DPS digits, after a screen in double precision), or None."""
    quick = [[complex(v) for v in pt] for pt in points]
    keep = []
    with mpmath.workdps(CHECK_DPS + 10):
        for f in B.factors(p):
            if not B.variables(f) & unknowns:
                continue
            if any(1e-6 < _double_residual(B, f, pt) < float("inf") for pt in quick):
                continue
            if all(_relative_residual(B, f, pt) < VANISH for pt in points):
                keep.append(f)
    return B.normalised(min(keep, key=B.size)) if keep else None


@dataclass(frozen=True)
class Job:
    """What one attempt works on: the system, the rewriting of its coefficients into rational ones,
    the generators (unknowns, w, parameters), the physical points and the back end, with its deadline and, for the
    guess, the shape of Q where it is known."""

    system: DysonSystem
    rewrite_map: Mapping[sp.Expr, sp.Expr]
    gens: Sequence[sp.Symbol]
    points: Sequence[Sequence[mpmath.mpc]]
    backend: str | None
    deadline: float
    #: Q's shape found before for these symbols (the route's prediction), for the series guess
    shape: Shape | None = None

    @property
    def output(self) -> int:
        """The index of m among the generators."""
        return self.system.unknowns.index(self.system.output)


def run_guess(job: Job) -> dict[str, Any]:
    """P by guessing from the modular series (:mod:`.guessing`), then the factor of it that is
    irreducible and vanishes on the physical solution (as for the resultants); the same result
    form as :func:`_run`."""
    B = polynomial_backend(job.backend, job.gens)
    n = len(job.system.unknowns)
    terms = guess_polynomial(job.system, job.rewrite_map, list(job.gens[n + 1:]), deadline_check(job.deadline), job.shape)
    place = [job.output, *range(n, len(job.gens))]  # m, then w and the parameters, where they stand in gens
    p = B.from_terms({_spread(e, place, len(job.gens)): c for e, c in terms.items()})
    P = physical_factor(B, p, job.points, {job.output})
    if P is None:
        raise ArithmeticError("series guess: the guessed polynomial does not vanish at the physical solution")
    return {"terms": B.terms(P), "steps": 0, "backend": B.name}


def _spread(exponents: tuple[int, ...], place: Sequence[int], size: int) -> tuple[int, ...]:
    """Exponents in (m, w, parameters) order placed at their generators' positions ``place``."""
    out = [0] * size
    for k, e in enumerate(exponents):
        out[place[k]] = e
    return tuple(out)


def run_resultants(job: Job) -> dict[str, Any]:
    """The elimination proper (module docstring); returns P as a term dictionary."""
    system, points = job.system, job.points
    B = polynomial_backend(job.backend, job.gens)
    n = len(system.unknowns)
    out = job.output
    unknown_idx = set(range(n))

    def rewrite(e: sp.Expr) -> sp.Expr:
        return sp.expand(sp.sympify(e).xreplace(dict(job.rewrite_map)))

    check_time = deadline_check(job.deadline)

    def physical(p: Any) -> Any | None:
        return physical_factor(B, p, points, unknown_idx)

    def clean(polys: Iterable[Any], known: list[Any]) -> list[Any]:
        found = list(known)
        for p in polys:
            check_time()
            if B.size(p) == 0:
                continue
            f = physical(p)
            if f is None:
                raise ArithmeticError("elimination: a resultant has no factor vanishing at the physical solution")
            if all(f != q for q in found):
                found.append(f)
        return found[len(known):]

    def step(eqs: list[Any], x: int) -> list[Any]:
        having = [p for p in eqs if B.degrees(p)[x] > 0]
        pivot = min(having, key=lambda p: (B.degrees(p)[x], B.size(p)))
        rest = [p for p in eqs if B.degrees(p)[x] == 0]
        new = []
        for q in having:
            if q is not pivot:
                check_time()
                new.append(B.resultant(pivot, q, x))
        return rest + clean(new, rest)

    def estimate(eqs: list[Any], x: int) -> int:
        having = [p for p in eqs if B.degrees(p)[x] > 0]
        pivot = min(having, key=lambda p: (B.degrees(p)[x], B.size(p)))
        return sum(B.degrees(pivot)[x] * B.degrees(q)[x] * (B.size(pivot) + B.size(q)) for q in having if q is not pivot)

    eqs = clean(cramer_equations(system, B, rewrite), [])
    steps = 0
    while True:
        done = [p for p in eqs if B.variables(p) & unknown_idx == {out}]
        if done:
            P = min(done, key=B.size)
            return {"terms": B.terms(P), "steps": steps, "backend": B.name}
        live = sorted({x for p in eqs for x in B.variables(p) & unknown_idx} - {out})
        if not live:
            raise ArithmeticError("elimination: the output dropped out of every equation")
        costs = {x: estimate(eqs, x) for x in live}
        cheapest = min(costs.values())
        ranked = [x for x in sorted(live, key=costs.get)[:LOOKAHEAD] if costs[x] <= LOOKAHEAD_SPREAD * cheapest]
        eqs = min((step(eqs, x) for x in ranked), key=lambda es: sum(B.size(p) for p in es))
        steps += 1


#: How P is found, in the order tried for each set of parameters (docs/solving.md §3.2, §3.12).
METHODS: tuple[tuple[str, Callable[..., dict[str, Any]]], ...] = (("resultants", run_resultants), ("series guess", run_guess))

