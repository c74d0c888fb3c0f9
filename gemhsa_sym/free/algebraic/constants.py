"""Irrational constants of a system as named symbols, so that elimination runs over Q (docs/solving.md §3.2).

Coefficients such as e - 2 (softmax's sigma^2) or sqrt(2) become real symbols c_k (or the
parameter they are the value of), kept with their exact values for substitution later.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import sympy as sp

__all__ = ["abstract_constants"]


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
