"""Compiled continuation of the physical branch, one point at a time (docs/solving.md §3.5).

One kernel (numba, cached on disk) follows either system the drivers know, read from its
:class:`~.kernel_tables.Tables`: the reduced Dyson system g = R(g, w) or the root of the minimal
polynomial P(m, w), with the Newton solves of :mod:`.kernel_newton`. On a real grid of a thousand
points, batched numpy rounds would cost more in calls than in arithmetic; here each point takes
the steps of docs/solving.md §3.5 compiled:

- **descent** of one target from x + i*top down to its own Im w: the log-log tangent start,
  Newton with its first step bounded (and, for the root of P, its steps required to contract),
  a step split in two where it fails, lands on Im m > 0 or does not converge, then the last
  solve from EARLY times the floor and, failing that, from the floor;
- **march** along a sorted real grid: each point starts from the log-log tangent at the last
  verified point (the plain tangent where the step is below march_log of x), its error estimated from the distance to the tangent from the point before
  that (each tangent's error is about d^2 g''/2 at distance d; the estimate is three times the
  error this implies, on a uniform grid the distance itself); it is tried where the estimate is
  at most TRUST (1 + |g|), the grid step divided into up to ``substeps`` equal steps where it is
  larger, and accepted where chord Newton from the cubic Hermite start lands within twice the
  estimate of the tangent, Im m <= 0, and, where m is real (outside the support), dm/dx < 0, as
  m = int rho(t)/(x - t) dt requires (another real solution that meets m at an edge increases
  there). Points that fail descend, and the march goes on from them.

Far starts at height top come from one anchor, the physical solution at one point far out, moved
along the line Im w = top from the last far start (a step split in two where it fails; the Dyson
system falls back on its fixed-point iteration from g = 0). A root of P is returned with ok only
where it also rounds well (its relative error from rounding, 10 eps S / (|P_m| |m|), at most the
caller's limit). Every tolerance comes from the caller (the driver owns them, as a
:class:`~.kernel_newton.Tolerances`); this module only iterates. Sizes are relative to |m| for the root of P and
to 1 + |g| for the Dyson system, as in :func:`.descent.newton_solve`.

The steps above Newton (moves, descent, far starts, the fixed point, the march start) are inlined
into the body of :func:`follow` instead of compiled on their own: LLVM optimises every callee again
inside each caller, and this halves the first compile (about 30 s, then cached). The body allocates
nothing and is compiled without numba's reference counting, which had cost an atomic increment and
decrement for every array read through the tables and buffers; :func:`follow` allocates the buffers
(:class:`Path` and :class:`~.kernel_linalg.Work`) and releases the GIL, so that chunks of one grid
run on threads (:mod:`.kernel_threads`).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numba import njit

from gemhsa_sym.free.numeric.kernel.linalg import Work, copy, distance, fill, largest, work
from gemhsa_sym.free.numeric.kernel.newton import Tolerances, at, herglotz, linearise, newton, offset, predict, rounds_well, slope
from gemhsa_sym.free.numeric.kernel.tables import POLYNOMIAL, Tables

__all__ = ["Path", "far_solution", "follow"]


class Path(NamedTuple):
    """Buffers of one follow besides the linear algebra's: the current solution and its slope, the
    marched starts (tangent, the tangent from the point before, cubic), a move's start and result,
    the solution before a descent step, the last far start and its slope, the last two verified real
    points of the march (x, g, dg; the last first), and a move's stack of split targets and depths."""

    g: np.ndarray
    dg: np.ndarray
    start: np.ndarray
    other: np.ndarray
    cubic: np.ndarray
    move_start: np.ndarray
    new: np.ndarray
    before: np.ndarray
    far_g: np.ndarray
    far_dg: np.ndarray
    hx: np.ndarray
    hg: np.ndarray
    hdg: np.ndarray
    targets: np.ndarray
    depths: np.ndarray


