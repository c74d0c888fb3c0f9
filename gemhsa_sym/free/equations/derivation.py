"""The symbolic result for a polynomial model, computed once (docs/equations.md §2.2–§2.6).

:class:`Derivation` holds the model, its ratios and parameter values, the linear pencil
(self-checked), the full and the reduced Dyson system, and the law's scale
(docs/solving.md §3.10). It is frozen: every numeric question about the law is asked of a
solver built from it (:mod:`.solver`), never of a derivation that changes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import sympy as sp
from sympy.matrices.expressions import MatrixExpr

from gemhsa_sym.free.equations.heads_limit import check_limit, heads_limit
from gemhsa_sym.free.equations.reductions import reduce_system
from gemhsa_sym.free.equations.scale import law_scale, norm_bound
from gemhsa_sym.free.expressions.exchangeable import ExchangeableSum, exchangeable_system
from gemhsa_sym.free.expressions.matrices import Dim, gaussians_of
from gemhsa_sym.free.expressions.pencil import Pencil, linearise
from gemhsa_sym.free.expressions.system import DysonSystem, dyson_system
from gemhsa_sym.parse import to_number

__all__ = ["Derivation", "derivation"]

#: The number of heads at which the system of infinitely many heads is reduced before its limit is taken.
PROBE_HEADS = 8


def _expression(field: str, value: Any) -> sp.Expr:
    """A SymPy expression as given, or a number read from other input by the grammar of :mod:`gemhsa_sym.parse`."""
    return value if isinstance(value, sp.Expr) else to_number(value, field)


@dataclass(frozen=True)
class Derivation:
    """Model, ratios, values, pencil, full and reduced Dyson system and scale of one law.

    ``zero`` is True when Y vanishes at the values (an attention layer at beta = 0): the
    law is then the point mass at 0 and ``scale`` is 0. For infinitely many heads (an exchangeable
    sum whose H has the value oo) ``full_system`` is the limit of the exchangeable system
    (docs/equations.md §2.10), before its own reductions.
    """

    model: MatrixExpr | ExchangeableSum
    ratios: Mapping[Dim, sp.Expr]
    values: Mapping[sp.Symbol, sp.Expr]
    pencil: Pencil
    full_system: DysonSystem
    system: DysonSystem
    scale: float
    zero: bool
    #: For infinitely many heads, the power of H of each unknown of the limit (g = H^p h), else None.
    limit: Mapping[sp.Symbol, sp.Rational] | None = None

    @property
    def polynomial(self) -> MatrixExpr:
        """Y as one polynomial (an exchangeable sum is written out head by head)."""
        return self.model.expand(self.values) if isinstance(self.model, ExchangeableSum) else self.model

    @property
    def probe(self) -> dict[sp.Symbol, sp.Expr]:
        """The values, and generic ones (7/10, 1, 13/10, ...) for parameters without a value: where
        the scale, the reductions and the minimal system are checked."""
        return _probe(self.full_system, self.values)

    @property
    def q(self) -> Dim:
        """The dimension of Y^T Y."""
        return self.model.cols

    def __str__(self) -> str:
        ratios = ", ".join(f"{d} = {v}" for d, v in self.ratios.items())
        values = ", ".join(f"{k} = {v}" for k, v in self.values.items())
        lines = [f"Y = {self.model}", f"ratios: {ratios}"] + ([f"values: {values}"] if values else [])
        return "\n".join([*lines, f"scale: {self.scale:.6g}", str(self.system)])

    def _repr_latex_(self) -> str:
        return rf"$\displaystyle Y = {sp.latex(self.model)},\quad m(w) = {sp.latex(self.system.output)}$"


def _probe(full: DysonSystem, values: Mapping[sp.Symbol, sp.Expr]) -> dict[sp.Symbol, sp.Expr]:
    """``values`` with 7/10, 1, 13/10, ... for the parameters of ``full`` that have none."""
    generic = {p: sp.Rational(7 + 3 * k, 10) for k, p in enumerate(full.parameters) if p not in values}
    return {**generic, **values}


def derivation(model: MatrixExpr | ExchangeableSum, ratios: Mapping[Dim, Any],
               values: Mapping[Any, Any] | None = None, reduce: bool = True) -> Derivation:
    """Linearise ``model``, write its Dyson system, find its scale and reduce it.

    Ratios and values are SymPy expressions or numbers (text through the grammar of
    :mod:`gemhsa_sym.parse`); a value given by name is the value of the model's parameter
    of that name, whatever its assumptions.
    """
    ratios = {d: _expression(f"ratios.{d}", v) for d, v in ratios.items()}
    for d, v in ratios.items():
        if v.is_positive is False:
            raise ValueError(f"ratios: the ratio of {d} must be positive, got {v}")
    exchangeable = isinstance(model, ExchangeableSum)
    template = model.template if exchangeable else model
    exprs = [template, *(g.scale for g in gaussians_of(template)), *ratios.values()]
    if exchangeable:
        exprs.append(model.heads)
    named = {str(p): p for e in exprs for p in sp.sympify(e).free_symbols if isinstance(p, sp.Symbol)}
    values = {(k if isinstance(k, sp.Symbol) else named.get(k, sp.Symbol(k))): _expression(f"values.{k}", v)
              for k, v in (values or {}).items()}
    pencil = linearise(template)
    pencil.check()
    if exchangeable and sp.sympify(model.heads).subs(values) is sp.oo:
        return _limit_derivation(model, ratios, values, pencil)
    full = exchangeable_system(model, pencil, ratios, values) if exchangeable else dyson_system(pencil, ratios)
    probe = _probe(full, values)  # parameters without a value get generic ones for the scale and the reductions only
    bound = norm_bound(template, ratios, probe) * (float(model.heads.subs(probe)) if exchangeable else 1.0)
    zero = bound == 0
    scale = 0.0 if zero else law_scale(bound * bound, full, probe)
    system = reduce_system(full, probe, scale) if reduce and not zero else full
    return Derivation(model, ratios, values, pencil, full, system, scale, zero)


def _limit_derivation(model: ExchangeableSum, ratios: Mapping[Dim, sp.Expr], values: Mapping[sp.Symbol, sp.Expr],
                      pencil: Pencil) -> Derivation:
    """The derivation of infinitely many heads: the system reduced at :data:`PROBE_HEADS` heads, its limit
    H -> oo (checked against the finite systems), and the limit's own reductions (docs/equations.md §2.10)."""
    H = model.heads
    if not isinstance(H, sp.Symbol):
        raise ValueError(f"heads: the limit of infinitely many heads needs H as one symbol, got {H}")
    finite = {**values, H: sp.Integer(PROBE_HEADS)}
    full = exchangeable_system(model, pencil, ratios, finite)
    probe = _probe(full, finite)
    bound = norm_bound(model.template, ratios, probe) * PROBE_HEADS
    values = {k: v for k, v in values.items() if k != H}  # H is gone from the limit
    if bound == 0:  # Y = 0 at every H: the point mass at 0
        return Derivation(model, ratios, values, pencil, full, full, 0.0, True)
    reduced = reduce_system(full, probe, law_scale(bound * bound, full, probe))
    limit = heads_limit(reduced, H, probe)
    generic = _probe(limit.system, values)
    scale = law_scale(np.inf, limit.system, generic)
    check_limit(limit.system, reduced, H, generic, scale)
    system = reduce_system(limit.system, generic, scale)
    return Derivation(model, ratios, values, pencil, limit.system, system, scale, False, limit.exponents)
