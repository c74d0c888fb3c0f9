"""One polynomial equation P(m, w) = 0 for the Stieltjes transform of a law (docs/solving.md §3.2, §3.12).

P is the minimal polynomial of m(w) over Q(w, parameters), found by one of the attempts of
:mod:`.attempts` (resultants of the Cramer equations, or the series of m(w) modulo primes guessed and
verified), each in a child process stopped at the time limit.

Exact arithmetic needs rational coefficients: irrational numbers in the
system (e.g. sigma^2 = e - 2 of softmax at beta = 1) become symbols, named
by the caller where it knows them (``constants``), and stay symbolic in P.
Two plans: the parameters symbolic, then at their values. The route
(:func:`_route`) orders the attempts by what is cheap to know first: the
series modulo a prime gives P's degree in m in about a second, and where it
is above :data:`RESULTANT_DEGREE`, beyond which resultants have not finished
within the time limit, every plan's series guess comes before any
resultants; otherwise each plan's resultants come first, then its guess. The
result says which attempt found P and at which plan.

python-flint's multivariate polynomials over Q (``fmpq_mpoly``: resultant,
factor) are the default back end; SymPy's ``resultant`` and ``factor_list``
are the reference one (much slower); see :mod:`.polynomials`, :mod:`.cramer`
and :mod:`.constants`. :func:`adopted` takes a P found before (a record of
the law) and checks it on the physical solution.

The polynomial is written in the symbols :data:`M` (m, the Stieltjes
transform m(w) = (1/q) tr (w - Y^T Y)^{-1} ~ 1/w) and :data:`~.system.W` (w).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import mpmath
import sympy as sp

from gemhsa_sym.free.algebraic.attempts import CHECK_DPS, METHODS, VANISH, Job
from gemhsa_sym.free.algebraic.bounded import run_bounded
from gemhsa_sym.free.algebraic.constants import abstract_constants
from gemhsa_sym.free.algebraic.guessing import Shape, guessable, predicted_shape
from gemhsa_sym.free.algebraic.polynomials import BACKENDS
from gemhsa_sym.free.expressions.system import DysonSystem, W
from gemhsa_sym.progress import note

__all__ = ["M", "Elimination", "abstract_constants", "adopted", "available_backends", "eliminate"]

#: The Stieltjes transform m(w) in P(m, w).
M = sp.Symbol("m")
#: Default time limit of one elimination attempt, in seconds.
TIME_LIMIT = 20.0
#: The route (:func:`_route`): above this degree of P in m the series guess goes first (resultants finished within
#: 1.2 s for every preset's P of degree 20 and within 20 s for none of degree 26 or more), and the seconds the
#: prediction may take.
RESULTANT_DEGREE = 24
PREDICT_LIMIT = 10.0
#: The highest degree in m the prediction looks for (above it, resultants are hopeless too).
PREDICT_DEGREE = 64
#: The most unknowns of a reduced system whose elimination is attempted unless asked (``symbolic``): P was found for
#: every preset, with 24 unknowns at most, and for none with 35 or more (a two-level token covariance); the route's
#: prediction alone took over 10 s at 217 (sixteen levels).
MAX_UNKNOWNS = 64


@dataclass(frozen=True)
class Elimination:
    """The result of :func:`eliminate`.

    ``polynomial`` is P(m, w) (a SymPy expression in :data:`M`, W and the
    symbols of ``symbolic``), irreducible over Q(w, symbolic) with coprime
    integer coefficients, or None with ``reason``. ``values`` gives every
    symbol of ``symbolic`` its exact value in the law (irrational constants
    included); ``substituted`` lists parameters replaced by their values
    before eliminating (the fallback after a time-out); ``constants`` the
    symbols that stand for irrational numbers; ``method`` how P was found:
    "resultants" (it lies in the ideal of the system) or "series guess"
    (found from the series modulo primes and verified, docs/solving.md §3.12).
    """

    polynomial: sp.Expr | None
    reason: str | None
    degree_m: int | None
    degree_w: int | None
    symbolic: tuple[sp.Symbol, ...]
    values: Mapping[sp.Symbol, sp.Expr]
    substituted: Mapping[sp.Symbol, sp.Expr]
    constants: Mapping[sp.Symbol, sp.Expr]
    backend: str
    seconds: float
    steps: int = 0
    attempts: tuple[str, ...] = field(default=())
    method: str = "resultants"
    #: P as a Poly over Q in m, w and the symbols it contains, where it was built as one (:meth:`as_poly`)
    poly: sp.Poly | None = field(default=None, compare=False, repr=False)

    def as_poly(self) -> sp.Poly:
        """P as a Poly over Q in m, w and the symbols it contains, sorted by name (kept from the elimination: converting
        a P of degree 44 from its expression costs seconds)."""
        if self.polynomial is None:
            raise ValueError(f"no polynomial: {self.reason}")
        return self.poly or sp.Poly(self.polynomial, M, W, *sorted(self.polynomial.free_symbols - {M, W}, key=str), domain=sp.QQ)

    def specialised(self) -> sp.Expr:
        """P with every symbol other than m and w replaced by its exact value."""
        if self.polynomial is None:
            raise ValueError(f"no polynomial: {self.reason}")
        return self.polynomial.xreplace(dict(self.values))


def available_backends() -> tuple[str, ...]:
    """The polynomial back ends, the default first."""
    return BACKENDS


# ---- elimination ------------------------------------------------------------------------


def _coefficients(system: DysonSystem) -> list[sp.Expr]:
    """Every coefficient of the system's sectors and read-outs."""
    exprs = [v for sec in system.sectors for v in list(sec.const.values()) + [c for t in sec.lin.values() for c in t.values()]]
    return [sp.sympify(e) for e in exprs + [c for reads in system.readout.values() for *_, c in reads]]


