"""The driver: continuation of the physical branch to any targets (docs/solving.md §3.5).

Every target w = x + iy is reached from x + i*top by geometric descent of the imaginary part
(by 100x instead of 5x once g has become linear in Im w), with the constants of :mod:`.descent`.
Real targets (y = 0) are reached by one last Newton solve at y = 0, tried from 1e9 times the
floor and, where that fails the continuity check (near edges), from the floor; every accepted
point is then checked: converged, continuous with the point above it, and Herglotz (Im m <= 0).
Real targets are marched along their grid: each starts from the tangent at the last verified
point (Newton from the cubic Hermite through the last two, by the chord method) and is accepted
only within that start's own error estimate, grid steps divided where the estimate is too large;
the rest descend.

The steps run compiled, point by point (:mod:`.branch_kernel`), for both systems the solver
knows: the reduced Dyson system (:class:`~.numeric.NumericSystem`) and the root of the minimal
polynomial P(m, w) (:class:`~.polynomial_system.PolynomialSystem`), which is started from the Dyson
solution at x + i*top. This module owns the tolerances. Many targets on one ray towards 0 (the
atom at zero, contour masses near a hard edge) are followed in one path along the ray instead
(:func:`.rays.follow_rays`).
"""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np

from gemhsa_sym.free.numeric.descent import (
    CONTRACTION,
    DESCENT_RATIO,
    FAR_STEP,
    FAST_CHANGE,
    FAST_RATIO,
    FIRST_STEP,
    HERGLOTZ,
    MAX_POWER,
    MAX_SPLITS,
    NOISE,
    POLISH,
    Branch,
    BranchError,
    fixed_point_start,
)
from gemhsa_sym.free.numeric.kernel.branch import far_solution, follow
from gemhsa_sym.free.numeric.kernel.newton import Tolerances
from gemhsa_sym.free.numeric.kernel.threads import run_chunks
from gemhsa_sym.free.numeric.polynomial_system import PolynomialSystem
from gemhsa_sym.free.numeric.results import ROOT_ROUNDING
from gemhsa_sym.free.numeric.systems import DOUBLE, NumericSystem
from gemhsa_sym.progress import note

__all__ = ["CHUNK", "MAX_CHUNKS", "chunks", "follow_branch"]

#: The last Newton solve onto a target below the floor is tried first from this multiple of it.
EARLY_FLOOR = 1e9
#: Largest error estimate (relative to 1 + |g|) of a marched start that is tried.
TRUST = 3e-3
#: Most equal steps a marched grid step is divided into where its start's error estimate exceeds
#: TRUST (each step's estimate falls like its length squared); beyond, the target descends.
SUBSTEPS = 32
#: A marched start is the log-log tangent only where the step is at least this fraction of x (near 0,
#: where an atom's a/x and other powers of x dominate); below, the two tangents agree to second order
#: and the plain one costs no complex exponential.
MARCH_LOG = 1e-2
#: A marched solve stops after its full Newton step where this many times the error that step leaves
#: (K size^2, K measured by an earlier marched solve's second step) is below POLISH (1 + |g|) ...
RATE_MARGIN = 10.0
#: ... and takes its second step, measuring K afresh, at least once in this many marched points.
RECHECK = 8
#: Sorted targets per chunk followed on its own (:func:`chunks`): a chunk's two first points descend
#: (70 to 150 us each), a marched point costs about 2 us.
CHUNK = 500
MAX_CHUNKS = 16
#: Cache indexes whose first compile was announced (:func:`announce_compile`).
_ANNOUNCED: set[str] = set()
#: A Newton solve has also converged where |F|/S is below this (1 + |g|) (near a double root the
#: step stagnates at about the square root of the working precision).
RESIDUAL_TOL = 1e-14


