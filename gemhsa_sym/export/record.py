"""The record of a derived law: one typed object from which every export is written (docs/exports.md §5.1, §5.6).

P(m, w), the minimal system and the moments are kept as data (:class:`ExactParts`: a coefficient table and
expression trees, :mod:`.exact`), from which the writers of :mod:`.writers` print LaTeX, Mathematica, Maple,
SymPy and JSON at write time; their SymPy text is kept beside for readers of the JSON. The rest of the
document's formulas (model, sectors, read-outs, the meanings of the unknowns) are printed by SymPy when the
record is made, so that a committed record (JSON) reproduces its document without solving anything. Edges,
atoms and moments are written by one function each (:func:`edge_entry`, :func:`atom_entry`,
:func:`moment_entry`), which every summary uses.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from typing import Any

import mpmath
import sympy as sp
from sympy.matrices.expressions import MatAdd

from gemhsa_sym import __version__
from gemhsa_sym.export.exact import table, tree
from gemhsa_sym.export.latex import WIDTH, decimals, entry, named_terms, printed_width, terms_of
from gemhsa_sym.free.algebraic.elimination import Elimination, M
from gemhsa_sym.free.equations.derivation import Derivation
from gemhsa_sym.free.equations.meanings import Meaning
from gemhsa_sym.free.equations.minimal import MinimalSystem
from gemhsa_sym.free.expressions.exchangeable import ExchangeableSum
from gemhsa_sym.free.expressions.matrices import MAX_MONOMIALS, monomials, without_powers
from gemhsa_sym.free.expressions.pencil import Pencil
from gemhsa_sym.free.expressions.system import W
from gemhsa_sym.free.numeric.results import Atom, Edge, EdgeClassification

__all__ = ["AttentionRecord", "ExactParts", "LatexParts", "LawRecord", "PolynomialInfo", "atom_entry", "build_record", "edge_entry",
           "moment_entry", "record_from_json", "system_entry"]

#: A wide model's rationals with more digits than this (a network's quadrature coefficients) are shown as decimals.
DIGITS_SHOWN = 8
#: What P(m, w) is a polynomial equation for; {q} is the dimension of Y^T Y.
VARIABLES = "P(m, w) = 0, m(w) = (1/q) tr (w - Y^T Y)^{{-1}} with q = {q}, the number of columns of Y (the engine's Y, below)"


def edge_entry(edge: Edge, dps: int | None, refined: bool = True) -> dict[str, Any]:
    """An edge as JSON: its location as text to ``dps`` digits (a float for None), side, hardness
    (and ``refined`` for edges of the continuation)."""
    location = float(edge.location) if dps is None else mpmath.nstr(edge.location, dps)
    entry: dict[str, Any] = {"location": location, "side": edge.side, "hard": edge.hard}
    return entry | {"refined": edge.refined} if refined else entry


def atom_entry(atom: Atom, error: bool = False) -> dict[str, Any]:
    """An atom as JSON: location, mass (and its error estimate) and its exact value where identified."""
    entry = {"location": atom.location, "mass": atom.mass} | ({"error": atom.error} if error else {})
    return entry | {"exact": None if atom.exact is None else str(atom.exact)}


def moment_entry(exact: sp.Expr, symbolic: sp.Expr) -> dict[str, Any]:
    """A moment as JSON: exact at the law's values, symbolic in its parameters, and its float."""
    return {"exact": str(exact), "symbolic": str(symbolic), "float": float(sp.N(exact, 20)) if not exact.free_symbols else None}


@dataclass(frozen=True)
class PolynomialInfo:
    """What the elimination found: degrees of P, which parameters stayed symbolic or were substituted,
    and how P was found (``method``: "resultants" or "series guess", docs/solving.md §3.2, §3.12)."""

    degree_m: int | None
    degree_w: int | None
    symbolic: list[str]
    substituted: dict[str, str]
    backend: str
    variables: str = ""
    method: str | None = None


@dataclass(frozen=True)
class LatexParts:
    """Every formula of the document, printed by SymPy's LaTeX printer."""

    model: list[str]
    ratios: list[str]
    unknowns: list[str]
    output: str
    sectors: list[list[Any]]
    readouts: list[str]
    coefficients: list[str] | None = None
    #: Where Y = sum_h T^{(h)} is too wide for one line: the number of heads and one head's term
    #: T^{(h)}, term by term
    heads: str | None = None
    template: list[str] | None = None
    #: The sums that wide terms of the model (or of one head's term) name F_1, F_2, ...: [name, terms]
    #: (:func:`~.latex.named_terms`)
    factors: list[list[Any]] | None = None
    #: The meaning of each unknown of the minimal system and of its definitions (docs/equations.md §2.8), by the
    #: unknown's name: [meaning, the heads it is about]
    meanings: dict[str, list[str]] | None = None