def _parameters(system: DysonSystem) -> list[sp.Symbol]:
    """The parameters of the system's coefficients, sorted by name."""
    return sorted(set().union(*[e.free_symbols for e in _coefficients(system)]) - {W} - set(system.unknowns), key=str)


def _rational_form(system: DysonSystem, values: Mapping[sp.Symbol, sp.Expr], plan: Mapping[sp.Symbol, sp.Expr],
                   constants: Mapping[sp.Symbol, sp.Expr] | None) -> tuple[dict[sp.Expr, sp.Expr], list[sp.Symbol],
                                                                         dict[sp.Symbol, sp.Expr], dict[sp.Symbol, sp.Expr]]:
    """The coefficients with the parameters of ``plan`` substituted and irrational numbers named (:mod:`.constants`): the
    rewriting, the symbols that stay (sorted by name), the exact value of each, and the named constants."""
    exprs = [e.xreplace(plan) for e in _coefficients(system)]
    atom_map, consts = abstract_constants(exprs, constants)
    rewrite_map = {**{p: v.xreplace(atom_map) for p, v in plan.items()}, **atom_map}
    kept = sorted({s for e in exprs for s in e.xreplace(rewrite_map).free_symbols} - {W} - set(system.unknowns), key=str)
    all_values = {**{p: sp.sympify(values[p]) for p in kept if p in values}, **consts}
    missing = [str(p) for p in kept if p not in all_values]
    if missing:
        raise ValueError(f"values: no value for parameter(s) {', '.join(missing)}")
    return rewrite_map, kept, all_values, consts


def _as_poly(terms: Sequence[tuple[Sequence[int], Any]], system: DysonSystem, kept: Sequence[sp.Symbol]) -> sp.Poly:
    """P from an attempt's terms (exponents of the generators: unknowns, w, ``kept``; fractions) as a Poly over Q in m,
    w and the symbols of ``kept`` that occur."""
    n = len(system.unknowns)
    index = [system.unknowns.index(system.output), n, *range(n + 1, n + 1 + len(kept))]
    raw = {tuple(int(m[i]) for i in index): sp.Rational(c.numerator, c.denominator) for m, c in terms}
    present = [k for k in range(len(kept)) if any(e[2 + k] for e in raw)]
    return sp.Poly.from_dict({(e[0], e[1], *[e[2 + k] for k in present]): c for e, c in raw.items()},
                             M, W, *[kept[k] for k in present], domain=sp.QQ)


def _points(solutions: Sequence[tuple[complex | mpmath.mpc, Sequence[mpmath.mpc]]], kept: Sequence[sp.Symbol],
            all_values: Mapping[sp.Symbol, sp.Expr]) -> list[list[mpmath.mpc]]:
    """The physical solutions as points (unknowns, w, the kept symbols' values), at CHECK_DPS + 10 digits."""
    with mpmath.workdps(CHECK_DPS + 10):
        nums = [mpmath.mpmathify(sp.N(all_values[p], CHECK_DPS + 10)) for p in kept]
        return [[mpmath.mpmathify(v) for v in g] + [mpmath.mpmathify(w)] + nums for w, g in solutions]



def _prediction(system: DysonSystem, forms: Sequence[tuple[Any, ...]]) -> tuple[int, bool, Shape | None]:
    """The first plan whose symbols the series guess takes (else the last, every parameter at its value), whether the
    guess takes it, and the shape of Q the series shows there (:func:`~.guessing.predicted_shape`, up to degree
    PREDICT_DEGREE)."""
    k = next((k for k, (rewrite, kept, *_) in enumerate(forms) if guessable(system, rewrite, kept)), None)
    taken = k is not None
    k = len(forms) - 1 if k is None else k
    return k, taken, predicted_shape(system, forms[k][0], forms[k][1], PREDICT_DEGREE)


