"""The irreducible factors involving w of disc_m P for P(m, w, *symbols) over Z (docs/solving.md §3.3).

P's symbols (mu_1, sigma, constants) make flint's discriminant in m slow, so the factors are found on a
smaller problem and carried back exactly:

1. **Gradings.** Every weight vector a with a . e the same on all exponents e of P (an integer basis of
   a lattice) makes P quasi-homogeneous, and disc_m P and its factors with it. A symbol s with a_s != 0
   is set to 1 (the m-degree is kept and no two terms merge); the other weights are made to vanish on s.
2. **Powers.** A symbol s that enters only through s^g is replaced by s^g.
3. **Interpolation.** disc_m P = +-Res(P, dP/dm) / lc_m P has degree in a remaining symbol x at most the
   largest degree of a term of the Sylvester determinant less deg_x lc_m P; it is interpolated exactly
   from the discriminants at integer values of x that keep the m-degree, each a problem with one
   variable fewer.

Then the factors of the reduced discriminant are carried back: s^g by s (and factored again), s = 1 by
the quasi-homogeneous lift (the power of s that restores the weight of every term, the least one zero).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
from dataclasses import dataclass

import flint
import numpy as np
from scipy.optimize import linear_sum_assignment

__all__ = ["discriminant_factors"]

Exponents = tuple[int, ...]
Terms = dict[Exponents, int]

#: Most interpolation nodes of step 3; beyond, flint's discriminant in all variables is faster (docs/solving.md §3.3).
MAX_NODES = 80


def _context(k: int) -> flint.fmpz_mpoly_ctx:
    """The ring Z[v0, ..., v(k-1)] with v0 = m and v1 = w."""
    return flint.fmpz_mpoly_ctx.get([f"v{i}" for i in range(k)], "lex")


def _terms(p: flint.fmpz_mpoly) -> Terms:
    return {tuple(int(e) for e in exps): int(c) for exps, c in p.terms()}


def _gradings(exponents: list[Exponents]) -> list[list[int]]:
    """An integer basis of the weight vectors a with a . e equal for every exponent vector e (step 1)."""
    first = exponents[0]
    rows = [[x - y for x, y in zip(e, first)] for e in exponents[1:]]
    if not rows:
        return []
    basis, nullity = flint.fmpz_mat(rows).nullspace()
    return [[int(basis[i, j]) for i in range(len(first))] for j in range(int(nullity))]


def _weight(a: list[int], e: Exponents) -> int:
    return sum(x * y for x, y in zip(a, e))


@dataclass(frozen=True)
class _Dehomogenised:
    """Symbol ``index`` set to 1 in a polynomial quasi-homogeneous of ``weights`` (weights[index] != 0)."""

    weights: tuple[int, ...]
    index: int

    def apply(self, terms: Terms) -> Terms:
        s = self.index
        out: Terms = {}
        for e, c in terms.items():
            key = e[:s] + e[s + 1:]
            if key in out:
                raise AssertionError("two terms of a quasi-homogeneous polynomial merged")
            out[key] = c
        return out

    def undo(self, terms: Terms) -> Terms:
        """The quasi-homogeneous lift whose least power of the symbol is 0."""
        s, a_s = self.index, self.weights[self.index]
        rest = list(self.weights[:s] + self.weights[s + 1:])
        weights = {e: _weight(rest, e) for e in terms}
        top = max(weights.values()) if a_s > 0 else min(weights.values())
        out: Terms = {}
        for e, c in terms.items():
            power, remainder = divmod(top - weights[e], a_s)
            if remainder or power < 0:
                raise AssertionError("a factor of the dehomogenised discriminant has no quasi-homogeneous lift")
            out[e[:s] + (power,) + e[s:]] = c
        return out


@dataclass(frozen=True)
class _Power:
    """Symbol ``index`` entering only through its ``power``-th power, replaced by that power."""

    power: int
    index: int

    def apply(self, terms: Terms) -> Terms:
        s, g = self.index, self.power
        return {e[:s] + (e[s] // g,) + e[s + 1:]: c for e, c in terms.items()}

    def undo(self, terms: Terms) -> Terms:
        s, g = self.index, self.power
        return {e[:s] + (e[s] * g,) + e[s + 1:]: c for e, c in terms.items()}


def _reduce(terms: Terms) -> tuple[Terms, list[_Dehomogenised | _Power]]:
    """Steps 1 and 2 (the symbol of largest degree first): the reduced terms and the steps, in the order applied."""
    steps: list[_Dehomogenised | _Power] = []
    k = len(next(iter(terms)))
    gradings = _gradings(list(terms))
    while True:
        candidates = [(max(e[s] for e in terms), s, i) for i, a in enumerate(gradings) for s in range(2, k) if a[s]]
        if not candidates:
            break
        _, s, i = max(candidates)
        a = gradings.pop(i)
        steps.append(_Dehomogenised(tuple(a), s))
        terms, k = steps[-1].apply(terms), k - 1
        gradings = [[a[s] * x - b[s] * y for x, y in zip(b, a)] for b in gradings]
        gradings = [b[:s] + b[s + 1:] for b in gradings if any(b[:s] + b[s + 1:])]
    for s in range(2, k):
        g = math.gcd(*(e[s] for e in terms))
        if g > 1:
            steps.append(_Power(g, s))
            terms = steps[-1].apply(terms)
    return terms, steps


def _degree_bound(terms: Terms, x: int) -> int:
    """A bound on deg_x disc_m P: the largest degree of a term of the Sylvester determinant Res(P, dP/dm)
    (an assignment problem on the degrees of its entries), less deg_x lc_m P, since Res = +-lc_m P disc_m P."""
    n = max(e[0] for e in terms)
    degree = {i: max(e[x] for e in terms if e[0] == i) for i in {e[0] for e in terms}}
    size, absent = 2 * n - 1, -(10**9)
    entries = np.full((size, size), absent, dtype=np.int64)
    for row in range(size):
        shift, top = (row, n) if row < n - 1 else (row - n + 1, n - 1)
        for j in range(top + 1):
            if n - j in degree:
                entries[row, shift + j] = degree[n - j]
    rows, columns = linear_sum_assignment(entries, maximize=True)
    return int(entries[rows, columns].sum()) - degree[n]


def _discriminant(terms: Terms) -> Terms:
    """disc_m of ``terms``: interpolated in the symbol of least degree bound (:func:`_degree_bound`, step 3) where
    that takes at most :data:`MAX_NODES` nodes, else flint's discriminant of all variables at once."""
    k = len(next(iter(terms)))
    symbols = [i for i in range(2, k) if any(e[i] for e in terms)]
    bounds = {i: _degree_bound(terms, i) for i in symbols}
    if not symbols or min(bounds.values()) + 1 > MAX_NODES:
        return _terms(_context(k).from_dict(terms).discriminant("v0"))
    x = min(symbols, key=lambda i: (bounds[i], i))
    n, needed = max(e[0] for e in terms), max(bounds[x], 0) + 1
    nodes: list[int] = []
    values: list[Terms] = []
    ring = _context(k - 1)
    for t in itertools.chain([0], itertools.chain.from_iterable((j, -j) for j in itertools.count(1))):
        if len(nodes) == needed:
            break
        at: Terms = {}
        for e, c in terms.items():
            key = e[:x] + e[x + 1:]
            at[key] = at.get(key, 0) + c * t ** e[x]
        at = {e: c for e, c in at.items() if c}
        if any(e[0] == n for e in at):
            nodes.append(t)
            values.append(_terms(ring.from_dict(at).discriminant("v0")))
    monomials = sorted(set().union(*values))
    vandermonde = flint.fmpz_mat([[t**j for j in range(needed)] for t in nodes])
    solved = vandermonde.solve(flint.fmpz_mat([[v.get(mono, 0) for mono in monomials] for v in values]))
    out: Terms = {}
    for j in range(needed):
        for i, mono in enumerate(monomials):
            c = solved[j, i]
            if c != 0:
                if c.q != 1:
                    raise AssertionError("the interpolated discriminant has a non-integer coefficient")
                out[mono[:x] + (j,) + mono[x:]] = int(c.p)
    return out


