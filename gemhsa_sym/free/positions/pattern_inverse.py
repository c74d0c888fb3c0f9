"""Inverses of stacks of matrices with a known sparsity pattern and -1 on much of the diagonal
(docs/solving.md §3.13): the resolvent blocks of a pencil, M = Lambda - eta, where Lambda is -1 off
the output and eta lands on few entries.

The pattern splits into connected components (the inverse is zero between them; an index outside the
pattern is its own component, -1). In a component, an
independent set R of the pattern (no entry between two of its indices, -1 on their diagonal) has
M_RR = -I, so with C the rest and the Schur complement S = M_CC + M_CR M_RC:

    G_CC = S^-1,  G_CR = S^-1 M_CR,  G_RC = M_RC S^-1,  G_RR = -I + M_RC S^-1 M_CR,

which costs |C|^3 + |C|^2 |R| + |C| |R|^2 instead of (|C| + |R|)^3. Where only some entries are wanted
(the pairings of the two-point equation never read G_RR), the blocks without a wanted entry are skipped,
and of G_RC only the rows with one are formed.
"""

from __future__ import annotations

import numpy as np

__all__ = ["PatternInverse"]


class PatternInverse:
    """The inverse of matrices whose entries off ``pattern`` are those of -I (``pattern[i, j]``: M_ij may
    differ from -delta_ij); R is chosen greedily by smallest degree. With ``wanted`` (boolean, as ``pattern``)
    the entries of the inverse outside it may be left zero."""

    def __init__(self, pattern: np.ndarray, wanted: np.ndarray | None = None) -> None:
        pattern = np.asarray(pattern, dtype=bool)
        size = pattern.shape[0]
        if pattern.shape != (size, size):
            raise ValueError("pattern: expected a square boolean matrix")
        wanted = np.ones_like(pattern) if wanted is None else np.asarray(wanted, dtype=bool)
        if wanted.shape != pattern.shape:
            raise ValueError("wanted: expected a boolean matrix of the pattern's shape")
        self.size = size
        linked = pattern | pattern.T
        self.parts: list[tuple[np.ndarray, np.ndarray]] = []  # (C, R) of every component, R empty where dense is cheaper
        seen = ~(linked.any(axis=0) | linked.any(axis=1))
        #: indices outside the pattern: -1 on the diagonal of the inverse
        self.isolated = np.flatnonzero(seen)
        for first in range(size):
            if seen[first]:
                continue
            component, frontier = {first}, [first]
            while frontier:
                reached = {int(j) for i in frontier for j in np.flatnonzero(linked[i])} - component
                component |= reached
                frontier = list(reached)
            members = np.array(sorted(component))
            seen[members] = True
            self.parts.append(self._split(members, linked, pattern))
        #: per part: whether G_CR and G_RR are wanted, and the positions in R of the rows with a wanted entry in G_RC
        self.needs = [(bool(wanted[np.ix_(C, R)].any()), bool(wanted[np.ix_(R, R)].any()),
                       np.flatnonzero(wanted[np.ix_(R, C)].any(axis=1))) for C, R in self.parts]

    @staticmethod
    def _split(members: np.ndarray, linked: np.ndarray, pattern: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(C, R) of a component: R independent with -1 on its diagonal, kept only where it saves work."""
        free = [int(i) for i in members if not pattern[i, i]]
        local = linked[np.ix_(free, free)]
        order = np.argsort(local.sum(axis=1), kind="stable")
        chosen: list[int] = []
        blocked = np.zeros(len(free), dtype=bool)
        for i in order:
            if not blocked[i]:
                chosen.append(free[i])
                blocked |= local[i]
                blocked[i] = True
        inside = np.zeros(len(free), dtype=bool)
        inside[[free.index(i) for i in chosen]] = True
        improved = True
        while improved:  # (1, k) swaps: drop one chosen index for the k >= 2 it alone blocks, if they are independent
            improved = False
            for i in np.flatnonzero(inside):
                blockers = local[:, inside].sum(axis=1)
                alone = np.flatnonzero(~inside & local[i] & (blockers == 1))
                keep: list[int] = []
                for j in alone:
                    if not local[j, keep].any():
                        keep.append(int(j))
                if len(keep) >= 2:
                    inside[i], inside[keep] = False, True
                    improved = True
                    break
        chosen = [free[i] for i in np.flatnonzero(inside)]
        rest = np.array(sorted(set(members.tolist()) - set(chosen)), dtype=int)
        c, r = rest.size, len(chosen)
        if c**3 + c * c * r + c * r * r >= (c + r) ** 3:
            return members, np.array([], dtype=int)
        return rest, np.array(sorted(chosen), dtype=int)

    def __call__(self, M: np.ndarray) -> np.ndarray:
        """M^-1 for a stack of matrices (last two axes)."""
        G = np.zeros_like(M)
        G[..., self.isolated, self.isolated] = -1
        for (C, R), (cr, rr, rows) in zip(self.parts, self.needs):
            if R.size == 0:
                G[..., C[:, None], C] = np.linalg.inv(M[..., C[:, None], C])
                continue
            MCR, MRC = M[..., C[:, None], R], M[..., R[:, None], C]
            S = np.linalg.inv(M[..., C[:, None], C] + MCR @ MRC)
            G[..., C[:, None], C] = S
            if cr:
                G[..., C[:, None], R] = S @ MCR
            if rr:
                left = MRC @ S
                G[..., R[:, None], C] = left
                G[..., R[:, None], R] = left @ MCR - np.eye(R.size)
            elif rows.size:
                G[..., R[rows][:, None], C] = MRC[..., rows, :] @ S
        return G
