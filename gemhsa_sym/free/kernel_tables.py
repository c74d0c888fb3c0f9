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

__all__ = ["DYSON", "POLYNOMIAL", "Tables", "dyson_tables", "polynomial_tables"]

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
    for the active ones first), ``passive`` the rest.
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
                  none, none, empty, none, none, empty, none, none, empty, none, none, none, empty, none, _ints([0]), none)


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
    return Tables(DYSON, n, int(output), False, none, none, np.zeros((0, 0)), sizes, offsets,
                  _complexes(np.concatenate([a.ravel() for a in A])), _complexes(np.concatenate([e.ravel() for e in E])),
                  *c_terms, *entries(T), *pairs(jacobian), *pairs(slope), _ints(np.flatnonzero(active)),
                  _ints(np.flatnonzero(~active)))

