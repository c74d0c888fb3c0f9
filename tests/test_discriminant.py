"""Tests of the factors of disc_m P by gradings, powers and interpolation (docs/solving.md §3.3).

Expected factor sets come from paths that share none of the reductions: SymPy's discriminant and
factorisation on small polynomials, and python-flint's discriminant of the whole polynomial at once
for a preset's P.
"""

from __future__ import annotations

import dataclasses
import math

import flint
import pytest
import sympy as sp

from gemhsa_sym.free.algebraic.discriminant import discriminant_factors
from gemhsa_sym.free.algebraic.elimination import M
from gemhsa_sym.free.algebraic.roots import discriminant
from gemhsa_sym.free.expressions.matrices import Dim, Gaussian
from gemhsa_sym.free.expressions.system import W
from gemhsa_sym.laws.attention import AttentionLaw
from gemhsa_sym.laws.spectral import spectral_law
from gemhsa_sym.layer.presets import PRESETS

m, w, a, b, c = sp.symbols("m w a b c")


def factor_set(polys: list[sp.Poly]) -> set[sp.Poly]:
    """Each polynomial made primitive with a positive leading coefficient."""
    out = set()
    for p in polys:
        p = p.primitive()[1]
        out.add(-p if p.LC() < 0 else p)
    return out


def engine_factors(P: sp.Expr, gens: tuple[sp.Symbol, ...]) -> set[sp.Poly]:
    poly = sp.Poly(P, *gens)
    found = discriminant_factors({e: int(k) for e, k in poly.terms()})
    return factor_set([sp.Poly.from_dict(f, *gens) for f in found])


def sympy_factors(P: sp.Expr, gens: tuple[sp.Symbol, ...]) -> set[sp.Poly]:
    """The irreducible factors of SymPy's disc_m P that involve w."""
    _, found = sp.factor_list(sp.discriminant(P, m), *gens)
    return factor_set([sp.Poly(f, *gens) for f, _ in found if sp.Poly(f, *gens).degree(w) > 0])


CASES = {
    # quasi-homogeneous of weights (m, w, a, b) = (-2, 2, 1, 1), the weights of the presets' P; a enters through a^2
    "graded": m**3 * w**3 + 2 * m**2 * w * a**2 - m**2 * b**4 + 3 * m * w - m * a**2 + 5 * m * b**2 - 1,
    # two gradings: homogeneous of degree 5 in (m, w, a, b), and of degree 2 in (w, b); a and b both set to 1
    "two gradings": m**3 * w**2 + m**3 * w * b + 2 * m**3 * b**2 - m**2 * a * w**2 + 3 * m * a**2 * b**2 - a**3 * w * b,
    # no grading: interpolation in c alone
    "ungraded": m**3 + (c**2 + w) * m**2 - 3 * c * w * m + w**2 - c + 2,
    # the degree bound in c exceeds the interpolation's nodes: flint's discriminant at once
    "direct": m**4 + c**30 * w * m**3 - m * w + c**29 + 1,
}


@pytest.mark.parametrize("name", CASES)
def test_factors_equal_sympy_discriminant(name):
    P = CASES[name]
    gens = tuple(sorted(P.free_symbols, key=lambda s: "mwabc".index(str(s))))
    assert engine_factors(P, gens) == sympy_factors(P, gens)


def test_a_repeated_factor_in_m_is_refused():
    with pytest.raises(ValueError, match="repeated factor"):
        discriminant_factors(sp.Poly(((m - a) ** 2 * (m + w)).expand(), m, w, a).as_dict())


def test_a_discriminant_that_fails_says_why_not_that_it_ran_out_of_time():
    """The child process's error reaches the caller (it was once reported as a time-out)."""
    n, d = Dim("n"), Dim("d")
    elimination = spectral_law(Gaussian("X", n, d), {n: 1, d: sp.Rational(1, 2)}).algebraic()
    broken = dataclasses.replace(elimination, polynomial=sp.expand((M - W) ** 2 * (M + W)))
    with pytest.raises(ValueError, match="discriminant of P failed: ValueError: .*repeated factor"):
        discriminant(broken)


def test_preset_factors_equal_flint_discriminant_of_all_variables():
    """mha's P, of degree 20 in m with mu_1 and sigma symbolic: the factors involving w of disc_m P * lc_m P."""
    elimination = AttentionLaw(PRESETS["mha"]).algebraic()
    gens = (M, W, *elimination.symbolic)
    names = [f"v{i}" for i in range(len(gens))]
    ring = flint.fmpq_mpoly_ctx.get(names, "lex")
    poly = sp.Poly(elimination.polynomial, *gens)
    p = ring.from_dict({e: flint.fmpq(int(k.p), int(k.q)) for e, k in poly.terms()})
    top = poly.degree(M)
    lead = ring.from_dict({(0, *e[1:]): flint.fmpq(int(k.p), int(k.q)) for e, k in poly.terms() if e[0] == top})
    expected = set()
    for f, _ in p.discriminant("v0").factor()[1] + lead.factor()[1]:
        if f.degrees()[1] > 0:
            f = f / f.leading_coefficient()
            expected.add(sp.Poly.from_dict({tuple(int(x) for x in e): sp.Rational(int(k.p), int(k.q)) for e, k in f.terms()}, *gens))
    found = sp.Mul(*[f.as_expr() for f in expected])
    assert sp.expand(discriminant(elimination) - found) == 0
    assert len(expected) == 2 and math.prod(f.degree(W) for f in expected) == 16
