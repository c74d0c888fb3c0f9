"""Tests of P(m, w) guessed from the series of m(w) modulo primes (docs/solving.md §3.12).

Independent references: the exact moments of the SymPy series (docs/solving.md §3.1) reduced
modulo p; the polynomials of the reference table (docs/reference-values.md §9.2); the polynomial
the resultants find for mha; and, for tied-kv and correlated-kv (where the resultants do not
finish), the 40-digit solution of the Dyson system and the folds of its continuation.
"""

from __future__ import annotations

import functools
from fractions import Fraction

import mpmath
import numpy as np
import pytest
import sympy as sp
from test_elimination import in_reference_symbols, same_up_to_a_constant
from test_free_engine import REFERENCE, reference_law

from gemhsa_sym.free.algebraic.elimination import M
from gemhsa_sym.free.algebraic.guessing import GuessError, guess_polynomial, predicted_shape
from gemhsa_sym.free.algebraic.modular_series import ModularSystem, primes_below
from gemhsa_sym.free.algebraic.roots import classify_edges
from gemhsa_sym.free.equations.series import moment_series
from gemhsa_sym.free.expressions.system import W
from gemhsa_sym.laws.attention import AttentionLaw
from gemhsa_sym.layer.presets import PRESETS


def as_expression(terms: dict[tuple[int, ...], Fraction], symbols: tuple[sp.Symbol, ...]) -> sp.Expr:
    """P from the terms {(exponent of m, of w, of each symbol): coefficient}."""
    return sp.Add(*[sp.Rational(c.numerator, c.denominator) * M ** e[0] * W ** e[1] * sp.Mul(*[s**k for s, k in zip(symbols, e[2:])])
                    for e, c in terms.items()])


@functools.cache
def preset_law(name: str):
    return AttentionLaw(PRESETS[name])


@functools.cache
def guessed(name: str) -> sp.Expr:
    law = preset_law(name)
    symbols = tuple(sorted(law.system.parameters, key=str))
    return as_expression(guess_polynomial(law.system, {}, symbols), symbols)


def residue(q: sp.Rational, p: int) -> int:
    return int(q.p) % p * pow(int(q.q), -1, p) % p


def test_modular_series_equals_the_exact_moments_modulo_p():
    law = preset_law("mha")
    symbols = tuple(sorted(law.system.parameters, key=str))
    assert [str(s) for s in symbols] == ["mu_1", "sigma"]
    exact = moment_series(law.system, 5)
    primes = primes_below(2**23, 3)
    points = np.array([[3, 4], [5, 7], [1234567, 89]])
    m = ModularSystem.build(law.system, {}, symbols).series(primes, points, 6)
    for b in range(3):
        at = dict(zip(symbols, map(int, points[b])))
        p = int(primes[b])
        assert list(m[b, :2]) == [0, 1]
        assert list(m[b, 2:]) == [residue(sp.Rational(mu.xreplace(at)), p) for mu in exact]


def test_modular_series_of_a_model_with_an_atom():
    """MP(1/2) ⊠ MP(1/4) of the reference table: rational coefficients, no parameters."""
    law = reference_law("v")
    exact = moment_series(law.system, 8)
    p = int(primes_below(2**23, 1)[0])
    m = ModularSystem.build(law.system, {}, ()).series(np.array([p]), np.zeros((1, 0)), 9)
    assert list(m[0, 2:]) == [residue(sp.Rational(mu), p) for mu in exact]


@pytest.mark.parametrize("name", ["i", "i'", "ii", "iii", "iv"])
def test_reference_polynomials_are_guessed(name):
    law = reference_law(name)
    P = as_expression(guess_polynomial(law.system, {}, ()), ())
    assert same_up_to_a_constant(in_reference_symbols(P), REFERENCE[name].P)


