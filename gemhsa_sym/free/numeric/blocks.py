"""The blocks a sector's matrix decouples into (docs/solving.md §3.4).

A sector's M = A + w E + sum_j g_j C_j often couples its rows and columns in separate groups: under
one permutation of rows and columns it is block diagonal, whatever w and g, and so is M^{-1}. The
numeric system (:class:`~.numeric.NumericSystem`) then inverts each block alone and drops the
entries of the read-outs T that fall between two blocks, where M^{-1} is zero.
"""

from __future__ import annotations

import numpy as np

__all__ = ["decoupled", "nonzero_mask"]


def nonzero_mask(a: np.ndarray) -> np.ndarray:
    """Where ``a`` (numbers or mpmath objects) is not zero."""
    return a.astype(bool) if a.dtype == object else a != 0


def decoupled(A: np.ndarray, E: np.ndarray, C: np.ndarray, T: np.ndarray) -> list[tuple[np.ndarray, ...]]:
    """One sector's arrays (A, E: k x k; C, T: m x k x k) as the blocks its matrix decouples into, in
    the order of their first entries: the connected components of the entries that A, E or some C_j
    can make nonzero (in either order); the entries of T between two blocks are dropped."""
    pattern = nonzero_mask(A) | nonzero_mask(E) | nonzero_mask(C).any(axis=0)
    reach = (pattern | pattern.T | np.eye(len(A), dtype=bool)).astype(np.int64)
    for _ in range(len(A).bit_length()):  # paths of every length up to k: the transitive closure
        reach = np.minimum(reach @ reach, 1)
    labels = reach.argmax(axis=1)  # each entry's block, named by its first entry
    if np.all(labels == 0):
        return [(A, E, C, T)]
    blocks = []
    for label in np.unique(labels):
        idx = np.flatnonzero(labels == label)
        blocks.append((A[np.ix_(idx, idx)], E[np.ix_(idx, idx)], C[:, idx[:, None], idx], T[:, idx[:, None], idx]))
    return blocks