def follow_branch(system: NumericSystem | PolynomialSystem, w: np.ndarray, top: float, floor: float | np.ndarray, tol: float = 1e-12,
                  start: tuple[complex, np.ndarray] | None = None) -> Branch:
    """The physical solution at targets w with Im w >= 0, by descent from Re w + i*top (double).

    Targets with Im w below ``floor`` (a number or one per target) are solved at Im w = floor
    first, then by one Newton solve at their own Im w (which may be 0), accepted only if the
    solution moved continuously (docs/solving.md §3.4: never a cold start near the real axis);
    real targets are marched along their grid (module docstring). ``start`` (w0, g0): the physical
    solution at one point far out (Im w0 >= top) that every target is continued from (default: the
    fixed-point start above the targets' middle). For the root of P, ok also requires the root to
    round well (relative error at most ROOT_ROUNDING).
    """
    if system.backend is not DOUBLE:
        raise TypeError("follow_branch runs in double precision; refine its result with mpmath")
    w = np.atleast_1d(np.asarray(w, dtype=complex))
    if w.ndim != 1:
        raise ValueError("w: expected a one-dimensional array of targets")
    if np.any(w.imag < 0):
        raise ValueError("w: targets must lie in the closed upper half plane (use conjugation below it)")
    floor = np.broadcast_to(np.asarray(floor, dtype=float), w.shape)
    if not w.size:
        return Branch(w=w, g=np.zeros((0, system.size), dtype=complex), ok=np.zeros(0, dtype=bool), output=system.output)
    order = np.argsort(w.real, kind="stable")
    k = Tolerances(tol, RESIDUAL_TOL, POLISH, CONTRACTION, NOISE, DESCENT_RATIO, FAST_RATIO, FAST_CHANGE, FIRST_STEP,
                   FAR_STEP, MAX_POWER, MAX_SPLITS, EARLY_FLOOR, TRUST, HERGLOTZ, ROOT_ROUNDING, SUBSTEPS, MARCH_LOG,
                   RATE_MARGIN, RECHECK)
    announce_compile()
    if start is None:
        middle = (w.real.min() + w.real.max()) / 2 + 1j * max(top, float(np.max(w.imag)))
        start = (middle, _far_start(system, middle, k))
    x, y, low = (np.ascontiguousarray(a[order]) for a in (w.real, w.imag, floor))
    anchor = (complex(start[0]), np.ascontiguousarray(start[1], dtype=complex))
    pieces = np.array_split(np.arange(w.size), chunks(w.size))

    tables = system.tables
    results = run_chunks([functools.partial(follow, tables, x[idx], y[idx], low[idx], float(top), *anchor, k)
                          for idx in pieces])  # the kernel releases the GIL
    g = np.empty((w.size, system.size), dtype=complex)
    ok = np.empty(w.size, dtype=bool)
    g[order], ok[order] = np.concatenate([r[0] for r in results]), np.concatenate([r[1] for r in results])
    return Branch(w=w, g=g, ok=ok, output=system.output)


def announce_compile() -> None:
    """Before the kernel's first compile in this installation (numba's cache has no index for it yet), say that it takes
    about 30 s once (docs/conventions.md §6.9); the cache's layout is numba's, so where it cannot be read, nothing."""
    try:
        index = Path(follow._cache._cache_file._index_path)
    except AttributeError:
        return
    if str(index) not in _ANNOUNCED and not index.exists():
        _ANNOUNCED.add(str(index))
        note("compiling the numeric kernel once for this installation (about 30 s; later runs load it from numba's cache)")


def chunks(targets: int) -> int:
    """How many contiguous chunks of the sorted targets are followed on their own (each from its own
    descent, on threads of their own): the largest power of two at most targets / CHUNK, at most
    MAX_CHUNKS, so that the answer does not depend on the machine and two or four cores share the
    chunks evenly."""
    count = 1
    while 2 * count <= min(targets // CHUNK, MAX_CHUNKS):
        count *= 2
    return count


def _far_start(system: NumericSystem | PolynomialSystem, w: complex, k: Tolerances) -> np.ndarray:
    """The physical solution at w far out: the fixed-point iteration from g = 0, polished by Newton
    (compiled for the Dyson system, :func:`.descent.fixed_point_start` for the root of P)."""
    if isinstance(system, PolynomialSystem):
        return fixed_point_start(system, np.array([w]), k.tol)[0]
    g, ok = far_solution(system.tables, complex(w), k)
    if not ok:
        raise BranchError("the fixed-point start at large |w| did not converge; the system may be singular")
    return g
