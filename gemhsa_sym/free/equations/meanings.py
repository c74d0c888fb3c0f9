"""What each unknown of a Dyson system is: a normalised trace of a matrix in the model (docs/equations.md §2.8).

The unknown g_ab is the limit of (1/N_a) tr R_ab, R = (Lambda(w) - L)^{-1} the resolvent of the
pencil, N_a the size of the blocks' dimension. Eliminating the inner blocks (Q = -I + N, so
-Q^{-1} = sum_k N^k sums the paths of the pencil's graph) gives every block in terms of the
resolvent G(w) = (w - Y^T Y)^{-1} of the model and the path sums A_i (source -> inner node i),
B_i (i -> sink) and P_ij (i -> j):

    R_ab = F_a^T S_ab F_b  (+ P_ba^T, or I for a = b, when a = V_i and b = U_j),

with F_s = I, F_t = I, F_{V_i} = A_i, F_{U_i} = B_i^T, and S the outer resolvent,
S_ss = I + Y G Y^T (= w (w - Y Y^T)^{-1}), S_st = Y G, S_ts = G Y^T, S_tt = G. For a sum of
exchangeable heads, the blocks of g^O_ab belong to two heads h, h' of the orbital O (the same
head, two heads of one group, heads of two groups), and A, B are those of the heads' template.
:func:`meanings` states this for every unknown; a test checks it against the inverse of a
finite pencil.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

import sympy as sp
from sympy.matrices.expressions import MatrixExpr

from gemhsa_sym.free.expressions.matrices import Dim
from gemhsa_sym.free.expressions.pencil import Pencil
from gemhsa_sym.free.expressions.system import DysonSystem

__all__ = ["Meaning", "meanings", "resolvent_symbols"]

#: The heads of the two blocks, from the tag of an exchangeable unknown (its orbital, docs/equations.md §2.5).
HEADS = {"": "left and right of one head h", "g": "left of head h, right of head h' != h in its group",
         "o": "left of head h, right of head h' in another group"}
_NAME = re.compile(r"^g_\{(\w+),(\w+)\}(?:\^\{(\w)\})?$")


def resolvent_symbols(pencil: Pencil) -> tuple[sp.MatrixSymbol, sp.MatrixSymbol]:
    """Y (n x q) and G = (w - Y^T Y)^{-1} (q x q) as matrix symbols in the pencil's outer dimensions."""
    rows, cols = pencil.blocks[pencil.source].dim, pencil.blocks[pencil.sink].dim
    return sp.MatrixSymbol("Y", rows, cols), sp.MatrixSymbol("G", cols, cols)


@dataclass(frozen=True)
class Meaning:
    """g = (1/N) tr[left . S_sides . right + shift] (module docstring), with the heads' orbital."""

    symbol: sp.Symbol
    dim: Dim
    left: MatrixExpr
    sides: str
    right: MatrixExpr
    shift: MatrixExpr | None
    heads: str | None
    #: For the limit of infinitely many heads (docs/equations.md §2.10): the unknown is the limit of
    #: H^(-limit) times the trace; None for a finite sum.
    limit: sp.Rational | None = None

    def middle(self, Y: MatrixExpr, G: MatrixExpr) -> MatrixExpr:
        """S_sides written with Y and G."""
        return {"ss": sp.Identity(Y.rows) + Y * G * Y.T, "st": Y * G, "ts": G * Y.T, "tt": G}[self.sides]

    def factors(self, pencil: Pencil) -> list[MatrixExpr]:
        """left, S_sides and right, in Y, G and the model's matrices, without identity factors."""
        Y, G = resolvent_symbols(pencil)
        return [f for f in (self.left, self.middle(Y, G), self.right) if not isinstance(f, sp.Identity)]

    def matrix(self, pencil: Pencil) -> MatrixExpr:
        """The matrix whose normalised trace the unknown is, in Y, G and the model's matrices."""
        factors = self.factors(pencil)
        product = sp.MatMul(*factors) if len(factors) > 1 else factors[0]
        return product if self.shift is None else sp.MatAdd(product, self.shift)

    def text(self, pencil: Pencil) -> str:
        """The meaning in one line of plain text."""
        where = f", {self.heads}" if self.heads else ""
        power = "" if not self.limit else "H " if self.limit == -1 else f"H^({-self.limit}) "
        scale = "" if self.limit is None else f"lim_{{H->oo}} {power}"
        return f"{scale}(1/{self.dim}) tr[{self.matrix(pencil)}]{where}"

    def latex(self, pencil: Pencil) -> str:
        """The meaning as LaTeX mathematics (SymPy's printer; a line may break between the factors)."""
        factors = self.factors(pencil)
        printed = [f"({sp.latex(f)})" if isinstance(f, sp.MatAdd) and len(factors) > 1 else sp.latex(f)
                   for f in factors]
        inner = r" \allowbreak ".join(printed) + ("" if self.shift is None else f" + {sp.latex(self.shift)}")
        power = "" if not self.limit else "H " if self.limit == -1 else f"H^{{{sp.latex(-self.limit)}}} "
        scale = "" if self.limit is None else rf"\lim_{{H \to \infty}} {power}"
        return rf"{scale}\frac{{1}}{{{sp.latex(sp.Symbol(str(self.dim)))}}} \operatorname{{tr}}[\allowbreak {inner}]"


