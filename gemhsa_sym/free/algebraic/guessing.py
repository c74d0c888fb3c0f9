"""P(m, w) guessed from the series of m(w) modulo primes, then verified (docs/solving.md §3.12).

Where resultant elimination does not finish, the minimal polynomial is found by
linear algebra on the series (algebraic guessing, Hermite–Padé). In z = w m(w)
and u = 1/w, the series z(u) = 1 + mu_1 u + mu_2 u^2 + ... satisfies Q(z(u), u) = 0
with Q(z, u) = w^{K} P(z / w, w) of degree a in z and K in u; the coefficients
q_ik of Q are a vector in the kernel of the matrix whose column (i, k) holds the
first N coefficients of z^i u^k. Its degrees are found at one random point modulo
one prime (the kernel is nonzero exactly when a >= a_0 and K >= K_0, for the
minimal Q has those degrees and every other Q is its multiple), its support
(the nonzero q_ik) from the kernel vector there.

The parameters enter as follows. Every symbol t of the coefficients enters as a
power t^g (g the gcd of its exponents, e.g. mu_1^2 and sigma^2) and is replaced by
T = t^g. Normalised so that one q_ik is 1, the kernel vector's entries are
rational functions of one parameter T with a common denominator, found by
rational reconstruction from their values at E points (half extended Euclid);
the numerators are interpolated and their degrees checked against E. Two
parameters T_1, T_2 are handled when every moment mu_k is homogeneous of degree
k in them (checked modulo a prime at random points): then z(u; T) = z(T_1 u; 1,
T_2/T_1), and Q is found at T_1 = 1 and homogenised. The coefficients over Q come
from the residues modulo several primes by the Chinese remainder theorem and
rational number reconstruction, stopping when one more prime changes nothing.

This is a guess, so it is verified: Q(z(u), u) vanishes to twice the order that
was used, at fresh random points and a fresh prime; and the caller checks that P
is irreducible and vanishes on the 40-digit physical solution (as for
elimination).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction

import flint
import numpy as np
import sympy as sp

from gemhsa_sym.free.algebraic.modular_series import PRIME_BOUND, ModularSystem, primes_below
from gemhsa_sym.free.expressions.system import DysonSystem

__all__ = ["GuessError", "Shape", "guess_polynomial", "guessable", "predicted_shape"]

#: Rows beyond the unknowns in every kernel computation, and points beyond the degrees.
MARGIN = 24
POINT_MARGIN = 4
#: Largest degree a in z tried, points per prime tried, primes tried.
MAX_DEGREE = 96
MAX_POINTS = 512
MAX_PRIMES = 60
#: The seed of the random points (fixed: the same system gives the same guess).
SEED = 20261202


class GuessError(ArithmeticError):
    """No polynomial was found within the bounds (the reason says which)."""


def _powers(z: np.ndarray, a: int, p: int) -> np.ndarray:
    """z^0 .. z^a truncated to len(z) terms, mod p (exact int64 convolutions: len(z) < 2^17)."""
    N = len(z)
    out = np.zeros((a + 1, N), dtype=np.int64)
    out[0, 0] = 1
    for i in range(1, a + 1):
        out[i] = np.convolve(out[i - 1], z)[:N] % p
    return out


def _kernel(z: np.ndarray, columns: Sequence[tuple[int, int]], p: int, rows: int) -> list[list[int]]:
    """A basis of the kernel of the matrix whose column (i, k) holds the coefficients of u^0 ..
    u^(rows - 1) of z^i u^k, mod p."""
    a = max(i for i, _ in columns)
    Z = _powers(z[:rows], a, p)
    M = np.zeros((rows, len(columns)), dtype=np.int64)
    for c, (i, k) in enumerate(columns):
        M[k:, c] = Z[i, :rows - k]
    mat = flint.nmod_mat(rows, len(columns), M.ravel().tolist(), p)
    X, nullity = mat.nullspace()
    return [[int(X[r, c]) for r in range(len(columns))] for c in range(nullity)]


def _columns(a: int, K: int) -> list[tuple[int, int]]:
    return [(i, k) for i in range(a + 1) for k in range(K + 1)]


def _rational(r: int, m: int) -> Fraction | None:
    """The fraction x/y with |x|, y <= sqrt(m/2) and x = r y mod m (Wang), or None."""
    bound = math.isqrt(m // 2)
    r0, r1, s0, s1 = m, r % m, 0, 1
    while r1 > bound:
        q = r0 // r1
        r0, r1, s0, s1 = r1, r0 - q * r1, s1, s0 - q * s1
    if s1 == 0 or abs(s1) > bound or math.gcd(r1, abs(s1)) != 1:
        return None
    return Fraction(r1, s1)


@dataclass(frozen=True)
class Shape:
    """Degrees a in z and K in u of Q, and its support (i, k) with q_{support[0]} = 1: the same at every generic point
    of the parameters (of a homogeneous pair, up to the scaling of u), so one found by :func:`predicted_shape` serves
    :func:`guess_polynomial` of the same symbols."""

    a: int
    K: int
    support: tuple[tuple[int, int], ...]


def _vandermonde_inverse(ts: Sequence[int], p: int) -> flint.nmod_mat:
    E = len(ts)
    return flint.nmod_mat(E, E, [pow(int(t), j, p) for t in ts for j in range(E)], p).inv()


def _univariate(values: np.ndarray, ts: Sequence[int], p: int, rng: np.random.Generator) -> tuple[list[int], list[list[int]]] | None:
    """From normalised kernel vectors ``values`` (E points x support) at T = ``ts``: the monic common
    denominator D(T) and the numerators c_s(T) = D(T) values_s(T), as coefficient lists (low
    first), or None when E points do not determine them with POINT_MARGIN to spare."""
    E = len(ts)
    Vinv = _vandermonde_inverse(ts, p)
    top = E - POINT_MARGIN
    # first the common case of a constant denominator: plain interpolation
    coeffs = Vinv * flint.nmod_mat(E, values.shape[1], values.ravel().tolist(), p)
    out = [[int(coeffs[j, s]) for j in range(E)] for s in range(values.shape[1])]
    if not any(any(c[top:]) for c in out):
        return [1], [c[:top] for c in out]
    combo = values @ rng.integers(1, p, size=values.shape[1]) % p
    f = Vinv * flint.nmod_mat(E, 1, [int(v) for v in combo], p)
    fpoly = flint.nmod_poly([int(f[j, 0]) for j in range(E)], p)
    modulus = flint.nmod_poly([1], p)
    for t in ts:
        modulus *= flint.nmod_poly([-int(t) % p, 1], p)
    r0, r1, s0, s1 = modulus, fpoly, flint.nmod_poly([0], p), flint.nmod_poly([1], p)
    while r1.degree() >= E // 2:
        q = r0 // r1
        r0, r1, s0, s1 = r1, r0 - q * r1, s1, s0 - q * s1
    if s1.degree() + max(r1.degree(), 0) >= E - POINT_MARGIN:
        return None
    den = s1 * pow(int(s1.coeffs()[-1]), -1, p)
    dvals = np.array([int(den(t)) for t in ts], dtype=np.int64)
    scaled = values * dvals[:, None] % p
    coeffs = Vinv * flint.nmod_mat(E, values.shape[1], scaled.ravel().tolist(), p)
    out = [[int(coeffs[j, s]) for j in range(E)] for s in range(values.shape[1])]
    if any(any(c[top:]) for c in out):
        return None
    return [int(c) for c in den.coeffs()], [c[:top] for c in out]


def _homogeneous(ms: ModularSystem, p: int, rng: np.random.Generator) -> bool:
    """Whether z_k(c T) = c^k z_k(T) mod p at a random point T and factor c (every moment mu_k
    homogeneous of degree k in the two parameters)."""
    T = rng.integers(2, p - 1, size=2, dtype=np.int64)
    c = int(rng.integers(2, p - 1))
    z = ms.series(np.array([p, p]), np.stack([T, T * c % p]), 17)[:, 1:]
    return all(int(z[1, k]) == int(z[0, k]) * pow(c, k, p) % p for k in range(z.shape[1]))


class _Guesser:
    """The stages of :func:`guess_polynomial` for one modular system in at most one free parameter x
    (T = (x) for one symbol, (1, x) for two homogeneous ones, () for none)."""

    def __init__(self, ms: ModularSystem, rng: np.random.Generator, check_time: Callable[[], None],
                 row: np.ndarray | None = None) -> None:
        self.ms, self.rng, self.check_time, self.row = ms, rng, check_time, row
        self.r = len(ms.symbols)
        self.cache: dict[int, tuple[np.ndarray, np.ndarray]] = {}  # points and kernel vectors per prime

    def at(self, xs: np.ndarray) -> np.ndarray:
        """Parameter rows T for values x of the free parameter (every row ``row`` where one is fixed)."""
        if self.row is not None:
            return np.tile(self.row, (len(xs), 1))
        if self.r == 0:
            return np.zeros((len(xs), 0), dtype=np.int64)
        if self.r == 1:
            return xs[:, None]
        return np.stack([np.ones_like(xs), xs], axis=1)

    def z(self, p: int, xs: np.ndarray, order: int) -> np.ndarray:
        """z_0 .. z_(order - 1) of z(u) = w m(w) at the points x, mod p."""
        self.check_time()
        return self.ms.series(np.full(len(xs), p), self.at(xs), order)[:, 1:]

    def draw(self, count: int, p: int) -> np.ndarray:
        return self.rng.integers(2, p - 1, size=count, dtype=np.int64)

    def shape(self, p: int, max_degree: int = MAX_DEGREE) -> Shape:
        """Degrees and support of Q at one random point mod p (module docstring), its degree in z at most ``max_degree``."""
        x = self.draw(1, p)
        series: list[np.ndarray] = []
        kernels: dict[tuple[int, int], list[list[int]]] = {}

        def kernel(a: int, K: int) -> list[list[int]]:
            if a < 0 or K < 0:
                return []
            if (a, K) not in kernels:
                rows = (a + 1) * (K + 1) + MARGIN
                if not series or len(series[0]) < rows:
                    series[:] = [self.z(p, x, max(rows, 2 * len(series[0]) if series else 256) + 1)[0]]
                self.check_time()
                kernels[a, K] = _kernel(series[0], _columns(a, K), p, rows)
            return kernels[a, K]

        def nullity(a: int, K: int) -> int:
            return len(kernel(a, K))

        a = 8
        while not nullity(a, max(2, a // 3)):
            if a >= max_degree:
                raise GuessError(f"series guess: no polynomial of degree at most {max_degree} in m")
            a = min(2 * a, max_degree)
        # the kernel at (a, K) is {R Q_0 : deg_z R <= a - a_0, deg_u R <= K - K_0}, of dimension
        # (a - a_0 + 1)(K - K_0 + 1): two nullities give both least degrees
        K = max(2, a // 3)
        full, fewer = nullity(a, K), nullity(a - 1, K)
        K = K + 1 - (full - fewer)
        a = a + 1 - full // max(full - fewer, 1)
        found = kernel(a, K)
        if len(found) != 1 or nullity(a - 1, K) or nullity(a, K - 1):
            raise GuessError(f"series guess: {len(found)} polynomials of the least degrees ({a}, {K})")
        columns = _columns(a, K)
        support = tuple(columns[c] for c, v in enumerate(found[0]) if v)
        return Shape(a, K, support)

    def normalised(self, shape: Shape, p: int, xs: np.ndarray) -> np.ndarray:
        """The kernel vector on the support with q_{support[0]} = 1, one row per point x."""
        rows = len(shape.support) + MARGIN
        z = self.z(p, xs, rows)
        out = np.zeros((len(xs), len(shape.support)), dtype=np.int64)
        for e in range(len(xs)):
            self.check_time()
            found = _kernel(z[e], shape.support, p, rows)
            if len(found) != 1 or not found[0][0]:
                raise GuessError("series guess: the support changed between points")
            inv = pow(found[0][0], -1, p)
            out[e] = [v * inv % p for v in found[0]]
        return out

    def residues(self, shape: Shape, p: int, points: int) -> tuple[int, list[int]] | None:
        """Mod p: the degree of the common denominator and the flat list of its coefficients and the
        numerators' (univariate reconstruction from ``points`` points), or None when too few."""
        if self.r == 0:
            values = self.normalised(shape, p, self.draw(1, p))
            return 0, [int(v) for v in values[0]]
        xs, values = self.cache.get(p, (np.zeros(0, np.int64), np.zeros((0, len(shape.support)), np.int64)))
        more = self.draw(points - len(xs), p)
        xs, values = np.concatenate([xs, more]), np.concatenate([values, self.normalised(shape, p, more)])
        self.cache[p] = (xs, values)
        if len(set(xs.tolist())) < points:
            return None
        found = _univariate(values, xs.tolist(), p, self.rng)
        if found is None:
            return None
        den, nums = found
        return len(den) - 1, den + [c for num in nums for c in num]

    def verify(self, shape: Shape, coefficients: list[list[Fraction]], p: int) -> bool:
        """Q(z(u), u) = 0 to twice the order used, at two fresh points mod p."""
        xs = self.draw(2, p)
        rows = 2 * (shape.a + 1) * (shape.K + 1) + MARGIN
        z = self.z(p, xs, rows)
        for e in range(2):
            Z = _powers(z[e], shape.a, p)
            total = np.zeros(rows, dtype=np.int64)
            for (i, k), poly in zip(shape.support, coefficients):
                c = sum(int(q.numerator % p) * pow(q.denominator, -1, p) * pow(int(xs[e]), j, p) for j, q in enumerate(poly)) % p
                total[k:] = (total[k:] + c * Z[i, :rows - k]) % p
            if total.any():
                return False
        return True


