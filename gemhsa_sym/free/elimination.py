"""One polynomial equation P(m, w) = 0 for the Stieltjes transform of a law (docs/solving.md §3.2).

By Cramer's rule every unknown read out of a sector inverse is a rational
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

Exact arithmetic needs rational coefficients: irrational numbers in the
system (e.g. sigma^2 = e - 2 of softmax at beta = 1) become symbols, named
by the caller where it knows them (``constants``), and stay symbolic in P.
Parameters without a value in ``values`` or with one stay symbolic when the
elimination finishes within ``time_limit``; otherwise it is repeated with
the parameters' values substituted, and the result says so. Each attempt
runs in a child process that is stopped at the time limit.

python-flint's multivariate polynomials over Q (``fmpq_mpoly``: resultant,
factor) are the back end when installed; SymPy's ``resultant`` and
``factor_list`` are the fallback (much slower).

The polynomial is written in the symbols :data:`M` (m, the Stieltjes
transform m(w) = (1/q) tr (w - Y^T Y)^{-1} ~ 1/w) and :data:`~.system.W` (w).
"""

from __future__ import annotations

import multiprocessing
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import mpmath
import sympy as sp

from .system import DysonSystem, W

try:
    import flint
except ImportError:  # optional extra: python-flint
    flint = None

__all__ = ["M", "Elimination", "eliminate", "abstract_constants", "available_backends"]

#: The Stieltjes transform m(w) in P(m, w).
M = sp.Symbol("m")
#: Default time limit of one elimination attempt, in seconds.
TIME_LIMIT = 20.0
#: Digits of the physical solutions used to choose factors, and the vanishing threshold.
CHECK_DPS = 40
VANISH = mpmath.mpf(10) ** -20
#: Candidates tried per step: the cheapest by a degree estimate, within a factor
#: LOOKAHEAD_SPREAD of the cheapest; the smallest result wins.
LOOKAHEAD = 3
LOOKAHEAD_SPREAD = 2


