"""Polynomial model files: a user's polynomial in Gaussian matrices beside the attention configurations
(docs/exports.md §5.3, §5.4).

A TOML table with a top-level ``polynomial`` key is a polynomial model (:func:`~gemhsa_sym.files.is_model` is the one
test of which kind a file is); any other is an attention configuration::

    polynomial = "X * W"
    [dimensions]
    n = "1"
    d = "1/2"
    [gaussians.X]
    rows = "n"
    cols = "d"
    # ... one table per Gaussian, with an optional exact "scale"

The polynomial is read by :mod:`gemhsa_sym.free.expressions.grammar` and the numbers by :mod:`gemhsa_sym.parse`,
so nothing in the file runs (docs/conventions.md §6.8). :class:`PolynomialModel` is a model as a
value: its law, its own Monte Carlo sampler at sizes ratio * n (:mod:`gemhsa_sym.sampling.polynomial`,
entries N(0, scale / n)) and copies with other ratios or scales, named by their dotted TOML paths
``dimensions.NAME`` and ``gaussians.NAME.scale`` (the fields of ``--set`` and ``--vary``).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import sympy as sp
from sympy.matrices.expressions import MatrixExpr

from gemhsa_sym.free.expressions.grammar import parse_polynomial
from gemhsa_sym.free.expressions.matrices import Dim, Gaussian
from gemhsa_sym.parse import to_number
from gemhsa_sym.sampling.polynomial import draw_polynomial, sizes_at

__all__ = ["GAUSSIAN_FIELDS", "MODEL_FIELDS", "PolynomialModel", "polynomial_model"]

#: Fields of a polynomial model file, and of each of its Gaussians.
MODEL_FIELDS = ("polynomial", "dimensions", "gaussians")
GAUSSIAN_FIELDS = ("rows", "cols", "scale")


def _positive(field: str, value: Any) -> sp.Expr:
    """A finite positive exact number (a ratio or a scale), read by the grammar of :mod:`gemhsa_sym.parse`."""
    number = to_number(value, field)
    if number.is_finite is not True or number.is_positive is not True:
        raise ValueError(f"{field}: must be a finite positive number, got {value!r}")
    return number


def _declared(data: Mapping[str, Any]) -> tuple[dict[Dim, sp.Expr], dict[str, Gaussian]]:
    """The ratios of the declared dimensions and the declared Gaussians; ValueError naming the field."""
    unknown = sorted(set(data) - set(MODEL_FIELDS))
    if unknown:
        raise ValueError(f"{unknown[0]}: unknown field of a polynomial model; known: {', '.join(MODEL_FIELDS)}")
    missing = [key for key in MODEL_FIELDS if key not in data]
    if missing:
        raise ValueError(f"{missing[0]}: missing field of a polynomial model")
    if not isinstance(data["dimensions"], Mapping) or not data["dimensions"]:
        raise ValueError("dimensions: expected a table of dimension names and ratios")
    if not isinstance(data["gaussians"], Mapping) or not data["gaussians"]:
        raise ValueError("gaussians: expected a table of Gaussian matrices")
    dims, ratios = {}, {}
    for name, value in data["dimensions"].items():
        if not name.isidentifier() or not name.isascii():
            raise ValueError(f"dimensions.{name}: a dimension name must be an ASCII identifier")
        dims[name] = Dim(name)
        ratios[dims[name]] = _positive(f"dimensions.{name}", value)
    gaussians = {}
    for name, spec in data["gaussians"].items():
        where = f"gaussians.{name}"
        if not name.isidentifier() or not name.isascii() or name in ("T", "pi", "E"):
            raise ValueError(f"{where}: a matrix name must be an ASCII identifier other than T, pi, E (names are compared as "
                             "written; Python's parser would fold a fullwidth x into x)")
        if not isinstance(spec, Mapping):
            raise ValueError(f"{where}: expected a table with rows, cols and an optional scale")
        extra = sorted(set(spec) - set(GAUSSIAN_FIELDS))
        if extra:
            raise ValueError(f"{where}.{extra[0]}: unknown field; known: {', '.join(GAUSSIAN_FIELDS)}")
        for side in ("rows", "cols"):
            if spec.get(side) not in dims:
                raise ValueError(f"{where}.{side}: expected one of the dimensions {', '.join(dims)}, got {spec.get(side)!r}")
        scale = _positive(f"{where}.scale", spec.get("scale", 1))
        gaussians[name] = Gaussian(name, dims[spec["rows"]], dims[spec["cols"]], scale)
    return ratios, gaussians


def polynomial_model(data: Mapping[str, Any]) -> tuple[MatrixExpr, dict[Dim, sp.Expr]]:
    """The polynomial Y and the ratios of its dimensions, read from TOML data (module docstring);
    ValueError naming the field for anything that is not a model."""
    ratios, gaussians = _declared(data)
    return parse_polynomial(data["polynomial"], gaussians), ratios


@dataclass(frozen=True)
class PolynomialModel:
    """A polynomial model (module docstring): its TOML data, validated and with exact numbers as text on
    construction, and a name (a file's stem)."""

    data: dict[str, Any]
    name: str | None = None

    def __post_init__(self) -> None:
        ratios, gaussians = _declared(self.data)
        parse_polynomial(self.data["polynomial"], gaussians)
        normal = {
            "polynomial": str(self.data["polynomial"]).strip(),
            "dimensions": {str(d): str(r) for d, r in ratios.items()},
            "gaussians": {name: {"rows": str(g.rows), "cols": str(g.cols), "scale": str(g.scale)} for name, g in gaussians.items()},
        }
        object.__setattr__(self, "data", normal)

    def parsed(self) -> tuple[MatrixExpr, dict[Dim, sp.Expr]]:
        """The polynomial Y and the ratios of its dimensions (:func:`polynomial_model`)."""
        return polynomial_model(self.data)

    def to_dict(self) -> dict[str, Any]:
        """The model as TOML and JSON data, which :class:`PolynomialModel` reads back to an equal model."""
        return copy.deepcopy(self.data)

    def summary(self) -> str:
        """One line: the polynomial, the ratios and the Gaussians."""
        dims = ", ".join(f"{name}={ratio}" for name, ratio in self.data["dimensions"].items())
        gaussians = ", ".join(f"{name} {g['rows']} x {g['cols']}" + (f" scale {g['scale']}" if g["scale"] != "1" else "")
                              for name, g in self.data["gaussians"].items())
        return f"Y = {self.data['polynomial']}; ratios {dims}; Gaussians {gaussians}"

    @property
    def infinite_heads(self) -> bool:
        """False: a polynomial model is drawn as it is (a configuration may be a limit of infinitely many heads)."""
        return False

    def summary_latex(self) -> str:
        """:meth:`summary` as LaTeX for a document."""
        dims = ", ".join(f"${sp.latex(sp.Symbol(name))} = {ratio}$" for name, ratio in self.data["dimensions"].items())
        gaussians = ", ".join(rf"${sp.latex(sp.Symbol(name))} \in \mathbb{{R}}^{{{sp.latex(sp.Symbol(g['rows']))} \times "
                              rf"{sp.latex(sp.Symbol(g['cols']))}}}$" + (f" scale ${g['scale']}$" if g["scale"] != "1" else "")
                              for name, g in self.data["gaussians"].items())
        return f"$Y = {sp.latex(self.parsed()[0])}$; ratios {dims}; Gaussians {gaussians}"

    def statement_latex(self) -> str:
        """:attr:`statement` as LaTeX for a document."""
        q = sp.latex(sp.Symbol(str(self.parsed()[0].cols)))
        return (rf"the eigenvalues of $Y^{{T}} Y$ (${q} \times {q}$, zeros included), sizes ratio times $n$, entries "
                rf"$N(0, \mathrm{{scale}} / n)$, of $Y = {sp.latex(self.parsed()[0])}$")

    @property
    def statement(self) -> str:
        """The spectral object in full: the polynomial, its sizes and the entries' variances."""
        return f"the {self.spectral_object}, of Y = {self.data['polynomial']}"

    @property
    def spectral_object(self) -> str:
        """What the law is the law of, in words."""
        q = self.parsed()[0].cols
        return f"eigenvalues of Y^T Y ({q} x {q}, zeros included), sizes ratio * n, entries N(0, scale / n)"

    def sizes(self, n: int) -> dict[str, int]:
        """The integer size ratio * n of every dimension; ValueError naming n where one is not an integer."""
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
            raise ValueError(f"n: a polynomial model is drawn at sizes ratio * n for an integer n >= 1, got {n!r}")
        try:
            return sizes_at(self.parsed()[1], {}, int(n))
        except ValueError as exc:
            raise ValueError(f"n: {str(exc).removeprefix('N: ').replace('ratio * N', 'ratio * n')}") from None

    def replace(self, **changes: Any) -> PolynomialModel:
        """A validated copy with other ratios or scales: ``dimensions.NAME`` and ``gaussians.NAME.scale``
        (module docstring) set to exact numbers (text is read by :mod:`gemhsa_sym.parse`)."""
        data = self.to_dict()
        for field, value in changes.items():
            kind, _, rest = field.partition(".")
            gaussian = rest.removesuffix(".scale")
            if kind == "dimensions" and rest in data["dimensions"]:
                data["dimensions"][rest] = value
            elif kind == "gaussians" and rest.endswith(".scale") and gaussian in data["gaussians"]:
                data["gaussians"][gaussian]["scale"] = value
            else:
                raise ValueError(f"{field}: not a field of this polynomial model; give dimensions.NAME "
                                 f"({', '.join(data['dimensions'])}) or gaussians.NAME.scale ({', '.join(data['gaussians'])})")
        return PolynomialModel(data, self.name)

    def draw(self, n: int, seed: np.random.SeedSequence) -> np.ndarray:
        """The eigenvalues of Y^T Y (zeros included, ascending) of one realisation at sizes ratio * n from ``seed``:
        :func:`~gemhsa_sym.sampling.polynomial.sample_polynomial`'s draw i when ``seed`` is its child i."""
        polynomial, _ = self.parsed()
        return draw_polynomial(polynomial, self.sizes(n), {}, n, seed)

    def draw_bytes(self, n: int) -> int:
        """An upper estimate of the memory of one draw (docs/conventions.md §6.8): every Gaussian, and for each
        sum, product or power of the polynomial and for Y^T Y and the eigensolver's work, a square matrix of the
        largest dimension."""
        sizes = self.sizes(n)
        polynomial, _ = self.parsed()
        gaussians = sum(sizes[g["rows"]] * sizes[g["cols"]] for g in self.data["gaussians"].values())
        nodes = sum(1 for node in sp.preorder_traversal(polynomial) if isinstance(node, MatrixExpr) and not isinstance(node, Gaussian))
        return 8 * (gaussians + (nodes + 3) * max(sizes.values()) ** 2)
