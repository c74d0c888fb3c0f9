"""Exact numbers from text, by a grammar that cannot run code (docs/conventions.md §6.8).

Text from a user, a configuration file or a cache is never given to ``eval``,
``sympify`` or ``parse_expr`` (all of which evaluate Python). :func:`parse_number`
parses it with Python's :mod:`ast` (which only builds a tree) and walks the tree,
accepting

- integer and decimal literals (``2``, ``0.25``, ``1e-3``: decimals are exact rationals),
- ``+ - * / **`` and parentheses,
- the constants ``pi`` and ``E`` (and ``oo``, ``inf``, ``nan``, which the callers
  refuse where a finite number is needed),
- the functions ``sqrt``, ``exp``, ``log`` of one argument and ``Rational(p, q)``.

Anything else (names, attributes, calls of other functions, subscripts, strings,
lambdas) is refused with a message that names the field. Every intermediate value
is evaluated in double precision beside its exact SymPy value, so overflow, division
by zero and powers too large to build are refused before SymPy does any work.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable
from fractions import Fraction
from numbers import Rational as _RationalNumber
from typing import Any

import sympy as sp

__all__ = ["MAX_INTEGER", "MAX_TEXT", "integer_value", "parse_number", "real_number", "to_number"]

#: Longest text accepted as a number.
MAX_TEXT = 200
#: Largest integer accepted for a count (heads, groups, sizes, head indices).
MAX_INTEGER = 10**12
#: Largest |numerator| and |denominator| of an exponent that is applied exactly.
MAX_EXPONENT = 1000
#: Largest size of the exponent of a decimal literal (1e100 is the largest power of ten; the exact value of 1e-250
#: would print with 250 digits, which no field keeps).
MAX_DECIMAL_EXPONENT = 100
#: Most bits of the numerator or denominator of an exact rational built on the way (2^4096 is about 1e1233).
MAX_BITS = 4096

_CONSTANTS: dict[str, tuple[sp.Expr, float]] = {
    "pi": (sp.pi, math.pi),
    "E": (sp.E, math.e),
    "oo": (sp.oo, math.inf),
    "inf": (sp.oo, math.inf),
    "infinity": (sp.oo, math.inf),
    "nan": (sp.nan, math.nan),
}

_FUNCTIONS: dict[str, tuple[Callable[[sp.Expr], sp.Expr], Callable[[float], float]]] = {
    "sqrt": (sp.sqrt, math.sqrt),
    "exp": (sp.exp, math.exp),
    "log": (sp.log, math.log),
}

_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
}


class _Refused(ValueError):
    """The text is not in the grammar; the message says why (without the field)."""


def _literal(node: ast.Constant, text: str) -> tuple[sp.Expr, float]:
    value = node.value
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _Refused(f"{value!r} is not a number")
    if isinstance(value, int):
        return sp.Integer(value), float(value) if abs(value) < 2**1023 else math.inf
    segment = (ast.get_source_segment(text, node) or repr(value)).replace("_", "")
    mantissa, _, power = segment.lower().partition("e")
    if power and (not power.lstrip("+-").isdigit() or len(power.lstrip("+-")) > 4 or abs(int(power)) > MAX_DECIMAL_EXPONENT):
        raise _Refused(f"{segment} is out of range: the decimal exponent is at most {MAX_DECIMAL_EXPONENT} in size")
    if len(mantissa) > 60:
        raise _Refused(f"{segment[:20]}... has more digits than a number of this engine keeps (60)")
    exact = Fraction(segment)
    return sp.Rational(exact.numerator, exact.denominator), value


def _power(base: tuple[sp.Expr, float], exponent: tuple[sp.Expr, float]) -> tuple[sp.Expr, float]:
    """base ** exponent with the exponent's size bounded (docstring of the module)."""
    e = exponent[0]
    if e.is_Rational and (abs(e.p) > MAX_EXPONENT or e.q > MAX_EXPONENT):
        shown = str(e) if len(str(e)) <= 20 else f"of {len(str(e.p))} digits"
        raise _Refused(f"the exponent {shown} is too large (at most {MAX_EXPONENT} in numerator and denominator)")
    if not e.is_Rational and not math.isfinite(exponent[1]):
        raise _Refused("the exponent is not finite")
    if base[1] == 0 and exponent[1] < 0:
        raise _Refused("division by zero")
    b = base[0]
    if b.is_Rational and e.is_Rational and max(abs(b.p).bit_length(), b.q.bit_length()) * abs(e.p) / e.q > MAX_BITS:
        raise _Refused(f"the power is too large to build exactly (more than {MAX_BITS} bits)")
    try:
        approx = math.pow(base[1], exponent[1])
    except OverflowError:
        raise _Refused("the value is too large for a number of this engine") from None
    except ValueError:
        approx = math.nan  # a negative base to a fractional power: complex, refused by the callers as not real
    return base[0] ** e, approx