def test_reference_case_v_is_guessed_with_degrees_12_and_9():
    """The reference table gives case v's degrees only; its P must vanish on the 40-digit solution."""
    law = reference_law("v")
    P = as_expression(guess_polynomial(law.system, {}, ()), ())
    assert (sp.degree(P, M), sp.degree(P, W)) == (12, 9)
    vanishes_at_40_digits(law, P, {})


def test_guess_equals_the_resultants_for_mha():
    e = preset_law("mha").algebraic()
    assert e.method == "resultants" and e.symbolic == tuple(sorted(preset_law("mha").system.parameters, key=str))
    ratio = sp.cancel(guessed("mha") / e.polynomial)
    assert ratio.is_Rational and ratio != 0


def test_two_parameters_without_a_scaling_symmetry_are_refused():
    """The residual stream X + alpha T is not homogeneous in (mu_1, sigma)."""
    law = preset_law("residual")
    with pytest.raises(GuessError, match="without a scaling symmetry"):
        guess_polynomial(law.system, {}, tuple(sorted(law.system.parameters, key=str)))


def vanishes_at_40_digits(law, P: sp.Expr, values: dict) -> None:
    """P(m(w), w) = 0 to 1e-30 relative at 40-digit solutions m(w) of the Dyson system, at points that
    the guess did not see."""
    specialised = sp.Poly(P.xreplace(values), M, W)
    with mpmath.workdps(60):
        for w in (mpmath.mpc(3, 1), mpmath.mpc("0.4", "0.05"), mpmath.mpc(-2, 5)):
            m = law.stieltjes(w, dps=40)
            terms = [mpmath.mpmathify(sp.N(c, 60)) * m**i * w**j for (i, j), c in specialised.terms()]
            assert abs(mpmath.fsum(terms)) <= mpmath.mpf(10) ** -30 * mpmath.fsum(abs(t) for t in terms)


@pytest.mark.parametrize("name, degrees", [("tied-kv", (26, 19)), ("correlated-kv", (56, 43))])
def test_presets_past_the_resultants_get_their_polynomial(name, degrees):
    law = preset_law(name)
    P = guessed(name)
    assert (sp.degree(P, M), sp.degree(P, W)) == degrees
    mu_1, sigma = sorted(law.system.parameters, key=str)
    vanishes_at_40_digits(law, P, {mu_1: 1, sigma: sp.sqrt(sp.E - 2)})


def test_tied_kv_polynomial_through_the_law_and_its_edges():
    """law.algebraic() falls back to the guess; the discriminant's edges equal the folds to 25 digits."""
    law = preset_law("tied-kv")
    e = law.algebraic(time_limit=8)
    assert e.method == "series guess" and (e.degree_m, e.degree_w) == (26, 19)
    # the route: the series predicts degree 26, past the resultants, so the guess runs first and alone
    assert e.attempts[0].startswith("route: the series predicts degree 26 in m") and len(e.attempts) == 2
    assert e.attempts[1].startswith("symbolic parameters, series guess: finished")
    ratio = sp.cancel(e.polynomial / guessed("tied-kv"))
    assert ratio.is_Rational and ratio != 0
    found = classify_edges(law.density, law.scale, e, 30, time_limit=300).edges
    folds = law.edges(30, method="fold")
    assert [e.side for e in found] == [f.side for f in folds] == ["lower", "upper"]
    for a, b in zip(found, folds):
        assert abs(a.location - b.location) <= mpmath.mpf(10) ** -25 * max(1, abs(b.location))


def test_the_symbolic_route_tries_resultants_first():
    """With symbolic=True the resultants run first whatever the series predicts (and time out for tied-kv), then the
    guess finds the same P."""
    e = AttentionLaw(PRESETS["tied-kv"], symbolic=True).algebraic(time_limit=8)
    assert e.attempts[:2] == ("route: the symbolic plan first, as asked",
                              "symbolic parameters, resultants: did not finish within the time limit of 8 s")
    ratio = sp.cancel(e.polynomial / guessed("tied-kv"))
    assert ratio.is_Rational and ratio != 0


