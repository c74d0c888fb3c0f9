"""Exchangeable heads in the two-point equation: orbits of entries and the blocks of a side
(docs/solving.md §3.14).

A pencil of H heads with their own weights is unchanged by permuting the heads, and so is the
solution of its Dyson equation. On a side with variables O shared by the heads and T per head, a
matrix with that symmetry is fixed by M_OO, M_OT, M_TO and the blocks A (one head) and B (two
heads): a pencil written for two representative heads, labelled 0 and 1, holds all of them. Over
the heads it splits into the constant vectors and the H - 1 zero-sum ones,

    M_c = [[M_OO, sqrt(H) M_OT], [sqrt(H) M_TO, A + (H - 1) B]],   M_w = A - B,

and the inverse is read back from the two blocks' inverses: G_OO = (M_c^-1)_OO, G_OT =
(M_c^-1)_OT / sqrt(H), A' = ((M_c^-1)_TT + (H - 1) M_w^-1) / H, B' = ((M_c^-1)_TT - M_w^-1) / H.

A sum over the heads (a pairing written into an entry, a trace) is kept once per orbit: its labels,
written entry first, must appear in canonical order (the first new label 0, the next 1), and it
counts the heads its free labels stand for, H - w and H - w - 1 for w labels fixed by the entry.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import sparse

__all__ = ["multiplicity", "Block", "side_blocks"]


def multiplicity(fixed: Sequence[int | None], free: Sequence[int | None], heads: int) -> int:
    """How many assignments of heads the labels ``fixed`` (of the entry written) then ``free`` stand for: 0 unless
    their distinct labels appear as 0, 1, ... in that order; else prod (H - i) over the distinct labels i first met
    among ``free``."""
    order: list[int] = []
    for label in [*fixed, *free]:
        if label is not None and label not in order:
            order.append(label)
    if order != list(range(len(order))):
        return 0
    written = len({label for label in fixed if label is not None})
    return int(np.prod([heads - i for i in range(written, len(order))], dtype=np.int64))


@dataclass(frozen=True, eq=False)
class Block:
    """One invariant block of a side: its ``size``, the map ``into`` from the side's matrix (flattened, r^2) to the
    block's (size^2), and ``back`` from the block's inverse to the side's inverse (module docstring)."""

    size: int
    into: sparse.csr_matrix
    back: sparse.csr_matrix


def side_blocks(labels: Sequence[tuple[int | None, str | None]], heads: int) -> list[Block]:
    """The blocks of a side whose variables carry ``labels`` (head label and template, None for shared ones): the
    constant block (O and T), and for H >= 2 the zero-sum block (T); one identity block without labelled variables."""
    r = len(labels)
    shared = [i for i, (label, _) in enumerate(labels) if label is None]
    templates = list(dict.fromkeys(t for label, t in labels if label == 0))
    copies = {(label, t): i for i, (label, t) in enumerate(labels) if label is not None}
    present = sorted({label for label, _ in labels if label is not None})
    if not templates:
        identity = sparse.identity(r * r, format="csr")
        return [Block(r, identity, identity)]
    o, H = len(shared), float(heads)

    def flat(i: int, j: int, size: int) -> int:
        return i * size + j

    def constant() -> Block:
        size = o + len(templates)
        into: list[tuple[int, int, float]] = []  # (block entry, side entry, coefficient)
        back: list[tuple[int, int, float]] = []  # (side entry, block entry, coefficient)
        for i, a in enumerate(shared):
            for j, b in enumerate(shared):
                into.append((flat(i, j, size), flat(a, b, r), 1.0))
                back.append((flat(a, b, r), flat(i, j, size), 1.0))
            for t, name in enumerate(templates):
                into += [(flat(i, o + t, size), flat(a, copies[0, name], r), H**0.5),
                         (flat(o + t, i, size), flat(copies[0, name], a, r), H**0.5)]
                for label in present:
                    back += [(flat(a, copies[label, name], r), flat(i, o + t, size), H**-0.5),
                             (flat(copies[label, name], a, r), flat(o + t, i, size), H**-0.5)]
        for t, x in enumerate(templates):
            for u, y in enumerate(templates):
                into.append((flat(o + t, o + u, size), flat(copies[0, x], copies[0, y], r), 1.0))
                if heads >= 2:
                    into.append((flat(o + t, o + u, size), flat(copies[0, x], copies[1, y], r), H - 1))
                back += [(flat(copies[k, x], copies[m, y], r), flat(o + t, o + u, size), 1 / H)
                         for k in present for m in present]
        return Block(size, _matrix(into, size * size, r * r), _matrix(back, r * r, size * size))

    def zero_sum() -> Block:
        size = len(templates)
        into, back = [], []
        for t, x in enumerate(templates):
            for u, y in enumerate(templates):
                into += [(flat(t, u, size), flat(copies[0, x], copies[0, y], r), 1.0),
                         (flat(t, u, size), flat(copies[0, x], copies[1, y], r), -1.0)]
                back += [(flat(copies[k, x], copies[m, y], r), flat(t, u, size), (H - 1) / H if k == m else -1 / H)
                         for k in present for m in present]
        return Block(size, _matrix(into, size * size, r * r), _matrix(back, r * r, size * size))

    return [constant(), zero_sum()] if heads >= 2 else [constant()]


def _matrix(entries: list[tuple[int, int, float]], rows: int, cols: int) -> sparse.csr_matrix:
    """The sparse matrix of (row, column, value) triples."""
    i, j, v = (np.array(x) for x in zip(*entries))
    return sparse.csr_matrix((v.astype(float), (i.astype(int), j.astype(int))), (rows, cols))