def _refusal(ms: ModularSystem, p: int, rng: np.random.Generator) -> str | None:
    """Why :func:`guess_polynomial` refuses the parameters of ``ms`` (more than two, or two without a scaling symmetry,
    checked modulo ``p``), or None where it takes them."""
    r = len(ms.symbols)
    if r > 2:
        return f"series guess: {r} parameters (at most one, or two with a scaling symmetry)"
    if r == 2 and not _homogeneous(ms, p, rng):
        return "series guess: two parameters without a scaling symmetry"
    return None


def guessable(system: DysonSystem, rewrite: Mapping[sp.Expr, sp.Expr], symbols: Sequence[sp.Symbol]) -> bool:
    """Whether :func:`guess_polynomial` takes these symbols (:func:`_refusal` with its prime and random state)."""
    ms, _ = ModularSystem.build(system, rewrite, tuple(symbols)).deflated()
    rng = np.random.default_rng(np.random.SeedSequence(SEED))
    return _refusal(ms, int(primes_below(PRIME_BOUND, MAX_PRIMES + 1)[-1]), rng) is None


def predicted_shape(system: DysonSystem, rewrite: Mapping[sp.Expr, sp.Expr], symbols: Sequence[sp.Symbol],
                    max_degree: int = MAX_DEGREE) -> Shape | None:
    """The shape of Q (its least degrees (a, K) and support, module docstring) at one random point of every parameter
    modulo the prime the guess starts with: a is P's degree in m for generic parameters, from the series alone (0.1 to
    3 s for the presets' degrees 8 to 56); None where the series shows no polynomial of degree at most ``max_degree``."""
    ms, _ = ModularSystem.build(system, rewrite, tuple(symbols)).deflated()
    rng = np.random.default_rng(np.random.SeedSequence(SEED))
    p = int(primes_below(PRIME_BOUND, 1)[0])
    try:
        return _Guesser(ms, rng, lambda: None, rng.integers(2, p - 1, size=len(ms.symbols), dtype=np.int64)).shape(p, max_degree)
    except GuessError:
        return None


