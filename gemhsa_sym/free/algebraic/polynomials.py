"""Exact multivariate polynomials over Q for elimination and discriminants (docs/solving.md §3.2).

Two back ends with one interface: python-flint's ``fmpq_mpoly`` (fast exact resultants,
discriminants and factorisation; the default) and SymPy's ``Poly`` (the reference).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

import flint
import sympy as sp

__all__ = ["BACKENDS", "FlintBackend", "PolynomialBackend", "SympyBackend", "polynomial_backend"]

#: The back ends, the default first.
BACKENDS: tuple[str, ...] = ("flint", "sympy")


class PolynomialBackend:
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
        """A SymPy polynomial with rational coefficients in ``gens`` (read as it stands where it is a sum of
        monomials, as every P is: expanding P of 2000 terms again costs a second)."""
        try:
            poly = sp.Poly(expr, *self.gens, domain=sp.QQ, expand=False)
        except sp.PolynomialError:
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


class FlintBackend(PolynomialBackend):
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


class SympyBackend(PolynomialBackend):
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


def polynomial_backend(name: str | None, gens: Sequence[sp.Symbol]) -> PolynomialBackend:
    """The back end called ``name`` (default: flint) over ``gens``."""
    if name is None or name == "flint":
        return FlintBackend(gens)
    if name == "sympy":
        return SympyBackend(gens)
    raise ValueError(f"backend: expected 'flint' or 'sympy', got {name!r}")