@njit(cache=True, inline="always")
def _move(t: Tables, wk: Work, pb: Path, base: complex, direction: complex, s_from: float, s_to: float, g: np.ndarray,
          dg: np.ndarray, first_step: float, geometric: bool, k: Tolerances) -> bool:
    """g and its slope dg (given at base + direction s_from) moved to base + direction s_to, in place:
    the log-log tangent start, Newton (first step at most first_step times the size of the start, 12
    iterations), Im m <= herglotz (1 + |m|); a step that fails is split in two (geometric mean of s
    when ``geometric``, else the midpoint), at most max_splits deep, the second half tried only where
    the first held."""
    targets, depths, start, new = pb.targets, pb.depths, pb.move_start, pb.new
    targets[0], depths[0] = s_to, 0
    top = 0
    here = s_from
    while top >= 0:
        there, depth = targets[top], depths[top]
        w1 = base + direction * there
        predict(base + direction * here, g, dg, w1, k.max_power, 0.0, start)
        at(t, w1, wk)
        if newton(t, wk, start, new, first_step * (offset(t) + largest(start)), 12, k, False) and herglotz(t, new, k):
            here = there
            copy(new, g)
            copy(wk.dg, dg)
            top -= 1
        elif depth < k.max_splits:
            top += 1
            targets[top] = math.sqrt(here * there) if geometric else 0.5 * (here + there)
            depths[top] = depth + 1
        else:
            return False
    return True


@njit(cache=True, inline="always")
def _descend(t: Tables, wk: Work, pb: Path, x: float, y: float, height: float, g: np.ndarray, dg: np.ndarray,
             floor: float, k: Tolerances) -> bool:
    """g and its slope dg moved from x + i height down to x + i y (height >= y) by descent of Im w, in
    place; the last solve onto y from early_floor times the floor, then from the floor (docs/solving.md §3.5)."""
    ratio = k.descent_ratio
    before, new = pb.before, pb.new
    for factor in (k.early_floor, 1.0):
        stop = max(y, floor * factor)
        while height > stop:
            nxt = max(height * ratio, stop)
            copy(g, before)
            if not _move(t, wk, pb, complex(x), 1j, height, nxt, g, dg, k.first_step, True, k):
                return False
            change = distance(g, before)
            ratio = k.fast_ratio if change < k.fast_change * largest(g) else k.descent_ratio
            height = nxt
        if y >= stop:
            return True
        at(t, complex(x, y), wk)
        if newton(t, wk, g, new, 1e-3 * (offset(t) + largest(g)), 60, k, False):
            copy(new, g)
            copy(wk.dg, dg)
            return herglotz(t, new, k)
    return False


@njit(cache=True, inline="always")
def _fixed_point(t: Tables, wk: Work, start: np.ndarray, w: complex, k: Tolerances, g: np.ndarray, dg: np.ndarray) -> bool:
    """The Dyson system's physical solution at w far out and its slope, into g and dg: g <- R(g, w)
    from g = 0 (200 iterations at most; ``start`` holds the iterate), polished by Newton (as
    :func:`.descent.fixed_point_start`); False for the root of P."""
    if t.kind == POLYNOMIAL:
        return False
    fill(start, 0.0)
    at(t, w, wk)
    for _ in range(200):
        if not linearise(t, wk, start, False, False) < np.inf:
            return False
        delta = largest(wk.F)
        for j in range(t.size):
            start[j] -= wk.F[j]  # R(g) = g - F(g)
        if delta < 1e-6 * (1.0 + largest(start)):
            break
    if not newton(t, wk, start, g, np.inf, 30, k, False):
        return False
    copy(wk.dg, dg)
    return True


@njit(cache=True, inline="always")
def _far(t: Tables, wk: Work, pb: Path, w0: complex, w1: complex, g: np.ndarray, dg: np.ndarray, k: Tolerances) -> bool:
    """g and its slope dg moved from w0 to w1, both far above the support, in place: up or down at
    Re w0 to Im w1, then along Im w = Im w1 (first steps at most far_step times the size of g)."""
    for leg in range(2):
        vertical = leg == 0
        if (w0.imag != w1.imag) if vertical else (w0.real != w1.real):
            base, direction = (complex(w0.real, 0.0), 1j) if vertical else (complex(0.0, w1.imag), 1.0 + 0j)
            s_from, s_to = (w0.imag, w1.imag) if vertical else (w0.real, w1.real)
            if not _move(t, wk, pb, base, direction, s_from, s_to, g, dg, k.far_step, vertical, k):
                return False
    return True


