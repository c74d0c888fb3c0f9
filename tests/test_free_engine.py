"""Tests of the free-probability engine (gemhsa_sym.free) against independent values.

Every expected value comes from outside the engine:

- Marchenko–Pastur closed forms derived here (density, edges, atom, Stieltjes transform);
- reference values for products of Gaussian matrices: exact moments counted from planar
  pairings and the algebraic equations P(m, w) = 0 of the Stieltjes transform, with the
  support edges as real roots of their discriminants;
- computations written in this file: moments as the series of the physical root of P at
  infinity, the physical root itself followed from infinity by a root tracker on
  ``numpy.roots``, and Groebner elimination of the printed Dyson equations.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from fractions import Fraction

import mpmath
import numpy as np
import pytest
import sympy as sp
from hypothesis import HealthCheck, Phase, assume, given, settings
from hypothesis import strategies as st
from scipy import integrate
from template_laws import TEMPLATES, VB, W2B, XA, ZA, a_, b_, c_, template_law

from gemhsa_sym.free.equations.scale import vanishes
from gemhsa_sym.free.expressions.matrices import MAX_MONOMIALS, Dim, Gaussian, ShapeMismatch, dims_of, monomials
from gemhsa_sym.free.expressions.pencil import linearise
from gemhsa_sym.free.expressions.system import W
from gemhsa_sym.free.numeric.descent import BranchError, predict
from gemhsa_sym.free.numeric.kernel.tables import elimination_order
from gemhsa_sym.free.numeric.polynomial_system import PolynomialSystem
from gemhsa_sym.laws.spectral import spectral_law
from gemhsa_sym.laws.support import power_law_limit

R = sp.Rational
M_, W_ = sp.symbols("m w")  # P(m, w): m = Stieltjes transform, w = spectral variable

# ---------------------------------------------------------------------------------------
# Independent helpers
# ---------------------------------------------------------------------------------------


def mp_edges(c: mpmath.mpf) -> tuple[mpmath.mpf, mpmath.mpf]:
    """Edges (1 -+ sqrt c)^2 of Marchenko–Pastur with ratio c."""
    return (1 - mpmath.sqrt(c)) ** 2, (1 + mpmath.sqrt(c)) ** 2


def mp_density(x, c, scale=1):
    """Density of the eigenvalues of X^T X, X n x d with N(0, scale/n) entries, c = d/n.

    MP with ratio c: sqrt((l+ - x)(x - l-)) / (2 pi c x) on [l-, l+] for scale 1; the
    law of scale * (X^T X) has density rho(x / scale) / scale. Works on numpy arrays
    and on mpmath numbers (at the caller's precision).
    """
    if isinstance(x, np.ndarray):
        y = x / scale
        lo, hi = (1 - np.sqrt(c)) ** 2, (1 + np.sqrt(c)) ** 2
        inside = (y > lo) & (y < hi)
        out = np.zeros_like(y)
        out[inside] = np.sqrt((hi - y[inside]) * (y[inside] - lo)) / (2 * np.pi * c * y[inside])
        return out / scale
    y = x / scale
    lo, hi = mp_edges(c)
    return mpmath.sqrt((hi - y) * (y - lo)) / (2 * mpmath.pi * c * y) / scale


def mp_polynomial(c: sp.Rational) -> sp.Expr:
    """c w m^2 - (w - 1 + c) m + 1 = 0 for m(w) = (1/d) tr (w - X^T X)^{-1}."""
    return c * W_ * M_**2 - (W_ - 1 + c) * M_ + 1


def series_moments(P: sp.Expr, k: int) -> list[sp.Rational]:
    """mu_1..mu_k of the root m = 1/w + mu_1/w^2 + ... of P(m, w) = 0 at infinity (exact)."""
    t = sp.Symbol("t")
    mus = sp.symbols(f"mu1:{k + 1}")
    ansatz = t * (1 + sum(mu * t ** (j + 1) for j, mu in enumerate(mus)))
    expr = sp.expand(P.subs({M_: ansatz, W_: 1 / t}) * t ** sp.Poly(P, W_).degree())
    known: dict[sp.Symbol, sp.Expr] = {}
    for coeff in sp.Poly(expr, t).all_coeffs()[::-1]:
        coeff = sp.expand(coeff.subs(known))
        if coeff == 0:
            continue
        free = [mu for mu in mus if mu in coeff.free_symbols]
        if not free:
            raise AssertionError(f"m ~ 1/w is not a root of {P}: leftover {coeff}")
        mu = free[0]
        (sol,) = sp.solve(coeff, mu)
        known[mu] = sol
        if len(known) == k:
            break
    return [known[mu] for mu in mus]


def _coefficients(P: sp.Expr) -> list[Callable[[complex], complex]]:
    """Coefficients of P in m (highest first) as functions of w."""
    return [sp.lambdify(W_, c, "numpy") for c in sp.Poly(P, M_).all_coeffs()]


def _roots(coeffs: list[Callable[[complex], complex]], w: complex) -> np.ndarray:
    return np.roots([complex(c(w)) for c in coeffs])


def physical_root(P: sp.Expr, w: complex, steps: int = 300) -> complex:
    """The root of P(., w) on the branch m ~ 1/w, followed down from Re w + i*top.

    Along the path the nearest root to the previous one is taken, and must be
    unambiguous (four times closer than the next); the result is polished by Newton
    on P itself. For real w the last step lands on the real axis from above.
    """
    coeffs = _coefficients(P)
    dP = sp.lambdify((M_, W_), sp.diff(P, M_), "numpy")
    Pf = sp.lambdify((M_, W_), P, "numpy")
    top = 50.0 * (1 + abs(w))
    start = complex(w.real, top)
    roots = _roots(coeffs, start)
    m = roots[np.argmin(np.abs(roots - 1 / start))]
    assert abs(start * m - 1) < 0.05, "no root behaves like 1/w at the start"
    ys = np.geomspace(top, max(w.imag, 1e-9 * (1 + abs(w))), steps)
    path = [complex(w.real, y) for y in ys[1:]] + ([complex(w)] if w.imag < ys[-1] else [])
    for z in path:
        roots = _roots(coeffs, z)
        dist = np.abs(roots - m)
        order = np.argsort(dist)
        assert dist[order[0]] < 0.25 * dist[order[1]], f"ambiguous root at w = {z}"
        m = roots[order[0]]
    for _ in range(4):
        m = m - Pf(m, complex(w)) / dP(m, complex(w))
    return complex(m)


def relative_residual(P: sp.Expr, m: complex, w: complex) -> float:
    """|P(m, w)| over the sum of the moduli of its terms."""
    terms = sp.Add.make_args(sp.expand(P))
    vals = [complex(t.subs({M_: m, W_: w})) for t in terms]
    return abs(sum(vals)) / sum(abs(v) for v in vals)


def contour_moments(law, k: int, radius: float, points: int = 96) -> np.ndarray:
    """mu_j = (1/2 pi i) oint w^j m(w) dw on |w| = radius (trapezoid, upper half + conjugate)."""
    theta = np.pi * (np.arange(points) + 0.5) / points
    w = radius * np.exp(1j * theta)
    m = law.stieltjes(w)
    return np.array([np.real(np.mean(w ** (j + 1) * m)) for j in range(1, k + 1)])


def eliminant(system) -> sp.Expr:
    """The polynomial in (m, w) of a lex Groebner basis of the printed Dyson equations."""
    others = [g for g in system.unknowns if g != system.output]
    basis = sp.groebner(system.polynomial_equations(), *others, system.output, W, order="lex")
    found = [e for e in basis.exprs if not (e.free_symbols & set(others))]
    assert len(found) == 1, f"elimination left {found}"
    return sp.expand(found[0].subs({system.output: M_, W: W_}))


def assert_divides(P: sp.Expr, Q: sp.Expr) -> None:
    """P divides Q in Q[m, w] (Q nonzero)."""
    assert Q != 0 and Q != 1, f"the eliminant {Q} is trivial"
    _, rem = sp.div(sp.Poly(Q, M_, W_), sp.Poly(P, M_, W_))
    assert rem.is_zero, f"{P} does not divide {sp.factor(Q)}"


# ---------------------------------------------------------------------------------------
# Models
# ---------------------------------------------------------------------------------------

n, d, D, m_, dv = Dim("n"), Dim("d"), Dim("D"), Dim("m"), Dim("d_v")
REF_RATIOS = {n: 1, d: R(1, 2), D: 2, m_: R(3, 4), dv: R(1, 4)}
X, XD = Gaussian("X", n, d), Gaussian("X", n, D)
Wm, W1, W2, Z = Gaussian("W", d, m_), Gaussian("W1", d, d), Gaussian("W2", d, dv), Gaussian("Z", n, n)


@dataclasses.dataclass(frozen=True)
class Case:
    """A reference case: Y, exact mu_1..mu_3, atom at zero, P(m, w) (None: not known)."""

    Y: object
    moments: tuple[sp.Rational, ...]
    atom: sp.Rational
    P: sp.Expr | None
    edges: tuple[str, ...] = ()  # support edges as decimal strings (closed forms)


REFERENCE = {
    "i": Case(X, (1, R(3, 2), R(11, 4)), 0, M_**2 * W_ - 2 * M_ * W_ + M_ + 2),
    "i'": Case(XD, (1, 3, 11), R(1, 2), 2 * M_**2 * W_ - M_ * W_ - M_ + 1),
    "ii": Case(
        X @ Wm, (R(1, 2), R(13, 16), R(223, 128)), R(1, 3), 9 * M_**3 * W_**2 - 16 * M_ * W_ - M_ + 16,
        ("0.0100230803907899635375731853755", "3.60610652972519113951216268802"),
    ),
    "iii": Case(
        X @ W1 @ X.T, (R(1, 4), R(3, 8), R(49, 64)), R(1, 2),
        4 * M_**4 * W_**3 - 4 * M_**3 * W_**2 + M_**2 * W_ - 4 * M_ * W_ + 4,
        ("0", "3.50528303088661986828768683751"),
    ),
    "iv": Case(
        X @ W1 @ X.T @ X @ W2, (R(3, 8), R(27, 64), R(5439, 8192)), 0,
        M_**7 * W_**6 + 12 * M_**6 * W_**5 + 58 * M_**5 * W_**4 + 144 * M_**4 * W_**3 + 193 * M_**3 * W_**2
        - 256 * M_**2 * W_**2 + 132 * M_**2 * W_ - 1024 * M_ * W_ + 36 * M_ + 1280,
        ("0.00220509647293308514333815172772", "2.75261758602571537171788941411"),
    ),
    "v": Case((X @ W1 @ X.T + Z / 2) @ X @ W2, (R(1, 2), R(21, 32), R(2473, 2048)), 0, None),
}
#: Radius of a circle enclosing each support (upper edges: 2.9, 5.9, 3.6, 3.5, 2.8, < 4).
RADIUS = {"i": 5.0, "i'": 9.0, "ii": 6.0, "iii": 6.0, "iv": 5.0, "v": 7.0}


def _ratios(Y) -> dict:
    return {k: REF_RATIOS[k] for k in dims_of(Y)}


@functools.cache
def reference_law(name: str):
    return spectral_law(REFERENCE[name].Y, _ratios(REFERENCE[name].Y))


@functools.cache
def mp_law(c: sp.Rational, scale: sp.Rational | int = 1):
    nn, dd = Dim("n"), Dim("d")
    return spectral_law(Gaussian("X", nn, dd, scale=scale), {nn: 1, dd: c})


p_, N1, N2 = Dim("p"), Dim("N1"), Dim("N2")
PRODUCT_EDGES = ("0.0559355743188757665634401794079", "3.74669022267706478396503313010")


@functools.cache
def product_law():
    """MP(1/2) ⊠ MP(1/4), read on the N1 x N1 side (an extra atom 1/2 at zero)."""
    X1 = Gaussian("X1", p_, N1, scale=R(1, 2))
    X2 = Gaussian("X2", p_, N2, scale=R(1, 4))
    return spectral_law(X2.T @ X1, {p_: 1, N1: 2, N2: 4})


def product_polynomial() -> sp.Expr:
    """The reference cubic -G^3 z^2/8 + G^2 z/2 + G (z - 3/8) + 1 = 0 for the p x p product.

    Its G is the Stieltjes transform with the opposite sign (G ~ -1/z: with G ~ +1/z
    the cubic has no root at infinity), so G = -m_p with m_p ~ 1/w; the N1 x N1 law
    has m = m_p/2 + (1/2)/w. Returns the numerator in (m, w).
    """
    z = W_
    G = -(2 * M_ - 1 / z)
    cubic = -(G**3) * z**2 / 8 + G**2 * z / 2 + G * (z - R(3, 8)) + 1
    num = sp.factor(sp.numer(sp.together(cubic)))
    return sp.expand(sp.Mul(*[f for f in sp.Mul.make_args(num) if f.has(M_)]))


MP_RATIOS = [R(1, 4), R(1, 2), R(1), R(2), R(4)]
COMPLEX_POINTS = [0.4 + 0.3j, 1.7 + 0.05j, -0.8 + 0.6j, 3.0 + 1.5j]


# ---------------------------------------------------------------------------------------
# 1. Shapes and pencils
# ---------------------------------------------------------------------------------------

s_sym = sp.Symbol("s", positive=True)
PENCIL_CASES = {
    "X": lambda: X,
    "X^T": lambda: X.T,
    "XW": lambda: X @ Wm,
    "(XW)^T": lambda: (X @ Wm).T,
    "X W1 X^T": lambda: X @ W1 @ X.T,
    "X W1 X^T X W2": lambda: X @ W1 @ X.T @ X @ W2,
    "(X W1 X^T + Z/2) X W2": lambda: (X @ W1 @ X.T + Z / 2) @ X @ W2,
    "3XW - XW/2": lambda: 3 * (X @ Wm) - (X @ Wm) / 2,
    "Z + Z^T": lambda: Z + Z.T,
    "Z Z": lambda: Z @ Z,
    "(Z + 2I) X": lambda: (Z + 2 * sp.Identity(n)) @ X,
    "X^T X + I": lambda: X.T @ X + sp.Identity(d),
    "X W1 W1^T X^T": lambda: X @ W1 @ W1.T @ X.T,
    "(X W1 X^T X)^T": lambda: (X @ W1 @ X.T @ X).T,
    "s Z X + X W1": lambda: s_sym * Z @ X + X @ W1,
    "X^T (Z + Z^T) X": lambda: X.T @ (Z + Z.T) @ X,
}


@pytest.mark.parametrize("name", list(PENCIL_CASES))
def test_pencil_schur_complement_gives_back_the_polynomial(name):
    Y = PENCIL_CASES[name]()
    pencil = linearise(Y)
    pencil.check()
    assert (pencil.schur_complement() - Y).doit().expand() in (0, sp.ZeroMatrix(Y.rows, Y.cols))
    # every placement fits the dimension groups of the blocks it sits between
    for pl in pencil.placements:
        assert (pencil.blocks[pl.row].dim, pencil.blocks[pl.col].dim) == (pl.matrix.rows, pl.matrix.cols)
    for c in pencil.constants:
        assert pencil.blocks[c.row].dim == pencil.blocks[c.col].dim
    assert pencil.blocks[pencil.source].dim == Y.rows and pencil.blocks[pencil.sink].dim == Y.cols


def test_pencil_check_detects_a_wrong_pencil():
    pencil = linearise(X @ W1 @ X.T + Z / 2)
    first = pencil.placements[0]
    wrong = dataclasses.replace(pencil, placements=(dataclasses.replace(first, coeff=2 * first.coeff),) + pencil.placements[1:])
    with pytest.raises(AssertionError):
        wrong.check()


@pytest.mark.parametrize(
    ("build", "shapes"),
    [
        (lambda: Wm @ X, ("(d x m)", "(n x d)")),
        (lambda: X * X, ("(n x d)", "(n x d)")),
        (lambda: (X @ Wm) @ X, ("(n x m)", "(n x d)")),
        (lambda: X + X.T, ("(n x d)", "(d x n)")),
        (lambda: X @ W1 @ X.T + Wm, ("(n x n)", "(d x m)")),
        (lambda: Z - X, ("(n x n)", "(n x d)")),
    ],
)
def test_shape_mismatch_names_both_shapes(build, shapes):
    with pytest.raises(ShapeMismatch) as info:
        build()
    assert isinstance(info.value, ValueError)
    msg = str(info.value)
    for shape in shapes:
        assert shape in msg
    if shapes[0] == shapes[1]:
        assert msg.count(shapes[0]) >= 2


def test_invalid_inputs_are_refused():
    with pytest.raises(TypeError):
        Gaussian("A", 3, d)
    with pytest.raises(ValueError):
        Gaussian("A", n, d, scale=-1)
    with pytest.raises(TypeError):
        linearise(sp.MatrixSymbol("A", n, d))
    with pytest.raises(ValueError, match="d"):
        spectral_law(X, {n: 1})
    with pytest.raises(ValueError, match="d"):
        spectral_law(X, {n: 1, d: -1})


# ---------------------------------------------------------------------------------------
# 2. The printed equations eliminate to the known P(m, w)
# ---------------------------------------------------------------------------------------


def test_equations_marchenko_pastur_eliminate_to_the_quadratic():
    law = mp_law(R(1, 2))
    ratio = sp.cancel(eliminant(law.equations) / mp_polynomial(R(1, 2)))
    assert ratio != 0 and not ratio.free_symbols
    text, latex = str(law.equations), sp.latex(law.equations)
    for g in law.equations.unknowns:
        assert str(g) in text and sp.latex(g) in latex
    assert latex.count("{") == latex.count("}")


def test_equations_of_the_product_eliminate_to_the_reference_cubic():
    assert_divides(product_polynomial(), eliminant(product_law().equations))
    assert sp.Poly(product_polynomial(), M_).degree() == 3


@pytest.mark.parametrize("name", ["ii", "iii"])
def test_equations_eliminate_to_reference_polynomial(name):
    """The reduced equations as printed (``equations()``/``polynomial_equations()``) define the law."""
    assert_divides(REFERENCE[name].P, eliminant(reference_law(name).equations))


def test_matrix_plus_its_transpose_is_a_squared_semicircle():
    """Z + Z^T is a Wigner matrix with off-diagonal variance 2/N: its square has
    m(w) = G(sqrt w)/sqrt w, G the semicircle transform of variance 2."""
    linearise(Z + Z.T).check()
    law = spectral_law(Z + Z.T, {n: 1})

    def semicircle(z: complex) -> complex:
        g = (z - np.sqrt(z * z - 8 + 0j)) / 4
        return g if g.imag <= 0 else (z + np.sqrt(z * z - 8 + 0j)) / 4

    for w in COMPLEX_POINTS + [7.5 + 0.2j]:
        sw = np.sqrt(w)
        assert law.stieltjes(w) == pytest.approx(semicircle(sw) / sw, rel=1e-13)


# ---------------------------------------------------------------------------------------
# 3. Marchenko–Pastur
# ---------------------------------------------------------------------------------------


def _interior(c) -> np.ndarray:
    lo, hi = (1 - np.sqrt(float(c))) ** 2, (1 + np.sqrt(float(c))) ** 2
    return lo + (hi - lo) * np.linspace(0.01, 0.99, 41)


@pytest.mark.parametrize("c", MP_RATIOS, ids=str)
def test_marchenko_pastur_density_double(c):
    x = _interior(c)
    got = mp_law(c).density(x)
    want = mp_density(x, float(c))
    assert np.all(np.abs(got - want) <= 1e-13 * np.maximum(1, want))


@pytest.mark.parametrize("c", [R(1, 2), R(2)], ids=str)
def test_marchenko_pastur_density_on_a_dense_grid(c):
    """A dense grid, marched point to point (docs/solving.md §3.5), equals the closed form at
    every point: next to both edges, and in the gap above the atom for c = 2."""
    hi = (1 + np.sqrt(float(c))) ** 2
    x = np.linspace(0, 1.1 * hi, 1501)[1:]
    want = mp_density(x, float(c))
    assert np.all(np.abs(mp_law(c).density(x) - want) <= 1e-12 * np.maximum(1, want))


@pytest.mark.parametrize(("c", "scale"), [(R(1, 2), R(3)), (R(2), R(1, 4))], ids=str)
def test_marchenko_pastur_scale_multiplies_the_law(c, scale):
    law = mp_law(c, scale)
    x = float(scale) * _interior(c)
    want = mp_density(x, float(c), float(scale))
    assert np.all(np.abs(law.density(x) - want) <= 1e-13 * np.maximum(1, want))


@pytest.mark.parametrize("c", [R(1, 2), R(2), R(1)], ids=str)
def test_marchenko_pastur_density_at_50_digits(c):
    with mpmath.workdps(60):
        lo, hi = mp_edges(mpmath.mpf(c.p) / c.q)
        xs = [lo + (hi - lo) * mpmath.mpf(k) / 7 for k in (1, 3, 6)]
        want = [mp_density(x, mpmath.mpf(c.p) / c.q) for x in xs]
    got = mp_law(c).density(np.array(xs, dtype=object), dps=50)
    with mpmath.workdps(60):
        for g, v in zip(got, want):
            assert abs(g - v) < mpmath.mpf(10) ** -40


@pytest.mark.parametrize("c", MP_RATIOS, ids=str)
def test_marchenko_pastur_stieltjes_off_the_axis(c):
    P = mp_polynomial(c)
    got = mp_law(c).stieltjes(np.array(COMPLEX_POINTS))
    for w, m in zip(COMPLEX_POINTS, got):
        assert abs(m - physical_root(P, w)) <= 1e-12 * abs(m)
    # conjugation symmetry below the axis
    below = mp_law(c).stieltjes(np.conj(COMPLEX_POINTS))
    assert np.allclose(below, np.conj(got), rtol=1e-13, atol=0)
    # real axis outside the support: m is real, the density vanishes
    outside = np.array([-0.5, float(mp_edges(mpmath.mpf(c.p) / c.q)[1]) + 1.0])
    m_out = mp_law(c).stieltjes(outside.astype(complex))
    for x, m in zip(outside, m_out):
        assert abs(m - physical_root(P, complex(x))) <= 1e-12 * abs(m)
    assert np.all(mp_law(c).density(outside) <= 1e-14)


@pytest.mark.parametrize("c", MP_RATIOS, ids=str)
def test_marchenko_pastur_edges_to_25_digits(c):
    edges = mp_law(c).edges(30)
    with mpmath.workdps(40):
        lo, hi = mp_edges(mpmath.mpf(c.p) / c.q)
        assert [e.side for e in edges] == ["lower", "upper"]
        if c == 1:
            assert edges[0].hard and edges[0].location == 0
        else:
            assert not edges[0].hard
            assert abs(edges[0].location - lo) <= mpmath.mpf(10) ** -25 * lo
        assert abs(edges[1].location - hi) <= mpmath.mpf(10) ** -25 * hi
    np.testing.assert_allclose(np.array(mp_law(c).support()), [[float(lo), float(hi)]], rtol=1e-14, atol=1e-15)


@pytest.mark.parametrize("c", MP_RATIOS, ids=str)
def test_marchenko_pastur_atom(c):
    atoms = mp_law(c).atoms()
    if c <= 1:
        assert atoms == []
    else:
        (atom,) = atoms
        assert atom.location == 0
        assert atom.exact == 1 - 1 / c
        assert abs(atom.mass - float(1 - 1 / c)) <= 1e-12


@pytest.mark.parametrize("c", [R(1, 2), R(2), R(1, 4)], ids=str)
def test_marchenko_pastur_cdf_against_quadrature(c):
    law = mp_law(c)
    lo, hi = (1 - np.sqrt(float(c))) ** 2, (1 + np.sqrt(float(c))) ** 2
    atom = max(0.0, 1 - 1 / float(c))
    for x in lo + (hi - lo) * np.array([0.1, 0.37, 0.5, 0.81]):
        want = atom + integrate.quad(lambda t: mp_density(np.array([t]), float(c))[0], lo, x, epsabs=1e-13, epsrel=1e-13)[0]
        assert law.cdf(x) == pytest.approx(want, abs=1e-9)


def test_marchenko_pastur_hard_edge_cdf_closed_form():
    """Ratio 1: density sqrt(4 - x)/(2 pi sqrt x) diverges at 0; with x = 4 sin^2 phi the CDF is
    (2/pi)(phi + sin phi cos phi). Checked deep into the core at 0 (contour masses) and above it."""
    law = mp_law(R(1))
    x = np.array([1e-14, 1e-9, 1e-6, 1e-4, 3e-3, 0.05, 0.5, 2.0, 3.9])
    phi = np.arcsin(np.sqrt(x) / 2)
    assert law.cdf(x) == pytest.approx(2 / np.pi * (phi + np.sin(phi) * np.cos(phi)), abs=1e-11)
    assert law.mass() == pytest.approx(1, abs=1e-12)


# ---------------------------------------------------------------------------------------
# 4. Product MP(1/2) ⊠ MP(1/4)
# ---------------------------------------------------------------------------------------


def test_product_edges_to_25_digits():
    edges = product_law().edges(30)
    assert [(e.side, e.hard) for e in edges] == [("lower", False), ("upper", False)]
    with mpmath.workdps(40):
        for e, ref in zip(edges, PRODUCT_EDGES):
            assert abs(e.location - mpmath.mpf(ref)) <= mpmath.mpf(10) ** -25 * mpmath.mpf(ref)
    # printed with the digits they carry, whatever mpmath's global precision
    for e, ref in zip(edges, PRODUCT_EDGES):
        assert f"Edge(location={ref[:27]}" in repr(e)


def test_product_density_on_a_dense_grid_is_the_cubic_s_and_zero_off_the_support() -> None:
    """A marched 1000-point grid (docs/solving.md §3.5) against the root of the reference cubic with
    Im m < 0 at 40 digits: within 1e-15 of the largest density inside the support (beyond 0.01 of an
    edge, where the density's condition number grows like the inverse square root of the distance),
    and zero to rounding between the atom and the lower edge and above the upper one, where m is real."""
    grid = np.linspace(0.0, 4.0, 1001)[1:]
    rho = product_law().density(grid)
    low, high = (float(e) for e in PRODUCT_EDGES)
    outside = (grid < low) | (grid > high)
    assert np.max(rho[outside]) <= 1e-20
    coefficients = [sp.lambdify(W_, c, "mpmath") for c in sp.Poly(product_polynomial(), M_).all_coeffs()]
    with mpmath.workdps(40):
        for i in range(0, grid.size, 3):
            if min(abs(grid[i] - low), abs(grid[i] - high)) < 0.01:
                continue
            x = mpmath.mpf(float(grid[i]))
            roots = mpmath.polyroots([c(x) for c in coefficients], maxsteps=200, extraprec=100)
            want = max(mpmath.mpf(0), -min(mpmath.im(r) for r in roots)) / mpmath.pi
            assert abs(rho[i] - float(want)) <= 1e-15 * np.max(rho), grid[i]


def test_product_atom():
    (atom,) = product_law().atoms()
    assert atom.location == 0 and atom.exact == R(1, 2) and abs(atom.mass - 0.5) <= 1e-12


def test_density_at_the_atom_answers_the_continuous_part_and_the_other_points():
    """At 0, where m has a pole (the atom 1/2 of the product law), the density is that of the continuous part, 0 below
    its lower edge 0.0559; the other points are answered as on their own."""
    law = product_law()
    both = law.density(np.array([0.0, 1.0]))
    assert both[0] == 0.0 and both[1] == law.density(np.array([1.0]))[0]
    assert law.edges(dps=16)[0].location > 0.05


def test_product_stieltjes_solves_the_reference_cubic():
    P = product_polynomial()
    got = product_law().stieltjes(np.array(COMPLEX_POINTS))
    for w, m in zip(COMPLEX_POINTS, got):
        assert relative_residual(P, m, w) <= 1e-12
        assert abs(m - physical_root(P, w)) <= 1e-11 * abs(m)


def test_product_moments_from_the_cubic():
    want = [float(v) for v in series_moments(product_polynomial(), 3)]
    assert want == pytest.approx([0.5, 7 / 8, 63 / 32])  # mean 1, second moment 7/4 for p x p
    assert product_law().numeric_moments(3) == pytest.approx(want, abs=1e-9)


def test_product_density_matches_the_cubic_on_the_axis():
    P = product_polynomial()
    xs = [0.1, 0.6, 1.5, 3.0]
    got = product_law().density(np.array(xs))
    for x, rho in zip(xs, got):
        assert rho == pytest.approx(-physical_root(P, complex(x)).imag / np.pi, rel=1e-10)


@pytest.mark.parametrize("path", ["Dyson system", "root of P"])
def test_product_on_a_dense_grid_solves_the_cubic_on_the_physical_branch(path):
    """Every point of a dense marched grid solves the cubic; points next to the edges, in the gap
    above the atom and across the bulk are on the physical root followed from infinity.
    Both paths: the Dyson system, and the root of P on a fresh law after the elimination."""
    law = product_law()
    method = "polynomial" if path == "root of P" else "dyson"
    assert law.solver(method).method == method
    P = sp.expand(product_polynomial())
    x = np.linspace(0, 4, 2001)[1:]
    m = law.stieltjes(x.astype(complex), method=method)
    terms = [sp.lambdify((M_, W_), t, "numpy") for t in sp.Add.make_args(P)]
    vals = np.array([t(m, x) * np.ones_like(m) for t in terms])
    assert np.max(np.abs(vals.sum(axis=0)) / np.abs(vals).sum(axis=0)) <= 1e-12
    edges = [0.0559355743188757665634, 3.74669022267706478397]
    near = [int(np.argmin(np.abs(x - e))) + k for e in edges for k in (-2, -1, 0, 1, 2)]
    for i in sorted(set(near) | set(range(0, x.size, 100))):
        assert abs(m[i] - physical_root(P, complex(x[i]))) <= 1e-9 * (1 + abs(m[i])), x[i]


@pytest.mark.parametrize("c", [R(1, 10), R(1, 2), R(2)])
def test_root_of_p_marches_to_the_edges_on_the_physical_root(c):
    """The root of P marched along a real grid that comes within 1e-10 of both edges of
    Marchenko–Pastur, from either side, and (ratio 2) down to the atom at 0, and along 40 seeded
    random grids of 3 to 400 points (half of them crowded about the edges): every value is the
    closed form m(x) = (x - 1 + c -+ sqrt((x - l-)(x - l+))) / (2 c x) on its physical branch (at
    30 digits). Next to an edge the other real root of P meets m, and just inside it the
    conjugate root: a march that passed to either would fail here (without its checks, about one
    random grid in ten does)."""
    law = mp_law(c)
    law.algebraic()
    with mpmath.workdps(30):
        cc = mpmath.mpf(c.p) / c.q
        lo, hi = mp_edges(cc)

        def closed_form(x: float) -> complex:
            t = mpmath.mpf(x)
            if lo < t < hi:
                root = -1j * mpmath.sqrt((hi - t) * (t - lo))
            else:
                root = (-1 if t > hi else 1) * mpmath.sqrt((t - lo) * (t - hi))
            return complex((t - 1 + cc + root) / (2 * cc * t))

        edges = [float(e) for e in (lo, hi) if e > 0]
    near = np.concatenate([e + s * 10.0 ** -np.arange(2.0, 11.0) for e in edges for s in (-1, 1)])
    grids = [np.unique(np.concatenate([np.linspace(0, 1.2 * edges[-1], 1000)[1:], near]))]  # no point on an edge
    rng = np.random.default_rng(int(c.q))
    for _ in range(40):
        x = rng.uniform(1e-3, 1.3 * edges[-1], rng.integers(3, 400))
        crowd = np.concatenate([e + rng.normal(0, 1e-3, 20) for e in edges]) if rng.random() < 0.5 else np.zeros(0)
        grids.append(np.sort(np.concatenate([x, crowd])))
    for x in grids:
        m = law.stieltjes(x.astype(complex), method="polynomial")
        want = np.array([closed_form(v) for v in x])
        assert np.max(np.abs(m - want) / (1 + np.abs(want))) <= 1e-9, x.size


def test_root_of_p_does_not_depend_on_the_order_of_the_targets():
    """Targets in any order, repeated, and mixed with points off the axis give the values of
    the sorted real grid (the march runs along the sorted targets)."""
    law = product_law()
    law.algebraic()
    x = np.linspace(0, 4, 601)[1:]
    want = law.stieltjes(x.astype(complex), method="polynomial")
    rng = np.random.default_rng(11)
    order = rng.permutation(np.concatenate([np.arange(x.size), np.arange(0, x.size, 7)]))
    off = x[::50] * (1 + 0.2j)
    got = law.stieltjes(np.concatenate([x[order].astype(complex), off]), method="polynomial")
    assert np.max(np.abs(got[: order.size] - want[order]) / np.abs(want[order])) <= 1e-12
    assert np.max(np.abs(got[order.size:] - law.stieltjes(off)) / np.abs(got[order.size:])) <= 1e-12


def test_product_stieltjes_at_50_digits_solves_the_cubic():
    P = product_polynomial()
    w = mpmath.mpc("0.7", "0.25")
    m = product_law().stieltjes(w, dps=50)
    with mpmath.workdps(60):
        val = sp.lambdify((M_, W_), P, "mpmath")(m, w)
        scale = sum(abs(sp.lambdify((M_, W_), t, "mpmath")(m, w)) for t in sp.Add.make_args(P))
        assert abs(val) / scale < mpmath.mpf(10) ** -45
    assert abs(complex(m) - product_law().stieltjes(complex(w))) <= 1e-13


# ---------------------------------------------------------------------------------------
# 5. Reference table cases i–v
# ---------------------------------------------------------------------------------------


def test_reference_moments_follow_from_the_polynomials():
    """Consistency of the reference data: P's series at infinity gives the table moments."""
    for name, case in REFERENCE.items():
        if case.P is not None:
            assert series_moments(case.P, 3) == list(case.moments), name


@pytest.mark.parametrize("name", list(REFERENCE))
def test_reference_stieltjes_series_gives_exact_moments(name):
    """mu_k as contour integrals of m(w) on a circle enclosing the support (no edges needed)."""
    got = contour_moments(reference_law(name), 3, RADIUS[name])
    assert got == pytest.approx([float(v) for v in REFERENCE[name].moments], abs=1e-9)


@pytest.mark.parametrize("name", [k for k in REFERENCE if REFERENCE[k].P is not None])
def test_reference_stieltjes_solves_the_polynomial(name):
    P = REFERENCE[name].P
    got = reference_law(name).stieltjes(np.array(COMPLEX_POINTS))
    for w, m in zip(COMPLEX_POINTS, got):
        assert relative_residual(P, m, w) <= 1e-10
        assert abs(m - physical_root(P, w)) <= 1e-9 * abs(m)


@pytest.mark.parametrize("name", [k for k in REFERENCE if REFERENCE[k].P is not None and REFERENCE[k].edges])
def test_reference_density_matches_the_polynomial_on_the_axis(name):
    lo, hi = (float(v) for v in REFERENCE[name].edges)
    xs = lo + (hi - lo) * np.array([0.05, 0.3, 0.7])
    got = reference_law(name).density(xs)
    for x, rho in zip(xs, got):
        assert rho == pytest.approx(-physical_root(REFERENCE[name].P, complex(x)).imag / np.pi, rel=1e-9)


@pytest.mark.parametrize("name", list(REFERENCE))
def test_reference_atoms(name):
    atoms = reference_law(name).atoms()
    want = REFERENCE[name].atom
    if want == 0:
        assert atoms == []
    else:
        (atom,) = atoms
        assert atom.location == 0 and atom.exact == want and abs(atom.mass - float(want)) <= 1e-10


@pytest.mark.parametrize("name", list(REFERENCE))
def test_reference_moments(name):
    assert reference_law(name).numeric_moments(3) == pytest.approx([float(v) for v in REFERENCE[name].moments], abs=1e-9)


@pytest.mark.parametrize("name", [k for k in REFERENCE if REFERENCE[k].edges])
def test_reference_edges(name):
    edges = reference_law(name).edges(30)
    assert [e.side for e in edges] == ["lower", "upper"]
    with mpmath.workdps(40):
        for e, ref in zip(edges, REFERENCE[name].edges):
            ref = mpmath.mpf(ref)
            assert e.hard == (ref == 0)
            assert abs(e.location - ref) <= mpmath.mpf(10) ** -25 * max(ref, 1)


def test_reductions_are_proved_and_false_claims_are_refused():
    """Case iv: the reduced system (zeros proved by invariance under the Dyson map) gives the same
    m(w) as the unreduced one; the invariance check refuses the claim that m, or an unknown the
    reduction kept, vanishes."""
    import mpmath

    from gemhsa_sym.free.equations.reductions import INVARIANCE_DPS, invariant_under_dyson
    from gemhsa_sym.free.numeric.systems import MP, NumericSystem
    from gemhsa_sym.laws.spectral import SpectralLaw

    law = reference_law("iv")
    full, reduced = law.full_system, law.system
    assert len(reduced.unknowns) < len(full.unknowns)
    assert "proved by invariance" in reduced.notes[-1] and "1e-40" in reduced.notes[-1]
    unreduced = SpectralLaw(REFERENCE["iv"].Y, _ratios(REFERENCE["iv"].Y), reduce=False)
    w = np.array(COMPLEX_POINTS)
    assert law.stieltjes(w) == pytest.approx(unreduced.stieltjes(w), rel=1e-12)
    with mpmath.workdps(INVARIANCE_DPS):
        full_mp = NumericSystem.build(full, {}, MP)
    kept = next(u for u in reduced.unknowns if u != full.output)
    assert not invariant_under_dyson(full_mp, full.unknowns, {full.output}, law.scale)
    assert not invariant_under_dyson(full_mp, full.unknowns, {kept}, law.scale)


# ---------------------------------------------------------------------------------------
# 6. Mass, CDF, quantiles
# ---------------------------------------------------------------------------------------

LAWS: dict[str, Callable[[], object]] = {
    "MP(1/2)": lambda: mp_law(R(1, 2)),
    "MP(2)": lambda: mp_law(R(2)),
    "MP(1/4)": lambda: mp_law(R(1, 4)),
    "MP(1)": lambda: mp_law(R(1)),
    "MP(2) scaled 1/4": lambda: mp_law(R(2), R(1, 4)),
    "product": product_law,
    **{f"ref {k}": functools.partial(reference_law, k) for k in REFERENCE},
}


@pytest.mark.parametrize("name", list(LAWS))
def test_mass_is_one(name):
    assert LAWS[name]().mass() == pytest.approx(1, abs=1e-10)


@pytest.mark.parametrize("name", list(LAWS))
def test_cdf_and_quantile(name):
    law = LAWS[name]()
    top = float(law.edges(dps=16)[-1].location)
    atom = sum(a.mass for a in law.atoms())
    x = np.linspace(0, top, 201)
    F = law.cdf(x)
    assert np.all(np.diff(F) >= -1e-12)
    assert law.cdf(-1e-9) == pytest.approx(0, abs=1e-14) and law.cdf(-1.0) == pytest.approx(0, abs=1e-14)
    assert law.cdf(top * 1.001) == pytest.approx(1, abs=1e-10) and law.cdf(2 * top + 5) == pytest.approx(1, abs=1e-10)
    assert law.cdf(0.0) == pytest.approx(atom, abs=1e-10)
    q = atom + (1 - atom) * np.array([0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99])
    xq = law.quantile(q)
    assert np.all(np.diff(xq) > 0)
    assert law.cdf(xq) == pytest.approx(q, abs=1e-8)
    inner = x[(F > atom + 1e-3) & (F < 1 - 1e-3)][::20]
    assert law.quantile(law.cdf(inner)) == pytest.approx(inner, rel=1e-7)
    # levels up to the atom's (exact) mass fall on the atom at 0 exactly; level 0 is the lower end of the
    # support and level 1 its upper end
    assert law.quantile(1.0) == top
    if atom:
        exact = float(sum(a.exact for a in law.atoms()))
        assert np.all(law.quantile(np.array([0.0, exact / 2, exact])) == 0) and law.quantile(0.0) == 0
    else:
        assert law.quantile(0.0) == float(law.edges(dps=16)[0].location)
        assert law.quantile(np.array([0.0, 1e-300]))[0] == float(law.edges(dps=16)[0].location)


# ---------------------------------------------------------------------------------------
# 7. Symbolic coefficients
# ---------------------------------------------------------------------------------------


def test_symbolic_coefficient_with_a_value_equals_the_number():
    s = sp.Symbol("s", positive=True)
    ratios = _ratios(REFERENCE["v"].Y)
    with_symbol = spectral_law((X @ W1 @ X.T + s * Z) @ X @ W2, ratios, values={s: R(1, 2)})
    w = np.array(COMPLEX_POINTS)
    assert with_symbol.stieltjes(w) == pytest.approx(reference_law("v").stieltjes(w), rel=1e-13)
    assert s in with_symbol.equations.parameters


# ---------------------------------------------------------------------------------------
# 8. Properties on random ratios and small polynomials
# ---------------------------------------------------------------------------------------

LIGHT = ["X", "X W"]

ratio = st.fractions(min_value=Fraction(1, 4), max_value=Fraction(4), max_denominator=6).map(lambda f: R(f.numerator, f.denominator))
coefficient = st.sampled_from([R(1, 3), R(1, 2), R(1), R(2)])
PROPERTY = settings(
    max_examples=8, deadline=None, derandomize=True, database=None,
    phases=(Phase.explicit, Phase.generate), suppress_health_check=[HealthCheck.too_slow],
)


@PROPERTY
@given(
    name=st.sampled_from(list(TEMPLATES)), rb=ratio, rc=ratio, s=coefficient,
    u=st.floats(-0.5, 4.0), v=st.floats(0.02, 1.0),
)
def test_property_herglotz_precision_density(name, rb, rc, s, u, v):
    law = template_law(name, rb, rc, s)
    w = np.array([complex(u, v), complex(u, 5 * v), complex(2 * u + 1, v / 2)])
    m = law.stieltjes(w)
    assert np.all(m.imag < 0)  # Herglotz
    big = 1e4 * (1 + abs(u)) * 1j
    assert abs(big * law.stieltjes(big) - 1) < 1e-2
    m30 = law.stieltjes(complex(u, v), dps=30)
    assert abs(complex(m30) - m[0]) <= 1e-10 * abs(m[0])
    x = np.linspace(0.05, 2.0, 9) * (1 + abs(u))
    on_axis = law.stieltjes(x.astype(complex))
    assert np.all(on_axis.imag <= 1e-12 * (1 + np.abs(on_axis)))
    assert law.density(x) == pytest.approx(np.maximum(-on_axis.imag / np.pi, 0), abs=1e-12)


@settings(PROPERTY, max_examples=6)
@given(name=st.sampled_from(list(TEMPLATES)), rb=ratio, rc=ratio, s=coefficient)
def test_property_refined_grid_equals_single_points(name, rb, rc, s):
    """A dense grid, marched point to point, has, at every
    25th point and on both sides of every change between zero and positive density, the
    density of the same point solved alone (descent from the upper half plane)."""
    law = template_law(name, rb, rc, s)
    x = np.linspace(0, law.scale, 401)[1:]
    rho = law.density(x)
    change = np.flatnonzero(np.diff(rho > 1e-9))
    idx = sorted(set(range(0, x.size, 25)) | set(change) | set(change + 1))
    alone = np.array([law.density(x[i : i + 1])[0] for i in idx])
    assert np.abs(rho[idx] - alone) == pytest.approx(0, abs=1e-10 * max(1, np.max(alone)))


@settings(PROPERTY, max_examples=6)
@given(name=st.sampled_from(list(TEMPLATES)), rb=ratio, rc=ratio, s=coefficient)
def test_property_root_of_p_equals_the_dyson_system(name, rb, rc, s):
    """Where the elimination finds P, double-precision values that follow its root: on a
    dense grid, off the axis and down the imaginary axis towards 0 (where P rounds
    badly next to an atom and the Dyson system takes over), equal the Dyson system's.
    Some ratios take a minute to eliminate; the property is asked where P comes within 5 s."""
    law = template_law(name, rb, rc, s)
    elimination = law.algebraic(time_limit=5)
    assume(elimination.polynomial is not None)
    dyson, root = law.solver(), law.solver().with_polynomial(elimination)
    assert (dyson.method, root.method) == ("dyson", "polynomial")
    x = np.linspace(0, 1.5 * law.scale, 401)[1:]
    w = np.concatenate([x * (1 + 0.1j), 1j * law.scale * 10.0 ** -np.arange(0, 10), x[::40] + 1e-9j])
    want_grid, want = dyson.density(x), dyson.stieltjes(w)
    assert root.density(x) == pytest.approx(want_grid, abs=1e-10 * max(1, np.max(want_grid)))
    got = root.stieltjes(w)
    assert np.max(np.abs(got - want) / np.abs(want)) <= 1e-10


def test_polynomial_system_evaluates_p_and_its_derivatives():
    """F, dF/dm, dF/dw of the root-of-P system against SymPy's P, P_m, P_w (same scale S),
    and the descent's log-log tangent is exact for the power law m = a/w."""
    P = sp.expand(product_polynomial())
    rng = np.random.default_rng(3)
    m = rng.normal(size=5) + 1j * rng.normal(size=5)
    w = rng.normal(size=5) + 1j * rng.normal(size=5)
    system = PolynomialSystem.build(P, M_, W_, product_law().solver().dyson)
    F, J, Fw = system.linearisation(w, m[:, None])
    terms = [sp.lambdify((M_, W_), t, "numpy") for t in sp.Add.make_args(P)]
    S = sum(np.abs(t(m, w) * np.ones_like(m)) for t in terms)
    for got, expr in ((F[:, 0], P), (J[:, 0, 0], sp.diff(P, M_)), (Fw[:, 0], sp.diff(P, W_))):
        want = sp.lambdify((M_, W_), expr, "numpy")(m, w) / S
        assert got == pytest.approx(want, rel=1e-12, abs=1e-15)
    atom = PolynomialSystem.build(M_ * W_ - R(3, 4), M_, W_, product_law().solver().dyson)
    w0, w1 = np.array([0.3 + 0.2j]), np.array([0.01 + 0.05j])
    assert predict(atom, w0, w1, 0.75 / w0[:, None])[0, 0] == pytest.approx(0.75 / w1[0], rel=1e-13)


def test_descent_predictor_is_the_log_log_tangent():
    """On the Dyson system of Marchenko–Pastur (ratio 1/2) the start of a descent step is
    m(w0) (w1/w0)^p with p = w m'/m, m' = -P_w/P_m from its closed-form P; ten times closer
    to m(w1) than m(w0) is when w0 is far out."""
    c = R(1, 2)
    law = mp_law(c)
    solver = law.solver()
    out = solver.output
    w0, w1 = np.array([3.0 + 2.0j, 50j]), np.array([3.0 + 0.4j, 10j])
    P = mp_polynomial(c)
    tangent = sp.lambdify((M_, W_), -sp.diff(P, W_) / sp.diff(P, M_), "numpy")
    g0, m1 = solver.branch(w0), solver.branch(w1)[:, out]
    m0 = g0[:, out]
    assert np.abs(sp.lambdify((M_, W_), P, "numpy")(m0, w0)) == pytest.approx(0, abs=1e-14)
    want = m0 * (w1 / w0) ** (w0 * tangent(m0, w0) / m0)
    got = predict(solver.dyson, w0, w1, g0)[:, out]
    assert got == pytest.approx(want, rel=1e-12)
    assert abs(got[1] - m1[1]) <= 0.1 * abs(m0[1] - m1[1])


@settings(PROPERTY, max_examples=3)
@given(name=st.sampled_from(LIGHT), rb=ratio, rc=ratio, s=coefficient)
def test_property_mass_is_one_light(name, rb, rc, s):
    law = template_law(name, rb, rc, s)
    assert law.mass() == pytest.approx(1, abs=1e-8)


@PROPERTY
@given(name=st.sampled_from(list(TEMPLATES)), rb=ratio, rc=ratio, s=coefficient)
def test_property_mass_is_one_all_templates(name, rb, rc, s):
    law = template_law(name, rb, rc, s)
    assert law.mass() == pytest.approx(1, abs=1e-8)


def test_mass_of_a_gram_plus_square_gaussian():
    """X^T X + Z/2 with X 1 x 3 (ratios a : b = 1 : 3): hard edge at 0, top edge near 57.6.

    Mass and CDF are compared with adaptive quadrature of the engine's own density, so a
    failure points at the integration of the density (mass, CDF), not at the density.
    """
    law = template_law("X^T X + s Z", R(3), R(1, 4), R(1, 2))
    assert law.atoms() == []
    top = float(law.edges(dps=16)[-1].location)

    def integrand(t: float) -> float:  # x = top t^2 removes the x^(-1/2) divergence at 0
        return law.density(np.array([top * t * t]))[0] * 2 * top * t

    half, err = integrate.quad(integrand, 0, 0.5, limit=200, epsabs=1e-13)
    assert err < 1e-9
    assert law.cdf(top / 4) == pytest.approx(half, abs=1e-9)
    assert law.mass() == pytest.approx(1, abs=1e-10)


def test_atom_of_a_rank_deficient_product():
    """(X V X^T + Z/3) X W2 with a : b : c = 1 : 3 : 4 has rank a, so an atom 1 - 1/4 at 0
    (exact once P(m, w) is known: the descent alone gives it to about 4e-7)."""
    Y = (XA @ VB @ XA.T + ZA / 3) @ XA @ W2B
    law = spectral_law(Y, {a_: 1, b_: 3, c_: 4})
    assert law.algebraic().polynomial is not None
    (atom,) = law.atoms(method="polynomial")
    assert atom.exact == R(3, 4) and abs(atom.mass - 0.75) <= 1e-10 and atom.method == "polynomial"
    (descended,) = law.atoms()
    assert descended.exact == R(3, 4) and abs(descended.mass - 0.75) <= 1e-6 and descended.method == "descent"


def test_atom_extrapolation_over_decades():
    """a(y) = A + C r^k over decades k: Aitken's limit, with the change between triples as error."""
    k = np.arange(9, dtype=float)
    mass, err = power_law_limit(0.3 + 2 * 0.4**k)
    assert mass == pytest.approx(0.3, abs=1e-12) and err <= 1e-12
    mass, err = power_law_limit(2 * 0.398**k + 1e-3 * 0.1**k)
    assert abs(mass) <= 1e-6 and err <= 1e-6
    with pytest.raises(BranchError, match="decades"):
        power_law_limit(0.3 + 2 * 0.4 ** k[:4])
    with pytest.raises(BranchError, match="settled"):
        power_law_limit(np.array([1.0, 0.5, 0.6, 0.2, 0.3, 0.1]))


def _order_holds(n: int, active: np.ndarray, targets: np.ndarray) -> int:
    """Check what :func:`elimination_order` promises and return the size of its feedback set."""
    order, free = elimination_order(n, active, targets)
    assert sorted(order.tolist()) == sorted(active.tolist())
    deps = {int(i): set() for i in active}
    for q in targets:
        i, j = divmod(int(q), n)
        if i in deps and j in deps:
            deps[i].add(j)
    feedback = set(order[free:].tolist())
    for position, i in enumerate(order[:free].tolist()):
        assert i not in deps[i]  # pivot exactly 1
        assert deps[i] <= set(order[:position].tolist()) | feedback  # its row is zero after it up to the feedback
    return len(feedback)


def test_elimination_order_puts_a_triangle_before_its_feedback_set() -> None:
    """docs/solving.md §3.5: a cycle 0 -> 1 -> 2 -> 0 loses one unknown to the feedback set, as does
    an unknown with a term on its diagonal; the rest come after what they depend on. On random
    graphs the order keeps the same promises."""
    n = 5
    edges = [(0, 1), (1, 2), (2, 0), (3, 0), (4, 4), (4, 3)]
    targets = np.array([i * n + j for i, j in edges])
    assert _order_holds(n, np.arange(n), targets) == 2
    rng = np.random.default_rng(7)
    for _ in range(50):
        size = int(rng.integers(1, 12))
        active = np.sort(rng.choice(size + 3, size, replace=False))
        m = size + 3
        targets = np.flatnonzero(rng.random(m * m) < rng.uniform(0.05, 0.5))
        assert _order_holds(m, active, targets) <= size


def test_a_law_s_tables_eliminate_most_unknowns_without_pivoting() -> None:
    """The attention-shaped law of benchmarks/bench_free.py: its 11 active unknowns are eliminated
    6 without pivoting and 5 (the size of its minimal system, docs/equations.md §2.7) with it."""
    n_, d_, dv_ = Dim("n"), Dim("d"), Dim("d_v")
    X, W1, W2, Z = Gaussian("X", n_, d_), Gaussian("W1", d_, d_), Gaussian("W2", d_, dv_), Gaussian("Z", n_, n_)
    law = spectral_law((X @ W1 @ X.T + Z / 2) @ X @ W2, {n_: 1, d_: sp.Rational(1, 2), dv_: sp.Rational(1, 4)})
    tables = law.solver().dyson.tables
    assert (tables.active.size, tables.free) == (11, 6)
    assert _order_holds(tables.size, tables.active, tables.j_target) == 5


def test_a_polynomial_that_cancels_only_when_expanded_is_the_zero_law():
    """S T - (X0 + X1) T - (X2 + X3) T with S = X0 + X1 + X2 + X3 and T = S^4 vanishes, which only its 2048 monomials
    show: too many to expand, it is bounded factor by factor, and found to vanish on random instances."""
    n = Dim("n")
    X = [Gaussian(f"X{k}", n, n) for k in range(4)]
    S = X[0] + X[1] + X[2] + X[3]
    T = S @ S @ S @ S
    Y = S @ T - (X[0] + X[1]) @ T - (X[2] + X[3]) @ T
    assert monomials(Y) == 2048 > MAX_MONOMIALS
    law = spectral_law(Y, {n: 1})
    assert law.zero and law.moments(2) == [0, 0]
    assert not spectral_law(Y + X[0] / 1000, {n: 1}).zero


def test_a_deep_product_is_not_taken_for_zero():
    """A product of 60 Gaussians cancels on a random instance (size 4) to 2e-15 of the sum of its terms' sizes, below
    what double precision resolves; vanishes evaluates it at 60 digits and tells it from zero, and still finds
    (A + B) C - A C - B C zero for that deep C, and t C - sqrt(2) C at t = sqrt(2) but not at its double (docs/solving.md
    §3.10)."""
    n = Dim("n")
    C = sp.MatMul(*[Gaussian(f"X{k}", n, n) for k in range(60)])
    A, B = Gaussian("A", n, n), Gaussian("B", n, n)
    assert not vanishes(C, {}) and not vanishes(C / 3 + A, {sp.Symbol("t"): 1})
    zero = (A + B) @ C - A @ C - B @ C
    assert isinstance(zero, sp.MatAdd) and vanishes(zero, {})
    t = sp.Symbol("t", positive=True)  # zero only at t's exact value, which the 60 digits keep
    assert vanishes(t * C - sp.sqrt(2) * C, {t: sp.sqrt(2)}) and not vanishes(t * C - sp.sqrt(2) * C, {t: 1.4142135623730951})
