"""The solution of the two-point equation: iterates, the descent to the real axis, and levels
(docs/solving.md §3.13).

:func:`iterates` yields Anderson-mixed iterates of the map of :class:`.two_point.TwoPointSystem` at many
w at once; :func:`solve` owns the tolerance, reaches points near the real axis from above (a cold start
there may land on the conjugate solution) and refuses Im m > 0. :class:`MaskedScoresModel` yields m(w)
level after level for the drivers of :mod:`.profiled_law`.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass, field

import numpy as np
from tqdm import tqdm

from gemhsa_sym.free.positions.masked_pencil import MaskedPencil
from gemhsa_sym.free.positions.profiles import Quadrature
from gemhsa_sym.free.positions.two_point import TwoPointState, TwoPointSystem
from gemhsa_sym.progress import note

__all__ = ["LEVELS", "DESCENT", "RESOLUTION", "iterates", "solve", "extrapolated", "MaskedScoresModel"]

#: (Gauss-Legendre order per panel, octaves of halving panels towards t = 0) of each level: 27, 36, 54, 72, 108 nodes (the
#: last for laws whose levels to 72 nodes do not meet their budget: eight heads in four groups left 9.5e-4 of 7.5e-4).
#: The two-point blocks have a kink where two query positions meet, so m converges like order^-2 (measured,
#: docs/solving.md §3.13), whatever the octaves beyond 8: the levels raise the order.
LEVELS: tuple[tuple[int, int], ...] = ((3, 8), (4, 8), (6, 8), (8, 8), (12, 8))
#: A point's cost at a level grows like nodes^COST_EXPONENT (measured: 1.4, 2.6, 6.6, 13.4 s for six points of one head
#: at 27, 36, 54, 72 nodes): the weights of the estimate of the time left (:meth:`MaskedScoresModel.levels`).
COST_EXPONENT = 2.3
#: How many of the last levels the extrapolation of m combines (m + a p^-2 + b p^-3 over the orders p).
EXTRAPOLATED = 3
#: Anderson memory, mixing of the plain step, and steps allowed per height.
MEMORY, MIXING, STEPS = 8, 0.5, 4000
#: Im w / |w| at which real targets are solved (the density is smoothed on that relative scale).
RESOLUTION = 1e-4
#: Ratio of successive heights Im w / |w| on the descent towards the real axis.
DESCENT = 100
#: A point's iteration is mixed only once its plain steps change the values by less than this (inside the
#: basin of the solution the plain iteration reaches; mixed from farther, it may land on another solution: from 1e-2,
#: 30 % fewer steps over 27 points from 1e-3 to 1e4, but eight heads far in the tail, w = 9646.62 + 0.96i, ended on
#: Im m > 0).
MIX_FROM = 1e-3


def _flat(state: TwoPointState) -> np.ndarray:
    return np.concatenate([state.read, state.delta], axis=1)


def iterates(system: TwoPointSystem, w: np.ndarray, state: TwoPointState) -> Iterator[tuple[TwoPointState, np.ndarray, np.ndarray]]:
    """(state, m, change) after every step: damped steps (:data:`MIXING`) until a point's change falls below
    :data:`MIX_FROM`, then Anderson mixing of its last :data:`MEMORY` residuals (Walker & Ni 2011, type II,
    regularised normal equations) from then on, the history restarted where the change grew tenfold over its best;
    ``change`` is the largest change of a value relative to 1 + |value|."""
    points, reads = w.size, system.reads
    x = _flat(state)
    # rings of the differences of the residual f and of x + MIXING f (what a mixed step combines)
    dF = np.zeros((points, MEMORY, x.shape[1]), dtype=complex)
    dG = np.zeros_like(dF)
    gram = np.zeros((points, MEMORY, MEMORY), dtype=complex)  # <dF_i, dF_j>, kept up to date slot by slot
    valid = np.zeros((points, MEMORY), dtype=bool)
    mixing = np.zeros(points, dtype=bool)  # a point mixes from its first change below MIX_FROM on
    best = np.full(points, np.inf)
    previous: tuple[np.ndarray, np.ndarray] | None = None
    eye = np.eye(MEMORY)
    lam = system.lambdas(w)
    for step in range(STEPS):
        new, m = system.step(lam, TwoPointState(x[:, :reads], x[:, reads:]))
        f = _flat(new) - x
        size = np.max(np.abs(f) / (1 + np.abs(x)), axis=1)
        yield new, m, size
        mixing |= size <= MIX_FROM
        valid[(size > 10 * best) | ~mixing] = False
        best = np.minimum(best, size)
        if previous is not None:
            slot = step % MEMORY
            dF[:, slot] = f - previous[1]
            dG[:, slot] = x - previous[0] + MIXING * dF[:, slot]
            row = np.matmul(dF, dF[:, slot].conj()[..., None])[..., 0].conj()
            gram[:, :, slot], gram[:, slot, :] = row, row.conj()
            valid[:, slot] = mixing
        previous = (x, f)
        both = valid[:, :, None] & valid[:, None, :]
        g = np.where(both, gram, 0) + np.where(valid, np.trace(gram, axis1=1, axis2=2).real[:, None] * 1e-10 + 1e-300,
                                               1.0)[:, :, None] * eye
        rhs = np.where(valid, np.matmul(dF, f.conj()[..., None])[..., 0].conj(), 0)
        gamma = np.linalg.solve(g, rhs[..., None]).transpose(0, 2, 1)
        x = x + MIXING * f - (gamma @ dG)[:, 0]


def _converge(system: TwoPointSystem, at: np.ndarray, read: np.ndarray, delta: np.ndarray, tol: float,
              counted: np.ndarray, finished: Callable[[int], object]) -> tuple[TwoPointState, np.ndarray, int]:
    """Every point of ``at`` iterated from its state (``read``, ``delta``) to a change below ``tol``: the points still
    iterating are batched, and the batch is shrunk once a quarter of it has converged (``finished`` is told how many
    of the ``counted`` points converged); a point's state is the one of its first step below ``tol`` (mixed on past it, a point
    of eight heads far in the tail, w = 9646.62 + 0.96i, was carried to Im m > 0); the states, m and the point-steps taken.
    ArithmeticError where a point does not converge in :data:`STEPS` steps."""
    read, delta, m = read.copy(), delta.copy(), np.zeros(at.shape, dtype=complex)
    total, todo = 0, np.arange(at.size)
    while todo.size:
        done = np.zeros(todo.size, dtype=bool)
        for steps, (state, values, change) in enumerate(iterates(system, at[todo], TwoPointState(read[todo], delta[todo]))):
            total += todo.size
            first = (change < tol) & ~done
            at_first = todo[first]
            read[at_first], delta[at_first], m[at_first] = state.read[first], state.delta[first], values[first]
            done |= first
            if np.all(done) or (np.count_nonzero(done) >= todo.size / 4) or steps == STEPS - 1:
                break
        if not np.any(done):
            raise ArithmeticError(f"the two-point iteration did not converge in {STEPS} steps at w = {at[todo[0]]:.6g}")
        rest = todo[~done]
        read[rest], delta[rest], m[rest] = state.read[~done], state.delta[~done], values[~done]
        finished(int(np.count_nonzero(done & counted[todo])))
        todo = todo[~done]
    return TwoPointState(read, delta), m, total


def _unphysical(m: np.ndarray) -> np.ndarray:
    return m.imag > 1e-9 * np.abs(m)


def solve(system: TwoPointSystem, w: np.ndarray, tol: float = 1e-9,
          finished: Callable[[int], object] = lambda count: None) -> tuple[np.ndarray, int]:
    """m at the points w (upper half plane) and the point-steps taken: the iteration runs at Im w = |w|,
    |w| / :data:`DESCENT`, ... down to each point's own Im w, every height started from the one above, the first
    from Lambda^-1 (:func:`_converge`; ``finished`` is told how many points reached their own Im w). A point whose
    first height lands on Im m > 0 (seen below |w| = 1e-3 with four heads) is reached along its ray instead, from
    |w| >= 1 down by factors of 10. ArithmeticError where a point does not converge or ends on Im m > 0."""
    w = np.asarray(w, dtype=complex)
    if np.any(w.imag <= 0):
        raise ValueError("w: the two-point equation is solved in the upper half plane (Im w > 0)")
    depth = int(np.ceil(np.log(np.max(np.abs(w) / w.imag)) / np.log(DESCENT)))
    total = 0
    for level, height in enumerate(float(DESCENT) ** -np.arange(0, depth + 1)):
        at = w.real + 1j * np.maximum(w.imag, height * np.abs(w))
        if level == 0:
            begin = system.start(at)
            state, m, steps = _converge(system, at, begin.read, begin.delta, tol, at == w, finished)
            total += steps
            bad = np.flatnonzero(_unphysical(m))
            if bad.size:
                ray, ray_m, steps = _along_rays(system, at[bad], tol)
                total += steps
                state.read[bad], state.delta[bad], m[bad] = ray.read, ray.delta, ray_m
                finished(int(np.count_nonzero(at[bad] == w[bad])))
            continue
        todo = np.flatnonzero(w.imag < DESCENT * height * np.abs(w))
        if todo.size:
            below, m[todo], steps = _converge(system, at[todo], state.read[todo], state.delta[todo], tol, at[todo] == w[todo],
                                              finished)
            state.read[todo], state.delta[todo] = below.read, below.delta
            total += steps
    if np.any(_unphysical(m)):
        raise ArithmeticError(f"the two-point iteration left the physical solution (Im m > 0) at w = {w[_unphysical(m)][0]:.6g}")
    return m, total


def _along_rays(system: TwoPointSystem, w: np.ndarray, tol: float) -> tuple[TwoPointState, np.ndarray, int]:
    """The states and m at the points w, each reached along its ray: from Lambda^-1 at 10^J w (|10^J w| >= 1), then
    10^(J-1) w, ... w, every point started from the one before."""
    J = int(max(1, np.ceil(np.log10(1 / np.min(np.abs(w))))))
    state, total, none = system.start(w * 10.0**J), 0, np.zeros(w.shape, dtype=bool)
    for j in range(J, -1, -1):
        state, m, steps = _converge(system, w * 10.0**j, state.read, state.delta, tol, none, lambda count: None)
        total += steps
    return state, m, total


@dataclass(frozen=True, eq=False)
class MaskedScoresModel:
    """The law of masked scores for a pencil builder (nodes -> :class:`~.masked_pencil.MaskedPencil`) and Hermite
    data; :meth:`levels` yields m(w) at the rules of :data:`LEVELS` in turn, as the drivers of
    :mod:`.profiled_law` ask."""

    pencil: Callable[[int], MaskedPencil]
    scores: float
    noise: float
    _systems: dict[int, TwoPointSystem] = field(default_factory=dict, repr=False, compare=False)

    def quadrature(self, level: int) -> Quadrature:
        """The rule of ``level``."""
        order, octaves = LEVELS[level]
        return Quadrature.graded(1, octaves, order)

    def system(self, level: int) -> TwoPointSystem:
        """The equation at ``level`` (built once)."""
        if level not in self._systems:
            rule = self.quadrature(level)
            self._systems[level] = TwoPointSystem(self.pencil(rule.size), rule, self.scores, self.noise)
        return self._systems[level]

    def levels(self, w: np.ndarray, floor: float | np.ndarray) -> Generator[tuple[int, int, np.ndarray, np.ndarray | None],
                                                                            np.ndarray | None, None]:
        """(level, nodes, m(w), its error) for every level in turn: from the second on, m is the extrapolation of this
        level's values and the last ones' (:func:`extrapolated`), and its error the change from the extrapolation of
        one level fewer (an embedded pair: it bounds the cruder value, so it errs on the safe side for m). A boolean
        mask sent to the generator names the points the next levels solve (the others keep their last value). A point
        below ``floor`` (real targets) is solved at Im w = max(floor, :data:`RESOLUTION` |w|), where the density is
        resolved on that scale.

        A progress bar on a terminal (and a line after every level) estimates the time left at most: every point still
        refined taken through every level left, a point's work weighted by :data:`COST_EXPONENT`, at the rate so far."""
        below = w.imag < floor
        at = np.where(below, w.real + 1j * np.maximum(floor, RESOLUTION * np.abs(w)), w)
        raw: list[np.ndarray] = []
        active = np.ones(w.shape, dtype=bool)
        cost = [(self.quadrature(level).size / self.quadrature(0).size) ** COST_EXPONENT for level in range(len(LEVELS))]
        start, done = time.perf_counter(), [0.0]
        with tqdm(total=w.size * sum(cost), desc="two-point equation", unit="", disable=None, leave=False, file=sys.stderr,
                  bar_format="{desc}: {percentage:3.0f}%|{bar}| {elapsed} < {remaining} at most") as bar:
            for level, (order, _) in enumerate(LEVELS):
                nodes = self.quadrature(level).size
                bar.set_description(f"two-point equation, {nodes} nodes")
                def finished(count: int, weight: float = cost[level]) -> None:
                    done[0] += count * weight
                    bar.update(count * weight)

                m = solve(self.system(level), at[active], finished=finished)[0]
                raw.append(np.zeros(w.shape, dtype=complex))
                raw[-1][active] = m
                orders = [o for o, _ in LEVELS[:level + 1]]
                value = extrapolated(orders, raw)
                error = None if level == 0 else np.abs(value - extrapolated(orders, raw, min(level, EXTRAPOLATED - 1)))
                sent = yield level, nodes, value, error
                if sent is not None:
                    active = np.asarray(sent, dtype=bool) & active
                    if not np.any(active):
                        return
                left = int(np.count_nonzero(active)) * sum(cost[level + 1:])
                bar.total = done[0] + left
                bar.refresh()
                if level + 1 < len(LEVELS) and done[0]:
                    count, more = int(np.count_nonzero(active)), len(LEVELS) - level - 1
                    note(f"two-point equation: at most {left * (time.perf_counter() - start) / done[0]:.0f} s more, {count} "
                         f"point{'s' * (count != 1)} through {more} more level{'s' * (more != 1)} at the rate so far")


def extrapolated(orders: list[int], values: list[np.ndarray], count: int = EXTRAPOLATED) -> np.ndarray:
    """The limit of m_p = m + a p^-2 + b p^-3 over the orders p per panel (docs/solving.md §3.13) from the values at the
    last ``count`` orders, at most three (two: m + a p^-2; one: the last value), point by point."""
    p = np.array(orders[-min(count, EXTRAPOLATED):], dtype=float)
    basis = np.vander(1 / p, EXTRAPOLATED + 1, increasing=True)[:, [0, *range(2, p.size + 1)]]
    weights = np.linalg.inv(basis)[0]
    return sum(c * v for c, v in zip(weights, values[-p.size:]))