@dataclass(frozen=True)
class Elimination:
    """The result of :func:`eliminate`.

    ``polynomial`` is P(m, w) (a SymPy expression in :data:`M`, W and the
    symbols of ``symbolic``), irreducible over Q(w, symbolic) with coprime
    integer coefficients, or None with ``reason``. ``values`` gives every
    symbol of ``symbolic`` its exact value in the law (irrational constants
    included); ``substituted`` lists parameters replaced by their values
    before eliminating (the fallback after a time-out); ``constants`` the
    symbols that stand for irrational numbers.
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

    def specialised(self) -> sp.Expr:
        """P with every symbol other than m and w replaced by its exact value."""
        if self.polynomial is None:
            raise ValueError(f"no polynomial: {self.reason}")
        return self.polynomial.xreplace(dict(self.values))


def available_backends() -> tuple[str, ...]:
    """'flint' when python-flint is importable, then 'sympy'."""
    return ("flint", "sympy") if flint is not None else ("sympy",)


# ---- constants --------------------------------------------------------------------------


def _irrational_atoms(expr: sp.Expr) -> set[sp.Expr]:
    """The outermost irrational numbers of ``expr`` below its arithmetic: E, pi, exp(1/4), sqrt(2), Floats."""
    found: set[sp.Expr] = set()

    def visit(e: sp.Basic) -> None:
        if e.is_Rational:
            return
        if isinstance(e, (sp.Add, sp.Mul)) or (isinstance(e, sp.Pow) and e.exp.is_Integer):
            for a in e.args:
                visit(a)
        elif getattr(e, "is_number", False):
            found.add(e)
        else:
            for a in e.args:
                visit(a)

    visit(sp.sympify(expr))
    return found


def abstract_constants(
    exprs: Iterable[sp.Expr], names: Mapping[sp.Symbol, sp.Expr] | None = None
) -> tuple[dict[sp.Expr, sp.Expr], dict[sp.Symbol, sp.Expr]]:
    """Rewrite irrational numbers as symbols so that coefficients are rational.

    Returns (replacement, constants): ``replacement`` maps each irrational
    atom to a polynomial in new symbols, ``constants`` each symbol to its exact
    value. A named constant (symbol -> value, e.g. sigma2 -> E - 2) whose value
    is linear in a single atom is used through that atom (E -> sigma2 + 2);
    other atoms get symbols c_1, c_2, ...
    """
    atoms: set[sp.Expr] = set()
    for e in exprs:
        atoms |= _irrational_atoms(e)
    replacement: dict[sp.Expr, sp.Expr] = {}
    constants: dict[sp.Symbol, sp.Expr] = {}
    for sym, value in (names or {}).items():
        value = sp.sympify(value)
        inner = _irrational_atoms(value)
        if len(inner) != 1:
            continue
        (atom,) = inner
        if atom not in atoms or atom in replacement:
            continue
        dummy = sp.Dummy()
        linear = sp.expand(value.xreplace({atom: dummy}))
        a, b = linear.coeff(dummy, 1), linear.coeff(dummy, 0)
        if not (a.is_Rational and b.is_Rational and a != 0 and sp.expand(linear - a * dummy - b) == 0):
            continue
        replacement[atom] = (sym - b) / a
        constants[sym] = value
    for k, atom in enumerate(sorted(atoms - set(replacement), key=sp.default_sort_key), 1):
        sym = sp.Symbol(f"c_{k}", real=True)
        replacement[atom] = sym
        constants[sym] = atom
    return replacement, constants


# ---- back ends ----------------------------------------------------------------------------


class _Backend:
    """Polynomials over Q in a fixed list of generators (indices into ``gens``)."""

    name = ""

    def __init__(self, gens: Sequence[sp.Symbol]) -> None:
        self.gens = tuple(gens)

    def from_terms(self, terms: Mapping[tuple[int, ...], Fraction]) -> Any: ...
    def terms(self, p: Any) -> list[tuple[tuple[int, ...], Fraction]]: ...
    def resultant(self, p: Any, q: Any, i: int) -> Any: ...
    def factors(self, p: Any) -> list[Any]: ...
    def degrees(self, p: Any) -> tuple[int, ...]: ...
    def size(self, p: Any) -> int: ...
    def one(self) -> Any: ...
    def zero(self) -> Any: ...

    def from_sympy(self, expr: sp.Expr) -> Any:
        """A SymPy polynomial with rational coefficients in ``gens``."""
        poly = sp.Poly(sp.expand(expr), *self.gens, domain=sp.QQ)
        return self.from_terms({m: Fraction(int(c.p), int(c.q)) for m, c in poly.terms()})

    def to_sympy(self, p: Any) -> sp.Expr:
        return sp.Add(*[sp.Rational(c.numerator, c.denominator) * sp.Mul(*[g**e for g, e in zip(self.gens, m)]) for m, c in self.terms(p)])

    def variables(self, p: Any) -> set[int]:
        return {i for i, d in enumerate(self.degrees(p)) if d > 0}

    def normalised(self, p: Any) -> Any:
        """p with coprime integer coefficients and a positive leading term."""
        terms = self.terms(p)
        den = 1
        for _, c in terms:
            den = den * c.denominator // _gcd(den, c.denominator)
        num = 0
        for _, c in terms:
            num = _gcd(num, abs(int(c * den)))
        lead = max(terms)[1]
        scale = Fraction(den, num) * (1 if lead > 0 else -1)
        return self.from_terms({m: c * scale for m, c in terms})


def _gcd(a: int, b: int) -> int:
    while b:
        a, b = b, a % b
    return a


class _FlintBackend(_Backend):
    """python-flint ``fmpq_mpoly`` (exact multivariate resultants and factorisation)."""

    name = "flint"

    def __init__(self, gens: Sequence[sp.Symbol]) -> None:
        super().__init__(gens)
        self.names = [f"v{i}" for i in range(len(gens))]
        self.ctx = flint.fmpq_mpoly_ctx.get(self.names, "lex")

    def from_terms(self, terms: Mapping[tuple[int, ...], Fraction]) -> Any:
        return self.ctx.from_dict({m: flint.fmpq(c.numerator, c.denominator) for m, c in terms.items() if c})

    def terms(self, p: Any) -> list[tuple[tuple[int, ...], Fraction]]:
        return [(tuple(int(e) for e in m), Fraction(int(c.p), int(c.q))) for m, c in p.terms()]

    def resultant(self, p: Any, q: Any, i: int) -> Any:
        return p.resultant(q, self.names[i])

    def factors(self, p: Any) -> list[Any]:
        return [f for f, _ in p.factor()[1]]

    def degrees(self, p: Any) -> tuple[int, ...]:
        return tuple(int(d) for d in p.degrees())

    def size(self, p: Any) -> int:
        return len(p)

    def one(self) -> Any:
        return self.ctx.from_dict({(0,) * len(self.gens): 1})

    def zero(self) -> Any:
        return self.ctx.from_dict({})


class _SympyBackend(_Backend):
    """SymPy ``Poly`` over QQ (``resultant``, ``factor_list``)."""

    name = "sympy"

    def from_terms(self, terms: Mapping[tuple[int, ...], Fraction]) -> Any:
        return sp.Poly.from_dict({m: sp.Rational(c.numerator, c.denominator) for m, c in terms.items() if c}, *self.gens, domain=sp.QQ)

    def terms(self, p: Any) -> list[tuple[tuple[int, ...], Fraction]]:
        return [(m, Fraction(int(c.p), int(c.q))) for m, c in p.terms() if c]

    def resultant(self, p: Any, q: Any, i: int) -> Any:
        return sp.Poly(sp.resultant(p.as_expr(), q.as_expr(), self.gens[i]), *self.gens, domain=sp.QQ)

    def factors(self, p: Any) -> list[Any]:
        return [f for f, _ in p.factor_list()[1]]

    def degrees(self, p: Any) -> tuple[int, ...]:
        return tuple(p.degree(g) if not p.is_zero else 0 for g in self.gens)

    def size(self, p: Any) -> int:
        return len(p.terms())

    def one(self) -> Any:
        return sp.Poly(1, *self.gens, domain=sp.QQ)

    def zero(self) -> Any:
        return sp.Poly(0, *self.gens, domain=sp.QQ)


def _backend(name: str | None, gens: Sequence[sp.Symbol]) -> _Backend:
    if name is None:
        name = available_backends()[0]
    if name == "flint":
        if flint is None:
            raise ImportError("backend: python-flint is not installed (pip install python-flint)")
        return _FlintBackend(gens)
    if name == "sympy":
        return _SympyBackend(gens)
    raise ValueError(f"backend: expected 'flint' or 'sympy', got {name!r}")


# ---- Cramer equations ------------------------------------------------------------------


def _determinant(B: _Backend, mat: Sequence[Sequence[Any]], rows: tuple[int, ...], cols: tuple[int, ...], memo: dict) -> Any:
    """det of the submatrix (rows, cols) by Laplace expansion along the first row, memoised."""
    key = (rows, cols)
    if key in memo:
        return memo[key]
    if not rows:
        out = B.one()
    else:
        out = B.zero()
        r, rest = rows[0], rows[1:]
        for k, c in enumerate(cols):
            entry = mat[r][c]
            if B.size(entry) == 0:
                continue
            minor = _determinant(B, mat, rest, cols[:k] + cols[k + 1 :], memo)
            out = out + entry * minor if k % 2 == 0 else out - entry * minor
    memo[key] = out
    return out


def cramer_equations(system: DysonSystem, B: _Backend, rewrite: Callable[[sp.Expr], sp.Expr]) -> list[Any]:
    """g_j prod D_s = sum c adj(M_s)_ba prod_{s' != s} D_s' for every unknown g_j (module docstring)."""
    mats, memos, dets = [], [], []
    for sec in system.sectors:
        Msym = sec.matrix()
        mat = [[B.from_sympy(rewrite(Msym[i, j])) for j in range(sec.size)] for i in range(sec.size)]
        memo: dict = {}
        full = tuple(range(sec.size))
        mats.append(mat)
        memos.append(memo)
        dets.append(_determinant(B, mat, full, full, memo))

    def adjugate(s: int, b: int, a: int) -> Any:
        """adj(M)_ba = (-1)^(a+b) det M with row a and column b removed."""
        full = tuple(range(system.sectors[s].size))
        minor = _determinant(B, mats[s], full[:a] + full[a + 1 :], full[:b] + full[b + 1 :], memos[s])
        return minor if (a + b) % 2 == 0 else B.zero() - minor

    eqs = []
    for g in system.unknowns:
        reads = system.readout[g]
        secs = sorted({s for s, *_ in reads})
        lhs = B.from_sympy(g)
        for s in secs:
            lhs = lhs * dets[s]
        rhs = B.zero()
        for s, a, b, c in reads:
            term = B.from_sympy(rewrite(c)) * adjugate(s, b, a)
            for t in secs:
                if t != s:
                    term = term * dets[t]
            rhs = rhs + term
        eqs.append(lhs - rhs)
    return eqs


# ---- elimination ------------------------------------------------------------------------


class _Timeout(Exception):
    """The elimination ran past its time limit."""


def _double_residual(B: _Backend, p: Any, point: Sequence[complex]) -> float:
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


def _relative_residual(B: _Backend, p: Any, point: Sequence[mpmath.mpc]) -> mpmath.mpf:
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


def _run(
    system: DysonSystem,
    rewrite_map: Mapping[sp.Expr, sp.Expr],
    gens: Sequence[sp.Symbol],
    points: Sequence[Sequence[mpmath.mpc]],
    backend: str | None,
    deadline: float,
) -> dict[str, Any]:
    """The elimination proper (module docstring); returns P as a term dictionary."""
    B = _backend(backend, gens)
    n = len(system.unknowns)
    out = system.unknowns.index(system.output)
    unknown_idx = set(range(n))

    quick = [[complex(v) for v in pt] for pt in points]

    def rewrite(e: sp.Expr) -> sp.Expr:
        return sp.expand(sp.sympify(e).xreplace(dict(rewrite_map)))

    def check_time() -> None:
        if time.monotonic() > deadline:
            raise _Timeout

    def physical(p: Any) -> Any | None:
        """The smallest irreducible factor of p vanishing at every physical point, or None."""
        keep = []
        with mpmath.workdps(CHECK_DPS + 10):
            for f in B.factors(p):
                if not B.variables(f) & unknown_idx:
                    continue
                if any(1e-6 < _double_residual(B, f, pt) < float("inf") for pt in quick):
                    continue
                if all(_relative_residual(B, f, pt) < VANISH for pt in points):
                    keep.append(f)
        return B.normalised(min(keep, key=B.size)) if keep else None

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


def _child(conn: Any, args: tuple) -> None:
    """Run :func:`_run` and send the result (or the error) through ``conn``."""
    try:
        conn.send(("ok", _run(*args)))
    except _Timeout:
        conn.send(("timeout", None))
    except Exception as exc:  # reported to the parent, which owns the decision
        conn.send(("error", f"{type(exc).__name__}: {exc}"))
    finally:
        conn.close()


def _attempt(args: tuple, time_limit: float) -> tuple[str, Any]:
    """_run in a child process (fork) stopped at ``time_limit``; inline where fork is missing."""
    if "fork" not in multiprocessing.get_all_start_methods():
        try:
            return "ok", _run(*args)
        except _Timeout:
            return "timeout", None
        except ArithmeticError as exc:
            return "error", str(exc)
    ctx = multiprocessing.get_context("fork")
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(child, args), daemon=True)
    proc.start()
    child.close()
    try:
        if parent.poll(time_limit + 1.0):
            return parent.recv()
        return "timeout", None
    except EOFError:
        return "error", f"the elimination process ended unexpectedly (exit code {proc.exitcode})"
    finally:
        parent.close()
        if proc.is_alive():
            proc.terminate()
            proc.join(2.0)
            if proc.is_alive():
                proc.kill()
        proc.join()


def eliminate(
    system: DysonSystem,
    values: Mapping[sp.Symbol, sp.Expr],
    solutions: Sequence[tuple[complex | mpmath.mpc, Sequence[mpmath.mpc]]],
    time_limit: float = TIME_LIMIT,
    backend: str | None = None,
    constants: Mapping[sp.Symbol, sp.Expr] | None = None,
) -> Elimination:
    """P(m, w) = 0 for the output of ``system`` by resultant elimination (module docstring).

    ``values`` gives the law's parameter values, ``solutions`` the physical
    solution (w, unknowns in ``system.unknowns`` order, about 40 digits) at a
    few generic points, ``constants`` names for irrational numbers that may
    appear. ``time_limit`` bounds each of at most two attempts (parameters
    symbolic, then substituted).
    """
    start = time.monotonic()
    B_name = backend or available_backends()[0]
    coefficient_exprs = [v for sec in system.sectors for v in list(sec.const.values()) + [c for t in sec.lin.values() for c in t.values()]]
    coefficient_exprs += [c for reads in system.readout.values() for *_, c in reads]
    parameters = sorted(set().union(*[sp.sympify(e).free_symbols for e in coefficient_exprs]) - {W} - set(system.unknowns), key=str)
    attempts: list[str] = []
    plans: list[dict[sp.Symbol, sp.Expr]] = [{}]
    if any(p in values for p in parameters):
        plans.append({p: sp.sympify(values[p]) for p in parameters if p in values})
    last_reason = ""
    for plan in plans:
        exprs = [sp.sympify(e).xreplace(plan) for e in coefficient_exprs]
        atom_map, consts = abstract_constants(exprs, constants)
        rewrite_map = {**{p: v.xreplace(atom_map) for p, v in plan.items()}, **atom_map}
        kept = sorted({s for e in exprs for s in sp.sympify(e).xreplace(rewrite_map).free_symbols} - {W} - set(system.unknowns), key=str)
        all_values = {**{p: sp.sympify(values[p]) for p in kept if p in values}, **consts}
        missing = [str(p) for p in kept if p not in all_values]
        if missing:
            raise ValueError(f"values: no value for parameter(s) {', '.join(missing)}")
        gens = list(system.unknowns) + [W] + kept
        with mpmath.workdps(CHECK_DPS + 10):
            nums = [mpmath.mpmathify(sp.N(all_values[p], CHECK_DPS + 10)) for p in kept]
            points = [[mpmath.mpmathify(v) for v in g] + [mpmath.mpmathify(w)] + nums for w, g in solutions]
        t0 = time.monotonic()
        status, payload = _attempt((system, rewrite_map, gens, points, B_name, t0 + time_limit), time_limit)
        label = "symbolic parameters" if not plan else "parameters at their values"
        if status == "ok":
            unk = {g: M if g == system.output else g for g in system.unknowns}
            P = sp.Add(*[sp.Rational(c.numerator, c.denominator) * sp.Mul(*[unk.get(g, g) ** e for g, e in zip(gens, m)]) for m, c in payload["terms"]])
            attempts.append(f"{label}: finished in {time.monotonic() - t0:.2f} s")
            return Elimination(
                polynomial=P,
                reason=None,
                degree_m=int(sp.degree(P, M)),
                degree_w=int(sp.degree(P, W)),
                symbolic=tuple(kept),
                values=all_values,
                substituted=plan,
                constants=consts,
                backend=payload["backend"],
                seconds=time.monotonic() - start,
                steps=payload["steps"],
                attempts=tuple(attempts),
            )
        last_reason = f"did not finish within the time limit of {time_limit:g} s" if status == "timeout" else str(payload)
        attempts.append(f"{label}: {last_reason}")
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
