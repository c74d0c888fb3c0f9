"""Reductions of a Dyson system before solving (DESIGN §1.4 step 3).

Unknowns that vanish on the physical branch are removed and unknowns equal
on it are merged. Both are detected on the physical branch itself, at three
points of the upper half plane, and kept only if they hold there to
``REL_TOL``; the reduced system is then re-solved at a fourth point and
must reproduce the full system's m(w) there, or the reduction is refused.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import sympy as sp

from .continuation import BranchError, follow_branch
from .numeric import DOUBLE, NumericSystem
from .system import DysonSystem, Sector

__all__ = ["reduce_system", "REL_TOL"]

REL_TOL = 1e-10


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


def _probe_points(scale: float) -> np.ndarray:
    return scale * np.array([0.37 + 0.61j, 1.13 + 0.29j, -0.71 + 0.47j, 0.52 + 0.11j])


def reduce_system(system: DysonSystem, values: Mapping[sp.Symbol, object], scale: float) -> DysonSystem:
    """Remove vanishing unknowns and merge equal ones, verified on the physical branch."""
    full = NumericSystem.build(system, values, DOUBLE)
    top = 8.0 * scale + 8.0
    # probe where the spectrum lives (about its mean), not at the norm bound, where
    # unknowns that decay like 1/w^2 would be mistaken for zeros
    far = 1j * (scale + 1.0)
    m_far = follow_branch(full, np.array([far]), top=top, floor=1e-12 * scale).m[0]
    mean = float(np.real(far * (far * m_far - 1)))
    pts = _probe_points(min(max(mean, 1e-6 * scale), scale))
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
    candidates = [
        (zero, rep, "vanish", "duplicate others"),
        (zero, {u: u for u in system.unknowns}, "vanish", None),
    ]
    for zeros, mapping, what, dup in candidates:
        merged = sum(1 for u, r in mapping.items() if r != u)
        note = f"reduced: {len(zeros)} unknowns {what}" + (f" and {merged} {dup}" if dup else "")
        note += f" on the physical branch (checked at {len(g)} points to {REL_TOL:g}, verified at a fourth)"
        reduced = _substitute(system, zeros, mapping, note)
        try:
            check = follow_branch(NumericSystem.build(reduced, values, DOUBLE), pts[3:], top=top, floor=1e-12 * scale)
        except (np.linalg.LinAlgError, BranchError):
            continue
        if check.ok.all() and abs(check.m[0] - br.m[3]) <= 1e-8 * (1 + abs(br.m[3])):
            return reduced
    return system
