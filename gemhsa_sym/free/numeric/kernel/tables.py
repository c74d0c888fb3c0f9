"""A system as the compiled continuation kernel reads it: flat tables (docs/solving.md §3.5).

The kernel (:mod:`.branch_kernel`) follows either system the drivers know: the reduced Dyson system
g = R(g, w) (:func:`dyson_tables`, built by :class:`~.numeric.NumericSystem`) or the root of the
minimal polynomial P(m, w) (:func:`polynomial_tables`, built by
:class:`~.polynomial_system.PolynomialSystem`). Both give one :class:`Tables`, whose arrays of the
other kind are empty, so that one compiled kernel serves both.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

__all__ = ["DYSON", "POLYNOMIAL", "Tables", "dyson_tables", "elimination_order", "polynomial_tables"]

#: The kinds of system a :class:`Tables` holds.
POLYNOMIAL = 0
DYSON = 1


class Tables(NamedTuple):
    """A system as the kernel reads it; the arrays of the other kind are empty.

    The root of P (kind POLYNOMIAL): P(m, w) = sum C[a, b] m^a w^b, Cw the coefficients of P_w,
    absC = |C|. The Dyson system (kind DYSON): sector s is the k x k block at offsets[s] of the
    flat arrays, M = A + w E + sum g_j C_j; each table entry q adds value[q] * (factors) to a target:
    M[c_entry] += c_value g[c_unknown]; R[t_unknown] += t_value M^{-1}[t_entry];
    J[j_target] += j_value M^{-1}[j_left] M^{-1}[j_right] (J flat, row-major, plus the identity);
    dF/dw[w_target] += w_value M^{-1}[w_left] M^{-1}[w_right] (docs/solving.md §3.1). ``active``: the
    unknowns that enter some M (the others' columns of J are those of the identity, so Newton solves
    for the active ones first), in the order of their elimination (:func:`elimination_order`), the
    first ``free`` of which need no pivoting; ``passive`` the rest. Row q of the passive ones has terms
    of J in the active columns ``passive_column[passive_start[q]:passive_start[q + 1]]``, at the flat
    positions ``passive_entry`` of J (the back substitution reads these alone).
    """

    kind: int
    size: int
    output: int
    relative: bool
    C: np.ndarray
    Cw: np.ndarray
    absC: np.ndarray
    sizes: np.ndarray
    offsets: np.ndarray
    A: np.ndarray
    E: np.ndarray
    c_unknown: np.ndarray
    c_entry: np.ndarray
    c_value: np.ndarray
    t_unknown: np.ndarray
    t_entry: np.ndarray
    t_value: np.ndarray
    j_left: np.ndarray
    j_right: np.ndarray
    j_value: np.ndarray
    j_target: np.ndarray
    w_left: np.ndarray
    w_right: np.ndarray
    w_value: np.ndarray
    w_target: np.ndarray
    active: np.ndarray
    passive: np.ndarray
    free: int
    passive_start: np.ndarray
    passive_column: np.ndarray
    passive_entry: np.ndarray


def _ints(values: object = ()) -> np.ndarray:
    return np.ascontiguousarray(np.asarray(values, dtype=np.int64).ravel())


def _complexes(values: object = ()) -> np.ndarray:
    return np.ascontiguousarray(np.asarray(values, dtype=np.complex128).ravel())


def polynomial_tables(C: np.ndarray) -> Tables:
    """The root of P(m, w) = sum C[a, b] m^a w^b (one unknown, sizes relative to |m|)."""
    C = np.ascontiguousarray(C, dtype=np.complex128)
    A, B = C.shape
    Cw = np.zeros((A, max(B - 1, 1)), dtype=np.complex128)
    Cw[:, : B - 1] = C[:, 1:] * np.arange(1, B)
    none, empty = _ints(), _complexes()
    return Tables(POLYNOMIAL, 1, 0, True, C, Cw, np.abs(C), none, _ints([0]), empty, empty,
                  none, none, empty, none, none, empty, none, none, empty, none, none, none, empty, none, _ints([0]), none, 0, _ints([0]), none, none)


def dyson_tables(A: list[np.ndarray], E: list[np.ndarray], C: list[np.ndarray], T: list[np.ndarray], output: int,
                 jacobian: list[tuple[np.ndarray, ...]], slope: list[tuple[np.ndarray, ...]]) -> Tables:
    """The Dyson system with arrays A, E (k x k), C, T (n x k x k) per sector; ``jacobian`` and ``slope``
    per sector: the terms (left, right, value, target) of J and dF/dw, positions flat within the sector."""
    sizes = _ints([a.shape[-1] for a in A])
    offsets = _ints(np.r_[0, np.cumsum(sizes**2)])
    n = C[0].shape[0]

    def entries(X: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        unknown, entry, value = [], [], []
        for s, x in enumerate(X):
            j, a, b = np.nonzero(x)
            unknown.append(j), entry.append(offsets[s] + a * sizes[s] + b), value.append(x[j, a, b])
        return _ints(np.concatenate(unknown)), _ints(np.concatenate(entry)), _complexes(np.concatenate(value))

    def pairs(terms: list[tuple[np.ndarray, ...]]) -> tuple[np.ndarray, ...]:
        left, right, value, target = (np.concatenate([t[i] + (offsets[s] if i < 2 else 0) for s, t in enumerate(terms)])
                                      for i in range(4))
        return _ints(left), _ints(right), _complexes(value), _ints(target)

    none = np.zeros((0, 0), dtype=np.complex128)
    c_terms = entries(C)
    active = np.isin(np.arange(n), c_terms[0])
    j_terms = pairs(jacobian)
    order, free = elimination_order(n, np.flatnonzero(active), j_terms[3])
    passive = np.flatnonzero(~active)
    rows, columns = np.divmod(np.unique(j_terms[3]), n)
    terms = [columns[(rows == row) & active[columns]] for row in passive]
    return Tables(DYSON, n, int(output), False, none, none, np.zeros((0, 0)), sizes, offsets,
                  _complexes(np.concatenate([a.ravel() for a in A])), _complexes(np.concatenate([e.ravel() for e in E])),
                  *c_terms, *entries(T), *j_terms, *pairs(slope), _ints(order), _ints(passive), free,
                  _ints(np.r_[0, np.cumsum([c.size for c in terms])]), _ints(np.concatenate([[], *terms])),
                  _ints(np.concatenate([[], *(row * n + c for row, c in zip(passive, terms))])))


def elimination_order(n: int, active: np.ndarray, targets: np.ndarray) -> tuple[np.ndarray, int]:
    """The active unknowns in the order Newton eliminates them (docs/solving.md §3.5), and how many
    lead it: those outside a feedback set of the graph i -> j (J_ij has a term, i != j), each after
    every unknown it depends on, so that their block of J is the identity plus a strictly lower
    triangle and is eliminated without pivoting, its pivots exactly 1; then the feedback set: every
    unknown with a term on its diagonal and, while cycles remain, the one of most edges among the
    rest (in times out), eliminated with partial pivoting. ``targets``: the flat positions i n + j
    of J's terms."""
    nodes = [int(i) for i in active]
    deps: dict[int, set[int]] = {i: set() for i in nodes}
    feedback: set[int] = set()
    for q in np.unique(targets):
        i, j = divmod(int(q), n)
        if i in deps and j in deps:
            if i == j:
                feedback.add(i)
            else:
                deps[i].add(j)
    order: list[int] = []
    left = [i for i in nodes if i not in feedback]
    while left:
        known = set(order) | feedback
        ready = [i for i in left if deps[i] <= known]
        if ready:
            order += ready
            left = [i for i in left if i not in ready]
        else:
            rest = set(left)
            cut = max(left, key=lambda i: (len(deps[i] & rest) * sum(i in deps[j] for j in left), -i))
            feedback.add(cut)
            left.remove(cut)
    return np.array(order + sorted(feedback), dtype=np.int64), len(order)

