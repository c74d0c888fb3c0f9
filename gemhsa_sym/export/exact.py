"""Exact expressions as data (docs/exports.md §5.6): what a record keeps of P(m, w), the minimal system and
the moments, so that every format is printed from it at write time.

Two layouts, both plain JSON and both read back without running anything:

- a **coefficient table** (:func:`table`, :func:`from_table`) for a polynomial over Q in named
  generators: ``{"generators": [tree, ...], "terms": [[[e1, e2, ...], "p/q"], ...]}``, the terms in
  SymPy's order (P(m, w) with the generators m, w and the parameters that stayed symbolic);
- an **expression tree** (:func:`tree`, :func:`from_tree`) for any other exact expression: nested lists
  ``[head, *arguments]`` over the heads of :data:`HEADS` (sums, products, powers, exp, log, the
  constants E, pi, I and oo, integers, rationals and decimal numbers (a law's figures from quadrature) as text, and
  symbols with their assumptions).

Reading validates every node (an unknown head, a malformed number or a tree deeper than
:data:`MAX_DEPTH` is refused with a ValueError naming the field), and rebuilds the SymPy object node by
node, so a tree read back is the expression written, argument for argument.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

import sympy as sp

from gemhsa_sym.parse import parse_number

__all__ = ["ASSUMPTIONS", "HEADS", "MAX_DEPTH", "from_table", "from_tree", "read_srepr", "table", "tree"]

#: The assumptions a symbol keeps (those the package's symbols carry).
ASSUMPTIONS: tuple[str, ...] = ("real", "positive", "nonnegative", "integer")
#: The deepest tree read back.
MAX_DEPTH = 200
#: Heads of a tree with arguments, and the SymPy class that rebuilds each.
HEADS: dict[str, Callable[..., sp.Expr]] = {"Add": sp.Add, "Mul": sp.Mul, "Pow": sp.Pow, "exp": sp.exp, "log": sp.log}
#: The text of a decimal node: a signed decimal with an optional exponent.
_DECIMAL = re.compile(r"-?\d+(\.\d*)?(e[-+]?\d+)?", re.IGNORECASE)
#: Constants, by name.
CONSTANTS: dict[str, sp.Expr] = {"E": sp.E, "pi": sp.pi, "I": sp.I, "oo": sp.oo}


def tree(expr: sp.Expr) -> Any:
    """``expr`` as an expression tree (module docstring); ValueError for a node it has no head for."""
    if isinstance(expr, sp.Integer):
        return ["Integer", str(expr)]
    if isinstance(expr, sp.Rational):
        return ["Rational", str(expr)]
    if isinstance(expr, sp.Float):
        return ["Float", str(expr)]
    if isinstance(expr, sp.Symbol):
        return ["Symbol", expr.name, {key: True for key in ASSUMPTIONS if expr._assumptions_orig.get(key)}]
    for name, constant in CONSTANTS.items():
        if expr == constant:
            return [name]
    head = type(expr).__name__
    if head not in HEADS:
        raise ValueError(f"expression: {head} ({expr}) is not a node an exact record keeps")
    return [head, *(tree(arg) for arg in expr.args)]


def from_tree(data: Any, field: str = "expression", depth: int = 0, evaluate: bool = False) -> sp.Expr:
    """The SymPy expression of a tree, node by node, as written (``evaluate``: as SymPy evaluates each node) (module
    docstring); ValueError naming ``field`` otherwise."""
    if depth > MAX_DEPTH:
        raise ValueError(f"{field}: the tree is deeper than {MAX_DEPTH}")
    if not isinstance(data, list) or not data or not isinstance(data[0], str):
        raise ValueError(f"{field}: expected a node [head, ...], got {str(data)[:40]!r}")
    head, args = data[0], data[1:]
    if head in ("Integer", "Rational"):
        if len(args) != 1 or not isinstance(args[0], str):
            raise ValueError(f"{field}: a number node holds its text")
        value = parse_number(args[0], field)
        if not isinstance(value, sp.Rational):
            raise ValueError(f"{field}: {args[0]!r} is not a rational number")
        return value
    if head == "Float":
        if len(args) != 1 or not isinstance(args[0], str) or not _DECIMAL.fullmatch(args[0]):
            raise ValueError(f"{field}: a decimal node holds the decimal text of its number")
        digits = len(re.sub(r"[^0-9]", "", args[0].lower().split("e")[0]).lstrip("0"))
        return sp.Float(parse_number(args[0], field), max(digits, 15))
    if head == "Symbol":
        if len(args) != 2 or not isinstance(args[0], str) or not args[0].replace("_", "a").replace("{", "a").replace(
                "}", "a").replace(",", "a").replace("^", "a").isalnum() or not isinstance(args[1], dict):
            raise ValueError(f"{field}: a symbol node is ['Symbol', name, assumptions]")
        if set(args[1]) - set(ASSUMPTIONS) or not all(value is True for value in args[1].values()):
            raise ValueError(f"{field}: a symbol's assumptions are among {', '.join(ASSUMPTIONS)}")
        return sp.Symbol(args[0], **args[1])
    if head in CONSTANTS and not args:
        return CONSTANTS[head]
    if head not in HEADS:
        raise ValueError(f"{field}: unknown node {head!r}")
    try:
        return HEADS[head](*(from_tree(arg, field, depth + 1, evaluate) for arg in args), evaluate=evaluate)
    except TypeError:
        raise ValueError(f"{field}: {head} takes other arguments than {len(args)}") from None


def table(polynomial: sp.Expr | sp.Poly, generators: Sequence[sp.Expr]) -> dict[str, Any]:
    """A polynomial over Q in ``generators`` as a coefficient table (module docstring); a Poly in those generators is
    taken as it is."""
    same = isinstance(polynomial, sp.Poly) and list(polynomial.gens) == list(generators) and polynomial.domain == sp.QQ
    poly = polynomial if same else sp.Poly(polynomial, *generators, domain=sp.QQ)
    return {"generators": [tree(g) for g in generators], "terms": [[list(e), str(c)] for e, c in poly.terms()]}


def from_table(data: Any, field: str = "polynomial") -> sp.Expr:
    """The polynomial of a coefficient table, its terms added in the table's order; ValueError naming ``field``."""
    if not isinstance(data, dict) or not isinstance(data.get("generators"), list) or not isinstance(data.get("terms"), list):
        raise ValueError(f"{field}: expected a table with generators and terms")
    generators = [from_tree(g, f"{field}.generators") for g in data["generators"]]
    terms = []
    for term in data["terms"]:
        if not (isinstance(term, list) and len(term) == 2 and isinstance(term[0], list) and len(term[0]) == len(generators)
                and all(isinstance(e, int) and not isinstance(e, bool) and 0 <= e <= 10**4 for e in term[0])
                and isinstance(term[1], str)):
            raise ValueError(f"{field}: a term is [[exponents of the {len(generators)} generators], coefficient]")
        coefficient = parse_number(term[1], f"{field}.terms")
        if not isinstance(coefficient, sp.Rational):
            raise ValueError(f"{field}: the coefficient {term[1]!r} is not rational")
        terms.append(sp.Mul(coefficient, *(g**e for g, e in zip(generators, term[0]))))
    return sp.Add(*terms)


