"""Distribution functions of a law on [0, inf) from its Stieltjes transform m(w) = int dmu(l)/(w - l).

Two kinds of pieces make up the CDF of the continuous part:

* a :class:`Band` [a, b] integrates the density rho = -Im m(x + i0)/pi,
  mapped so that square-root edges (and the divergence at a hard edge) become smooth;
* a :class:`Core` [0, x0] at a hard edge takes the mass of [0, r] from a contour
  integral instead, which needs m only off the real axis (:func:`arc_masses`):
  no extrapolation of a density that diverges, possibly almost like 1/x, at 0.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.polynomial import Chebyshev, chebyshev

from gemhsa_sym.free.numeric.descent import RaysFailed
from gemhsa_sym.free.numeric.results import Edge

__all__ = ["ARC_NODES", "Band", "Core", "arc_masses", "band", "continuous_pieces", "contour_moments", "core"]

#: Gauss–Legendre nodes on each half circle of :func:`arc_masses`.
ARC_NODES = 32
#: Chebyshev nodes in log x of the mass function of a :class:`Core`.
CORE_NODES = 32
#: Chebyshev nodes per theta interval of a :class:`Band`.
BAND_NODES = 128
#: Largest tail coefficient of an accepted theta interval, relative to the first interval's largest.
BAND_TAIL = 1e-12
#: Most halvings of a theta interval.
BAND_SPLITS = 8

#: m(w) at w = radii[k] * directions[j], as an array (radii, directions).
OnArcs = Callable[[np.ndarray, np.ndarray], np.ndarray]
Density = Callable[[np.ndarray], np.ndarray]


def arc_masses(on_arcs: OnArcs, radii: np.ndarray) -> np.ndarray:
    """mu([0, r]) = (1/pi) int_0^pi Re(w m(w)) dtheta on w = r e^{i theta}, for each radius r.

    For a point mass at l >= 0, (1/2 pi) of the integral of Re(w/(w - l)) over the
    whole circle is 1 inside and 0 outside (residue theorem); conjugation symmetry
    halves the circle. Atoms at 0 are included.
    """
    radii = np.atleast_1d(np.asarray(radii, dtype=float))
    nodes, weights = np.polynomial.legendre.leggauss(ARC_NODES)
    directions = np.exp(1j * np.pi * (nodes + 1) / 2)
    m = np.asarray(on_arcs(radii, directions))
    return np.real(radii[:, None] * directions[None, :] * m) @ (np.pi * weights / 2) / np.pi


@dataclass(frozen=True)
class Core:
    """The continuous part on [0, x0] at a hard edge: M(x) = mu([0, x]) - atom.

    mu([0, x]) is interpolated in u = log10 x between x_min and x0 from :func:`arc_masses`:
    its logarithm without an atom (nearly linear, as mu([0, x]) behaves like a power of x),
    itself with one (atom + c x^a is entire in u, its logarithm is not). Below x_min, M
    continues as the power law with the interpolant's exponent there.
    """

    x_min: float
    x0: float
    atom: float
    interpolant: Chebyshev
    logarithmic: bool

    def _total(self, u: np.ndarray | float) -> np.ndarray:
        """mu([0, 10^u]) and its derivative in u."""
        value = self.interpolant(u)
        slope = self.interpolant.deriv()(u)
        return (np.exp(value), np.exp(value) * slope) if self.logarithmic else (value, slope)

    @property
    def mass(self) -> float:
        return float(self._total(np.log10(self.x0))[0]) - self.atom

    def cdf(self, x: np.ndarray) -> np.ndarray:
        """M(min(x, x0)) for real x (0 below 0)."""
        x = np.asarray(x, dtype=float)
        inner = self._total(np.log10(np.clip(x, self.x_min, self.x0)))[0] - self.atom
        total, slope = self._total(np.log10(self.x_min))
        at_min = float(total) - self.atom
        if at_min <= 0:
            return np.where(x < self.x_min, 0.0, np.maximum(inner, 0.0))
        exponent = max(float(slope) / (at_min * np.log(10)), 0.0)
        below = np.where(x > 0, at_min * (np.maximum(x, 0.0) / self.x_min) ** exponent, 0.0)
        return np.where(x < self.x_min, below, np.maximum(inner, 0.0))


def core(on_arcs: OnArcs, x_min: float, x0: float, atom: float) -> Core:
    """The :class:`Core` on [0, x0], from :func:`arc_masses` at Chebyshev nodes in log10 x."""
    domain = [np.log10(x_min), np.log10(x0)]
    nodes = Chebyshev.basis(CORE_NODES, domain=domain).roots().real
    masses = arc_masses(on_arcs, 10.0**nodes)
    if np.any(masses <= 0):
        raise ValueError("core: a contour mass is not positive; the law is not verified near 0")
    logarithmic = atom == 0
    values = np.log(masses) if logarithmic else masses
    return Core(x_min, x0, atom, Chebyshev.fit(nodes, values, CORE_NODES - 1, domain=domain), logarithmic)


@dataclass(frozen=True)
class Band:
    """The continuous part on [a, b]: the antiderivative of rho(x(theta)) x'(theta) over theta in [0, pi],
    x(theta) = a + (b - a) ((1 - cos theta)/2)^p, as Chebyshev pieces on consecutive theta intervals
    (each the antiderivative from theta = 0, so the last one at pi is the mass)."""

    a: float
    b: float
    p: int
    antiderivatives: tuple[Chebyshev, ...]

    @property
    def mass(self) -> float:
        return float(self.antiderivatives[-1](np.pi))

    def cdf(self, x: np.ndarray) -> np.ndarray:
        """int_a^min(x, b) rho, for any real x."""
        s = np.clip((np.clip(x, self.a, self.b) - self.a) / (self.b - self.a), 0, 1) ** (1 / self.p)
        theta = np.arccos(1 - 2 * s)
        out = np.zeros_like(theta)
        for F in self.antiderivatives:
            lo, hi = F.domain
            inside = (theta >= lo) & (theta <= hi)
            out[inside] = F(theta[inside])
        return out


def band(density: Density, a: float, b: float, p: int = 1) -> Band:
    """The :class:`Band` on [a, b]: p = 1 makes square-root edges smooth, p = 3 also resolves a
    density varying on the scale of a near a (the top of a :class:`Core`). A theta interval whose
    Chebyshev tail exceeds BAND_TAIL of the largest coefficient is halved (a sharp shoulder
    of the density, e.g. near a cusp), at most BAND_SPLITS times."""

    def integrand(theta: np.ndarray) -> np.ndarray:
        s = (1 - np.cos(theta)) / 2
        x = a + (b - a) * s**p
        out = np.zeros_like(theta)
        inner = (x > a) & (x < b)
        out[inner] = density(x[inner]) * ((b - a) * p * s[inner] ** (p - 1) * np.sin(theta[inner]) / 2)
        return out

    # the interpolants of one depth take their nodes from one call of the density
    nodes = chebyshev.chebpts1(BAND_NODES + 1)
    vander = chebyshev.chebvander(nodes, BAND_NODES).T * (2.0 / (BAND_NODES + 1))
    vander[0] /= 2
    done: list[Chebyshev] = []
    pending, size = [(0.0, np.pi)], None
    for depth in range(BAND_SPLITS + 1):
        theta = np.concatenate([lo + (hi - lo) * (nodes + 1) / 2 for lo, hi in pending])
        values = integrand(theta).reshape(len(pending), -1)
        split = []
        for (lo, hi), y in zip(pending, values):
            c = Chebyshev(vander @ y, domain=[lo, hi])
            size = size or float(np.max(np.abs(c.coef)))
            if depth < BAND_SPLITS and np.max(np.abs(c.coef[-BAND_NODES // 8 :])) > BAND_TAIL * size:
                split += [(lo, (lo + hi) / 2), ((lo + hi) / 2, hi)]
            else:
                done.append(c)
        if not split:
            break
        pending = split
    done.sort(key=lambda c: c.domain[0])
    pieces, offset = [], 0.0
    for c in done:
        F = c.integ(lbnd=c.domain[0], k=offset)
        offset = float(F(c.domain[1]))
        pieces.append(F)
    return Band(a, b, p, tuple(pieces))


def continuous_pieces(edges: Sequence[Edge], atom: float, density: Density, on_arcs: OnArcs, scale: float) -> list[Core | Band]:
    """The continuous part of a law piece by piece: one band per support interval; an interval
    with a hard edge starts with a core [0, 1e-5 b] whose mass comes from contour integrals
    (down to 1e-14 of the scale, or to ten times the radius where double precision loses
    the branch, if that is above); ``atom`` is the mass of the atom at 0."""
    pieces: list[Core | Band] = []
    for lo, hi in zip(edges[::2], edges[1::2]):
        a, b = float(lo.location), float(hi.location)
        if lo.hard:
            x0 = 1e-5 * b
            try:
                piece = core(on_arcs, min(1e-14 * scale, 1e-6 * x0), x0, atom)
            except RaysFailed as failed:  # double precision loses the branch that deep
                if 10 * failed.radius > 1e-3 * x0:
                    raise
                piece = core(on_arcs, 10 * failed.radius, x0, atom)
            pieces.append(piece)
            pieces.append(band(density, x0, b, p=3))
        else:
            pieces.append(band(density, a, b))
    return pieces


def contour_moments(stieltjes: Callable[[np.ndarray], np.ndarray], radius: float, k: int, points: int = 512) -> np.ndarray:
    """M_1..M_k by the trapezoidal rule on the circle of ``radius`` around the support: (1/2 pi i) oint w^j m(w) dw
    converges like (edge/radius)^points (m is analytic outside the support); the lower half circle is the conjugate of
    the upper. ValueError naming k or points where they are not counts."""
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError("k: need at least one moment")
    if isinstance(points, bool) or not isinstance(points, int) or points < 8:
        raise ValueError(f"points: the contour rule needs an integer of at least 8 points, got {points!r}")
    theta = np.pi * (np.arange(points // 2) + 0.5) / (points // 2)
    w = radius * np.exp(1j * theta)
    j = np.arange(1, k + 1)[:, None]
    return np.real(np.sum(w[None, :] ** (j + 1) * stieltjes(w)[None, :], axis=1)) / (points // 2)