def _transpose(expr: MatrixExpr, top: bool = True) -> MatrixExpr:
    """The transpose of a path sum in SymPy's canonical form, written term by term (as ``expr.T`` gives it, without
    rewriting every factor again)."""
    if isinstance(expr, sp.MatAdd):
        return sp.MatAdd(*(_transpose(t, False) for t in expr.args)).doit(deep=False)
    if isinstance(expr, sp.MatMul):
        scalars = [a for a in expr.args if not isinstance(a, MatrixExpr)]
        matrices = [_transpose(a, False) for a in reversed(expr.args) if isinstance(a, MatrixExpr)]
        return sp.MatMul(*scalars, *matrices).doit(deep=False)
    if top or not isinstance(expr, (sp.MatrixSymbol, sp.Transpose)):
        return expr.T
    return expr.arg if isinstance(expr, sp.Transpose) else sp.Transpose(expr)


def _factors(pencil: Pencil, prefix: dict[int, MatrixExpr], suffix: dict[int, MatrixExpr]) -> list[tuple[str, MatrixExpr, MatrixExpr]]:
    """(side, F, F^T) of every block: s and t with the identity, V_i with A_i, U_i with B_i^T (every inner
    node of the series-parallel graph lies on a path from the source to the sink); each transpose is taken once."""
    out = []
    for block, b in enumerate(pencil.blocks):
        if block in (pencil.source, pencil.sink):
            one = sp.Identity(b.dim)
            out.append(("s" if block == pencil.source else "t", one, one))
        elif block - 2 < pencil.inner:
            out.append(("s", prefix[block - 2], _transpose(prefix[block - 2])))
        else:
            B = suffix[block - 2 - pencil.inner]
            out.append(("t", _transpose(B), B))
    return out


def meanings(system: DysonSystem, pencil: Pencil, heads: bool = False,
             limit: Mapping[sp.Symbol, sp.Rational] | None = None) -> dict[sp.Symbol, Meaning]:
    """The meaning of every unknown of ``system``, built from ``pencil`` or, with ``heads``, from the
    template pencil of an exchangeable sum (module docstring); ``limit`` gives the powers of H of the
    unknowns of a limit of infinitely many heads (docs/equations.md §2.10)."""
    prefix, suffix, between = pencil.paths()
    factors = _factors(pencil, prefix, suffix)
    index = {b.name: k for k, b in enumerate(pencil.blocks)}
    m = pencil.inner
    out: dict[sp.Symbol, Meaning] = {}
    for g in system.unknowns:
        found = _NAME.match(g.name)
        if found is None or found.group(1) not in index or found.group(2) not in index:
            raise ValueError(f"unknown {g}: not the trace of a block of the pencil")
        a, b, tag = index[found.group(1)], index[found.group(2)], found.group(3) or ""
        (side_a, _, left), (side_b, right, _) = factors[a], factors[b]
        shift = None
        if 2 <= a < 2 + m and b >= 2 + m and not tag:  # V_i, U_j of one head: -Q^{-T}_ij = P_ji^T, I for i = j
            i, j = a - 2, b - 2 - m
            shift = sp.Identity(pencil.blocks[a].dim) if i == j else (_transpose(between[(j, i)]) if (j, i) in between else None)
        inner = sum(k >= 2 for k in (a, b))
        where = None if not heads or not inner else (HEADS[tag] if inner == 2 else "the matrices of one head h")
        out[g] = Meaning(g, pencil.blocks[a].dim, left, side_a + side_b, right, shift, where,
                         None if limit is None else limit[g])
    return out