def _irreducible(terms: Terms) -> list[Terms]:
    """The irreducible non-constant factors of a polynomial given by its ``terms``, each once."""
    k = len(next(iter(terms)))
    return [_terms(f) for f, _ in _context(k).from_dict(terms).factor()[1]]


def discriminant_factors(terms: Mapping[Exponents, int]) -> list[Terms]:
    """The irreducible factors of disc_m P that involve w, each once and up to sign, for
    P = sum c_e m^e0 w^e1 s^e2 ... with integer coefficients c_e (module docstring; factors in the symbols
    alone are left out: setting a symbol to 1 loses its powers). Exponent vectors are those of P."""
    reduced, steps = _reduce({e: int(c) for e, c in terms.items() if c})
    if max(e[0] for e in reduced) < 2:
        return []
    found = _discriminant(reduced)
    if not found:
        raise ValueError("disc_m P vanishes: P has a repeated factor in m")
    factors = _irreducible(found)
    for step in reversed(steps):
        lifted = [step.undo(f) for f in factors]
        factors = [g for f in lifted for g in _irreducible(f)]
    unique: list[Terms] = []
    for f in factors:
        if any(e[1] for e in f) and f not in unique and {e: -c for e, c in f.items()} not in unique:
            unique.append(f)
    return unique
