"""Symbolic rectangular Gaussian matrices and polynomials in them.

A :class:`Dim` is a named dimension group whose size is ``ratio * N`` with
N -> oo. A :class:`Gaussian` is an iid N(0, scale/N) matrix between two
dimension groups (docs/equations.md §2.1); a :class:`Diagonal` is a deterministic
diagonal matrix over one group whose entries are distributed as a function of a
standard Gaussian (docs/equations.md §2.12). Polynomials are SymPy matrix expressions
(products, sums, transposes, scalar coefficients, the same matrix several
times); the operators of these classes check shapes on construction,
which SymPy does not do for symbolic shapes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import mpmath
import numpy as np
import sympy as sp
from sympy.core.symbol import Str
from sympy.matrices.expressions import MatAdd, MatMul, MatPow, MatrixExpr, MatrixSymbol, Transpose

from gemhsa_sym.parse import to_number

__all__ = ["MAX_MONOMIALS", "NORMAL", "Dim", "Diagonal", "Gaussian", "RandomInstance", "monomials", "ShapeMismatch", "diagonals_of",
           "dims_of", "gaussians_of", "is_polynomial", "without_powers"]


#: The most monomials of a polynomial that is expanded (to bound it, to print it term by term); a larger one is read as
#: it is written (the expansion grows like the product of its sums' lengths: a token covariance of 16 levels has 4112).
MAX_MONOMIALS = 256
#: The standard Gaussian variable g of a :class:`Diagonal`'s entries.
NORMAL = sp.Symbol("g", real=True)


class ShapeMismatch(ValueError):
    """Two matrix expressions whose shapes do not fit together."""


class Dim(sp.Symbol):
    """A dimension group: a positive symbol standing for a size ``ratio * N``."""

    def __new__(cls, name: str) -> "Dim":
        return super().__new__(cls, name, positive=True)


def _shape_str(m: MatrixExpr) -> str:
    return f"{m} ({m.rows} x {m.cols})"


def _checked(expr: Any) -> Any:
    """Re-wrap a SymPy matrix expression in the shape-checking classes (top level only)."""
    for plain, checked in ((MatMul, _MatMul), (MatAdd, _MatAdd), (Transpose, _Transpose)):
        if type(expr) is plain:
            return checked(*expr.args)
    return expr


class _ShapeChecked:
    """Arithmetic that validates shapes before building the SymPy expression."""

    def __mul__(self, other: Any) -> Any:
        if isinstance(other, MatrixExpr) and self.cols != other.rows:
            raise ShapeMismatch(
                f"cannot multiply {_shape_str(self)} by {_shape_str(other)}: "
                f"inner dimensions {self.cols} and {other.rows} differ"
            )
        return _checked(MatrixExpr.__mul__(self, other))

    __matmul__ = __mul__

    def __rmul__(self, other: Any) -> Any:
        return _checked(MatrixExpr.__rmul__(self, other))

    def __add__(self, other: Any) -> Any:
        if isinstance(other, MatrixExpr) and self.shape != other.shape:
            raise ShapeMismatch(f"cannot add {_shape_str(self)} and {_shape_str(other)}")
        return _checked(MatrixExpr.__add__(self, other))

    def __radd__(self, other: Any) -> Any:
        return _checked(MatrixExpr.__radd__(self, other))

    def __sub__(self, other: Any) -> Any:
        return self + (-1) * other

    def __neg__(self) -> Any:
        return _checked(MatrixExpr.__neg__(self))

    def __truediv__(self, other: Any) -> Any:
        return self * (sp.S.One / (other if isinstance(other, sp.Expr) else to_number(other, "divisor")))

    @property
    def T(self) -> Any:  # noqa: N802 - SymPy's name
        return _checked(Transpose(self).doit())


class _MatMul(_ShapeChecked, MatMul):
    pass


class _MatAdd(_ShapeChecked, MatAdd):
    pass


class _Transpose(_ShapeChecked, Transpose):
    pass


class Gaussian(_ShapeChecked, MatrixSymbol):
    """A ``rows x cols`` matrix with iid N(0, scale/N) entries; rows and cols are :class:`Dim`."""

    def __new__(cls, name: str | Str, rows: Dim, cols: Dim, scale: Any = 1) -> "Gaussian":
        if not isinstance(rows, sp.Symbol) or not isinstance(cols, sp.Symbol):
            raise TypeError(f"Gaussian {name}: rows and cols must be Dim objects, got {rows!r}, {cols!r}")
        scale = scale if isinstance(scale, sp.Expr) else to_number(scale, f"Gaussian {name}: scale")
        if scale.is_positive is False:
            raise ValueError(f"Gaussian {name}: scale must be positive, got {scale}")
        name = name if isinstance(name, Str) else Str(name)
        return sp.Basic.__new__(cls, name, rows, cols, scale)

    @property
    def scale(self) -> sp.Expr:
        """Entry variance times N."""
        return self.args[3]

    def _hashable_content(self) -> tuple:
        return self.args


class Diagonal(_ShapeChecked, MatrixSymbol):
    """A deterministic diagonal matrix over the dimension group ``dim`` whose entries are distributed as ``entry``, a real
    expression in the standard Gaussian :data:`NORMAL` (docs/equations.md §2.12): exp(tau g - tau^2 / 2) for lognormal
    weights of mean 1, and a sign or a step of g for two values."""

    def __new__(cls, name: str | Str, dim: Dim, *entry: Any) -> "Diagonal":
        if len(entry) == 2 and entry[0] == dim:  # SymPy rebuilds a matrix symbol from its args (name, rows, cols, ...)
            entry = entry[1:]
        if len(entry) != 1:
            raise TypeError(f"Diagonal {name}: expected a name, a dim and an entry")
        entry = entry[0]
        if not isinstance(dim, sp.Symbol):
            raise TypeError(f"Diagonal {name}: dim must be a Dim object, got {dim!r}")
        entry = entry if isinstance(entry, sp.Expr) else to_number(entry, f"Diagonal {name}: entry")
        if entry.free_symbols - {NORMAL}:
            raise ValueError(f"Diagonal {name}: the entry must be an expression in the standard Gaussian g only, got {entry}")
        name = name if isinstance(name, Str) else Str(name)
        return sp.Basic.__new__(cls, name, dim, dim, entry)

    @property
    def entry(self) -> sp.Expr:
        """The entry as a function of the standard Gaussian g."""
        return self.args[3]

    def values(self, g: np.ndarray) -> np.ndarray:
        """The entries at the points ``g`` of the standard Gaussian, checked real and finite."""
        f = sp.lambdify(NORMAL, self.entry, ["scipy", "numpy"])
        values = np.broadcast_to(np.asarray(f(np.asarray(g, dtype=float)), dtype=complex), np.shape(g))
        if not np.all(np.isfinite(values)) or np.any(values.imag != 0):
            raise ValueError(f"Diagonal {self.name}: the entry {self.entry} is not real and finite at every point")
        return values.real

    def _eval_transpose(self) -> "Diagonal":
        return self

    def _hashable_content(self) -> tuple:
        return self.args


def gaussians_of(expr: MatrixExpr) -> tuple[Gaussian, ...]:
    """The distinct Gaussian matrices of a polynomial, sorted by name."""
    found = {a for a in sp.preorder_traversal(expr) if isinstance(a, Gaussian)}
    return tuple(sorted(found, key=lambda g: (g.name, str(g.rows), str(g.cols))))


def diagonals_of(expr: MatrixExpr) -> tuple[Diagonal, ...]:
    """The distinct deterministic diagonals of a polynomial, sorted by name."""
    return tuple(sorted({a for a in sp.preorder_traversal(expr) if isinstance(a, Diagonal)}, key=lambda g: g.name))


def dims_of(expr: MatrixExpr) -> tuple[Dim, ...]:
    """The dimension groups a polynomial involves, sorted by name."""
    dims = {expr.rows, expr.cols}
    for g in gaussians_of(expr):
        dims.update((g.rows, g.cols))
    return tuple(sorted(dims, key=str))


def is_polynomial(expr: Any, diagonals: bool = False) -> bool:
    """True for a matrix expression built from Gaussians, identities, sums, products, transposes, and with
    ``diagonals`` deterministic :class:`Diagonal` matrices (which only the positional Dyson equation reads,
    docs/equations.md §2.12)."""
    if isinstance(expr, (Gaussian, sp.Identity, sp.ZeroMatrix)):
        return True
    if isinstance(expr, Diagonal):
        return diagonals
    if isinstance(expr, MatPow):
        return expr.exp.is_Integer and expr.exp > 0 and is_polynomial(expr.base, diagonals)
    if isinstance(expr, (MatMul, MatAdd, Transpose)):
        return all(is_polynomial(a, diagonals) for a in expr.args if isinstance(a, MatrixExpr))
    return False


def monomials(expr: MatrixExpr) -> int:
    """The number of monomials of ``expr`` expanded, before like terms combine."""
    if isinstance(expr, MatAdd):
        return sum(monomials(a) for a in expr.args)
    if isinstance(expr, MatMul):
        count = 1
        for a in expr.args:
            count *= monomials(a) if isinstance(a, MatrixExpr) else 1
        return count
    if isinstance(expr, Transpose):
        return monomials(expr.arg)
    if isinstance(expr, MatPow):
        return monomials(expr.base) ** int(expr.exp)
    return 1


def without_powers(expr: Any) -> Any:
    """``expr`` with every positive integer power A**k written as the product A A ... A.

    SymPy turns ``Z @ Z`` into ``Z**2``; the pencil and the evaluators read products.
    """
    return expr.replace(
        lambda e: isinstance(e, MatPow) and e.exp.is_Integer and e.exp > 0,
        lambda e: MatMul(*([e.base] * int(e.exp))),
    )


@dataclass
class RandomInstance:
    """One random instance of polynomials: every dimension group of size 2 to 4, every Gaussian an array of standard
    normal entries, every diagonal its entries at standard normal draws of g, drawn from ``rng`` on first use (so one instance evaluates several polynomials consistently), and
    every parameter of a coefficient at its value in ``scalars`` (by name). Identities of polynomials are checked on
    such instances: a false one fails on them with probability one. With ``digits`` an evaluation is carried out in
    mpmath at that precision (the draws are exact there), with the coefficients' exact values (``scalars`` then holds
    SymPy numbers)."""

    rng: np.random.Generator
    scalars: dict[str, complex | sp.Expr]
    sizes: dict[Dim, int] = field(default_factory=dict)
    arrays: dict[Gaussian | Diagonal, np.ndarray] = field(default_factory=dict)

    def size(self, dim: Dim) -> int:
        """The size of ``dim`` here."""
        if dim not in self.sizes:
            self.sizes[dim] = int(self.rng.integers(2, 5))
        return self.sizes[dim]

    def number(self, expr: sp.Expr, absolute: bool = False, digits: int | None = None) -> Any:
        """A coefficient (a SymPy expression) at the parameters' values (complex where a square root of a parameter
        is; an mpmath number of ``digits`` digits where given); with ``absolute``, its absolute value."""
        missing = sorted(str(s) for s in expr.free_symbols if str(s) not in self.scalars)
        if missing:
            raise ValueError(f"parameters: no value given for {', '.join(missing)}")
        exact = expr.subs({s: self.scalars[str(s)] for s in expr.free_symbols})
        value = complex(exact.evalf()) if digits is None else mpmath.mpmathify(sp.N(exact, digits))
        return abs(value) if absolute else value

    def evaluate(self, expr: MatrixExpr, absolute: bool = False, digits: int | None = None) -> np.ndarray:
        """The matrix of a polynomial (sums, products, powers, transposes, Gaussians, identities) here; with ``absolute``,
        of the polynomial whose coefficients and Gaussians' entries are replaced by their absolute values; with
        ``digits``, an array of mpmath numbers (the caller sets mpmath's working precision)."""
        def leaf(array: np.ndarray) -> np.ndarray:
            array = np.abs(array) if absolute else array
            return array if digits is None else np.vectorize(mpmath.mpf, otypes=[object])(array)

        if isinstance(expr, Gaussian):
            if expr not in self.arrays:
                self.arrays[expr] = self.rng.standard_normal((self.size(expr.rows), self.size(expr.cols)))
            return leaf(self.arrays[expr])
        if isinstance(expr, Diagonal):
            if expr not in self.arrays:
                self.arrays[expr] = np.diag(expr.values(self.rng.standard_normal(self.size(expr.rows))))
            return leaf(self.arrays[expr])
        if isinstance(expr, sp.Identity):
            return leaf(np.eye(self.size(expr.rows)))
        if isinstance(expr, sp.ZeroMatrix):
            return leaf(np.zeros((self.size(expr.rows), self.size(expr.cols))))
        if isinstance(expr, Transpose):
            return self.evaluate(expr.arg, absolute, digits).T
        if isinstance(expr, MatPow) and expr.exp.is_Integer and expr.exp > 0:
            return np.linalg.matrix_power(self.evaluate(expr.base, absolute, digits), int(expr.exp))
        if isinstance(expr, MatAdd):
            return sum(self.evaluate(a, absolute, digits) for a in expr.args)
        if isinstance(expr, MatMul):
            c, mats = expr.as_coeff_matrices()
            out = self.evaluate(mats[0], absolute, digits)
            for m in mats[1:]:
                out = out @ self.evaluate(m, absolute, digits)
            return self.number(c, absolute, digits) * out
        raise NotImplementedError(f"cannot evaluate the matrix expression {expr} of type {type(expr).__name__}")
