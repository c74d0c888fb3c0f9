"""Writers of a law's record, registered by name and printed at write time (docs/exports.md §5.6).

Every writer takes a record (:meth:`~gemhsa_sym.laws.protocol.Law.record`) and returns text: ``latex`` (the
standalone document), ``json`` (the record itself), and, for a record with P(m, w) and moments,
``mathematica``, ``maple`` and ``sympy``: P(m, w), the moments at the law's values and symbolic in its
parameters, the values of the parameters, the minimal system, its definitions and m(w), printed by
SymPy's printers from the record's exact parts (:class:`~.record.ExactParts`) so that a researcher can paste
them into a computer-algebra system. Mathematica and Maple get identifiers made of letters and digits
(``g_{s,s}`` is ``gss``, ``mu_1`` is ``mu1``), listed in a comment; the ``sympy`` text is one
``NAME = srepr`` line per expression, which :func:`~.exact.read_srepr` reads back without running anything.
``gemhsa-sym derive --export FORMAT=FILE`` is generated from :data:`WRITERS`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import sympy as sp
from sympy.printing.maple import maple_code

from gemhsa_sym.export.document import document
from gemhsa_sym.export.exact import from_table, from_tree
from gemhsa_sym.export.positional_document import causal_document, key_weighted_document
from gemhsa_sym.export.record import LawRecord

__all__ = ["WRITERS", "Writer", "expressions", "write"]

#: Names a computer-algebra system keeps for itself, which an identifier must not take.
RESERVED = {"C", "D", "E", "I", "N", "O", "K", "Pi", "gamma", "m", "w"}


@dataclass(frozen=True)
class Writer:
    """One export format: its file suffix, what it holds, and the function that prints a record."""

    suffix: str
    summary: str
    print: Callable[[Any], str]


def _positional(record: Any) -> bool:
    """Whether ``record`` is a causal or key-weighted law's (a JSON mapping of docs/exports.md §5.5), not a
    :class:`LawRecord`."""
    return isinstance(record, Mapping) and record.get("kind") in ("causal", "key-weighted")


def expressions(record: LawRecord) -> dict[str, Any]:
    """The exact parts of a record as SymPy objects, by name: ``P`` (or None), ``moments``, ``symbolic_moments``,
    ``values`` ({symbol: value}), ``equations`` and ``definitions`` (lists of Eq) and ``stieltjes`` (m(w))."""
    if _positional(record) or record.exact is None:
        raise ValueError("format: a causal or key-weighted law's record has no P(m, w), minimal system or exact moments to "
                         "print (docs/extensions.md §8.6, §8.7); write it as latex or json")
    exact = record.exact

    def equations(pairs: list[list[Any]]) -> list[sp.Eq]:
        return [sp.Eq(from_tree(g, "exact"), from_tree(f, "exact"), evaluate=False) for g, f in pairs]

    return {"P": None if exact.polynomial is None else from_table(exact.polynomial),
            "moments": [from_tree(m["exact"], "exact.moments") for m in exact.moments],
            "symbolic_moments": [from_tree(m["symbolic"], "exact.moments") for m in exact.moments],
            "values": {from_tree(k, "exact.values"): from_tree(v, "exact.values") for k, v in exact.values},
            "equations": equations(exact.equations), "definitions": equations(exact.definitions),
            "stieltjes": from_tree(exact.output, "exact.output")}


def _identifiers(found: dict[str, Any]) -> dict[sp.Symbol, sp.Symbol]:
    """Every symbol of the expressions renamed to letters and digits, distinct, none a reserved name."""
    symbols: set[sp.Symbol] = set()
    items = [found["P"], *found["moments"], *found["symbolic_moments"], *found["equations"], *found["definitions"],
             found["stieltjes"], *found["values"], *found["values"].values()]
    for item in items:
        if item is not None:
            symbols |= item.free_symbols
    taken, out = set(), {}
    for s in sorted(symbols, key=str):
        if s.name in ("m", "w"):
            out[s] = s
            continue
        base = re.sub(r"[^A-Za-z0-9]", "", s.name) or "x"
        base = base if base[0].isalpha() and base not in RESERVED else "x" + base
        name, k = base, 1
        while name in taken:
            name, k = f"{base}{k}", k + 1
        taken.add(name)
        out[s] = sp.Symbol(name, **{key: True for key in ("real", "positive", "nonnegative", "integer")
                                    if s._assumptions_orig.get(key)})
    return out


def _cas(record: LawRecord, printer: Callable[[Any], str], assign: str, eq: str, braces: tuple[str, str],
         comment: Callable[[str], str], rule: str) -> str:
    """The expressions of a record for a computer-algebra system: ``printer`` prints one expression, ``assign`` binds
    a name, ``eq`` writes an equation, ``braces`` open and close a list, ``rule`` writes a substitution."""
    found = expressions(record)
    names = _identifiers(found)

    def show(expr: sp.Expr) -> str:
        return printer(expr.xreplace(names))

    def listed(items: list[str]) -> str:
        return braces[0] + ", ".join(items) + braces[1]

    lines = [comment(f"gemhsa_sym: the law of {record.name or 'a polynomial model'}: {record.summary or record.model}"),
             comment("m(w) = (1/q) tr (w - Y^T Y)^(-1) is a root of P(m, w) = 0 in m; the moments are those of the "
                     "eigenvalues of Y^T Y"),
             comment("identifiers: " + ", ".join(f"{new} = {old}" for old, new in names.items() if old != new))]
    if found["P"] is not None:
        lines.append(f"P {assign} {show(found['P'])};")
    lines += [f"values {assign} {listed([f'{show(k)} {rule} {show(v)}' for k, v in found['values'].items()])};",
              f"moments {assign} {listed([show(m) for m in found['moments']])};",
              f"symbolicMoments {assign} {listed([show(m) for m in found['symbolic_moments']])};",
              f"minimalSystem {assign} {listed([f'{show(e.lhs)} {eq} {show(e.rhs)}' for e in found['equations']])};",
              f"definitions {assign} {listed([f'{show(e.lhs)} {eq} {show(e.rhs)}' for e in found['definitions']])};",
              f"stieltjes {assign} {show(found['stieltjes'])};"]
    return "\n".join(lines) + "\n"


def _mathematica(record: Any) -> str:
    return _cas(record, sp.mathematica_code, "=", "==", ("{", "}"), lambda text: f"(* {text} *)", "->")


def _maple(record: Any) -> str:
    return _cas(record, maple_code, ":=", "=", ("[", "]"), lambda text: f"# {text}", "=")


def _sympy(record: Any) -> str:
    """One ``NAME = srepr`` line per expression (module docstring)."""
    found = expressions(record)
    lines = [f"# gemhsa_sym: the law of {record.name or 'a polynomial model'}; each line NAME = srepr(expression), read back by "
             "gemhsa_sym.export.exact.read_srepr"]
    if found["P"] is not None:
        lines.append(f"P = {sp.srepr(found['P'])}")
    lines += [f"moment_{k} = {sp.srepr(m)}" for k, m in enumerate(found["moments"], 1)]
    lines += [f"symbolic_moment_{k} = {sp.srepr(m)}" for k, m in enumerate(found["symbolic_moments"], 1)]
    lines += [f"value_{k.name} = {sp.srepr(v)}" for k, v in found["values"].items()]
    lines += [f"equation_{k} = {sp.srepr(e.lhs - e.rhs)}" for k, e in enumerate(found["equations"], 1)]
    lines += [f"definition_{k} = {sp.srepr(e.lhs - e.rhs)}" for k, e in enumerate(found["definitions"], 1)]
    lines.append(f"stieltjes = {sp.srepr(found['stieltjes'])}")
    return "\n".join(lines) + "\n"


def _latex(record: Any) -> str:
    if _positional(record):
        return causal_document(record) if record["kind"] == "causal" else key_weighted_document(record)
    return document(record)


def _json(record: Any) -> str:
    return json.dumps(record if _positional(record) else record.to_json(), indent=2) + "\n"


#: The export formats, by name.
WRITERS: dict[str, Writer] = {
    "latex": Writer("tex", "the standalone document (pdflatex)", _latex),
    "json": Writer("json", "the record", _json),
    "mathematica": Writer("m", "P(m, w), moments, values, minimal system and m(w) in Mathematica", _mathematica),
    "maple": Writer("mpl", "the same in Maple", _maple),
    "sympy": Writer("txt", "the same as srepr lines, read back by gemhsa_sym.export.exact.read_srepr", _sympy),
}


def write(format: str, record: Any) -> str:
    """The text of ``record`` in ``format`` (one of :data:`WRITERS`); ValueError naming the format otherwise."""
    if format not in WRITERS:
        raise ValueError(f"format: unknown export format {format!r}; choose one of {', '.join(WRITERS)}")
    return WRITERS[format].print(record)
