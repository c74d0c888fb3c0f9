"""The scale of a law: an upper bound of its support that sets where the continuation starts (docs/solving.md §3.10).

The norm bound of the polynomial (the limit of Bai–Yin for each monomial) is rigorous,
but for a sum over many heads it grows like H while the law does not: at H = 10^5 it is
10^15 times the top of the support, and every threshold relative to it loses the law in
double precision. Where the bound exceeds the law's own size sqrt(mu_2) (exact, from the
series) by more than :data:`LOOSE` (which costs the series, so moderately loose bounds are kept), the scale is :data:`MARGIN` sqrt(mu_2) instead, kept
only after the continuation from above the rigorous bound has verified that no support
lies between the two. A law without a norm bound (infinitely many heads, whose bound grows like
H) takes 2 LOOSE sqrt(mu_2) in its place: the tightened scale is then verified by the same
continuation, but its bound is not rigorous.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import mpmath
import numpy as np
import sympy as sp
from sympy.matrices.expressions import MatAdd, MatMul, MatPow, MatrixExpr, Transpose

from gemhsa_sym.free.equations.series import moment_series
from gemhsa_sym.free.expressions.matrices import MAX_MONOMIALS, Dim, Gaussian, RandomInstance, monomials, without_powers
from gemhsa_sym.free.expressions.system import DysonSystem
from gemhsa_sym.free.numeric.continuation import follow_branch
from gemhsa_sym.free.numeric.results import SUPPORT_THRESHOLD, top_of
from gemhsa_sym.free.numeric.systems import DOUBLE, NumericSystem

__all__ = ["LOOSE", "MARGIN", "SCALE_RANGE", "ScaleError", "law_scale", "norm_bound", "to_float", "vanishes"]

#: The norm bound counts as loose above this many times sqrt(mu_2).
LOOSE = 1e10
#: The tightened scale, in units of sqrt(mu_2).
MARGIN = 1e3
#: The seed of :func:`vanishes`' random instances.
VANISH_SEED = 1996
#: The working precision of :func:`vanishes`.
VANISH_DIGITS = 60
#: Scales the double-precision continuation solves: beyond, products of its unknowns over- or underflow.
SCALE_RANGE = (1e-30, 1e20)


class ScaleError(ValueError):
    """The law's scale lies outside :data:`SCALE_RANGE`."""


def to_float(expr: Any, values: Mapping[sp.Symbol, Any]) -> float:
    """A float from an expression and values for its symbols; ValueError naming what has no value."""
    e = sp.sympify(expr).subs(values) if values else sp.sympify(expr)
    if e.free_symbols:
        raise ValueError(f"parameters: no value given for {', '.join(sorted(map(str, e.free_symbols)))}")
    return float(e)


def norm_bound(polynomial: MatrixExpr, ratios: Mapping[Dim, Any], values: Mapping[sp.Symbol, Any]) -> float:
    """||Y|| <= sum over monomials |c| prod sqrt(s)(sqrt(a_rows) + sqrt(a_cols)) (limit of Bai–Yin), over the expanded
    polynomial where it has at most :data:`MAX_MONOMIALS` monomials (like terms combined, cancellations seen); a larger
    one is bounded factor by factor (the same sum before like terms combine), and 0 only where it vanishes on random
    instances (:func:`vanishes`)."""
    alpha = {str(d): to_float(v, values) for d, v in ratios.items()}

    def factor(g: Gaussian) -> float:
        return float(np.sqrt(to_float(g.scale, values)) * (np.sqrt(alpha[str(g.rows)]) + np.sqrt(alpha[str(g.cols)])))

    if monomials(polynomial) > MAX_MONOMIALS:
        return 0.0 if vanishes(polynomial, values) else _tree_bound(polynomial, values, factor)
    expanded = without_powers(polynomial.doit().expand())
    terms = expanded.args if isinstance(expanded, MatAdd) else (expanded,)
    total = 0.0
    for term in terms:
        if isinstance(term, MatMul):
            c, mats = term.as_coeff_matrices()
        else:
            c, mats = sp.S.One, [term]
        prod = abs(to_float(c, values))
        for mat in mats:
            g = mat.arg if isinstance(mat, Transpose) else mat
            if isinstance(g, Gaussian):
                prod *= factor(g)
        total += prod
    return total