def _walk(node: ast.AST, text: str) -> tuple[sp.Expr, float]:
    """(exact SymPy value, double-precision value) of a node of the grammar."""
    if isinstance(node, ast.Expression):
        return _walk(node.body, text)
    if isinstance(node, ast.Constant):
        return _literal(node, text)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.UAdd, ast.USub)):
        exact, approx = _walk(node.operand, text)
        return (exact, approx) if isinstance(node.op, ast.UAdd) else (-exact, -approx)
    if isinstance(node, ast.BinOp):
        left, right = _walk(node.left, text), _walk(node.right, text)
        if isinstance(node.op, ast.Pow):
            return _power(left, right)
        op = _BINARY.get(type(node.op))
        if op is None:
            raise _Refused(f"the operator {type(node.op).__name__} is not allowed (only + - * / **)")
        if isinstance(node.op, ast.Div) and right[0] == 0:
            raise _Refused("division by zero")
        try:
            approx = op(left[1], right[1])
        except ZeroDivisionError:  # a divisor that underflows in double precision
            approx = math.inf
        return op(left[0], right[0]), approx
    if isinstance(node, ast.Name):
        if node.id not in _CONSTANTS:
            raise _Refused(f"unknown name {node.id!r} (allowed: {', '.join(_CONSTANTS)})")
        return _CONSTANTS[node.id]
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.keywords \
            and (node.func.id, len(node.args)) in {("Rational", 2), *((f, 1) for f in _FUNCTIONS)}:
        name, args = node.func.id, [_walk(a, text) for a in node.args]
        if name == "Rational":
            if not all(a[0].is_Integer for a in args):
                raise _Refused("Rational(p, q) takes two integers")
            if args[1][0] == 0:
                raise _Refused("division by zero")
            return sp.Rational(args[0][0], args[1][0]), args[0][1] / args[1][1]
        exact_fn, approx_fn = _FUNCTIONS[name]
        try:
            approx = approx_fn(args[0][1])
        except OverflowError:
            raise _Refused(f"{name} of {args[0][0]} is too large for a number of this engine") from None
        except ValueError:
            approx = math.nan
        return exact_fn(args[0][0]), approx
    if isinstance(node, ast.Call):
        raise _Refused(
            f"unknown function call {ast.get_source_segment(text, node)!r} "
            f"(allowed: {', '.join(_FUNCTIONS)} of one number, Rational(p, q))"
        )
    segment = ast.get_source_segment(text, node) if hasattr(node, "lineno") else None
    raise _Refused(f"{segment or type(node).__name__!r} is not part of a number")


def parse_number(text: str, field: str) -> sp.Expr:
    """The exact SymPy number written in ``text`` (module docstring); ValueError naming ``field``.

    Infinity and nan parse (to ``oo`` and ``nan``); callers that need a finite
    real number check it.
    """
    stripped = text.strip()
    if not stripped:
        raise ValueError(f"{field}: expected a number, got an empty text")
    if len(stripped) > MAX_TEXT:
        raise ValueError(f"{field}: a number is at most {MAX_TEXT} characters, got {len(stripped)}")
    try:
        tree = ast.parse(stripped, mode="eval")
    except (SyntaxError, ValueError):
        raise ValueError(f"{field}: expected a number, got {text!r}") from None
    try:
        exact, approx = _walk(tree, stripped)
    except _Refused as exc:
        raise ValueError(f"{field}: cannot read {text!r} as a number: {exc}") from None
    except (OverflowError, ZeroDivisionError) as exc:
        raise ValueError(f"{field}: cannot read {text!r} as a number: {exc}") from None
    if math.isinf(approx) and exact.is_finite is not False:
        raise ValueError(f"{field}: {text!r} is too large for a number of this engine")
    return exact


def to_number(value: Any, field: str) -> sp.Expr:
    """An exact SymPy number from an int, float, Fraction, SymPy expression or text (:func:`parse_number`).

    Floats become the exact rational of their shortest repr (``0.1`` -> 1/10);
    booleans and other types are refused with a ValueError naming ``field``.
    """
    if isinstance(value, bool):
        raise ValueError(f"{field}: expected a number, got {value!r}")
    if isinstance(value, str):
        return parse_number(value, field)
    if isinstance(value, sp.Basic):
        if not isinstance(value, sp.Expr):
            raise ValueError(f"{field}: expected a number, got {value!r}")
        return value
    if isinstance(value, float):
        if math.isnan(value):
            return sp.nan
        if math.isinf(value):
            return sp.oo if value > 0 else -sp.oo
        return sp.Rational(repr(value))
    if isinstance(value, _RationalNumber):  # int, Fraction, numpy integers
        return sp.Rational(int(value.numerator), int(value.denominator))
    if hasattr(value, "dtype") and getattr(value.dtype, "kind", "") == "f":  # numpy floating scalars
        return to_number(float(value), field)
    raise ValueError(f"{field}: expected a number, got {type(value).__name__} {value!r}")


def real_number(field: str, value: Any) -> sp.Expr:
    """An exact real finite SymPy number from an int, float, Fraction, SymPy expression or text; ValueError naming ``field``."""
    number = to_number(value, field)
    if number.has(sp.nan) or number.is_finite is not True:
        raise ValueError(f"{field}: must be finite, got {value!r}")
    if not number.is_number:
        raise ValueError(f"{field}: expected a number, got {value!r}")
    if number.is_real is not True:
        raise ValueError(f"{field}: must be real, got {value!r}")
    return number


def integer_value(field: str, value: Any) -> int:
    """A Python int from an integral int, SymPy integer or text, at most MAX_INTEGER in size; ValueError naming ``field``."""
    try:
        number = None if isinstance(value, bool) else real_number(field, value)
    except ValueError:
        number = None
    if number is None or not number.is_integer:
        raise ValueError(f"{field}: expected an integer, got {value!r}")
    if abs(number) > MAX_INTEGER:
        raise ValueError(f"{field}: {number} is out of range (at most {MAX_INTEGER} in absolute value)")
    return int(number)