def _route(system: DysonSystem, plans: Sequence[Mapping[sp.Symbol, sp.Expr]], forms: Sequence[tuple[Any, ...]],
           time_limit: float) -> tuple[list[tuple[int, str]], str, tuple[int, Shape] | None]:
    """The attempts in order, (plan index, method), and what chose them (docs/solving.md §3.2): where the series of m(w)
    modulo a prime says P has degree above RESULTANT_DEGREE in m, every plan's series guess before any resultants, and
    above PREDICT_DEGREE the guesses alone, of the plans the guess takes (none where it takes no plan: their symbols
    are more than it handles); otherwise, or where the series says nothing within PREDICT_LIMIT seconds, each plan's
    resultants, then its guess. Last, the plan and shape of Q the prediction found, for that plan's guess."""
    limit = min(PREDICT_LIMIT, time_limit)
    status, found = run_bounded(_prediction, (system, forms), limit)
    steps = [(k, method) for k in range(len(plans)) for method, _ in METHODS]
    if status != "ok":
        return steps, "the series predicted no degree" + (f" ({found})" if status == "error" else f" within {limit:g} s"), None
    k, taken, shape = found
    shared = None if shape is None else (k, shape)
    if shape is not None and shape.a <= RESULTANT_DEGREE:
        return steps, f"the series predicts degree {shape.a} in m: resultants first", shared
    guesses = [step for step in steps if step[1] == "series guess"]
    if shape is None:
        above = f"the series predicts a degree above {PREDICT_DEGREE} in m (resultants finish only up to about {RESULTANT_DEGREE})"
        if not taken:
            return [], (f"{above}, and the series guess takes none of the plans: with the parameters symbolic or at their "
                        "values, more symbols and irrational constants remain than it handles (one, or two with a "
                        "scaling symmetry)"), None
        return [step for step in guesses if step[0] >= k], (
            f"{above}: the series guess only, of the plans whose symbols it takes"), None
    return guesses + [step for step in steps if step not in guesses], (
        f"the series predicts degree {shape.a} in m (resultants finish only up to about {RESULTANT_DEGREE}): "
        "the series guess first, symbolic then at the parameters' values, resultants last"), shared


def eliminate(
    system: DysonSystem,
    values: Mapping[sp.Symbol, sp.Expr],
    solutions: Callable[[], Sequence[tuple[complex | mpmath.mpc, Sequence[mpmath.mpc]]]],
    time_limit: float = TIME_LIMIT,
    backend: str | None = None,
    constants: Mapping[sp.Symbol, sp.Expr] | None = None,
    symbolic: bool = False,
) -> Elimination:
    """P(m, w) = 0 for the output of ``system`` (module docstring).

    ``values`` gives the law's parameter values, ``solutions`` computes the physical
    solution (w, unknowns in ``system.unknowns`` order, about 40 digits) at a
    few generic points (called once, before the first attempt), ``constants`` names for irrational numbers that may
    appear. Plans: the parameters symbolic, then at their values; methods:
    resultants and the series guess; :func:`_route` orders the attempts by the
    degree the series predicts, or with ``symbolic`` every attempt of the
    symbolic plan comes first. ``time_limit`` bounds each attempt. A system of more than :data:`MAX_UNKNOWNS`
    unknowns is not tried unless ``symbolic``.
    """
    start = time.monotonic()
    B_name = backend or available_backends()[0]
    if not symbolic and len(system.unknowns) > MAX_UNKNOWNS:
        reason = (f"not attempted: the reduced system has {len(system.unknowns)} unknowns, more than the {MAX_UNKNOWNS} "
                  "up to which it is tried unless asked (derive --symbolic)")
        return Elimination(None, reason, None, None, (), {}, {}, {}, B_name, time.monotonic() - start, attempts=(reason,))
    parameters = _parameters(system)
    attempts: list[str] = []
    plans: list[dict[sp.Symbol, sp.Expr]] = [{}]
    if any(p in values for p in parameters):
        plans.append({p: sp.sympify(values[p]) for p in parameters if p in values})
    forms = [_rational_form(system, values, plan, constants) for plan in plans]
    if symbolic:
        steps, chosen, shared = [(k, method) for k in range(len(plans)) for method, _ in METHODS], "the symbolic plan first, as asked", None
    else:
        steps, chosen, shared = _route(system, plans, forms, time_limit)
    note(f"elimination route: {chosen}")
    attempts.append(f"route: {chosen}")
    runs = dict(METHODS)
    points = solutions() if steps else []
    for k, method in steps:
        plan, (rewrite_map, kept, all_values, _) = plans[k], forms[k]
        gens = list(system.unknowns) + [W] + kept
        label = ("symbolic parameters" if not plan else "parameters at their values") + f", {method}"
        note(f"trying {label} (at most {time_limit:g} s)")
        t0 = time.monotonic()
        shape = shared[1] if shared is not None and (k, method) == (shared[0], "series guess") else None
        job = Job(system, rewrite_map, gens, _points(points, kept, all_values), B_name, t0 + time_limit, shape)
        status, payload = run_bounded(runs[method], (job,), time_limit)
        if status == "ok":
            poly = _as_poly(payload["terms"], system, kept)
            attempts.append(f"{label}: finished in {time.monotonic() - t0:.2f} s")
            return _found(poly, forms[k], plan, payload["backend"], start, tuple(attempts), method, payload["steps"])
        reason = f"did not finish within the time limit of {time_limit:g} s" if status == "timeout" else str(payload)
        attempts.append(f"{label}: {reason}")
    return Elimination(
        polynomial=None,
        reason=f"elimination ({B_name}) " + "; ".join(attempts),
        degree_m=None,
        degree_w=None,
        symbolic=(),
        values={},
        substituted={},
        constants={},
        backend=B_name,
        seconds=time.monotonic() - start,
        attempts=tuple(attempts),
    )