def _tree_bound(expr: MatrixExpr, values: Mapping[sp.Symbol, Any], factor: Callable[[Gaussian], float]) -> float:
    """The norm bound of :func:`norm_bound` by the triangle inequality and submultiplicativity over the expression."""
    if isinstance(expr, MatAdd):
        return sum(_tree_bound(a, values, factor) for a in expr.args)
    if isinstance(expr, MatMul):
        c, mats = expr.as_coeff_matrices()
        return abs(to_float(c, values)) * float(np.prod([_tree_bound(m, values, factor) for m in mats]))
    if isinstance(expr, Transpose):
        return _tree_bound(expr.arg, values, factor)
    if isinstance(expr, MatPow):
        return _tree_bound(expr.base, values, factor) ** int(expr.exp)
    if isinstance(expr, Gaussian):
        return factor(expr)
    return 0.0 if isinstance(expr, sp.ZeroMatrix) else 1.0


def vanishes(polynomial: MatrixExpr, values: Mapping[sp.Symbol, Any]) -> bool:
    """Whether ``polynomial`` is the zero matrix at ``values``: on two seeded random instances
    (:class:`~gemhsa_sym.free.expressions.matrices.RandomInstance`), evaluated at :data:`VANISH_DIGITS` digits with the
    values exact, its entries are below 10^-(VANISH_DIGITS - 20) times those of the same polynomial with every
    coefficient and entry replaced by its absolute value (the sum of its terms' sizes). A product of k random-sign
    factors cancels like 2^-k against that sum (a polynomial of degree about 50 fell to 1e-15 of it), so double precision
    cannot tell a deep polynomial from zero; these digits can up to degrees of about 130."""
    rng = np.random.default_rng(np.random.SeedSequence(VANISH_SEED))
    scalars = {str(p): v if isinstance(v, sp.Basic) else sp.Float(v) for p, v in values.items()}
    with mpmath.workdps(VANISH_DIGITS):
        for _ in range(2):
            instance = RandomInstance(rng, scalars)
            size = max(instance.evaluate(polynomial, absolute=True, digits=VANISH_DIGITS).ravel())
            largest = max(abs(x) for x in instance.evaluate(polynomial, digits=VANISH_DIGITS).ravel())
            if largest > mpmath.mpf(10) ** (20 - VANISH_DIGITS) * size:
                return False
    return True


def law_scale(bound: float, full: DysonSystem, values: Mapping[sp.Symbol, Any]) -> float:
    """``bound`` (the squared norm bound, inf where there is none), or the verified tighter scale of the
    module docstring; ScaleError when it lies outside :data:`SCALE_RANGE`."""
    if bound == np.inf:
        bound = 2 * LOOSE * np.sqrt(max(to_float(moment_series(full, 2)[1], values), 0.0))
    scale = _tightened(bound, full, values) if np.isfinite(bound) else bound
    low, high = SCALE_RANGE
    if not low <= scale <= high:
        raise ScaleError(f"scale: the law extends to about {scale:.3g}, outside the range {low:g} to {high:g} "
                         "that the double-precision solver covers")
    return scale


def _tightened(bound: float, full: DysonSystem, values: Mapping[sp.Symbol, Any]) -> float:
    """The scale of the module docstring for a finite ``bound``."""
    if bound <= LOOSE:  # the law would need sqrt(mu_2) < 1 to count as loose: keep the bound
        return bound
    second = to_float(moment_series(full, 2)[1], values)
    if not (second > 0 and bound > LOOSE * np.sqrt(second)):
        return bound
    candidate = MARGIN * float(np.sqrt(second))
    x = np.geomspace(candidate, bound, 48)
    branch = follow_branch(NumericSystem.build(full, values, DOUBLE), x.astype(complex), top=top_of(bound),
                           floor=1e-13 * candidate)
    density = -branch.m.imag / np.pi
    if np.all(branch.ok) and np.all(density <= SUPPORT_THRESHOLD / candidate):
        return candidate
    return bound
