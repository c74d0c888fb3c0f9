"""A law's answers from a record of it written before (the library's, docs/exports.md §5.3): its P(m, w), checked on the
physical solution, and the record itself where a request matches the one that wrote it."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import sympy as sp

from gemhsa_sym.export.exact import from_table
from gemhsa_sym.export.record import LawRecord
from gemhsa_sym.free.algebraic.elimination import TIME_LIMIT, Elimination, adopted
from gemhsa_sym.free.expressions.system import DysonSystem
from gemhsa_sym.progress import stage

__all__ = ["answers_record", "recorded_elimination"]


def recorded_elimination(known: LawRecord, system: DysonSystem, values: Mapping[sp.Symbol, Any],
                         solutions: Callable[[], Sequence[Any]]) -> Elimination:
    """The elimination of the record ``known`` at the default time limit: its P read back from the coefficient table and
    checked on the physical ``solutions()`` (:func:`~gemhsa_sym.free.algebraic.elimination.adopted`; points near the
    support, where a changed coefficient leaves a residual of 1e-10 or more against 1e-50), or the reason it gives for
    none."""
    info = known.polynomial_info
    if known.exact is None or known.exact.polynomial is None:
        return Elimination(None, known.polynomial_reason, None, None, (), {}, {}, {}, info.backend, 0.0,
                           attempts=("read from a record of this law",))
    with stage("checking the recorded P(m, w) on the physical solution"):
        return adopted(system, values, solutions(), from_table(known.exact.polynomial, "record.exact.polynomial"),
                       info.substituted, info.method or "resultants", info.backend)


def answers_record(known: LawRecord, dps: int, moments: int, time_limit: float, edges: str,
                   discriminant_limit: float | None) -> bool:
    """Whether ``known`` is the answer to a request for a record with these options: the same digits and moments, the
    default time limits, and edges found as asked (a record whose discriminant timed out has the folds refined on P,
    as a new one would)."""
    if (dps, moments, float(time_limit), discriminant_limit) != (known.dps, len(known.moments), TIME_LIMIT, None):
        return False
    return edges == "discriminant" or known.edge_method != "discriminant"
