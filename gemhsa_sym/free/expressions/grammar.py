"""Polynomials in Gaussian matrices from text, by a grammar that cannot run code (docs/conventions.md §6.8).

The language of ``polynomial = "..."`` in a model file: the declared matrix names,
``.T`` (transpose), ``*`` and ``@`` (products; ``*`` also scales by a number),
``+``, ``-``, ``/`` by a number, ``**`` by a small positive integer (square
matrices), parentheses, and numbers in the grammar of :mod:`gemhsa_sym.parse`.
The text is parsed by :mod:`ast` (which only builds a tree) and the tree is
walked here; nothing else is accepted.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from typing import Any

import sympy as sp
from sympy.matrices.expressions import MatAdd, MatMul, MatPow, MatrixExpr, Transpose

from gemhsa_sym.free.expressions.matrices import ShapeMismatch, is_polynomial
from gemhsa_sym.parse import parse_number

__all__ = ["MAX_POLYNOMIAL_TEXT", "parse_polynomial"]

#: Longest polynomial text accepted.
MAX_POLYNOMIAL_TEXT = 2000
#: Largest integer power of a square matrix.
MAX_POWER = 8
#: Most Gaussian factors in one monomial of a polynomial (the attention models have at most 8; the pencil and the
#: Dyson system grow with the degree).
MAX_DEGREE = 16
#: Most products, sums and powers in a polynomial's tree.
MAX_NODES = 400


class _Refused(ValueError):
    """Not in the grammar; the message says why."""


def _is_matrix(value: Any) -> bool:
    return isinstance(value, MatrixExpr)


def _degree(expr: MatrixExpr) -> int:
    """The most Gaussian factors in one monomial of ``expr`` (a power counts its exponent)."""
    if isinstance(expr, MatAdd):
        return max(_degree(arg) for arg in expr.args)
    if isinstance(expr, MatMul):
        return sum(_degree(arg) for arg in expr.args if isinstance(arg, MatrixExpr))
    if isinstance(expr, MatPow):
        return _degree(expr.base) * int(expr.exp)
    if isinstance(expr, Transpose):
        return _degree(expr.arg)
    return 1


def _scalar(node: ast.AST, text: str) -> sp.Expr:
    """A number of the grammar of :func:`gemhsa_sym.parse.parse_number`, finite and real."""
    segment = ast.get_source_segment(text, node) or ""
    value = parse_number(segment, "polynomial")
    if value.is_finite is not True or value.is_real is not True:
        raise _Refused(f"the coefficient {segment!r} is not a finite real number")
    return value


def _walk(node: ast.AST, text: str, matrices: Mapping[str, MatrixExpr]) -> Any:
    """The matrix expression (or scalar) of a node."""
    if isinstance(node, ast.Expression):
        return _walk(node.body, text, matrices)
    if isinstance(node, ast.Name) and node.id in matrices:
        return matrices[node.id]
    if isinstance(node, ast.Attribute):
        if node.attr != "T":
            raise _Refused(f"only .T is allowed after a matrix, got .{node.attr}")
        inner = _walk(node.value, text, matrices)
        if not _is_matrix(inner):
            raise _Refused(f"{ast.get_source_segment(text, node.value)!r} is not a matrix, so it has no .T")
        return inner.T
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.UAdd, ast.USub)):
        inner = _walk(node.operand, text, matrices)
        if not _is_matrix(inner):
            return _scalar(node, text)
        return inner if isinstance(node.op, ast.UAdd) else -inner
    if isinstance(node, ast.BinOp):
        left, right = _walk(node.left, text, matrices), _walk(node.right, text, matrices)
        for side in (left, right):
            if _is_matrix(side) and _degree(side) > MAX_DEGREE:
                raise _Refused(f"a product of more than {MAX_DEGREE} Gaussian matrices (degree {_degree(side)}) is beyond what "
                               "the engine solves")
        if not _is_matrix(left) and not _is_matrix(right):
            return _scalar(node, text)
        if isinstance(node.op, (ast.Mult, ast.MatMult)):
            if isinstance(node.op, ast.MatMult) and not (_is_matrix(left) and _is_matrix(right)):
                raise _Refused("@ multiplies two matrices; scale by a number with *")
            return left * right if _is_matrix(left) else right.__rmul__(left)
        if isinstance(node.op, (ast.Add, ast.Sub)):
            if not (_is_matrix(left) and _is_matrix(right)):
                raise _Refused("a number cannot be added to a matrix (write a multiple of a square matrix instead)")
            return left + right if isinstance(node.op, ast.Add) else left - right
        if isinstance(node.op, ast.Div):
            if _is_matrix(right):
                raise _Refused("cannot divide by a matrix")
            if right == 0:
                raise _Refused("division by zero")
            return left / right
        if isinstance(node.op, ast.Pow):
            if _is_matrix(right) or not (right.is_Integer and 1 <= right <= MAX_POWER):
                raise _Refused(f"a matrix power must be an integer from 1 to {MAX_POWER}")
            if left.rows != left.cols:
                raise _Refused(f"only a square matrix has powers; {left} is {left.rows} x {left.cols}")
            if _degree(left) * int(right) > MAX_DEGREE:
                raise _Refused(f"a product of more than {MAX_DEGREE} Gaussian matrices (degree {_degree(left) * int(right)}) is "
                               "beyond what the engine solves")
            out = left
            for _ in range(int(right) - 1):
                out = out * left
            return out
        raise _Refused(f"the operator {type(node.op).__name__} is not allowed")
    if isinstance(node, (ast.Constant, ast.Call)) or (isinstance(node, ast.Name) and node.id in ("pi", "E")):
        return _scalar(node, text)
    if isinstance(node, ast.Name):
        raise _Refused(f"unknown matrix {node.id!r}; declared: {', '.join(sorted(matrices)) or 'none'}")
    segment = ast.get_source_segment(text, node) if hasattr(node, "lineno") else None
    raise _Refused(f"{segment or type(node).__name__!r} is not part of a polynomial")


def parse_polynomial(text: Any, matrices: Mapping[str, MatrixExpr], field: str = "polynomial") -> MatrixExpr:
    """The polynomial written in ``text`` over the named ``matrices`` (module docstring).

    ValueError naming ``field`` for anything outside the grammar, for shapes that
    do not fit, and for a text that is a number rather than a matrix.
    """
    if not isinstance(text, str):
        raise ValueError(f"{field}: expected the polynomial as a string, got {type(text).__name__}")
    stripped = text.strip()
    if not stripped:
        raise ValueError(f"{field}: empty polynomial")
    if len(stripped) > MAX_POLYNOMIAL_TEXT:
        raise ValueError(f"{field}: a polynomial is at most {MAX_POLYNOMIAL_TEXT} characters, got {len(stripped)}")
    if not stripped.isascii():  # Python's parser folds names (NFKC): the fullwidth x would read as x
        other = next(c for c in stripped if not c.isascii())
        raise ValueError(f"{field}: cannot read {text!r}: {other!r} is not an ASCII character (matrix names are compared as "
                         "written, so only ASCII names are read)")
    try:
        tree = ast.parse(stripped, mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        raise ValueError(f"{field}: cannot read {text!r}: not an expression (or nested too deeply)") from None
    if sum(isinstance(node, (ast.BinOp, ast.UnaryOp)) for node in ast.walk(tree)) > MAX_NODES:
        raise ValueError(f"{field}: cannot read {text!r}: more than {MAX_NODES} operations")
    try:
        value = _walk(tree, stripped, matrices)
    except _Refused as exc:
        raise ValueError(f"{field}: cannot read {text!r}: {exc}") from None
    except ShapeMismatch as exc:
        raise ValueError(f"{field}: {exc}") from None
    except ValueError as exc:  # a number that parse_number refused; its message names the field
        raise ValueError(str(exc)) from None
    except RecursionError:
        raise ValueError(f"{field}: cannot read {text!r}: nested too deeply") from None
    if not _is_matrix(value) or not is_polynomial(value):
        raise ValueError(f"{field}: {text!r} is not a polynomial in the declared matrices ({', '.join(sorted(matrices))})")
    return value
