"""Numeric form of a Dyson system and Newton iterates, in two back ends.

The system g = R(g, w) with R(g, w)_j = sum T_j[ab] (M_sector(g, w)^{-1})_ab
(see :mod:`.system`) is solved by Newton's method on F(g) = g - R(g, w), with
the exact Jacobian dF/dg_j = e_j + T . (M^{-1} C_j M^{-1}) since M is affine
in g. One algorithm, two array back ends: complex128 batched over many w at
once, and numpy object arrays of mpmath numbers for any precision (the
caller holds ``mpmath.workdps``). The iterator only yields iterates; the
drivers in :mod:`.continuation` own tolerances and verification.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

import mpmath
import numpy as np
import sympy as sp

from gemhsa_sym.free.expressions.system import DysonSystem
from gemhsa_sym.free.numeric import flint_linalg
from gemhsa_sym.free.numeric.blocks import decoupled, nonzero_mask
from gemhsa_sym.free.numeric.kernel.tables import Tables, dyson_tables
from gemhsa_sym.free.numeric.sparse import NonzeroPart, double_solve, refined_solve

__all__ = ["Backend", "DOUBLE", "MP", "Equations", "NumericSystem", "newton_iterates"]


class Backend(Protocol):
    """Array operations the Newton iteration needs."""

    def array(self, values: np.ndarray) -> np.ndarray: ...
    def inv(self, M: np.ndarray) -> np.ndarray: ...
    def solve(self, J: np.ndarray, F: np.ndarray) -> np.ndarray: ...
    def abs(self, x: np.ndarray) -> np.ndarray: ...


class _Double:
    """complex128, batched over the leading axis; large sparse systems solved by sparse LU (:mod:`.sparse`)."""

    name = "double"

    def array(self, values: np.ndarray) -> np.ndarray:
        return np.asarray(values, dtype=complex)

    def inv(self, M: np.ndarray) -> np.ndarray:
        try:
            return np.linalg.inv(M)
        except np.linalg.LinAlgError:  # NaN marks the singular points; the driver rejects them
            return np.stack([self._or_nan(np.linalg.inv, m) for m in M])

    def solve(self, J: np.ndarray, F: np.ndarray) -> np.ndarray:
        if J.shape[-1] == 1:  # one unknown: no LAPACK call (NaN/inf where J = 0; the driver rejects them)
            with np.errstate(divide="ignore", invalid="ignore"):
                return F / J[..., 0]
        if (x := double_solve(J, F)) is not None:
            return x
        try:
            return np.linalg.solve(J, F[..., None])[..., 0]
        except np.linalg.LinAlgError:
            return np.stack([self._or_nan(lambda a, f=f: np.linalg.solve(a, f), j) for j, f in zip(J, F)])

    @staticmethod
    def _or_nan(op: Callable[[np.ndarray], np.ndarray], a: np.ndarray) -> np.ndarray:
        try:
            return op(a)
        except np.linalg.LinAlgError:
            shape = a.shape if op is np.linalg.inv else a.shape[:1]
            return np.full(shape, np.nan, dtype=complex)

    def abs(self, x: np.ndarray) -> np.ndarray:
        return np.abs(x)


class _Multiprecision:
    """Object arrays of mpmath numbers at the caller's working precision; large sparse solves by
    refinement over a double-precision LU (:mod:`.sparse`), the others dense in python-flint
    (:mod:`.flint_linalg`)."""

    name = "mpmath"

    def array(self, values: np.ndarray) -> np.ndarray:
        vals = np.asarray(values, dtype=object)
        return np.vectorize(mpmath.mpmathify, otypes=[object])(vals) if vals.size else vals

    def inv(self, M: np.ndarray) -> np.ndarray:
        return flint_linalg.inverse(M)

    def solve(self, J: np.ndarray, F: np.ndarray) -> np.ndarray:
        out = np.empty_like(F)
        for idx in np.ndindex(F.shape[:-1]):
            x = refined_solve(J[idx], F[idx])
            out[idx] = x if x is not None else flint_linalg.solve(J[idx][None], F[idx][None])[0]
        return out

    def abs(self, x: np.ndarray) -> np.ndarray:
        return np.vectorize(abs, otypes=[object])(x)


DOUBLE: Backend = _Double()
MP: Backend = _Multiprecision()


class Equations(Protocol):
    """F(g, w) = 0 as the Newton iteration and the continuation drivers see it: the Dyson
    system (:class:`NumericSystem`) or the minimal polynomial of m (one unknown)."""

    backend: Backend
    output: int
    relative: ClassVar[bool]
    #: The system a driver takes the physical solution from at large |w| (None: this one,
    #: whose physical solution is the attracting fixed point of its map).
    anchor: Any

    @property
    def size(self) -> int: ...
    def residual_jacobian(self, w: np.ndarray, g: np.ndarray) -> tuple[np.ndarray, np.ndarray]: ...
    def linearisation(self, w: np.ndarray, g: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]: ...


def _number(expr: sp.Expr, values: Mapping[sp.Symbol, object], backend: Backend) -> object:
    """A coefficient with the parameter values substituted, as a backend scalar."""
    e = sp.sympify(expr).subs(values) if values else sp.sympify(expr)
    if e.free_symbols:
        raise ValueError(f"parameters: no value given for {', '.join(sorted(map(str, e.free_symbols)))}")
    if backend is DOUBLE:
        return complex(e)
    return mpmath.mpmathify(sp.N(e, mpmath.mp.dps + 5))


@dataclass(frozen=True)
class _Pairs:
    """The terms of J_ij = sum T_i[a,d] C_j[b,c] R[a,b] R[c,d] of the sectors of one size, stacked
    along a new axis (sector s's flat positions offset by s k^2), sorted by (i, j): flat positions
    in R, weights T_i[a,d] C_j[b,c], the start of each (i, j) run and its flat position i*m+j in J
    (one gather, one product, one segmented sum)."""

    left: np.ndarray
    right: np.ndarray
    weight: np.ndarray
    starts: np.ndarray
    target: np.ndarray

    @staticmethod
    def _terms(C: np.ndarray, T: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The terms of one sector: flat positions a*k+b and c*k+d in R, weights, targets i*m+j."""
        m, k = C.shape[0], C.shape[-1]
        ti, ta, td = np.nonzero(nonzero_mask(T)) if T.size else (np.array([], int),) * 3
        cj, cb, cc = np.nonzero(nonzero_mask(C)) if C.size else (np.array([], int),) * 3
        return ((ta[:, None] * k + cb[None, :]).ravel(), (cc[None, :] * k + td[:, None]).ravel(),
                (T[ti, ta, td][:, None] * C[cj, cb, cc][None, :]).ravel(), (ti[:, None] * m + cj[None, :]).ravel())

    @classmethod
    def stacked(cls, C: list[np.ndarray], T: list[np.ndarray]) -> "_Pairs":
        """The pairs of the sectors with arrays C[s], T[s]; terms for the same (i, j) are summed together."""
        k2 = C[0].shape[-1] ** 2
        terms = [cls._terms(c, t) for c, t in zip(C, T)]
        target = np.concatenate([t[3] for t in terms])
        order = np.argsort(target, kind="stable")
        left = np.concatenate([t[0] + s * k2 for s, t in enumerate(terms)])[order]
        right = np.concatenate([t[1] + s * k2 for s, t in enumerate(terms)])[order]
        weight = np.concatenate([t[2] for t in terms])[order]
        target = target[order]
        starts = np.flatnonzero(np.r_[True, target[1:] != target[:-1]]) if target.size else np.array([], int)
        return cls(left, right, weight, starts, target[starts])


#: Batches at least this long invert 2x2 blocks by their adjugate in double precision.
ADJUGATE_BATCH = 16


def _inverse(M: np.ndarray, backend: Backend) -> np.ndarray:
    """Batched inverse; 1x1 blocks, and 2x2 blocks of long batches or in mpmath, by their
    adjugate (no per-matrix LAPACK call)."""
    k = M.shape[-1]
    if k == 1:
        with np.errstate(divide="ignore", invalid="ignore"):
            return 1 / M
    if k == 2 and (backend is not DOUBLE or M.shape[0] >= ADJUGATE_BATCH):
        out = np.empty_like(M)
        with np.errstate(divide="ignore", invalid="ignore"):
            inv_det = 1 / (M[..., 0, 0] * M[..., 1, 1] - M[..., 0, 1] * M[..., 1, 0])
            out[..., 0, 0] = M[..., 1, 1] * inv_det
            out[..., 1, 1] = M[..., 0, 0] * inv_det
            out[..., 0, 1] = -M[..., 0, 1] * inv_det
            out[..., 1, 0] = -M[..., 1, 0] * inv_det
        return out
    return backend.inv(M)


def _rows(a: np.ndarray) -> np.ndarray:
    """``a`` as a matrix of its first axis against all the others (also when it has no rows)."""
    return a.reshape(a.shape[0], math.prod(a.shape[1:]))


def _contract(X: np.ndarray, T: NonzeroPart, out: np.ndarray) -> np.ndarray:
    """out + sum_ab X[:, a, b] T[j, a, b] (X flattened after its first axis): one product over the
    nonzero part of T."""
    T.left(_rows(X), out)
    return out


@dataclass(frozen=True)
class _Group:
    """The sectors of one size k stacked, so that each step treats them in one batch: A and E of
    shape (S, k, k), the nonzero parts of C and T over the flat (S k^2) entries, and the pairs of
    the Jacobian."""

    A: np.ndarray
    E: np.ndarray
    C: NonzeroPart
    T: NonzeroPart
    pairs: _Pairs

    @classmethod
    def of(cls, A: list[np.ndarray], E: list[np.ndarray], C: list[np.ndarray], T: list[np.ndarray]) -> "_Group":
        def flat(arrays: list[np.ndarray]) -> np.ndarray:
            return np.concatenate([_rows(a) for a in arrays], axis=1)

        return cls(np.stack(A), np.stack(E), NonzeroPart.of(flat(C)), NonzeroPart.of(flat(T)), _Pairs.stacked(C, T))

    def matrices(self, w: np.ndarray, g: np.ndarray) -> np.ndarray:
        """M_s(g, w) of the group's sectors, shape (P, S, k, k)."""
        M = _rows(self.A[None] + w[:, None, None, None] * self.E[None])
        self.C.right(g, M)
        return M.reshape(len(g), *self.A.shape)


@dataclass(frozen=True)
class NumericSystem:
    """Arrays A, E, C, T per sector: M = A + w E + sum_j g_j C_j, g_j = sum T_j * M^{-1}."""

    A: tuple[np.ndarray, ...]
    E: tuple[np.ndarray, ...]
    C: tuple[np.ndarray, ...]
    T: tuple[np.ndarray, ...]
    output: int
    backend: Backend
    groups: tuple[_Group, ...] = ()
    #: Continuity checks of the drivers relative to 1 + |g| (the physical solution is the
    #: attracting fixed point of g -> R(g, w), Helton, Far & Speicher 2007).
    relative: ClassVar[bool] = False
    anchor: ClassVar[None] = None

    @classmethod
    def build(cls, system: DysonSystem, values: Mapping[sp.Symbol, object], backend: Backend) -> "NumericSystem":
        """Substitute parameter values into a symbolic system."""
        index = {g: j for j, g in enumerate(system.unknowns)}
        m = len(system.unknowns)
        zero = 0j if backend is DOUBLE else mpmath.mpf(0)
        dtype = complex if backend is DOUBLE else object
        A, E, C, T = [], [], [], []
        cache: dict[sp.Expr, object] = {}

        def num(e: sp.Expr) -> object:
            if e not in cache:
                cache[e] = _number(e, values, backend)
            return cache[e]

        for sec in system.sectors:
            k = sec.size
            a = np.full((k, k), zero, dtype=dtype)
            e = np.full((k, k), zero, dtype=dtype)
            c = np.full((m, k, k), zero, dtype=dtype)
            t = np.full((m, k, k), zero, dtype=dtype)
            for (i, j), v in sec.const.items():
                a[i, j] = num(v)
            for (i, j), v in sec.wcoef.items():
                e[i, j] = num(v)
            for (i, j), terms in sec.lin.items():
                for g, v in terms.items():
                    c[index[g], i, j] = num(v)
            A.append(a), E.append(e), C.append(c), T.append(t)
        for g, reads in system.readout.items():
            for s, i, j, v in reads:
                T[s][index[g], i, j] += num(v)
        return cls.of(A, E, C, T, index[system.output], backend)

    @classmethod
    def of(cls, A: list[np.ndarray], E: list[np.ndarray], C: list[np.ndarray], T: list[np.ndarray], output: int,
           backend: Backend) -> "NumericSystem":
        """The system of the arrays A, E, C, T per sector (class docstring), each sector split into the
        blocks it decouples into (:func:`.blocks.decoupled`) and the blocks grouped by size."""
        blocks = [block for s in range(len(A)) for block in decoupled(A[s], E[s], C[s], T[s])]
        A, E, C, T = ([block[i] for block in blocks] for i in range(4))
        sizes = sorted({a.shape[-1] for a in A})
        groups = []
        for k in sizes:
            idx = [s for s, a in enumerate(A) if a.shape[-1] == k]
            groups.append(_Group.of([A[s] for s in idx], [E[s] for s in idx], [C[s] for s in idx], [T[s] for s in idx]))
        return cls(tuple(A), tuple(E), tuple(C), tuple(T), output, backend, tuple(groups))

    @property
    def size(self) -> int:
        return self.C[0].shape[0] if self.C else 0

    @functools.cached_property
    def tables(self) -> Tables:
        """The system as the compiled kernel reads it (:func:`.kernel_tables.dyson_tables`; double precision):
        the terms of J and of dF/dw = T . (M^{-1} E M^{-1}) per sector (:class:`_Pairs`)."""
        if self.backend is not DOUBLE:
            raise TypeError("tables: the compiled kernel runs in double precision")
        return dyson_tables(list(self.A), list(self.E), list(self.C), list(self.T), self.output,
                            [_Pairs._terms(c, t) for c, t in zip(self.C, self.T)],
                            [_Pairs._terms(e[None], t) for e, t in zip(self.E, self.T)])

    def _inverses(self, group: _Group, w: np.ndarray, g: np.ndarray) -> np.ndarray:
        """M_s(g, w)^{-1} of a group's sectors, shape (P, S, k, k)."""
        M = group.matrices(w, g)
        return _inverse(M.reshape(M.shape[0] * M.shape[1], *M.shape[2:]), self.backend).reshape(M.shape)

    def readout(self, w: np.ndarray, g: np.ndarray) -> np.ndarray:
        """R(g, w): the unknowns read from the sector inverses."""
        out = self._zeros(g)
        for group in self.groups:
            _contract(self._inverses(group, w, g), group.T, out)
        return out

    def _zeros(self, like: np.ndarray) -> np.ndarray:
        """An array of zeros of the back end, shaped like ``like``."""
        out = np.zeros(like.shape, dtype=like.dtype)
        if self.backend is not DOUBLE:
            out[...] = mpmath.mpf(0)
        return out

    def residual(self, w: np.ndarray, g: np.ndarray) -> np.ndarray:
        """F(g) = g - R(g, w)."""
        return g - self.readout(w, g)

    def residual_jacobian(self, w: np.ndarray, g: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """F and dF/dg, batched: shapes (P, m) and (P, m, m)."""
        F, J, _ = self._linearise(w, g, with_w=False)
        return F, J

    def linearisation(self, w: np.ndarray, g: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """F, dF/dg and dF/dw = T . (M^{-1} E M^{-1}) from one pass over the sector inverses."""
        return self._linearise(w, g, with_w=True)

    def _linearise(self, w: np.ndarray, g: np.ndarray, with_w: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The body of :meth:`residual_jacobian` and :meth:`linearisation` (dF/dw left 0 without ``with_w``)."""
        P, m = g.shape
        R_sum, Fw = self._zeros(g), self._zeros(g)
        # J is assembled entry-major, (m*m, P): the scatter of the sums then writes whole rows
        flat = np.zeros((m * m, P), dtype=g.dtype)
        if self.backend is not DOUBLE:
            flat[...] = mpmath.mpf(0)
        flat[:: m + 1] += 1
        for group in self.groups:
            R = self._inverses(group, w, g)
            _contract(R, group.T, R_sum)
            if with_w:
                _contract(R @ group.E[None] @ R, group.T, Fw)
            pairs = group.pairs
            if pairs.starts.size:  # J_ij += sum T_i[a,d] C_j[b,c] R[a,b] R[c,d]
                Rt = _rows(R).T.copy()
                terms = Rt[pairs.left] * Rt[pairs.right] * pairs.weight[:, None]
                flat[pairs.target] += np.add.reduceat(terms, pairs.starts, axis=0)
        return g - R_sum, flat.T.reshape(P, m, m), Fw


def newton_iterates(system: Equations, w: np.ndarray, g: np.ndarray) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Newton iterates (g, |step|_inf, |F|_inf before the step) per point; never stops by itself."""
    be = system.backend
    while True:
        F, J = system.residual_jacobian(w, g)
        step = be.solve(J, F)
        g = g - step
        if step.shape[-1]:
            yield g, np.max(be.abs(step), axis=-1), np.max(be.abs(F), axis=-1)
        else:
            yield g, np.zeros(len(g)), np.zeros(len(g))
