"""The series of m(w) modulo primes, at integer points of the parameters (docs/solving.md §3.12).

The recursion is the one of :mod:`.series` (rows of a sector that carry w are
multiplied by u = 1/w, X_0 = A_0^{-1}, X_k = -X_0 (F_k + A_k X_0) with
F_k = sum_{j=1..k-1} A_j X_{k-j}, iterated at each order until the read-outs stop
changing), with every coefficient a residue modulo a prime p < 2^23 instead of
an element of QQ[generators]. A batch of (prime, parameter point) pairs runs at
once in numpy int64: residues are below 2^23, so a product is below 2^46 and a
sum of up to 2^16 products cannot overflow. m(w) = sum_k m_k u^k with m_0 = 0 and
m_1 = 1; m_k = mu_{k-1} mod p, the moments at that point.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction

import flint
import numpy as np
import sympy as sp

from gemhsa_sym.free.expressions.system import DysonSystem

__all__ = ["PRIME_BOUND", "ModularSystem", "primes_below"]

#: Primes are below this bound (see the module docstring for the overflow argument).
PRIME_BOUND = 2**23
#: Most terms of one series (the float64 sums of :func:`_convolution` stay exact).
MAX_ORDER = 2**14

Polynomial = tuple[tuple[tuple[int, ...], Fraction], ...]


def primes_below(bound: int, count: int) -> np.ndarray:
    """The ``count`` largest primes below ``bound``, decreasing."""
    found: list[int] = []
    p = bound
    while len(found) < count:
        p = int(sp.prevprime(p))
        found.append(p)
    return np.array(found, dtype=np.int64)


def _polynomial(expr: sp.Expr, symbols: Sequence[sp.Symbol]) -> Polynomial:
    """``expr`` as (exponents, rational coefficient) terms in ``symbols``."""
    if not symbols:
        q = sp.Rational(sp.sympify(expr))
        return (((), Fraction(int(q.p), int(q.q))),)
    poly = sp.Poly(sp.expand(expr), *symbols, domain=sp.QQ)
    return tuple((m, Fraction(int(c.p), int(c.q))) for m, c in poly.terms())


def _evaluate(poly: Polynomial, primes: np.ndarray, powers: list[np.ndarray]) -> np.ndarray:
    """The residues of ``poly`` at the batch's points (``powers[l][:, e]`` = t_l^e mod p)."""
    out = np.zeros(len(primes), dtype=np.int64)
    for mono, c in poly:
        inv = np.array([pow(c.denominator, -1, int(p)) for p in primes], dtype=np.int64)
        term = (c.numerator % primes) * inv % primes
        for l, e in enumerate(mono):
            if e:
                term = term * powers[l][:, e] % primes
        out = (out + term) % primes
    return out


def _inverse(A: np.ndarray, p: int) -> np.ndarray:
    """A^{-1} mod p (python-flint's ``nmod_mat``; ZeroDivisionError when A is singular mod p)."""
    k = A.shape[0]
    inv = flint.nmod_mat(k, k, (A % p).ravel().tolist(), p).inv()
    return np.array([[int(inv[r, c]) for c in range(k)] for r in range(k)], dtype=np.int64)


class _Convolution:
    """F_n = sum_{j=1..n-1} A_j X_{n-j} mod p of one sector, as one product [A_1 .. A_{n-1}]
    [X_{n-1}; ..; X_1] of float64 buffers that hold A_j at column block j and X_j at row block
    order - j, so that both factors are slices. Exact: X is split into 12-bit halves, so every
    partial sum stays below 2^53."""

    def __init__(self, batch: int, size: int, order: int) -> None:
        self.k, self.order = size, order
        self.left = np.zeros((batch, size, (order + 1) * size))
        self.high = np.zeros((batch, (order + 1) * size, size))
        self.low = np.zeros((batch, (order + 1) * size, size))

    def push(self, j: int, A: np.ndarray, X: np.ndarray) -> None:
        """Store the final A_j and X_j."""
        k, r = self.k, (self.order - j) * self.k
        self.left[:, :, j * k:(j + 1) * k] = A
        self.high[:, r:r + k] = X >> 12
        self.low[:, r:r + k] = X & 4095

    def __call__(self, n: int, P: np.ndarray) -> np.ndarray:
        k = self.k
        if n < 2:
            return np.zeros((self.left.shape[0], k, k), dtype=np.int64)
        left = self.left[:, :, k:n * k]
        rows = slice((self.order - n + 1) * k, self.order * k)
        high = (left @ self.high[:, rows]).astype(np.int64) % P
        low = (left @ self.low[:, rows]).astype(np.int64) % P
        return (high * 4096 + low) % P