@dataclass(frozen=True)
class ExactParts:
    """P(m, w), the moments and the minimal system as data (:mod:`.exact`): P as a coefficient table in m, w and the
    parameters that stayed symbolic; each moment at the law's values and symbolic in its parameters, the values
    [parameter, value], and each equation [unknown, right-hand side] of the minimal system (docs/equations.md §2.7),
    its definitions and m(w), as expression trees."""

    polynomial: dict[str, Any] | None
    moments: list[dict[str, Any]]
    values: list[list[Any]]
    equations: list[list[Any]]
    definitions: list[list[Any]]
    output: Any


@dataclass(frozen=True)
class LawRecord:
    """Everything derived about a law, typed (module docstring)."""

    model: str
    ratios: dict[str, str]
    values: dict[str, str]
    unknowns: int
    notes: list[str]
    moments: list[dict[str, Any]]
    polynomial: str | None
    polynomial_reason: str | None
    polynomial_info: PolynomialInfo
    edge_method: str
    edges: list[dict[str, Any]]
    edge_candidates: list[dict[str, Any]]
    cusps: list[str]
    gaps: list[list[str]]
    atom_method: str
    atoms: list[dict[str, Any]]
    latex: LatexParts
    exact: ExactParts | None = None
    name: str | None = None
    #: The minimal system with the meaning of each unknown (:func:`system_entry`)
    system: dict[str, Any] = field(default_factory=dict)
    #: The configuration or the model in one line (as ``gemhsa-sym presets`` prints it)
    summary: str | None = None
    #: What the law is the law of, with every normalisation (``Config.statement``, docs/model.md §1.1)
    statement: str | None = None
    #: The summary and the statement as LaTeX, every formula typeset (for documents)
    summary_latex: str | None = None
    statement_latex: str | None = None
    #: The package version that wrote the record, and the digits of its edges (docs/exports.md §5.3)
    version: str = ""
    dps: int = 0

    def to_json(self) -> dict[str, Any]:
        """The record as JSON types: the name, the version and the digits first."""
        data = asdict(self)
        head = {"name": data.pop("name"), "version": data.pop("version"), "dps": data.pop("dps")}
        info = data["polynomial_info"]
        data["polynomial_info"] = {"variables": info.pop("variables"), **info}
        for key in ("coefficients", "heads", "template", "factors", "meanings"):
            if data["latex"][key] is None:
                del data["latex"][key]
        return ({k: v for k, v in head.items() if k != "name" or v is not None}) | data


@dataclass(frozen=True)
class AttentionRecord(LawRecord):
    """The record of an attention layer's law: its configuration and Gaussian-equivalence coefficients too."""

    config: dict[str, Any] = field(default_factory=dict)
    config_toml: str = ""
    coefficients: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        data = super().to_json()
        head = {"name": data.pop("name", None), "version": data.pop("version"), "dps": data.pop("dps"),
                "config": data.pop("config"), "config_toml": data.pop("config_toml"), "coefficients": data.pop("coefficients")}
        return head | data


def record_from_json(data: dict[str, Any]) -> LawRecord:
    """The record of :meth:`LawRecord.to_json` (an :class:`AttentionRecord` when it has a configuration)."""
    data = dict(data)
    data["polynomial_info"] = PolynomialInfo(**data["polynomial_info"])
    data["latex"] = LatexParts(**data["latex"])
    data["exact"] = ExactParts(**data["exact"])
    kind = AttentionRecord if "config" in data else LawRecord
    known = {f.name for f in fields(kind)}
    return kind(**{key: value for key, value in data.items() if key in known})


def system_entry(minimal: MinimalSystem, meanings: Mapping[sp.Symbol, Meaning], pencil: Pencil, model: str) -> dict[str, Any]:
    """The minimal system as JSON: counts, unknowns with their meanings and equations, the definitions,
    m(w), and what Y and G stand for (docs/exports.md §5.1)."""
    return {
        "reduced_unknowns": len(minimal.reduced.unknowns),
        "unknowns": [str(c) for c in minimal.unknowns],
        "meanings": [meanings[c].text(pencil) for c in minimal.unknowns],
        "equations": [f"{c} = {f}" for c, f in minimal.equations],
        "definitions": [{"symbol": str(d), "meaning": meanings[d].text(pencil), "equation": f"{d} = {f}"}
                        for d, f in minimal.definitions],
        "output": str(minimal.output),
        "notation": f"G = (w - Y^T Y)^(-1) with Y = {model}; (1/N) tr[.] is the normalised trace over a dimension of size N",
    }


def _nonzero_entries(M: sp.Matrix) -> list[tuple[tuple[int, int], sp.Expr]]:
    """Nonzero entries of a symmetric matrix on and above the diagonal."""
    return [((a, b), M[a, b]) for a in range(M.rows) for b in range(a, M.cols) if M[a, b] != 0]