@njit(cache=True, inline="always")
def _march_start(x: float, hx: np.ndarray, hg: np.ndarray, hdg: np.ndarray, k: Tolerances, start: np.ndarray,
                 other: np.ndarray, cubic: np.ndarray) -> float:
    """The marched start at x from the last two verified real points (hx, hg, hdg)[0] and [1]: the
    log-log tangent at the last (the plain one where the step is below march_log times x0), into
    start, and its error estimate, three times the error of start that the distance to the tangent
    from the point before implies (each tangent's error about d^2 g''/2 at distance d; on a uniform
    grid, the distance itself). Into cubic: the cubic Hermite through both points and their slopes
    (error O(h^4) where g is smooth), where it lies within that estimate of start; start otherwise."""
    predict(complex(hx[0]), hg[0], hdg[0], complex(x), k.max_power, k.march_log, start)
    predict(complex(hx[1]), hg[1], hdg[1], complex(x), k.max_power, k.march_log, other)
    diff = distance(start, other)
    da, db = (x - hx[0]) ** 2, (x - hx[1]) ** 2
    err = 3.0 * diff * da / (db - da) if db > da else np.inf
    h = hx[0] - hx[1]
    copy(start, cubic)
    if h != 0:
        u = (x - hx[1]) / h
        h00, h10, h01, h11 = (2 * u - 3) * u * u + 1, ((u - 2) * u + 1) * u * h, (3 - 2 * u) * u * u, (u - 1) * u * u * h
        for j in range(start.size):
            cubic[j] = h00 * hg[1, j] + h10 * hdg[1, j] + h01 * hg[0, j] + h11 * hdg[0, j]
        if not distance(cubic, start) <= err:
            copy(start, cubic)
    return err


@njit(cache=True, inline="always")
def _march_to(t: Tables, wk: Work, x: float, err: float, start: np.ndarray, cubic: np.ndarray, g: np.ndarray,
              k: Tolerances) -> bool:
    """The marched point at x into g (and its slope into wk.dg), from the starts of
    :func:`_march_start` and their error estimate err: chord Newton from cubic, accepted where it
    lands within twice err of start, Im m <= 0 and, where m is real, dm/dx < 0 (module docstring)."""
    at(t, complex(x), wk)
    if not newton(t, wk, cubic, g, k.trust * (offset(t) + largest(start)), 8, k, True):
        return False
    m = g[t.output]
    good = distance(g, start) <= 2.0 * err + 1e-12 * (1.0 + largest(g)) and herglotz(t, g, k)
    return good and (abs(m.imag) > 1e-12 * abs(m) or wk.dg[t.output].real < 0)


@njit(cache=True, inline="always")
def _remember(x: float, g: np.ndarray, dg: np.ndarray, hx: np.ndarray, hg: np.ndarray, hdg: np.ndarray) -> None:
    """(x, g, dg) becomes the last verified real point of the march, the last one the one before."""
    hx[1] = hx[0]
    hx[0] = x
    for j in range(g.size):
        hg[1, j], hdg[1, j] = hg[0, j], hdg[0, j]
        hg[0, j], hdg[0, j] = g[j], dg[j]


@njit(cache=True)
def far_solution(t: Tables, w: complex, k: Tolerances) -> tuple[np.ndarray, bool]:
    """The Dyson system's physical solution at one point w far out (:func:`_fixed_point`), and
    whether it converged."""
    wk = work(t)
    g = np.zeros(t.size, dtype=np.complex128)
    dg = np.empty(t.size, dtype=np.complex128)
    return g, _fixed_point(t, wk, np.empty(t.size, dtype=np.complex128), w, k, g, dg)


