"""The key-side blocks of the two-point equation, all intervals at once (docs/solving.md §3.13).

On the interval (t_{j-1}, t_j] the key-side block is M_j = Lambda - E_j, where E_j sums the pairings
whose masks keep interval j: a pairing masked by nodes keeps the intervals j <= J, J its smallest
masked node (J = K - 1 unmasked). So M_j = M_{j+1} - D_j, D_j the pairings with J = j, and D_j is
nonzero only in the few columns that the masks of node j act on (for the heads' pencil: p^h and
q^h_j). From G_K = Lambda^-1, the Sherman-Morrison-Woodbury identity

    G_j = G_{j+1} + G_{j+1} U (I - G_{j+1}[c, :] U)^-1 G_{j+1}[c, :],   U = D_j[:, c],

gives every G_j = M_j^-1 for O(s^2 r) each (s the side's size, r = |c|) instead of O(s^3). A pairing
that reads the key side reads sum_{j <= J} len_j G_j[a, b] = T_0[a, b] - T_{J+1}[a, b], with the
suffix sums T_j = sum_{j' >= j} len_j' G_j' accumulated on the way down.
"""

from __future__ import annotations

import numpy as np
from scipy import sparse

__all__ = ["KeySide"]


class KeySide:
    """The pairings that write the key side (``writes``: rows of (value index, row a, column b, last interval J),
    times ``coefficients``, 1 by default) and those that read it (``reads``: rows of (a, b, J)), on a side of
    ``size`` variables and intervals of ``lengths``; ``values`` is the number of pairing values a call receives."""

    def __init__(self, size: int, lengths: np.ndarray, writes: np.ndarray, reads: np.ndarray, values: int,
                 coefficients: np.ndarray | None = None) -> None:
        writes, reads = np.asarray(writes, dtype=int).reshape(-1, 4), np.asarray(reads, dtype=int).reshape(-1, 3)
        K = lengths.size
        if np.any((writes[:, 1:3] < 0) | (writes[:, 1:3] >= size)) or np.any((reads[:, :2] < 0) | (reads[:, :2] >= size)):
            raise ValueError(f"writes, reads: an index lies outside the side's {size} variables")
        if np.any((writes[:, 3] < 0) | (writes[:, 3] >= K)) or np.any((reads[:, 2] < 0) | (reads[:, 2] >= K)):
            raise ValueError(f"writes, reads: a last interval lies outside the {K} intervals")
        self.size, self.lengths = size, np.asarray(lengths, dtype=float)
        #: the columns c that D_j writes, per interval j
        self.columns = [np.unique(writes[writes[:, 3] == j, 2]) for j in range(K)]
        widths = np.array([c.size for c in self.columns])
        self._offsets = np.r_[0, np.cumsum(size * widths)]
        J = writes[:, 3]
        position = np.array([np.searchsorted(self.columns[j], b) for j, b in zip(J, writes[:, 2])], dtype=int)
        flat = self._offsets[J] + writes[:, 1] * widths[J] + position
        # one matrix scatters the values into every D_j[:, c], stored side by side (row-major, s x r_j each)
        scale = np.ones(len(writes)) if coefficients is None else np.asarray(coefficients, dtype=float)
        self._scatter = sparse.csr_matrix((scale, (flat, writes[:, 0])), (int(self._offsets[-1]), values))
        self._reads = reads
        #: for interval j >= 1: the reads with J = j - 1, which subtract T_j
        self._due = [np.flatnonzero(reads[:, 2] == j - 1) for j in range(K)]

    def __call__(self, lam: np.ndarray, values: np.ndarray) -> np.ndarray:
        """The read values (points, reads), given Lambda on the side (points, size, size) and the pairing values
        (values, points)."""
        points, s = lam.shape[0], self.size
        D = (self._scatter @ values).T
        G = np.linalg.inv(lam)
        T = np.zeros_like(G)
        a, b = self._reads[:, 0], self._reads[:, 1]
        later = np.zeros((points, len(self._reads)), dtype=complex)
        for j in reversed(range(self.lengths.size)):
            c = self.columns[j]
            if c.size:
                U = D[:, self._offsets[j]:self._offsets[j + 1]].reshape(points, s, c.size)
                GU = G @ U
                rows = G[:, c, :]
                G = G + GU @ np.linalg.solve(np.eye(c.size) - GU[:, c, :], rows)
            T += self.lengths[j] * G
            due = self._due[j]
            if j and due.size:
                later[:, due] = T[:, a[due], b[due]]
        return T[:, a, b] - later
