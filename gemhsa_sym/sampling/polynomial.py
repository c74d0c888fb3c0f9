"""Finite realisations of a polynomial in Gaussian matrices: its own Monte Carlo sampler (docs/verification.md §4.1).

The same description that gives the law gives the draws: every Gaussian of the polynomial is
realised at sizes ratio * N with entries N(0, scale / N), every deterministic diagonal (docs/equations.md
§2.12) with its entry at independent standard Gaussians g, one per index, and the polynomial is evaluated
with its products ordered for the fewest operations (``numpy.linalg.multi_dot``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import sympy as sp
from sympy.matrices.expressions import MatAdd, MatMul, MatrixExpr, Transpose

from gemhsa_sym.free.equations.scale import to_float
from gemhsa_sym.free.expressions.matrices import Diagonal, Dim, Gaussian, diagonals_of, gaussians_of, without_powers

__all__ = ["draw_polynomial", "evaluate", "realise", "sample_polynomial", "sizes_at"]


def sizes_at(ratios: Mapping[Dim, Any], values: Mapping[sp.Symbol, Any], N: int) -> dict[str, int]:
    """Integer sizes ratio * N of every dimension; ValueError naming N where one is not an integer."""
    sizes = {}
    for d, v in ratios.items():
        s = to_float(v, values) * N
        if abs(s - round(s)) > 1e-9 or round(s) < 1:
            raise ValueError(f"N: ratio * N must be a positive integer for {d}; {N} gives {s}")
        sizes[str(d)] = int(round(s))
    return sizes


def realise(gaussians: tuple[Gaussian, ...], sizes: Mapping[str, int], values: Mapping[sp.Symbol, Any], N: int,
            rng: np.random.Generator, diagonals: tuple[Diagonal, ...] = ()) -> dict[Gaussian | Diagonal, np.ndarray]:
    """One realisation of each Gaussian (in the order given), entries N(0, scale / N), then of each diagonal (module
    docstring)."""
    real: dict[Gaussian | Diagonal, np.ndarray] = {
        g: rng.standard_normal((sizes[str(g.rows)], sizes[str(g.cols)])) * np.sqrt(to_float(g.scale, values) / N)
        for g in gaussians}
    for D in diagonals:
        real[D] = np.diag(D.values(rng.standard_normal(sizes[str(D.rows)])))
    return real


def evaluate(expr: MatrixExpr, real: Mapping[Gaussian | Diagonal, np.ndarray], sizes: Mapping[str, int],
             values: Mapping[sp.Symbol, Any]) -> np.ndarray:
    """A numpy realisation of a polynomial from realisations of its Gaussians and diagonals."""
    expr = without_powers(expr)
    if isinstance(expr, (Gaussian, Diagonal)):
        return real[expr]
    if isinstance(expr, Transpose):
        return evaluate(expr.arg, real, sizes, values).T
    if isinstance(expr, MatAdd):
        return sum(evaluate(a, real, sizes, values) for a in expr.args)
    if isinstance(expr, MatMul):
        c, mats = expr.as_coeff_matrices()
        factors = [evaluate(m, real, sizes, values) for m in mats]
        product = factors[0] if len(factors) == 1 else np.linalg.multi_dot(factors)
        return to_float(c, values) * product
    if isinstance(expr, sp.Identity):
        return np.eye(sizes[str(expr.rows)])
    raise NotImplementedError(f"cannot evaluate {expr}")


def draw_polynomial(polynomial: MatrixExpr, sizes: Mapping[str, int], values: Mapping[sp.Symbol, Any], N: int,
                    seed: np.random.SeedSequence) -> np.ndarray:
    """Eigenvalues of Y^T Y (zeros included, ascending) for one realisation at ``sizes`` (:func:`sizes_at`)
    drawn from ``seed``."""
    real = realise(gaussians_of(polynomial), sizes, values, N, np.random.default_rng(seed), diagonals_of(polynomial))
    Y = evaluate(polynomial, real, sizes, values)
    q = Y.shape[1]
    gram = Y.T @ Y if Y.shape[0] >= q else Y @ Y.T
    ev = np.linalg.eigvalsh(gram)
    return np.sort(np.concatenate([np.zeros(q - ev.size), ev]))


def sample_polynomial(polynomial: MatrixExpr, ratios: Mapping[Dim, Any], values: Mapping[sp.Symbol, Any], N: int,
                      seed: int = 0, draws: int = 1) -> np.ndarray:
    """Eigenvalues of Y^T Y (zeros included) for ``draws`` realisations at sizes ratio * N, one row per
    draw; draw i from child i of ``SeedSequence(seed)``."""
    sizes = sizes_at(ratios, values, N)
    return np.array([draw_polynomial(polynomial, sizes, values, N, child) for child in np.random.SeedSequence(seed).spawn(draws)])
