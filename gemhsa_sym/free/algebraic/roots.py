"""What the algebraic equation P(m, w) = 0 gives: support edges and closed-form densities (docs/solving.md §3.3).

Support edges are branch points of m(w) on the real axis, so they are real
roots of the discriminant of P in m, or of its leading coefficient (where a
root escapes to infinity, e.g. a hard edge at 0). Not every such root is an
edge: the discriminant also vanishes where two *other* sheets meet, or
inside the support. Each real root is classified by the physical branch,
i.e. by the density just left and right of it (the numeric continuation of
:class:`~.law.SpectralLaw`, passed in as a function): a lower or upper edge where the density turns on
or off, a cusp where it touches zero inside the support, otherwise not an
edge (outside or inside the support). Roots come from the exact discriminant
(factored over Q; symbols standing for irrational constants substituted at
high precision) and carry the requested number of digits.

Where P has degree at most 4 in m its roots are radicals; the density is
-Im r(x)/pi for the root expression r that matches the physical branch on
the support (checked numerically at several points of every interval).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import flint
import mpmath
import numpy as np
import sympy as sp

from gemhsa_sym.free.algebraic.bounded import run_bounded
from gemhsa_sym.free.algebraic.discriminant import discriminant_factors
from gemhsa_sym.free.algebraic.elimination import TIME_LIMIT, Elimination, M
from gemhsa_sym.free.algebraic.polynomial_edges import evaluated_terms
from gemhsa_sym.free.algebraic.polynomials import FlintBackend
from gemhsa_sym.free.expressions.system import W
from gemhsa_sym.free.numeric.results import SUPPORT_THRESHOLD, Atom, Candidate, Edge, EdgeClassification

__all__ = ["atoms_from_polynomial", "discriminant", "discriminant_roots", "classify_edges", "density_closed_form"]

#: Distance of the density probes from a candidate, relative to the law's scale.
PROBE = 1e-7


def _factor_terms(P: sp.Expr, gens: tuple[sp.Symbol, ...]) -> list[list[tuple[tuple[int, ...], Any]]]:
    """The terms of the irreducible factors involving w of disc_m(P) * lc_m(P), each once and monic."""
    B = FlintBackend(gens)
    terms = B.terms(B.from_sympy(P))
    top = max(m[0] for m, _ in terms)
    lead = B.from_terms({(0, *m[1:]): c for m, c in terms if m[0] == top})
    scale = math.lcm(*(c.denominator for _, c in terms))
    disc = [B.from_terms(f) for f in discriminant_factors({m: int(c * scale) for m, c in terms})]
    found: list[Any] = []
    for f in disc + B.factors(lead):
        if B.degrees(f)[1] > 0 and (f := f / f.leading_coefficient()) not in found:
            found.append(f)
    return [B.terms(f) for f in found]


@dataclass(frozen=True)
class _Factors:
    """The irreducible factors involving w of disc_m(P) * lc_m(P), each once and monic, as
    python-flint polynomials in (m, w, *symbolic) of ``backend``."""

    backend: FlintBackend
    factors: tuple[Any, ...]
    symbolic: tuple[sp.Symbol, ...]

    @classmethod
    def of(cls, elimination: Elimination, time_limit: float = TIME_LIMIT) -> _Factors | None:
        """The factors of ``elimination``'s P, or None when they take longer than ``time_limit`` seconds
        (computed in a child process, :func:`.bounded.run_bounded`); a ValueError with the child's error
        where it failed otherwise."""
        P = elimination.polynomial
        if P is None:
            raise ValueError(f"no polynomial: {elimination.reason}")
        gens = (M, W, *elimination.symbolic)
        status, payload = run_bounded(_factor_terms, (P, gens), time_limit)
        if status == "error":
            raise ValueError(f"the discriminant of P failed: {payload}")
        if status != "ok":
            return None
        B = FlintBackend(gens)
        return cls(B, tuple(B.from_terms(dict(terms)) for terms in payload), tuple(elimination.symbolic))

    def expr(self) -> sp.Expr:
        """Their product as a SymPy expression."""
        return sp.Mul(*[self.backend.to_sympy(f) for f in self.factors])

    def real_roots(self, values: Mapping[sp.Symbol, sp.Expr], dps: int) -> list[mpmath.mpf]:
        """Real roots in w of every factor with the symbols' ``values`` substituted, to ``dps`` digits
        (coefficients evaluated from the exact terms in ball arithmetic at 2 dps + 20 digits, roots isolated
        by :func:`_real_roots`)."""
        missing = [str(s) for s in self.symbolic if s not in values]
        if missing:
            raise ValueError(f"parameters: no value given for {', '.join(missing)}")
        work = 2 * dps + 20
        roots: list[mpmath.mpf] = []
        with flint.ctx.workdps(work):
            for factor in self.factors:  # a factor of w and the symbols alone: its terms are (0, j, ...)
                coeffs = [flint.arb(0)] * (self.backend.degrees(factor)[1] + 1)
                for (_, j), c in evaluated_terms(self.backend.terms(factor), [values[s] for s in self.symbolic], work).items():
                    coeffs[j] += c
                roots += _real_roots(coeffs, work)
        with mpmath.workdps(dps):
            return sorted({+r for r in roots})


def _real_roots(coeffs: list[flint.arb], work: int) -> list[mpmath.mpf]:
    """The real roots of sum_k coeffs[k] w^k (ball coefficients good to ``work`` digits, a square-free polynomial)
    at ``work`` digits: isolated with Arb (``acb_poly.roots``, refined to 10^-(work / 2 + 10), at most four times the
    working precision) and counted real where the imaginary part of its ball contains 0 (a non-real root closer than
    that radius to the real axis would count as real, as under any finite precision)."""
    with mpmath.workdps(work):
        if len(coeffs) == 2:
            return [mpmath.mpf((-coeffs[0] / coeffs[1]).mid().str(work, radius=False))]
        found = flint.acb_poly([flint.acb(c) for c in coeffs]).roots(tol=flint.arb(10) ** -(work // 2 + 10),
                                                                      maxprec=4 * flint.ctx.prec)
        return [mpmath.mpf(r.real.mid().str(work, radius=False)) for r in found if r.imag.contains(0)]


def _factors(elimination: Elimination, time_limit: float) -> _Factors:
    """:meth:`_Factors.of`, a ValueError when they do not finish in time."""
    found = _Factors.of(elimination, time_limit)
    if found is None:
        raise ValueError(f"the discriminant of P did not finish within the time limit of {time_limit:g} s")
    return found


def discriminant(elimination: Elimination, time_limit: float = TIME_LIMIT) -> sp.Expr:
    """Square-free product of the irreducible factors of disc_m(P) * lc_m(P) that involve w.

    python-flint computes the discriminant and the factors (within ``time_limit`` seconds); the
    symbols of ``elimination.symbolic`` are kept.
    """
    return _factors(elimination, time_limit).expr()


def discriminant_roots(elimination: Elimination, dps: int = 30, time_limit: float = TIME_LIMIT) -> list[mpmath.mpf]:
    """Real roots of :func:`discriminant` (constants substituted) to ``dps`` digits, increasing."""
    return _factors(elimination, time_limit).real_roots(elimination.values, dps)


#: The physical density of a law on an array of real points.
Density = Callable[[np.ndarray], np.ndarray]


def _density(density: Density, x: float) -> float:
    """The physical density at x."""
    return float(density(np.array([x]))[0])


def classify_edges(density: Density, scale: float, elimination: Elimination, dps: int = 30,
                   time_limit: float = TIME_LIMIT) -> EdgeClassification | None:
    """Classify the real discriminant roots by the physical ``density`` of a law of the given ``scale``
    (its norm bound: the unit of the thresholds; module docstring); None when the discriminant does
    not finish within ``time_limit`` seconds, a ValueError with the reason where it fails."""
    factors = _Factors.of(elimination, time_limit)
    if factors is None:
        return None
    roots = factors.real_roots(elimination.values, dps)
    zero = SUPPORT_THRESHOLD / scale
    candidates: list[Candidate] = []
    edges: list[Edge] = []
    cusps: list[mpmath.mpf] = []
    x_all = np.array([float(r) for r in roots])
    deltas = []
    for k, x in enumerate(x_all):
        gaps = np.abs(np.delete(x_all, k) - x)
        deltas.append(min([PROBE * (scale + abs(x))] + [0.3 * g for g in gaps if g > 0]))
    # every probe at once: left, right, the root itself, and delta / 100 (a hard edge at 0)
    d = np.array(deltas)
    probes = np.concatenate([x_all - d, x_all + d, x_all, d / 100]).reshape(4, -1)
    needed = np.ones_like(probes, dtype=bool)
    needed[2] = x_all != 0
    needed[3] = x_all == 0
    values = np.zeros_like(probes)
    if needed.any():
        values[needed] = density(probes[needed])
    for k, r in enumerate(roots):
        x = float(r)
        left, right, at, near = (float(v) for v in values[:, k])
        if left <= zero < right:
            kind = "lower edge"
            hard = x == 0 and near > 2 * right
            edges.append(Edge(r, "lower", hard=hard, digits=dps, method="discriminant"))
        elif right <= zero < left:
            kind = "upper edge"
            edges.append(Edge(r, "upper", digits=dps, method="discriminant"))
        elif left > zero and right > zero:
            kind = "cusp" if at < 1e-3 * min(left, right) else "inside"
            if kind == "cusp":
                cusps.append(r)
        else:
            kind = "outside"
        candidates.append(Candidate(r, kind, (left, right)))
    gaps_found = tuple((a.location, b.location) for a, b in zip(edges[1::2], edges[2::2]) if a.side == "upper" and b.side == "lower")
    return EdgeClassification(tuple(candidates), tuple(edges), tuple(cusps), gaps_found, factors.expr())


def density_closed_form(density: Density, scale: float, elimination: Elimination, x: sp.Symbol | None = None,
                        points: int = 48) -> sp.Expr | None:
    """The density as a SymPy expression in ``x`` from the radical roots of P (degree <= 4 in m).

    The physical root is continuous, but the radical expressions of Cardano and Ferrari
    have branch cuts, so across a cut the physical root passes from one expression to
    another. On every support interval, ``points`` Chebyshev points find which root
    expression r gives the density as |Im r(x)|/pi (to 1e-9 relative; |.| because on the
    real axis a cut may pick either member of a conjugate pair); where
    the choice changes, the switch point is found by bisection. Returns a Piecewise
    over these pieces (0 outside the support), or None when the degree is above 4 or
    at some point no root expression matches.
    """
    if elimination.polynomial is None or elimination.degree_m is None or elimination.degree_m > 4:
        return None
    x = x if x is not None else sp.Symbol("x")
    P = elimination.specialised()
    roots = sp.roots(sp.Poly(P, M), cubics=True, quartics=True)
    if sum(roots.values()) != elimination.degree_m:
        return None
    candidates = [(sp.lambdify(W, r, "mpmath"), r.subs(W, x)) for r in roots]
    classified = classify_edges(density, scale, elimination, 30)
    if classified is None:
        return None
    edges = list(classified.edges)
    pieces: list[tuple[sp.Expr, sp.Boolean]] = []
    for lo, hi in zip(edges[::2], edges[1::2]):
        a, b = float(lo.location), float(hi.location)
        xs = a + (b - a) * (0.5 - 0.5 * np.cos(np.pi * (np.arange(points) + 0.5) / points))
        want = density(xs)
        largest = float(np.max(want))
        runs: list[tuple[int, sp.Float]] = []  # (candidate, start of its run)
        previous = a
        for v, rho in zip(xs, want):
            if not (runs and _matches(candidates[runs[-1][0]], v, rho, largest)):
                found = next((k for k, c in enumerate(candidates) if _matches(c, v, rho, largest)), None)
                if found is None:
                    return None
                start = sp.Float(lo.location, 30) if not runs else _switch(density, candidates[runs[-1][0]], previous, v, largest)
                runs.append((found, start))
            previous = v
        bounds = [start for _, start in runs] + [sp.Float(hi.location, 30)]
        for (k, _), left, right in zip(runs, bounds, bounds[1:]):
            pieces.append((sp.Abs(sp.im(candidates[k][1], evaluate=False), evaluate=False) / sp.pi, sp.And(x > left, x < right)))
    return sp.Piecewise(*pieces, (sp.S.Zero, True))


def _matches(candidate: tuple[Any, sp.Expr], v: float, rho: float, scale: float) -> bool:
    """Whether |Im r(v)|/pi equals the density rho at v (1e-9 relative, 1e-12 of the largest density)."""
    with mpmath.workdps(30):
        value = abs(float(mpmath.im(candidate[0](mpmath.mpf(float(v)))))) / np.pi
    return abs(value - rho) <= 1e-9 * abs(rho) + 1e-12 * scale


def _switch(density: Density, old: tuple[Any, sp.Expr], left: float, right: float, scale: float) -> sp.Float:
    """The point in (left, right] where ``old`` stops giving the density (bisection to 1e-14)."""
    for _ in range(60):
        if right - left <= 1e-14 * max(abs(right), 1.0):
            break
        mid = (left + right) / 2
        if _matches(old, mid, _density(density, mid), scale):
            left = mid
        else:
            right = mid
    return sp.Float(right, 17)


def atom_masses(elimination: Elimination) -> list[sp.Expr]:
    """Possible masses a of an atom at 0, exact: m(w) ~ a/w as w -> 0 makes the coefficient of the
    lowest power of w in P(a/w, w) vanish; its roots in [0, 1] (0 means no atom)."""
    a = sp.Dummy("a")
    P = elimination.as_poly()  # the lowest terms picked over Q, the parameters' values put in after
    low = min(e[1] - e[0] for e, _ in P.terms())
    Q = sp.Poly(sp.Add(*[c * a ** e[0] * sp.Mul(*[g**k for g, k in zip(P.gens[2:], e[2:])])
                         for e, c in P.terms() if e[1] - e[0] == low]).xreplace(dict(elimination.values)), a)
    exact = sp.roots(Q, filter=None)
    found = [r for r in exact if r.is_real is not False]
    if sum(exact.values()) < Q.degree():  # not all roots in radicals: numeric roots
        with mpmath.workdps(40):
            coefficients = [mpmath.mpf(sp.N(c, 50)) for c in Q.all_coeffs()]
            spread = max(mpmath.mag(c) for c in coefficients if c) - min(mpmath.mag(c) for c in coefficients if c)
            roots = mpmath.polyroots(coefficients, maxsteps=200 + 20 * Q.degree(), extraprec=200 + 2 * spread)
            found = [sp.Float(mpmath.re(r), 30) for r in roots if abs(mpmath.im(r)) < 1e-25]
    return sorted({r for r in found if -1e-25 <= float(sp.N(r)) <= 1 + 1e-25}, key=lambda r: float(sp.N(r)))


def atoms_from_polynomial(elimination: Elimination, stieltjes: Callable[[np.ndarray], np.ndarray], scale: float) -> list[Atom] | None:
    """The atom at zero from P (:func:`atom_masses`): exact, with the physical candidate chosen by
    y m(iy) at y = 1e-9 * scale when there are several; None without P or when that estimate
    cannot tell the candidates apart."""
    if elimination.polynomial is None:
        return None
    masses = atom_masses(elimination)
    if not masses:
        return None
    error = 0.0
    if len(masses) > 1:
        ys = scale * 10.0 ** -np.arange(2, 10)
        estimate = float(np.real(1j * ys[-1] * stieltjes(1j * ys)[-1]))
        values = np.array([float(sp.N(v)) for v in masses])
        order = np.argsort(np.abs(values - estimate))
        error = float(abs(values[order[0]] - estimate))
        if error > abs(values[order[1]] - values[order[0]]) / 4:
            return None
        masses = [masses[order[0]]]
    mass = masses[0]
    if float(sp.N(mass)) == 0:
        return []
    return [Atom(0.0, float(sp.N(mass)), error, mass if mass.is_Rational else None, "polynomial")]
