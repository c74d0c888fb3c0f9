"""The minimal Dyson system: every unknown a sector gives explicitly is eliminated (docs/equations.md §2.7).

Each unknown of a reduced system is a read-out of sector inverses, g_j = F_j(g, w) with F_j
a rational function (adjugate over determinant, blocks that decouple cancelled). Draw an
arrow from g_j to every unknown F_j depends on. An unknown outside every cycle of that
graph is given explicitly by the others; the smallest set C of unknowns that meets every
cycle (a minimum feedback vertex set) is what must be solved for. The minimal system is

    c = F_c(g)  for c in C,   with   d = F_d(g)  for the other unknowns, in an order where
                              each uses only C and the definitions before it,

and m(w) is the output unknown. Unknowns that enter no sector matrix enter no F and are
only read out. :func:`minimal_system` finds C exactly (iterative deepening over the
shortest cycle, which must lose one of its unknowns); :func:`minimal_equations` is the
numeric form, solved by the common Newton driver, whose Jacobian follows the definitions
by the chain rule.
"""

from __future__ import annotations

import graphlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar

import mpmath
import numpy as np
import sympy as sp
from sympy.polys.matrices import DomainMatrix

from gemhsa_sym.free.algebraic.bounded import Bounded
from gemhsa_sym.free.expressions.system import DysonSystem, W
from gemhsa_sym.free.numeric.continuation import follow_branch
from gemhsa_sym.free.numeric.descent import newton_solve
from gemhsa_sym.free.numeric.results import top_of
from gemhsa_sym.free.numeric.systems import DOUBLE, MP, Backend, NumericSystem

__all__ = ["CHECK_DPS", "CHECK_TOL", "MAX_UNKNOWNS", "MinimalEquations", "MinimalSystem", "MinimalSystemError", "bounded_minimal", "check_minimal", "start_minimal",
           "feedback_set", "minimal_system"]

#: Digits of the proof of a minimal system, and the largest difference in m(w) it accepts.
CHECK_DPS, CHECK_TOL = 50, 1e-40
#: The most unknowns of a reduced system whose minimal system is sought: found for every preset (35 unknowns at most,
#: a two-level token covariance); with 113 (eight levels) the symbolic inverses of its sectors ran past 20 s.
MAX_UNKNOWNS = 64
#: Points of the proof, in units of the law's scale: upper half plane, inside and beyond the support.
CHECK_POINTS = (0.31 + 0.43j, 0.77 + 0.21j, 1.13 + 0.57j)


class MinimalSystemError(ArithmeticError):
    """The minimal system's m(w) differs from the reduced system's."""

Graph = Mapping[sp.Symbol, frozenset[sp.Symbol]]


@dataclass(frozen=True)
class MinimalSystem:
    """Unknowns C solved for, explicit definitions in order, and m(w) (module docstring)."""

    reduced: DysonSystem
    unknowns: tuple[sp.Symbol, ...]
    definitions: tuple[tuple[sp.Symbol, sp.Expr], ...]
    equations: tuple[tuple[sp.Symbol, sp.Expr], ...]

    @property
    def output(self) -> sp.Symbol:
        """The unknown that is m(w)."""
        return self.reduced.output

    @property
    def schedule(self) -> tuple[tuple[sp.Symbol, ...], ...]:
        """The minimal map as updates in turn: each definition, then the unknowns C together."""
        return tuple((d,) for d, _ in self.definitions) + (self.unknowns,)

    def __str__(self) -> str:
        """The equations, then the definitions after "where"."""
        lines = [f"unknowns ({len(self.unknowns)}): {', '.join(map(str, self.unknowns))}   m(w) = {self.output}"]
        lines += [f"  {c} = {f}" for c, f in self.equations]
        if self.definitions:
            lines.append("where")
            lines += [f"  {d} = {f}" for d, f in self.definitions]
        return "\n".join(lines)

    def _latex(self, printer: sp.printing.latex.LatexPrinter) -> str:
        """``sympy.latex`` of the system: every equation in one aligned block."""
        rows = [printer._print(c) + " &= " + printer._print(f) for c, f in self.equations + self.definitions]
        return r"\begin{aligned}" + r" \\ ".join(rows) + r"\end{aligned}"


