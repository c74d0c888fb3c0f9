"""Reductions of a Dyson system before solving (docs/equations.md §2.4).

Unknowns that vanish on the physical branch are removed and unknowns equal
on it are merged. Both are detected on the physical branch itself, at three
points of the upper half plane, to ``REL_TOL``. They are then proved: the
vanishing set must span a subspace S invariant under the Dyson map
g -> R(g, w) (checked at random points of S and random w in 50-digit
arithmetic): as the fixed-point iteration from g = 0 stays in S and converges
to the physical solution at large |w|, that solution lies in S there, hence
everywhere by analyticity. Duplicates are not invariant in this sense (they
hold only at the solution, e.g. by cyclicity of traces), so for them the
reduced solution at a fourth point, refined to 50 digits and written out,
must solve the full system to 1e-40. In both cases the reduced system must
reproduce the full system's m(w) at the fourth point, or the reduction is
refused.
"""

from __future__ import annotations

from collections.abc import Mapping

import mpmath
import numpy as np
import sympy as sp

from gemhsa_sym.free.expressions.system import DysonSystem, Sector
from gemhsa_sym.free.numeric.continuation import follow_branch
from gemhsa_sym.free.numeric.descent import BranchError, newton_solve
from gemhsa_sym.free.numeric.results import probe_points, top_of
from gemhsa_sym.free.numeric.systems import DOUBLE, MP, NumericSystem

__all__ = ["reduce_system", "REL_TOL"]

REL_TOL = 1e-10
#: Digits of the invariance check, and the largest violation it accepts.
INVARIANCE_DPS, INVARIANCE_TOL = 50, 1e-40


def _substitute(system: DysonSystem, zero: set[sp.Symbol], rep: Mapping[sp.Symbol, sp.Symbol], note: str) -> DysonSystem:
    """The system with ``zero`` unknowns set to 0 and every other unknown g replaced by rep[g]."""
    sectors = []
    for sec in system.sectors:
        lin: dict[tuple[int, int], dict[sp.Symbol, sp.Expr]] = {}
        for entry, terms in sec.lin.items():
            new: dict[sp.Symbol, sp.Expr] = {}
            for g, c in terms.items():
                if g in zero:
                    continue
                r = rep[g]
                new[r] = sp.expand(new.get(r, 0) + c)
            new = {g: c for g, c in new.items() if c != 0}
            if new:
                lin[entry] = new
        sectors.append(Sector(sec.name, sec.labels, sec.const, sec.wcoef, lin))
    keep = tuple(g for g in system.unknowns if g not in zero and rep[g] == g)
    return DysonSystem(
        unknowns=keep,
        sectors=tuple(sectors),
        readout={g: system.readout[g] for g in keep},
        output=rep[system.output],
        parameters=system.parameters,
        notes=system.notes + (note,),
        entries={k: (sp.S.Zero if g in zero else rep[g]) for k, g in system.entries.items()},
    )


def invariant_under_dyson(full: NumericSystem, unknowns: tuple[sp.Symbol, ...], zero: set[sp.Symbol], scale: float) -> bool:
    """Whether S = {g_u = 0 for u in zero} is invariant under R(., w): R(g, w) vanishes on ``zero``
    at three random g in S and w in the upper half plane (a fixed seed), to INVARIANCE_TOL.
    ``full`` is the full system built at INVARIANCE_DPS digits."""
    rng = np.random.default_rng(20261130)
    with mpmath.workdps(INVARIANCE_DPS):
        for _ in range(3):
            g = np.array([[mpmath.mpc(0) if u in zero else mpmath.mpc(*rng.uniform(-1, 1, 2)) for u in unknowns]], dtype=object)
            w = np.array([mpmath.mpc(rng.uniform(-1, 1) * scale, rng.uniform(0.1, 1) * scale)], dtype=object)
            r = full.readout(w, g)[0]
            size = 1 + max(abs(v) for v in r)
            if any(abs(v) > INVARIANCE_TOL * size for u, v in zip(unknowns, r) if u in zero):
                return False
    return True