def adopted(system: DysonSystem, values: Mapping[sp.Symbol, sp.Expr],
            solutions: Sequence[tuple[complex | mpmath.mpc, Sequence[mpmath.mpc]]], polynomial: sp.Expr,
            substituted: Mapping[str, str], method: str, backend: str, constants: Mapping[sp.Symbol, sp.Expr] | None = None) -> Elimination:
    """P(m, w) found before (a record of this law, which says how) as :func:`eliminate` returns it: the parameters named in
    ``substituted`` at their values, the others and the irrational constants named as :func:`eliminate` names them, and P
    checked to vanish on the physical ``solutions`` (VANISH relative, at CHECK_DPS digits); a ValueError saying what
    differs otherwise."""
    start = time.monotonic()
    plan = {p: sp.sympify(values[p]) for p in _parameters(system) if str(p) in substituted}
    if sorted(str(p) for p in plan) != sorted(substituted) or any(str(v) != substituted[str(p)] for p, v in plan.items()):
        raise ValueError(f"substituted: {dict(substituted)} are not this law's parameters at their values")
    form = _rational_form(system, values, plan, constants)
    kept, all_values = form[1], form[2]
    symbols = sorted(polynomial.free_symbols - {M, W}, key=str)
    if set(symbols) - set(kept):
        raise ValueError(f"polynomial: symbols {sorted(map(str, set(symbols) - set(kept)))} are not this law's "
                         f"({sorted(map(str, kept))})")
    poly = sp.Poly(polynomial, M, W, *symbols, domain=sp.QQ)
    out = system.unknowns.index(system.output)
    terms = [(mono, mpmath.mpf(int(c.p)) / int(c.q)) for mono, c in poly.terms()]
    with mpmath.workdps(CHECK_DPS + 10):
        nums = [mpmath.mpmathify(sp.N(all_values[p], CHECK_DPS + 10)) for p in symbols]
        for w, g in solutions:
            at = [mpmath.mpmathify(g[out]), mpmath.mpmathify(w), *nums]
            values_of = [mpmath.fprod(v ** e for v, e in zip(at, mono)) * c for mono, c in terms]
            if abs(mpmath.fsum(values_of)) >= VANISH * mpmath.fsum(abs(t) for t in values_of):
                raise ValueError(f"polynomial: does not vanish on the physical solution at w = {complex(w):.3g}")
    return _found(poly, form, plan, backend, start, ("read from a record of this law, checked on the physical solution",),
                  method)


def _found(poly: sp.Poly, form: tuple[Any, ...], plan: Mapping[sp.Symbol, sp.Expr], backend: str, start: float,
           attempts: tuple[str, ...], method: str, steps: int = 0) -> Elimination:
    """The elimination that found P (``poly``, over Q in m, w and the symbols it contains) at the plan ``plan`` of
    rational form ``form`` (:func:`_rational_form`)."""
    _, kept, all_values, consts = form
    return Elimination(polynomial=poly.as_expr(), reason=None, degree_m=poly.degree(M), degree_w=poly.degree(W),
                       symbolic=tuple(kept), values=all_values, substituted=plan, constants=consts, backend=backend,
                       seconds=time.monotonic() - start, steps=steps, attempts=attempts, method=method, poly=poly)