def _crt(residues: list[int], modulus: int, new: list[int], p: int) -> list[int]:
    """Combine residues mod ``modulus`` with residues mod p into residues mod modulus * p."""
    inv = pow(modulus, -1, p)
    return [r + modulus * ((n - r) * inv % p) for r, n in zip(residues, new)]


def guess_polynomial(system: DysonSystem, rewrite: Mapping[sp.Expr, sp.Expr], symbols: Sequence[sp.Symbol],
                     check_time: Callable[[], None] = lambda: None, shape: Shape | None = None) -> dict[tuple[int, ...], Fraction]:
    """P(m, w) = w^K Q(w m, 1/w) by guessing (module docstring): its terms as {(exponent of m,
    exponent of w, exponents of ``symbols``): coefficient}, with a common factor of w removed; ``shape``, Q's shape
    found before for the same symbols (:func:`predicted_shape`), spares its search."""
    symbols = tuple(symbols)
    ms, gcds = ModularSystem.build(system, rewrite, symbols).deflated()
    rng = np.random.default_rng(np.random.SeedSequence(SEED))
    primes = [int(p) for p in primes_below(PRIME_BOUND, MAX_PRIMES + 1)]
    check_prime = primes.pop()
    refused = _refusal(ms, check_prime, rng)
    if refused is not None:
        raise GuessError(refused)
    guesser = _Guesser(ms, rng, check_time)
    shape = shape or guesser.shape(primes[0])
    points = 16
    modulus, combined, last, degree = 1, [], None, None
    for p in primes:
        found = guesser.residues(shape, p, points)
        while found is None and degree is None:  # the first prime fixes the number of points
            if points >= MAX_POINTS:
                raise GuessError(f"series guess: the coefficients need more than {MAX_POINTS} points in the parameter")
            points *= 2
            found = guesser.residues(shape, p, points)
        if found is None or (degree is not None and found[0] != degree):
            continue  # an unlucky prime
        degree = found[0]
        combined = found[1] if modulus == 1 else _crt(combined, modulus, found[1], p)
        modulus *= p
        values = [_rational(r, modulus) for r in combined]
        if None not in values and values == last:
            break
        last = values
    else:
        raise GuessError(f"series guess: the coefficients did not settle within {MAX_PRIMES} primes")
    if guesser.r == 0:
        coefficients = [[v] for v in values]
    else:
        width = (len(values) - degree - 1) // len(shape.support)
        coefficients = [values[degree + 1 + s * width: degree + 1 + (s + 1) * width] for s in range(len(shape.support))]
    if not guesser.verify(shape, coefficients, check_prime):
        raise GuessError("series guess: the guessed polynomial fails at twice the order used")
    return _terms(shape, coefficients, guesser.r, gcds)


def _terms(shape: Shape, coefficients: list[list[Fraction]], r: int, gcds: Sequence[int]) -> dict[tuple[int, ...], Fraction]:
    """The terms of P(m, w) from Q's coefficients in x (homogenised in T = (1, x) for two
    parameters, T_l = t_l^g_l undone)."""
    D = max(len(c) for c in coefficients) - 1
    terms: dict[tuple[int, ...], Fraction] = {}
    for (i, k), poly in zip(shape.support, coefficients):
        for j, q in enumerate(poly):
            if not q:
                continue
            if r == 0:
                params: tuple[int, ...] = ()
            elif r == 1:
                params = (j * gcds[0],)
            else:
                params = ((D + k - j) * gcds[0], j * gcds[1])
            terms[(i, i + shape.K - k, *params)] = q
    low = [min(m[v] for m in terms) for v in range(len(next(iter(terms))))]
    return {tuple(e - lo for e, lo in zip(m, low)): q for m, q in terms.items()}