def reduce_system(system: DysonSystem, values: Mapping[sp.Symbol, object], scale: float) -> DysonSystem:
    """Remove vanishing unknowns and merge equal ones, verified on the physical branch."""
    full = NumericSystem.build(system, values, DOUBLE)
    top = top_of(scale)
    # probe where the spectrum lives (about its mean), not at the norm bound, where
    # unknowns that decay like 1/w^2 would be mistaken for zeros
    far = 1j * (scale + 1.0)
    m_far = follow_branch(full, np.array([far]), top=top, floor=1e-12 * scale).m[0]
    mean = float(np.real(far * (far * m_far - 1)))
    pts = probe_points(min(max(mean, 1e-6 * scale), scale))
    br = follow_branch(full, pts, top=top, floor=1e-12 * scale)
    if not np.all(br.ok):
        raise RuntimeError("reduction: the full system could not be solved at the probe points")
    g = br.g[:3]
    size = 1 + np.max(np.abs(g), axis=1, keepdims=True)
    zero = {u for j, u in enumerate(system.unknowns) if np.all(np.abs(g[:, j]) <= REL_TOL * size[:, 0])}
    zero.discard(system.output)
    rep: dict[sp.Symbol, sp.Symbol] = {}
    live = [j for j, u in enumerate(system.unknowns) if u not in zero]
    order = sorted(live, key=lambda j: (system.unknowns[j] != system.output, j))
    for j in order:
        u = system.unknowns[j]
        if u in rep:
            continue
        rep[u] = u
        for k in order:
            v = system.unknowns[k]
            if v not in rep and np.all(np.abs(g[:, j] - g[:, k]) <= REL_TOL * size[:, 0]):
                rep[v] = u
    for u in zero:
        rep[u] = u
    with mpmath.workdps(INVARIANCE_DPS):
        full_mp = NumericSystem.build(system, values, MP)
    if not invariant_under_dyson(full_mp, system.unknowns, zero, scale):
        return system
    identity = {u: u for u in system.unknowns}
    merged = sum(1 for u, r in rep.items() if r != u)
    for mapping, dup in ([(rep, merged)] if merged else []) + [(identity, 0)]:
        note = f"reduced: {len(zero)} unknowns vanish on the physical branch (found at {len(g)} points, proved by invariance under the Dyson map)"
        note += f" and {dup} duplicate others (the full system holds to 1e-40 at the reduced 50-digit solution)" if dup else ""
        if not zero and not dup:
            note = f"reduced: no unknown vanishes or duplicates another on the physical branch (checked at {len(g)} points)"
        reduced = _substitute(system, zero, mapping, note)
        try:
            check = follow_branch(NumericSystem.build(reduced, values, DOUBLE), pts[3:], top=top, floor=1e-12 * scale)
        except (np.linalg.LinAlgError, BranchError):
            continue
        if not (check.ok.all() and abs(check.m[0] - br.m[3]) <= 1e-8 * (1 + abs(br.m[3]))):
            continue
        if dup and not _solves_full(full_mp, system, reduced, values, zero, mapping, pts[3], check.g[0]):
            continue
        return reduced
    return system


def _solves_full(full: NumericSystem, system: DysonSystem, reduced: DysonSystem, values: Mapping[sp.Symbol, object], zero: set[sp.Symbol], rep: Mapping[sp.Symbol, sp.Symbol], w: complex, g0: np.ndarray) -> bool:
    """Whether the reduced solution at w, refined to 50 digits and written out (zeros, duplicates),
    solves the full system (``full``, built at INVARIANCE_DPS digits) there to INVARIANCE_TOL."""
    with mpmath.workdps(INVARIANCE_DPS):
        small = NumericSystem.build(reduced, values, MP)
        wa = np.array([mpmath.mpc(w)], dtype=object)
        g, ok = newton_solve(small, wa, MP.array(g0[None, :]), tol=float(mpmath.mpf(10) ** -(INVARIANCE_DPS - 5)), maxit=60)
        if not ok[0]:
            return False
        at = {u: g[0][j] for j, u in enumerate(reduced.unknowns)}
        written = np.array([[mpmath.mpc(0) if u in zero else at[rep[u]] for u in system.unknowns]], dtype=object)
        F = full.residual(wa, written)[0]
        return max(abs(v) for v in F) <= INVARIANCE_TOL * (1 + max(abs(v) for v in written[0]))
