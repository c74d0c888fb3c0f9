"""Small polynomials on random ratios: the template laws of the property tests."""

from __future__ import annotations

from collections.abc import Callable

import sympy as sp
from sympy import Rational as R

from gemhsa_sym.free.expressions.matrices import Dim, Gaussian, dims_of
from gemhsa_sym.laws.spectral import SpectralLaw, spectral_law

a_, b_, c_ = Dim("a"), Dim("b"), Dim("c")
XA, WB, VB, ZB, ZA, W2B = (
    Gaussian("X", a_, b_), Gaussian("W", b_, c_), Gaussian("V", b_, b_),
    Gaussian("Z", b_, b_), Gaussian("Z", a_, a_), Gaussian("W2", b_, c_),
)
TEMPLATES: dict[str, Callable[[sp.Rational], object]] = {
    "X": lambda s: XA,
    "X W": lambda s: XA @ WB,
    "X^T X + s Z": lambda s: XA.T @ XA + s * ZB,
    "X V X^T": lambda s: XA @ VB @ XA.T,
    "(X V X^T + s Z) X W2": lambda s: (XA @ VB @ XA.T + s * ZA) @ XA @ W2B,
}


def template_law(name: str, rb: sp.Rational, rc: sp.Rational, s: sp.Rational) -> SpectralLaw:
    """The law of template ``name`` with coefficient s, ratios a = 1, b = rb, c = rc."""
    Y = TEMPLATES[name](s)
    ratios = {k: v for k, v in {a_: R(1), b_: rb, c_: rc}.items() if k in dims_of(Y)}
    return spectral_law(Y, ratios)