def build_record(derivation: Derivation, exact: list[sp.Expr], general: list[sp.Expr], elimination: Elimination,
                 classified: EdgeClassification | None, fold: list[Edge], atoms: list[Atom], atom_method: str,
                 dps: int, minimal: MinimalSystem | str, meanings: Mapping[sp.Symbol, Meaning]) -> LawRecord:
    """The record of a law from its derivation and answers: exact moments at the values and symbolic,
    the elimination, its classified discriminant edges (None: the ``fold`` edges, refined on P or not), atoms,
    and the minimal system with the meanings of its unknowns (or, as text, why there is none)."""
    system, model = derivation.system, derivation.model
    reason = minimal if isinstance(minimal, str) else None
    equations, definitions = ((), ()) if reason is not None else (minimal.equations, minimal.definitions)
    model_terms = model.args if isinstance(model, MatAdd) else (model,)
    printed_model, heads, template, factors = [sp.latex(t) for t in model_terms], None, None, None
    if isinstance(model, ExchangeableSum) and printed_width(sp.latex(model)) > WIDTH:  # Y = sum_h T^{(h)}, T broken
        written = model.template.doit()
        written = without_powers(written.expand() if monomials(written) <= MAX_MONOMIALS else written)
        heads, template = sp.latex(model.heads), terms_of(written)
        if any(printed_width(t) > WIDTH for t in template):
            template, factors = named_terms(decimals(written, DIGITS_SHOWN))
    elif any(printed_width(t) > WIDTH for t in printed_model):
        printed_model, factors = named_terms(decimals(model, DIGITS_SHOWN))
    edges = ([edge_entry(e, dps, refined=False) for e in classified.edges] if classified is not None
             else [edge_entry(e, dps) for e in fold])
    latex = LatexParts(
        model=printed_model,
        ratios=[rf"{sp.latex(sp.Symbol(str(d)))} = {sp.latex(v)}" for d, v in derivation.ratios.items()],
        unknowns=[sp.latex(g) for g in system.unknowns],
        output=sp.latex(system.output),
        sectors=[[sec.name, [entry(rf"M_{{{sec.labels[a]},{sec.labels[b]}}}", v) for (a, b), v in _nonzero_entries(sec.matrix())]]
                 for sec in system.sectors],
        readouts=[sp.latex(e) for e in system.readout_equations()],
        heads=heads,
        template=template,
        factors=factors or None,
        meanings={str(c): [meanings[c].latex(derivation.pencil), meanings[c].heads or ""] for c, _ in [*equations, *definitions]},
    )
    P = elimination.polynomial
    exact_parts = ExactParts(
        polynomial=None if P is None else table(elimination.as_poly(), [M, W, *sorted(P.free_symbols - {M, W}, key=str)]),
        moments=[{"exact": tree(m), "symbolic": tree(g)} for m, g in zip(exact, general)],
        values=[[tree(k), tree(v)] for k, v in derivation.values.items()],
        equations=[[tree(c), tree(f)] for c, f in equations],
        definitions=[[tree(d), tree(f)] for d, f in definitions],
        output=tree(system.output),
    )
    return LawRecord(
        model=str(model),
        ratios={str(d): str(v) for d, v in derivation.ratios.items()},
        values={str(k): str(v) for k, v in derivation.values.items()},
        unknowns=len(system.unknowns),
        notes=list(system.notes),
        moments=[moment_entry(m, g) for m, g in zip(exact, general)],
        polynomial=None if elimination.polynomial is None else str(elimination.polynomial),
        polynomial_reason=elimination.reason,
        polynomial_info=PolynomialInfo(elimination.degree_m, elimination.degree_w, [str(v) for v in elimination.symbolic],
                                       {str(k): str(v) for k, v in elimination.substituted.items()}, elimination.backend,
                                       VARIABLES.format(q=derivation.q),
                                       method=None if elimination.polynomial is None else elimination.method),
        edge_method="discriminant" if classified is not None else (
            "polynomial" if fold and all(e.method == "polynomial" for e in fold) else "continuation"),
        edges=edges,
        edge_candidates=[] if classified is None else [{"location": mpmath.nstr(c.location, dps), "kind": c.kind}
                                                       for c in classified.candidates],
        cusps=[] if classified is None else [mpmath.nstr(c, dps) for c in classified.cusps],
        gaps=[] if classified is None else [[mpmath.nstr(a, dps), mpmath.nstr(b, dps)] for a, b in classified.gaps],
        atom_method=atom_method,
        atoms=[atom_entry(a) for a in atoms],
        latex=latex,
        exact=exact_parts,
        system={"reason": reason} if reason is not None else system_entry(minimal, meanings, derivation.pencil, str(model)),
        version=__version__,
        dps=dps,
    )