def _readout_functions(system: DysonSystem) -> dict[sp.Symbol, sp.Expr]:
    """F_j(g, w) = sum c adj(M_s)_ab / det M_s for every unknown, cancelled and factored."""
    parts: dict[sp.Symbol, list[sp.Expr]] = {g: [] for g in system.unknowns}
    for s, sec in enumerate(system.sectors):
        matrix = DomainMatrix.from_Matrix(sec.matrix())
        adj, det = matrix.inv_den()
        adjugate, determinant = adj.to_Matrix(), matrix.domain.to_sympy(det)
        for g, reads in system.readout.items():
            for t, a, b, c in reads:
                if t == s:
                    parts[g].append(c * adjugate[a, b] / determinant)
    return {g: sp.factor(sp.cancel(sp.Add(*terms))) for g, terms in parts.items()}


def _cycle_through(graph: Graph, nodes: frozenset[sp.Symbol], start: sp.Symbol,
                   order: Mapping[sp.Symbol, int]) -> list[sp.Symbol] | None:
    """A shortest directed cycle among ``nodes`` through ``start`` (breadth first), or None."""
    parent: dict[sp.Symbol, sp.Symbol | None] = {start: None}
    frontier = [start]
    while frontier:
        following = []
        for u in frontier:
            for v in sorted(graph[u] & nodes, key=order.__getitem__):
                if v == start:  # the first edge back closes a shortest cycle: u is at the least depth
                    path = [u]
                    while (p := parent[path[-1]]) is not None:
                        path.append(p)
                    return path[::-1]
                if v not in parent:
                    parent[v] = u
                    following.append(v)
        frontier = following
    return None


def _shortest_cycle(graph: Graph, nodes: frozenset[sp.Symbol], order: Mapping[sp.Symbol, int]) -> list[sp.Symbol] | None:
    """A shortest directed cycle among ``nodes``, or None."""
    cycles = (_cycle_through(graph, nodes, v, order) for v in sorted(nodes, key=order.__getitem__))
    return min((c for c in cycles if c is not None), key=len, default=None)


def feedback_set(graph: Graph, prefer: Sequence[sp.Symbol]) -> tuple[sp.Symbol, ...]:
    """A minimum set of nodes meeting every cycle of ``graph`` (node -> nodes it depends on),
    by iterative deepening: one node of a shortest remaining cycle must be in it. The search tries
    nodes in the order of ``prefer``, so that among sets of one size the preferred come first."""
    order = {g: k for k, g in enumerate(prefer)}

    def search(nodes: frozenset[sp.Symbol], budget: int) -> tuple[sp.Symbol, ...] | None:
        cycle = _shortest_cycle(graph, nodes, order)
        if cycle is None:
            return ()
        if budget == 0:
            return None
        for v in sorted(cycle, key=order.__getitem__):
            rest = search(nodes - {v}, budget - 1)
            if rest is not None:
                return (v, *rest)
        return None

    everything = frozenset(graph)
    for budget in range(len(everything) + 1):
        found = search(everything, budget)
        if found is not None:
            return tuple(sorted(found, key=order.__getitem__))
    raise AssertionError("the set of all nodes meets every cycle")


def minimal_system(system: DysonSystem) -> MinimalSystem:
    """The minimal system of a (reduced) Dyson system (module docstring)."""
    functions = _readout_functions(system)
    unknowns = set(system.unknowns)
    graph = {g: frozenset(f.free_symbols & unknowns) for g, f in functions.items()}
    used = set().union(*graph.values()) | {system.output}  # the others are only read out
    live = {g: deps for g, deps in graph.items() if g in used}
    # prefer unknowns that many others use, so that the definitions are the short read-outs
    uses = {g: sum(g in deps for deps in live.values()) for g in live}
    prefer = sorted(live, key=lambda g: (g == system.output, -uses[g], system.unknowns.index(g)))
    core = feedback_set(live, prefer)
    sorter = graphlib.TopologicalSorter({g: [h for h in deps if h not in core] for g, deps in live.items() if g not in core})
    defined = [g for g in sorter.static_order()]
    return MinimalSystem(
        reduced=system,
        unknowns=core,
        definitions=tuple((d, functions[d]) for d in defined),
        equations=tuple((c, functions[c]) for c in core),
    )