@njit(cache=True, nogil=True)
def follow(t: Tables, x: np.ndarray, y: np.ndarray, floor: np.ndarray, top: float, anchor_w: complex,
           anchor_g: np.ndarray, k: Tolerances) -> tuple[np.ndarray, np.ndarray]:
    """The physical solution at targets x + i y (y >= 0), and ok where it was followed (and, for a
    root of P, rounds well); real targets (y = 0) must come sorted by x and are marched from the
    largest (module docstring), the others descend. (anchor_w, anchor_g): the physical solution at
    one point with Im w >= top."""
    N, n = x.size, t.size
    G = np.zeros((N, n), dtype=np.complex128)
    ok = np.zeros(N, dtype=np.bool_)
    vectors = np.empty((10, n), dtype=np.complex128)
    history = np.empty((2, 2, n), dtype=np.complex128)
    pb = Path(vectors[0], vectors[1], vectors[2], vectors[3], vectors[4], vectors[5], vectors[6], vectors[7], vectors[8],
              vectors[9], np.empty(2), history[0], history[1], np.empty(k.max_splits + 1),
              np.empty(k.max_splits + 1, dtype=np.int64))
    _follow(t, work(t), pb, x, y, floor, top, anchor_w, anchor_g, k, G, ok)
    return G, ok


@njit(cache=True, nogil=True, _nrt=False)
def _follow(t: Tables, wk: Work, pb: Path, x: np.ndarray, y: np.ndarray, floor: np.ndarray, top: float,
            anchor_w: complex, anchor_g: np.ndarray, k: Tolerances, G: np.ndarray, ok: np.ndarray) -> None:
    """The body of :func:`follow`, into G and ok, with every buffer given (no allocation, so no
    reference counting in the loop)."""
    N = x.size
    g, dg, start, other, cubic = pb.g, pb.dg, pb.start, pb.other, pb.cubic
    far_g, far_dg, hx, hg, hdg = pb.far_g, pb.far_dg, pb.hx, pb.hg, pb.hdg
    far_w = anchor_w  # the last far start
    copy(anchor_g, far_g)
    at(t, anchor_w, wk)
    if not slope(t, wk, far_g, far_dg):
        return
    known = 0
    marched = 0
    for j in range(N - 1, -1, -1):
        real = y[j] == 0
        if real and known >= 2:
            err = _march_start(x[j], hx, hg, hdg, k, start, other, cubic)
            limit = k.trust * (1.0 + largest(start))
            # each step's estimate falls like its length squared: steps of half the limit
            ratio = 1.0 if err <= limit else math.sqrt(2.0 * err / limit)
            steps = int(math.ceil(ratio)) if ratio <= k.substeps else 0
            base = hx[0]
            good = steps > 0
            for i in range(1, steps + 1):
                xi = x[j] if i == steps else base + (x[j] - base) * i / steps
                if steps > 1:
                    err = _march_start(xi, hx, hg, hdg, k, start, other, cubic)
                    limit = k.trust * (1.0 + largest(start))
                marched += 1
                if marched % k.recheck == 0:  # this solve measures its K afresh
                    wk.rate[0] = np.inf
                good = err <= limit and _march_to(t, wk, xi, err, start, cubic, g, k)
                if not good:
                    break
                _remember(xi, g, wk.dg, hx, hg, hdg)
            if good:
                _keep(G, ok, j, g, rounds_well(t, wk, g, k.rounding))
                continue
        wk.rate[0] = np.inf  # the march after a descent measures its K afresh
        height = max(top, y[j])
        copy(far_g, g)
        copy(far_dg, dg)
        moved = _far(t, wk, pb, far_w, complex(x[j], height), g, dg, k)
        if not moved:
            moved = _fixed_point(t, wk, pb.move_start, complex(x[j], height), k, g, dg)
        if not moved:
            continue
        far_w = complex(x[j], height)
        copy(g, far_g)
        copy(dg, far_dg)
        if _descend(t, wk, pb, x[j], y[j], height, g, dg, floor[j], k):
            at(t, complex(x[j], y[j]), wk)
            _keep(G, ok, j, g, rounds_well(t, wk, g, k.rounding))
            if real:
                _remember(x[j], g, dg, hx, hg, hdg)
                known += 1


@njit(cache=True, inline="always")
def _keep(G: np.ndarray, ok: np.ndarray, j: int, g: np.ndarray, good: bool) -> None:
    """Row j of G becomes g, and ok[j] good."""
    for i in range(g.size):
        G[j, i] = g[i]
    ok[j] = good
