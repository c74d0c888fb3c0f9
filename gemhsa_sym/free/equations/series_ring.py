"""The coefficient ring of the exact series (docs/solving.md §3.1): QQ[generators] as python-flint's
``fmpq_mpoly``, and the dense matrix products the order-by-order solve of :mod:`.series` needs.

Every coefficient of a series iterate is a polynomial over Q in the generators (parameters,
reciprocals, radicals, constants); products and sums of them run in C. Matrices are lists of rows
(sectors have a few blocks, and their pencil matrices are sparse: products skip zero entries). The
one inversion, A_0^{-1} at w = infinity, goes through SymPy's ``DomainMatrix.inv_den``; its
determinant must be a nonzero rational, so A_0^{-1} has polynomial entries.
"""

from __future__ import annotations

from collections.abc import Sequence

import flint
import sympy as sp
from sympy.polys.matrices import DomainMatrix

__all__ = ["Rows", "SeriesRing", "matmul", "matadd", "matneg"]

Rows = list  # a matrix as a list of rows of ring elements


class SeriesRing:
    """QQ[gens] in python-flint (module docstring); ``to_sympy`` and ``from_sympy`` cross to SymPy expressions."""

    def __init__(self, gens: Sequence[sp.Symbol]) -> None:
        self.gens = tuple(gens)
        self.ctx = flint.fmpq_mpoly_ctx.get(tuple(f"x{i}" for i in range(len(self.gens))), "lex")
        self.zero = self.ctx.from_dict({})
        self.one = self.ctx.from_dict({(0,) * len(self.gens): 1})
        self._sympy_ring = sp.QQ[self.gens] if self.gens else sp.QQ
        self._known: dict[sp.Expr, flint.fmpq_mpoly] = {}  # conversions made, by expression

    def __repr__(self) -> str:
        return f"QQ[{', '.join(map(str, self.gens))}]" if self.gens else "QQ"

    def from_sympy(self, expr: sp.Expr) -> flint.fmpq_mpoly:
        """The element of a polynomial over Q in the generators; CoercionFailed for anything else."""
        expr = sp.sympify(expr)
        if expr not in self._known:
            terms = self._sympy_ring.from_sympy(expr).items() if self.gens else [((), sp.QQ.from_sympy(expr))]
            self._known[expr] = self.ctx.from_dict({m: flint.fmpq(int(c.numerator), int(c.denominator))
                                                    for m, c in terms if c})
        return self._known[expr]

    def to_sympy(self, p: flint.fmpq_mpoly) -> sp.Expr:
        """The SymPy expression of a ring element."""
        return sp.Add(*(sp.Rational(int(c.p), int(c.q)) * sp.Mul(*(g**int(e) for g, e in zip(self.gens, m)))
                        for m, c in p.terms()))

    def inverse(self, rows: Rows) -> tuple[Rows | None, sp.Expr]:
        """(A^{-1}, det A) when det A is a nonzero rational, else (None, det A)."""
        domain = self._sympy_ring
        size = len(rows)
        adj, det = DomainMatrix([[domain.from_sympy(self.to_sympy(x)) for x in row] for row in rows],
                                (size, size), domain).inv_den()
        det_expr = domain.to_sympy(det)
        if not (det_expr.is_Rational and det_expr != 0):
            return None, det_expr
        inv = self.from_sympy(1 / det_expr)
        return [[self.from_sympy(domain.to_sympy(x)) * inv for x in row] for row in adj.to_list()], det_expr


def matmul(a: Rows, b: Rows, zero: flint.fmpq_mpoly) -> Rows:
    """a b, skipping zero entries."""
    width = len(b[0])
    out = []
    for row in a:
        acc = [zero] * width
        for x, brow in zip(row, b):
            if x:
                for j, y in enumerate(brow):
                    if y:
                        acc[j] = acc[j] + x * y
        out.append(acc)
    return out


def matadd(a: Rows, b: Rows) -> Rows:
    """a + b."""
    return [[x + y for x, y in zip(ra, rb)] for ra, rb in zip(a, b)]


def matneg(a: Rows) -> Rows:
    """-a."""
    return [[-x for x in row] for row in a]
