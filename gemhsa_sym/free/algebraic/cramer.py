"""Polynomial equations of a Dyson system by Cramer's rule (docs/solving.md §3.2).

Each entry of a sector's G = M^{-1} is a cofactor over the determinant D_s, so every read-out
g_j = sum c (M_s^{-1})_ab becomes the polynomial equation g_j prod D_s = sum c adj(M_s)_ab
prod_{s' != s} D_s' in the unknowns, w and the parameters (determinants by Laplace expansion,
memoised per sector).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import sympy as sp

from gemhsa_sym.free.algebraic.polynomials import PolynomialBackend
from gemhsa_sym.free.expressions.system import DysonSystem

__all__ = ["cramer_equations"]


def _determinant(B: PolynomialBackend, mat: Sequence[Sequence[Any]], rows: tuple[int, ...], cols: tuple[int, ...], memo: dict) -> Any:
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


def cramer_equations(system: DysonSystem, B: PolynomialBackend, rewrite: Callable[[sp.Expr], sp.Expr]) -> list[Any]:
    """g_j prod D_s = sum c adj(M_s)_ab prod_{s' != s} D_s' for every unknown g_j (module docstring)."""
    mats, memos, dets = [], [], []
    for sec in system.sectors:
        Msym = sec.matrix()
        mat = [[B.from_sympy(rewrite(Msym[i, j])) for j in range(sec.size)] for i in range(sec.size)]
        memo: dict = {}
        full = tuple(range(sec.size))
        mats.append(mat)
        memos.append(memo)
        dets.append(_determinant(B, mat, full, full, memo))

    def adjugate(s: int, a: int, b: int) -> Any:
        """adj(M)_ab = (-1)^(a+b) det M with row b and column a removed, so (M^{-1})_ab = adj(M)_ab / det M
        (M need not be symmetric)."""
        full = tuple(range(system.sectors[s].size))
        minor = _determinant(B, mats[s], full[:b] + full[b + 1 :], full[:a] + full[a + 1 :], memos[s])
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
            term = B.from_sympy(rewrite(c)) * adjugate(s, a, b)
            for t in secs:
                if t != s:
                    term = term * dets[t]
            rhs = rhs + term
        eqs.append(lhs - rhs)
    return eqs