@dataclass(frozen=True)
class _Sector:
    """One sector with its coefficients as polynomials: constant and w entries, the linear terms
    (entry a*size + b, unknown index, coefficient) and the rows that carry w."""

    size: int
    const: tuple[tuple[int, Polynomial], ...]
    wcoef: tuple[tuple[int, Polynomial], ...]
    lin: tuple[tuple[int, int, Polynomial], ...]
    scaled: tuple[int, ...]


@dataclass(frozen=True)
class ModularSystem:
    """A Dyson system whose coefficients are polynomials over Q in ``symbols`` (docstring)."""

    symbols: tuple[sp.Symbol, ...]
    sectors: tuple[_Sector, ...]
    readout: tuple[tuple[int, int, int, int, Polynomial], ...]  # (unknown, sector, a, b, coefficient)
    unknowns: int
    output: int

    @classmethod
    def build(cls, system: DysonSystem, rewrite: Mapping[sp.Expr, sp.Expr], symbols: Sequence[sp.Symbol]) -> ModularSystem:
        """From ``system`` with ``rewrite`` applied to every coefficient (which must then be a
        polynomial over Q in ``symbols``)."""
        symbols = tuple(symbols)
        index = {g: i for i, g in enumerate(system.unknowns)}

        def poly(e: sp.Expr) -> Polynomial:
            return _polynomial(sp.sympify(e).xreplace(dict(rewrite)), symbols)

        sectors = []
        for sec in system.sectors:
            k = sec.size
            sectors.append(_Sector(
                size=k,
                const=tuple((a * k + b, poly(v)) for (a, b), v in sec.const.items()),
                wcoef=tuple((a * k + b, poly(v)) for (a, b), v in sec.wcoef.items()),
                lin=tuple((a * k + b, index[g], poly(c)) for (a, b), t in sec.lin.items() for g, c in t.items()),
                scaled=tuple(sorted({a for (a, _), v in sec.wcoef.items() if v != 0})),
            ))
        readout = tuple((index[g], s, a, b, poly(c)) for g, reads in system.readout.items() for s, a, b, c in reads)
        return cls(symbols, tuple(sectors), readout, len(system.unknowns), index[system.output])

    def _polynomials(self) -> list[Polynomial]:
        """Every coefficient polynomial."""
        polys = [pl for sec in self.sectors for part in (sec.const, sec.wcoef) for _, pl in part]
        return polys + [pl for sec in self.sectors for *_, pl in sec.lin] + [pl for *_, pl in self.readout]

    def _map(self, f: Callable[[Polynomial], Polynomial]) -> ModularSystem:
        """The same system with ``f`` applied to every coefficient polynomial."""
        sectors = tuple(_Sector(sec.size, tuple((e, f(pl)) for e, pl in sec.const), tuple((e, f(pl)) for e, pl in sec.wcoef),
                                tuple((e, j, f(pl)) for e, j, pl in sec.lin), sec.scaled) for sec in self.sectors)
        readout = tuple((j, s, a, b, f(pl)) for j, s, a, b, pl in self.readout)
        return ModularSystem(self.symbols, sectors, readout, self.unknowns, self.output)

    def deflated(self) -> tuple[ModularSystem, tuple[int, ...]]:
        """The system in T_l = t_l^(g_l), g_l the gcd of the exponents of symbol l (1 where it is
        absent), and the g_l: e.g. T = sigma^2 where only even powers of sigma occur."""
        polys = self._polynomials()
        gcds = [math.gcd(*[m[l] for pl in polys for m, _ in pl]) or 1 for l in range(len(self.symbols))]
        return self._map(lambda pl: tuple((tuple(e // g for e, g in zip(m, gcds)), c) for m, c in pl)), tuple(gcds)

    def series(self, primes: np.ndarray, points: np.ndarray, order: int) -> np.ndarray:
        """m_0 .. m_order of m(w) = sum_k m_k w^-k modulo ``primes[b]`` at the parameter values
        ``points[b]`` (integers, one row per symbol), shape (batch, order + 1)."""
        if order > MAX_ORDER:
            raise ValueError(f"order: at most {MAX_ORDER} terms")
        primes = np.asarray(primes, dtype=np.int64)
        B = len(primes)
        points = np.asarray(points, dtype=np.int64).reshape(B, len(self.symbols))
        degree = max([e for pl in self._polynomials() for m, _ in pl for e in m] + [0])
        powers = []
        for l in range(len(self.symbols)):
            table = np.ones((B, degree + 1), dtype=np.int64)
            for e in range(1, degree + 1):
                table[:, e] = table[:, e - 1] * (points[:, l] % primes) % primes
            powers.append(table)
        batches = [_SectorBatch.of(sec, s, self.readout, self.unknowns, primes, powers, order)
                   for s, sec in enumerate(self.sectors)]
        G = np.zeros((B, order + 1, self.unknowns), dtype=np.int64)
        for n in range(order + 1):
            fixed = [batch.convolution(n) for batch in batches]
            # Gauss–Seidel sweeps: each sector's read-outs enter G_n at once; a sector is
            # recomputed only when the unknowns its A_n reads have changed
            seen: list[np.ndarray | None] = [None] * len(batches)
            parts = np.zeros((len(batches), B, self.unknowns), dtype=np.int64)
            for _ in range(4 * self.unknowns + 8):
                changed = False
                for s, batch in enumerate(batches):
                    key = G[:, n][:, batch.inputs]
                    if seen[s] is not None and np.array_equal(key, seen[s]):
                        continue
                    seen[s] = key
                    part = batch.solve(G, n, fixed[s])
                    if not np.array_equal(part, parts[s]):
                        parts[s] = part
                        G[:, n] = parts.sum(axis=0) % primes[:, None]
                        changed = True
                if not changed:
                    break
            else:
                raise ArithmeticError("modular series: the truncated Dyson map has no fixed point")
            for batch in batches:
                batch.push(n)
        return G[:, :, self.output]


@dataclass
class _SectorBatch:
    """One sector's residues over a batch (module docstring): C and the w coefficients, the linear terms
    as a one-hot map onto the flattened matrix, the read-outs as a one-hot map onto the unknowns, the
    unknowns A_n reads at order n (rows without w), and A_n, X_n per order."""

    sector: _Sector
    primes: np.ndarray
    C: np.ndarray
    Wc: np.ndarray
    lin_coeff: np.ndarray
    lin_unknown: np.ndarray
    lin_scaled: np.ndarray
    lin_onehot: np.ndarray
    read_rows: np.ndarray
    read_cols: np.ndarray
    read_scaled: np.ndarray
    read_coeff: np.ndarray
    read_onehot: np.ndarray
    inputs: np.ndarray
    A: np.ndarray
    X: np.ndarray
    conv: _Convolution

    @classmethod
    def of(cls, sec: _Sector, s: int, readout: Sequence[tuple[int, int, int, int, Polynomial]], unknowns: int,
           primes: np.ndarray, powers: list[np.ndarray], order: int) -> _SectorBatch:
        B, k = len(primes), sec.size

        def table(entries: Sequence[tuple[int, Polynomial]]) -> np.ndarray:
            out = np.zeros((B, k * k), dtype=np.int64)
            for e, pl in entries:
                out[:, e] = _evaluate(pl, primes, powers)
            return out.reshape(B, k, k)

        def onehot(columns: Sequence[int], width: int) -> np.ndarray:
            out = np.zeros((len(columns), width), dtype=np.int64)
            out[np.arange(len(columns)), list(columns)] = 1
            return out

        def residues(polys: Sequence[Polynomial]) -> np.ndarray:
            return np.stack([_evaluate(pl, primes, powers) for pl in polys], axis=1) if polys else np.zeros((B, 0), np.int64)

        reads = [(j, a, b, pl) for j, s2, a, b, pl in readout if s2 == s]
        return cls(
            sector=sec, primes=primes, C=table(sec.const), Wc=table(sec.wcoef),
            lin_coeff=residues([pl for *_, pl in sec.lin]),
            lin_unknown=np.array([j for _, j, _ in sec.lin], dtype=np.int64),
            lin_scaled=np.array([e // k in sec.scaled for e, _, _ in sec.lin], dtype=bool),
            lin_onehot=onehot([e for e, _, _ in sec.lin], k * k),
            read_rows=np.array([a for _, a, _, _ in reads], dtype=np.int64),
            read_cols=np.array([b for _, _, b, _ in reads], dtype=np.int64),
            read_scaled=np.array([b in sec.scaled for _, _, b, _ in reads], dtype=bool),
            read_coeff=residues([pl for *_, pl in reads]),
            read_onehot=onehot([j for j, *_ in reads], unknowns),
            inputs=np.array(sorted({j for e, j, _ in sec.lin if e // k not in sec.scaled}), dtype=np.int64),
            A=np.zeros((B, order + 1, k, k), np.int64), X=np.zeros((B, order + 1, k, k), np.int64),
            conv=_Convolution(B, k, order),
        )

    def convolution(self, n: int) -> np.ndarray:
        """F_n (from the final A_j, X_j of the orders below n)."""
        return self.conv(n, self.primes[:, None, None])

    def coefficient(self, G: np.ndarray, n: int) -> np.ndarray:
        """A_n: rows without w read g at order n, rows with w (multiplied by u) at order n - 1."""
        P, scaled = self.primes[:, None, None], list(self.sector.scaled)
        g_now = G[:, n][:, self.lin_unknown]
        g_before = G[:, n - 1][:, self.lin_unknown] if n else np.zeros_like(g_now)
        values = self.lin_coeff * np.where(self.lin_scaled, g_before, g_now) % self.primes[:, None]
        A = (values @ self.lin_onehot).reshape(self.C.shape)
        if n == 0:
            A = A + self.C
            A[:, scaled] = self.Wc[:, scaled]
        elif n == 1:
            A[:, scaled] += self.C[:, scaled]
        return A % P

    def solve(self, G: np.ndarray, n: int, fixed: np.ndarray) -> np.ndarray:
        """A_n and X_n at the current G (X_0 = A_0^{-1}, X_n = -X_0 (F_n + A_n X_0)), and what the sector's
        read-outs give the unknowns at order n (scaled columns read X_{n-1}: M^{-1} = M'^{-1} D)."""
        P = self.primes[:, None, None]
        self.A[:, n] = self.coefficient(G, n)
        if n == 0:
            self.X[:, 0] = np.stack([_inverse(a, int(p)) for a, p in zip(self.A[:, 0], self.primes)])
        else:
            self.X[:, n] = -(self.X[:, 0] @ ((fixed + self.A[:, n] @ self.X[:, 0] % P) % P)) % P
        now = self.X[:, n][:, self.read_rows, self.read_cols]
        before = self.X[:, n - 1][:, self.read_rows, self.read_cols] if n else np.zeros_like(now)
        values = self.read_coeff * np.where(self.read_scaled, before, now) % self.primes[:, None]
        return values @ self.read_onehot % self.primes[:, None]

    def push(self, n: int) -> None:
        """Order n is final: keep A_n and X_n for the convolutions of the orders above."""
        self.conv.push(n, self.A[:, n], self.X[:, n])