#: Tokens of SymPy's ``srepr`` text: names, quoted strings, integers, punctuation.
_TOKEN = re.compile(r"\s*(?:([A-Za-z_][A-Za-z0-9_]*)|'((?:[^'\\]|\\.)*)'|(-?\d+)|([(),=]))")
#: The longest ``srepr`` text read.
MAX_TEXT = 10**7


def read_srepr(text: str, field: str = "sympy") -> sp.Expr:
    """An expression written by SymPy's ``srepr`` (the ``sympy`` export), read by a grammar that runs nothing: calls of
    the heads of :data:`HEADS`, ``Integer(n)``, ``Rational(p, q)``, ``Symbol('name', assumption=True, ...)`` and the
    constants ``E``, ``pi``, ``I``, ``oo``, turned into a tree and rebuilt by :func:`from_tree`, each node evaluated as
    SymPy evaluates it (srepr prints -8 x as Mul(Integer(-1), Integer(8), x)); ValueError naming ``field``."""
    if not isinstance(text, str) or len(text) > MAX_TEXT:
        raise ValueError(f"{field}: expected srepr text of at most {MAX_TEXT} characters")
    tokens, position = [], 0
    while position < len(text.rstrip()):
        match = _TOKEN.match(text, position)
        if match is None:
            raise ValueError(f"{field}: cannot read {text[position:position + 20]!r}")
        tokens.append(match.groups())
        position = match.end()
    where = 0

    def take() -> tuple[str | None, ...]:
        nonlocal where
        if where >= len(tokens):
            raise ValueError(f"{field}: the text ends inside an expression")
        where += 1
        return tokens[where - 1]

    def node(depth: int) -> Any:
        if depth > MAX_DEPTH:
            raise ValueError(f"{field}: nested deeper than {MAX_DEPTH}")
        name, _, _, _ = take()
        if name is None:
            raise ValueError(f"{field}: expected a name at token {where}")
        if where >= len(tokens) or tokens[where][3] != "(":
            return [name]
        take()
        args: list[Any] = []
        keywords: dict[str, bool] = {}
        while tokens[where][3] != ")" if where < len(tokens) else False:
            key, string, number, punct = tokens[where]
            if string is not None:
                take()
                args.append(("string", string))
            elif number is not None:
                take()
                args.append(("number", number))
            elif key is not None and where + 1 < len(tokens) and tokens[where + 1][3] == "=":
                take(), take()
                value = take()[0]
                if value not in ("True", "False"):
                    raise ValueError(f"{field}: a keyword of {name} takes True or False")
                keywords[key] = value == "True"
            else:
                args.append(("node", node(depth + 1)))
            if where < len(tokens) and tokens[where][3] == ",":
                take()
        take()
        if name == "Integer" and [kind for kind, _ in args] == ["number"]:
            return ["Integer", args[0][1]]
        if name == "Rational" and [kind for kind, _ in args] == ["number", "number"]:
            return ["Rational", f"{args[0][1]}/{args[1][1]}"]
        if name == "Symbol" and [kind for kind, _ in args] == ["string"]:
            return ["Symbol", args[0][1], {key: True for key, value in keywords.items() if value}]
        if keywords or any(kind != "node" for kind, _ in args):
            raise ValueError(f"{field}: {name} takes expressions only")
        return [name, *(value for _, value in args)]

    result = node(0)
    if where != len(tokens):
        raise ValueError(f"{field}: unexpected text after the expression")
    return from_tree(result, field, evaluate=True)