@pytest.mark.parametrize("name, degree", [("single-head", 20), ("tied-kv", 26), ("heads-infinite", 9)])
def test_the_series_predicts_the_degree_of_p(name, degree):
    """The degree in m at one random point modulo one prime equals that of P found by elimination
    (docs/reference-values.md: 20 for one head; tied-kv's 26 from the guess verified above)."""
    law = preset_law(name)
    symbols = tuple(sorted(law.system.parameters, key=str))
    assert predicted_shape(law.system, {}, symbols).a == degree
    assert predicted_shape(law.system, {}, symbols, max_degree=8) is None


def test_a_degree_past_every_bound_skips_the_resultants():
    """tokens-two-level: the series shows no P of degree at most 64 in m at a random point, so only the guesses run,
    each up to its own bound of 96 (with the token levels written as Gaussians of their own variance, no radical is
    left to stop them; idle, each finds no P of that degree in about 14 s, within its 20 s), and no resultant spends
    its time limit."""
    e = preset_law("tokens-two-level").algebraic()
    assert e.polynomial is None and e.attempts[0].startswith("route: the series predicts a degree above 64 in m")
    assert "the series guess only" in e.attempts[0]
    assert [a.split(":")[0] for a in e.attempts[1:]] == ["symbolic parameters, series guess", "parameters at their values, series guess"]
    assert e.reason.startswith("elimination (flint) route: the series predicts a degree above 64")
    assert ", resultants" not in e.reason


def branch_point(P: sp.Expr, values: dict, m0: complex, w0: float) -> tuple[mpmath.mpc, mpmath.mpc]:
    """Newton on P = dP/dm = 0 in (m, w) at 60 digits from (m0, w0): a root of the discriminant of P."""
    specialised = sp.Poly(P.xreplace(values), M, W)
    with mpmath.workdps(60):
        terms = [(i, j, mpmath.mpmathify(sp.N(c, 70))) for (i, j), c in specialised.terms()]

        def parts(m, w):
            f = sum(c * m**i * w**j for i, j, c in terms)
            fm = sum(c * i * m ** (i - 1) * w**j for i, j, c in terms if i)
            fw = sum(c * j * m**i * w ** (j - 1) for i, j, c in terms if j)
            fmm = sum(c * i * (i - 1) * m ** (i - 2) * w**j for i, j, c in terms if i > 1)
            fmw = sum(c * i * j * m ** (i - 1) * w ** (j - 1) for i, j, c in terms if i and j)
            return f, fm, fw, fmm, fmw

        m, w = mpmath.mpc(m0), mpmath.mpc(w0)
        for _ in range(60):
            f, fm, fw, fmm, fmw = parts(m, w)
            det = fm * fmw - fw * fmm
            dm, dw = (f * fmw - fw * fm) / det, (fm * fm - f * fmm) / det
            m, w = m - dm, w - dw
            if abs(dw) < mpmath.mpf(10) ** -45 * abs(w):
                break
        return m, w


@pytest.mark.parametrize("name", ["tied-kv", "correlated-kv"])
def test_the_upper_fold_is_a_branch_point_of_the_guessed_polynomial(name):
    """The continuation's upper edge (30 digits, from the Dyson system) is where two roots of P in m meet:
    P = dP/dm = 0 there, found by Newton from the fold, to 25 digits."""
    law = preset_law(name)
    mu_1, sigma = sorted(law.system.parameters, key=str)
    upper = law.edges(30, method="fold")[-1]
    m0 = complex(law.stieltjes(np.array([float(upper.location) + 1e-9j]))[0])
    m, w = branch_point(guessed(name), {mu_1: 1, sigma: sp.sqrt(sp.E - 2)}, m0, float(upper.location))
    assert abs(mpmath.im(w)) < mpmath.mpf(10) ** -40
    assert abs(mpmath.re(w) - upper.location) <= mpmath.mpf(10) ** -25 * upper.location
