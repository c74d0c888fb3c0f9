"""The coefficient ring of the exact series (docs/solving.md §3.1) against SymPy's own arithmetic."""

from __future__ import annotations

import pytest
import sympy as sp

from gemhsa_sym.free.equations.series_ring import SeriesRing, matadd, matmul, matneg

a, b = sp.symbols("a b")


def test_round_trip_and_arithmetic_agree_with_sympy() -> None:
    ring = SeriesRing((a, b))
    p, q = sp.Rational(3, 7) * a**2 * b - 5 * b + sp.Rational(1, 2), a - sp.Rational(2, 3) * b**3
    P, Q = ring.from_sympy(p), ring.from_sympy(q)
    assert sp.expand(ring.to_sympy(P * Q + P) - (p * q + p)) == 0
    assert ring.to_sympy(ring.zero) == 0 and ring.to_sympy(ring.one) == 1


def test_ring_without_generators_holds_rationals_only() -> None:
    ring = SeriesRing(())
    assert ring.to_sympy(ring.from_sympy(sp.Rational(-4, 9)) * ring.from_sympy(3)) == sp.Rational(-4, 3)
    with pytest.raises(sp.polys.polyerrors.CoercionFailed):
        ring.from_sympy(sp.sqrt(2))


def test_matrix_products_and_inverse_agree_with_sympy() -> None:
    ring = SeriesRing((a, b))
    A = sp.Matrix([[1, a, 0], [0, 1, b], [0, 0, 2]])  # unipotent up to a rational factor: det 2
    B = sp.Matrix([[b, 0, 1], [a**2, 3, 0], [0, a, b]])
    rows = [[ring.from_sympy(x) for x in A.row(i)] for i in range(3)]
    other = [[ring.from_sympy(x) for x in B.row(i)] for i in range(3)]

    def back(m: list) -> sp.Matrix:
        return sp.Matrix([[ring.to_sympy(x) for x in row] for row in m])

    assert (back(matmul(rows, other, ring.zero)) - A * B).expand() == sp.zeros(3)
    assert back(matadd(rows, matneg(other))) == A - B
    inverse, det = ring.inverse(rows)
    assert det == 2 and (back(inverse) - A.inv()).expand() == sp.zeros(3)
    singular = [[ring.from_sympy(x) for x in row] for row in ([a, 1], [1, b])]
    assert ring.inverse(singular)[0] is None  # det a b - 1 is no nonzero number