@dataclass(frozen=True)
class MinimalEquations:
    """F(c) = c - R_C(g(c), w), g(c) from the definitions in order (the :class:`~.numeric.Equations`
    protocol); the Jacobian by the chain rule through the definitions. ``output`` indexes m in the
    full vector of :meth:`written`."""

    full: NumericSystem
    core: tuple[int, ...]
    defined: tuple[int, ...]
    output: int
    relative: ClassVar[bool] = False
    anchor: ClassVar[None] = None

    @classmethod
    def build(cls, minimal: MinimalSystem, values: Mapping[sp.Symbol, object], backend: Backend) -> "MinimalEquations":
        """The numeric minimal system at parameter ``values`` in ``backend``."""
        index = {g: j for j, g in enumerate(minimal.reduced.unknowns)}
        return cls(NumericSystem.build(minimal.reduced, values, backend), tuple(index[c] for c in minimal.unknowns),
                   tuple(index[d] for d, _ in minimal.definitions), index[minimal.output])

    @property
    def backend(self) -> Backend:
        return self.full.backend

    @property
    def size(self) -> int:
        return len(self.core)

    def written(self, w: np.ndarray, c: np.ndarray) -> np.ndarray:
        """Every unknown of the reduced system: C as given, the definitions evaluated in order."""
        g = self._zeros(w, self.full.size)
        g[:, list(self.core)] = c
        for d in self.defined:
            g[:, d] = self.full.readout(w, g)[:, d]
        return g

    def residual_jacobian(self, w: np.ndarray, c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """F(c) and dF/dc."""
        F, J, _ = self.linearisation(w, c)
        return F, J

    def linearisation(self, w: np.ndarray, c: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """F(c), dF/dc and dF/dw by the chain rule: dg/dc is I on C (dg/dw 0 there) and, for each
        definition in order, dR_d/dg . (dg/dc, dg/dw) + (0, dR_d/dw), with dR/dg = I - dF/dg and
        dR/dw = -dF/dw of the reduced system."""
        g = self._zeros(w, self.full.size)
        g[:, list(self.core)] = c
        dg = self._zeros(w, self.full.size, len(self.core) + 1)  # the last column is d/dw
        for k, j in enumerate(self.core):
            dg[:, j, k] = 1
        for d in self.defined:
            F, J, Fw = self.full.linearisation(w, g)
            g[:, d] = g[:, d] - F[:, d]
            dR = -J[:, d, :]
            dR[:, d] += 1  # R_d does not depend on g_d
            dg[:, d, :] = (dR[:, None, :] @ dg)[:, 0, :]
            dg[:, d, -1] -= Fw[:, d]
        F, J, Fw = self.full.linearisation(w, g)
        core = list(self.core)
        total = J[:, core, :] @ dg
        return F[:, core], total[:, :, :-1], total[:, :, -1] + Fw[:, core]

    def _zeros(self, w: np.ndarray, *shape: int) -> np.ndarray:
        return self.backend.array(np.zeros((len(w), *shape), dtype=complex))



def check_minimal(minimal: MinimalSystem, values: Mapping[sp.Symbol, object], scale: float) -> float:
    """The largest relative difference of m(w) between the minimal and the reduced system at
    CHECK_POINTS (times ``scale``), both solved to CHECK_DPS digits: the reduced system on its
    physical branch, the minimal one by Newton from a start 1e-6 away (to 1e-13 in double
    precision first); and of each printed
    function F_u from g_u at the solution. MinimalSystemError above CHECK_TOL."""
    reduced = NumericSystem.build(minimal.reduced, values, DOUBLE)
    w = scale * np.array(CHECK_POINTS)
    branch = follow_branch(reduced, w, top=top_of(scale), floor=1e-12 * scale)
    if not branch.ok.all():
        raise MinimalSystemError("the reduced system could not be solved at the check points")
    double = MinimalEquations.build(minimal, values, DOUBLE)
    c0, ok_double = newton_solve(double, w, branch.g[:, list(double.core)] * (1 + 1e-6), tol=1e-13)
    worst = mpmath.mpf(0)
    with mpmath.workdps(CHECK_DPS):
        tol = float(mpmath.mpf(10) ** (5 - CHECK_DPS))
        wm = MP.array(w)
        g, ok = newton_solve(NumericSystem.build(minimal.reduced, values, MP), wm, MP.array(branch.g), tol=tol, maxit=60)
        equations = MinimalEquations.build(minimal, values, MP)
        c, ok_minimal = newton_solve(equations, wm, MP.array(c0), tol=tol, maxit=60)
        if not (ok_double.all() and ok.all() and ok_minimal.all()):
            raise MinimalSystemError("Newton's method did not converge at the check points")
        written = equations.written(wm, c)
        for a, b in zip(g[:, equations.output], written[:, equations.output]):
            worst = max(worst, abs(a - b) / (1 + abs(a)))
        # the printed functions themselves: F_u(g, w) = g_u at each solution
        symbols = (W, *minimal.reduced.unknowns, *values)
        for u, f in minimal.equations + minimal.definitions:
            function = sp.lambdify(symbols, f, "mpmath")
            j = minimal.reduced.unknowns.index(u)
            for point, row in zip(wm, written):
                value = function(point, *row, *(mpmath.mpmathify(sp.N(v, CHECK_DPS + 5)) for v in values.values()))
                worst = max(worst, abs(value - row[j]) / (1 + abs(row[j])))
    if worst > CHECK_TOL:
        raise MinimalSystemError(f"the minimal system's m(w) differs from the reduced system's by {float(worst):.3g}")
    return float(worst)


def _too_large(system: DysonSystem) -> str | None:
    """Why the minimal system of ``system`` is not sought (more than :data:`MAX_UNKNOWNS` unknowns), or None."""
    if len(system.unknowns) <= MAX_UNKNOWNS:
        return None
    return (f"not sought: the reduced system has {len(system.unknowns)} unknowns, more than the {MAX_UNKNOWNS} up to which "
            "its symbolic elimination is tried")


def _proved(system: DysonSystem, values: Mapping[sp.Symbol, object], scale: float) -> MinimalSystem:
    """:func:`minimal_system` proved by :func:`check_minimal` (what the child of :func:`start_minimal` runs)."""
    reason = _too_large(system)
    if reason is not None:  # the child ends at once; bounded_minimal does not wait for it
        raise ValueError(reason)
    minimal = minimal_system(system)
    check_minimal(minimal, values, scale)
    return minimal


def start_minimal(system: DysonSystem, values: Mapping[sp.Symbol, object], scale: float, time_limit: float) -> Bounded:
    """:func:`minimal_system` and its proof (:func:`check_minimal`) started in a child process stopped after
    ``time_limit`` seconds, so that other work runs beside it; :func:`bounded_minimal` collects it."""
    return Bounded(_proved, (system, values, scale), time_limit)


def bounded_minimal(system: DysonSystem, values: Mapping[sp.Symbol, object], scale: float, time_limit: float,
                    started: Bounded | None = None) -> MinimalSystem | str:
    """The minimal system proved against the reduced one, from the child ``started`` by :func:`start_minimal` (or one
    started now and waited for); past the limit, or where the symbolic elimination or its proof fails, the reason as
    text (without waiting where the system is too large to try, :data:`MAX_UNKNOWNS`)."""
    reason = _too_large(system)
    if reason is not None:
        return reason
    with started or start_minimal(system, values, scale, time_limit) as job:
        status, minimal = job.result()
    if status != "ok":
        return (f"its symbolic elimination did not finish within {time_limit:g} s" if status == "timeout"
                else f"its symbolic elimination or its proof failed ({minimal})")
    return minimal
