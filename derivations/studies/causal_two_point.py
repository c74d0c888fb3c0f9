"""The causal layer's masked scores as a two-point Dyson equation, checked against Monte Carlo.

docs/extensions.md §8.6: the masked scores of the causal Gaussian equivalent act like masked scores
whose queries are fresh tokens, so that, given the tokens and weights, the rows of the equivalent
without c_0 are independent Gaussian vectors; row t (t = i / n) has covariance C_t / n with

    C_t = t^-2 V^T (mu_1^2 B_t M B_t + sigma^2 B_t) V,   B_t = X^T P_t X,

X the tokens (entries N(0, 1/n)), P_t keeping the keys u <= t, M = W^T W for the query-key weights
W and V the value-output weights. Two steps give m(w) = tau((w - Y^T Y)^-1):

1. *Rows given the tokens* (the deterministic equivalent of a Gram matrix with independent rows):
   R = (H - w)^-1 with H = int C_t / (1 + delta(t)) dt and delta(t) = (1/n) tr(C_t R), m = -tau(R).
   The query positions t are the nodes t_k of a graded Gauss-Legendre rule (weights omega_k), so
   H = sum_k phi_k C_k with phi_k = omega_k / (1 + delta_k).
2. *H given the weights phi_k* is a polynomial in Gaussian matrices in which the tokens X occur
   *masked*: X^T P_k X for every node. Its linear pencil (L x = e, x = (r, auxiliaries)) has, for
   every node k, auxiliaries on the feature sides (s_k = B_k v, ..., b_k = (psi_k B_k M B_k +
   chi_k B_k) v) and on the key side (q_k = X M B_k v), psi_k = mu_1^2 phi_k / t_k^2, chi_k =
   sigma^2 phi_k / t_k^2. The Dyson equation of a Gaussian pencil, G = (Lambda - eta(G))^-1,
   holds side by side; a key-side block is a function of the key position u, and constant on the
   intervals (t_{j-1}, t_j] between nodes (only the masks P_k(u) = 1{u <= t_k} depend on u), so
   the key integrals are exact sums over those intervals. Pairing an occurrence of a Gaussian with
   one of its transpose gives eta (masks multiply; a pairing over the key side integrates them).
   The feature-side blocks hold every pair of nodes: a function of two positions, (K + 1)^2 and
   more unknowns for K nodes, which is what the engine's one-row-block pencils do not have
   (docs/extensions.md §8.6). tau((L^-1)_{b_k, b}) = phi_k tau(C_k R) n / d gives delta_k.

The equation is iterated to a fixed point (damped half steps); points near the real axis are reached
from above (Im w = |w|, |w| / 10, ..., each height started from the one above), since a cold start there
may land on the conjugate solution. Checked against:

- the same equation written out by hand for the model without weights (W = V = I), to rounding;
- Monte Carlo of the models (m(w) as the mean of 1 / (w - lambda) over pooled spectra): (w) the
  model without weights with fresh queries, and the single-head causal Gaussian equivalent without
  c_0 at unit ratios (softmax coefficients mu_1 = beta, sigma^2 = e^{beta^2} - 1 - beta^2): (b) with
  its own queries and (f) with fresh ones, spectra of the column-centred Y as in
  ``causal_parts.py``;
- the contrast: the same equation with the masked scores replaced by independent noise of the same
  variance (mu_1 = 0, sigma^2 -> mu_1^2 + sigma^2), which Monte Carlo tells apart from (b).

numpy and scipy.sparse, and the engine's quadrature rule; seeds from numpy's SeedSequence. For example

    OMP_NUM_THREADS=2 python derivations/studies/causal_two_point.py --n 1000 2000 --draws 2

and, for the distribution function of the single head's law (a contour integral for the mass below
1e-4, then densities on a log grid up to 1e4, docs/solving.md §3.11) against the pooled spectra of (b),
with quantiles and the Kolmogorov-Smirnov distance:

    OMP_NUM_THREADS=2 python derivations/studies/causal_two_point.py --n 2000 --draws 4 --cdf 4 4 --cdf 4 8
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.polynomial import legendre
from scipy import sparse

from gemhsa_sym.free.profiles import Quadrature

#: Points of the upper half plane where m(w) is compared.
POINTS: tuple[complex, ...] = (0.2 + 0.5j, 1 + 1j, 5 + 2j, 20 + 5j)
#: (Gauss-Legendre order per panel, octaves of halving panels towards t = 0) of the node levels.
LEVELS: tuple[tuple[int, int], ...] = ((4, 4), (4, 8), (6, 12))


def graded_rule(order: int, octaves: int) -> tuple[np.ndarray, np.ndarray]:
    """Nodes and weights on [0, 1]: the engine's graded Gauss-Legendre rule (docs/equations.md §2.9), ``order``
    nodes on each panel [2^-(j+1), 2^-j], j < octaves, and on [0, 2^-octaves]."""
    rule = Quadrature.graded(1, octaves, order)
    return rule.nodes, rule.weights


@dataclass(frozen=True)
class Occurrence:
    """One entry A (or A^T) of the pencil: equation row ``row``, variable ``col``; ``weight`` 'one', 'psi' or
    'chi' of node ``node``; ``masked`` multiplies by P_node on the key side."""

    gaussian: str
    transposed: bool
    row: str
    col: str
    weight: str = "one"
    node: int = -1
    masked: bool = False


@dataclass(frozen=True)
class Pencil:
    """Variables by side, the Gaussians (rows side, columns side, variance scale s: entries N(0, s / n)),
    the occurrences, the side ratios (dimension / n), the variable of R (output) and the pair (b_k, b) of
    every node that gives delta_k."""

    sides: dict[str, list[str]]
    gaussians: dict[str, tuple[str, str, float]]
    occurrences: list[Occurrence]
    ratios: dict[str, float]
    output: str
    delta: list[tuple[str, str]]
    feature: str  # the side of the b_k (its ratio converts tau to (1/n) tr)
    links: list[tuple[str, str, float]]  # deterministic entries of Lambda off its diagonal (row, column, value)


def weightless_pencil(K: int, gamma: float) -> Pencil:
    """H = sum_k psi_k B_k^2 + chi_k B_k on the feature side d (ratio gamma), keys n."""
    d = ["r"] + [f"s{k}" for k in range(K)] + [f"b{k}" for k in range(K)] + ["b"]
    n = ["p"] + [f"q{k}" for k in range(K)]
    occ = [Occurrence("X", False, "p", "r")]
    for k in range(K):
        occ += [Occurrence("X", True, f"s{k}", "p", masked=True, node=k),
                Occurrence("X", False, f"q{k}", f"s{k}"),
                Occurrence("X", True, f"b{k}", f"q{k}", "psi", k, True),
                Occurrence("X", True, f"b{k}", "p", "chi", k, True)]
    return Pencil({"d": d, "n": n}, {"X": ("n", "d", 1.0)}, occ, {"d": gamma, "n": 1.0}, "r",
                  [(f"b{k}", "b") for k in range(K)], "d", [("r", "b", 1.0)] + [("b", f"b{k}", 1.0) for k in range(K)])


def single_head_pencil(K: int, ratios: dict[str, float]) -> Pencil:
    """H = V^T (sum_k psi_k B_k M B_k + chi_k B_k) V, V = W_V W_O, M = W_K W_Q^T W_Q W_K^T: r (d_out),
    v1 = W_O r, v = W_V v1, p = X v, s_k = X^T P_k p, f_k = W_K^T s_k, h_k = W_Q f_k, e_k = W_Q^T h_k,
    o_k = W_K e_k, q_k = X o_k, b_k = psi_k X^T P_k q_k + chi_k X^T P_k p, b = sum b_k, c = W_V^T b,
    r: W_O^T c - w r. Weights with entries N(0, 1 / (rows' width)), as the engine's single head
    (W_Q W_K^T / sqrt(d_k) at unit ratios)."""
    node = [f"{x}{k}" for x in ("s", "h", "o", "b") for k in range(K)]
    sides = {"dout": ["r"], "dv": ["v1", "c"], "d": ["v", "b", *node], "dk": [f"{x}{k}" for x in "fe" for k in range(K)],
             "n": ["p"] + [f"q{k}" for k in range(K)]}
    g = {"X": ("n", "d", 1.0), "W_Q": ("d", "dk", 1 / ratios["d"]), "W_K": ("d", "dk", 1 / ratios["d"]),
         "W_V": ("d", "dv", 1 / ratios["d"]), "W_O": ("dv", "dout", 1 / ratios["dv"])}
    occ = [Occurrence("W_O", False, "v1", "r"), Occurrence("W_V", False, "v", "v1"), Occurrence("X", False, "p", "v"),
           Occurrence("W_V", True, "c", "b"), Occurrence("W_O", True, "r", "c")]
    for k in range(K):
        occ += [Occurrence("X", True, f"s{k}", "p", masked=True, node=k),
                Occurrence("W_K", True, f"f{k}", f"s{k}"), Occurrence("W_Q", False, f"h{k}", f"f{k}"),
                Occurrence("W_Q", True, f"e{k}", f"h{k}"), Occurrence("W_K", False, f"o{k}", f"e{k}"),
                Occurrence("X", False, f"q{k}", f"o{k}"),
                Occurrence("X", True, f"b{k}", f"q{k}", "psi", k, True),
                Occurrence("X", True, f"b{k}", "p", "chi", k, True)]
    return Pencil(sides, g, occ, ratios, "r", [(f"b{k}", "b") for k in range(K)], "d", [("b", f"b{k}", 1.0) for k in range(K)])


class TwoPointSystem:
    """The Dyson equation of a pencil with masked token occurrences at the nodes of one rule (module
    docstring); :meth:`stieltjes` iterates it to a fixed point at many w at once.

    Every pairing of an occurrence with one of its transpose is a row of two sparse matrices per pair of
    sides: one gathers the block it reads (summed over the key intervals under both masks when the
    inner side is the key side), one scatters it to eta (on every interval under both masks when the
    outer side is the key side); between them, the product of the two occurrences' weights."""

    def __init__(self, pencil: Pencil, nodes: np.ndarray, weights: np.ndarray, mu1: float, sigma2: float) -> None:
        order = np.argsort(nodes)
        self.p, self.t, self.omega = pencil, nodes[order], weights[order]
        self.mu1, self.sigma2 = mu1, sigma2
        self.K = K = self.t.size
        lengths = np.diff(np.r_[0.0, self.t])  # interval j = (t_{j-1}, t_j]
        self.index = {s: {v: i for i, v in enumerate(vs)} for s, vs in pencil.sides.items()}
        self.side_of = {v: s for s, vs in pencil.sides.items() for v in vs}
        self.size = {s: len(v) for s, v in pencil.sides.items()}
        occ = pencil.occurrences
        self.kind = np.array([{"one": 0, "psi": 1, "chi": 2}[o.weight] for o in occ])
        self.node = np.array([max(o.node, 0) for o in occ])
        j = np.arange(K)
        self.groups = []
        pairs = [(x, y) for x, a in enumerate(occ) for y, b in enumerate(occ) if a.gaussian == b.gaussian and a.transposed != b.transposed]
        for inner in pencil.sides:
            for outer in pencil.sides:
                chosen = [(x, y) for x, y in pairs if self.side_of[occ[x].col] == inner and self.side_of[occ[x].row] == outer]
                if not chosen:
                    continue
                a, b = (np.array(v) for v in zip(*chosen))
                factor = np.array([pencil.gaussians[occ[x].gaussian][2] * pencil.ratios[inner] for x in a])
                mask = np.array([(j <= occ[x].node if occ[x].masked else True) & (j <= occ[y].node if occ[y].masked else True)
                                 for x, y in chosen], dtype=float)
                P, si, so = len(chosen), self.size[inner], self.size[outer]
                read = np.array([self.index[inner][occ[x].col] * si + self.index[inner][occ[y].row] for x, y in chosen])
                write = np.array([self.index[outer][occ[x].row] * so + self.index[outer][occ[y].col] for x, y in chosen])
                rows = np.arange(P)
                if inner == "n":  # sum over the intervals, both masks, lengths as weights
                    pj = np.nonzero(mask)
                    gather = sparse.csr_matrix(((mask * lengths)[pj], (pj[0], pj[1] * si * si + read[pj[0]])), (P, K * si * si))
                else:
                    gather = sparse.csr_matrix((np.ones(P), (rows, read)), (P, si * si))
                if outer == "n":  # onto every interval under both masks
                    pj = np.nonzero(mask)
                    scatter = sparse.csr_matrix((mask[pj], (pj[1] * so * so + write[pj[0]], pj[0])), (K * so * so, P))
                else:
                    scatter = sparse.csr_matrix((np.ones(P), (write, rows)), (so * so, P))
                self.groups.append((inner, outer, a, b, factor, gather, scatter))

    def _weights(self, delta: np.ndarray) -> dict[str, np.ndarray]:
        phi = self.omega / (1 + delta)
        return {"phi": phi, "psi": self.mu1**2 * phi / self.t**2, "chi": self.sigma2 * phi / self.t**2}

    def _lambda(self, side: str, w: np.ndarray) -> np.ndarray:
        """Lambda of a side at the points w, shape (points, size, size) (the key side: per interval too)."""
        lam = np.repeat(-np.eye(self.size[side], dtype=complex)[None], w.size, 0)
        if side == self.side_of[self.p.output]:
            i = self.index[side][self.p.output]
            lam[:, i, i] = -w
        for row, col, c in self.p.links:
            if self.side_of[row] == side:
                lam[:, self.index[side][row], self.index[side][col]] += c
        return np.repeat(lam[:, None], self.K, 1) if side == "n" else lam

    def _eta(self, G: dict[str, np.ndarray], weights: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """eta(G) side by side at every point (docstring of the class)."""
        points = G["n"].shape[0]
        eta = {s: np.zeros((points, (self.K if s == "n" else 1) * self.size[s] ** 2), dtype=complex) for s in self.size}
        coefficient = np.stack([np.ones_like(weights["psi"]), weights["psi"], weights["chi"]], axis=1)  # (points, 3, K)
        for inner, outer, a, b, factor, gather, scatter in self.groups:
            c = coefficient[:, self.kind[a], self.node[a]] * coefficient[:, self.kind[b], self.node[b]] * factor
            values = (gather @ G[inner].reshape(points, -1).T).T * c
            eta[outer] += (scatter @ values.T).T
        return {s: e.reshape(G[s].shape) for s, e in eta.items()}

    def stieltjes(self, w: Sequence[complex], damping: float = 0.5, tol: float = 1e-11, steps: int = 20000) -> tuple[np.ndarray, int]:
        """m at the points w and the steps of the damped fixed-point iteration (ArithmeticError if some point
        did not converge, or landed on Im m > 0). Points close to the real axis are reached from above: the
        iteration runs at Im w = |w|, |w| / 10, ... down to their own Im w, each height started from the
        solution of the one above (a cold start there may land on the conjugate solution)."""
        w = np.asarray(w, dtype=complex)
        lam = {s: self._lambda(s, w) for s in self.p.sides}
        G = {s: np.linalg.inv(lam[s]) for s in lam}
        delta = np.zeros((w.size, self.K), dtype=complex)
        total = 0
        for height in 10.0 ** -np.arange(0, 1 + int(np.ceil(np.log10(np.max(np.abs(w) / w.imag))))):
            at = w.real + 1j * np.maximum(w.imag, height * np.abs(w))
            G, delta, used = self._iterate(at, G, delta, damping, tol, steps)
            total += used
        out = self.side_of[self.p.output]
        o = self.index[out][self.p.output]
        m = -G[out][:, o, o]
        if np.any(m.imag > 1e-9 * np.abs(m)):
            raise ArithmeticError(f"the iteration left the physical solution (Im m > 0) at some of w = {w}")
        return m, total

    def _iterate(self, w: np.ndarray, G: dict[str, np.ndarray], delta: np.ndarray, damping: float, tol: float,
                 steps: int) -> tuple[dict[str, np.ndarray], np.ndarray, int]:
        """The damped fixed-point iteration at w from (G, delta), to a step below ``tol``."""
        lam = {s: self._lambda(s, w) for s in self.p.sides}
        feature, idx = self.p.feature, self.index[self.p.feature]
        reads = (np.array([idx[bk] for bk, _ in self.p.delta]), np.array([idx[b] for _, b in self.p.delta]))
        for step in range(steps):
            weights = self._weights(delta)
            eta = self._eta(G, weights)
            new = {s: np.linalg.inv(lam[s] - eta[s]) for s in lam}
            new_delta = self.p.ratios[feature] * new[feature][:, reads[0], reads[1]] / weights["phi"]
            change = max(max(float(np.max(np.abs(new[s] - G[s]))) for s in G),
                         float(np.max(np.abs(new_delta - delta) / (1 + np.abs(new_delta)))))
            G = {s: damping * new[s] + (1 - damping) * G[s] for s in G}
            delta = damping * new_delta + (1 - damping) * delta
            if change < tol:
                return G, delta, step + 1
        raise ArithmeticError(f"the fixed-point iteration did not converge at some of w = {w} in {steps} steps")


def weightless_by_hand(w: complex, nodes: np.ndarray, weights: np.ndarray, mu1: float, sigma2: float, gamma: float) -> complex:
    """The model without weights, its equations written out (module docstring): an independent check of
    :class:`TwoPointSystem`'s generic pairings."""
    order = np.argsort(nodes)
    t, om = nodes[order], weights[order]
    K = t.size
    dl = np.diff(np.r_[0.0, t])
    ge = np.arange(K)[None, :] >= np.arange(K)[:, None]  # ge[j, k]: node k's mask covers interval j
    delta = np.zeros(K, complex)
    Gd = np.zeros((K + 1, K + 1), complex)
    Gd[0, 0], Gd[1:, 1:] = -1 / w, -np.eye(K)
    for _ in range(5000):
        phi = om / (1 + delta)
        psi, chi = mu1**2 * phi / t**2, sigma2 * phi / t**2
        Dchi = ge @ chi
        grr, grs, gsr, gss = Gd[0, 0], Gd[0, 1:], Gd[1:, 0], Gd[1:, 1:]
        En = np.zeros((K, K + 1, K + 1), complex)
        En[:, 0, 0] = gamma * (grr * Dchi + ge @ grs)
        En[:, 0, 1:] = gamma * grr * psi[None, :] * ge
        En[:, 1:, 0] = gamma * (gsr[None, :] * Dchi[:, None] + (ge[:, None, :] * gss[None, :, :]).sum(-1))
        En[:, 1:, 1:] = gamma * gsr[None, :, None] * (psi[None, None, :] * ge[:, None, :])
        Gn = np.linalg.inv(-np.eye(K + 1)[None] - En)
        wpsi = psi[None, :] * ge
        Ed = np.zeros((K + 1, K + 1), complex)
        Ed[0, 0] = np.sum(dl * (Dchi * Gn[:, 0, 0] + np.einsum("jk,jk->j", wpsi, Gn[:, 1:, 0])))
        Ed[0, 1:] = np.einsum("j,jl->l", dl * Dchi, Gn[:, 0, 1:]) + np.einsum("j,jk,jkl->l", dl, wpsi, Gn[:, 1:, 1:])
        Ed[1:, 0] = ge.T @ (dl * Gn[:, 0, 0])
        Ed[1:, 1:] = ge.T @ (dl[:, None] * Gn[:, 0, 1:])
        Ld = -np.eye(K + 1, dtype=complex)
        Ld[0, 0] = -w
        new = np.linalg.inv(Ld - Ed)
        # tau(B_k^2 R) = (g_{s_k s_k} + 1) / psi_k, tau(B_k R) = g_{s_k r}
        quadratic = mu1**2 * (np.diag(new[1:, 1:]) + 1) / psi if mu1 else 0.0
        new_delta = gamma / t**2 * (quadratic + sigma2 * new[1:, 0])
        change = max(np.max(np.abs(new - Gd)), np.max(np.abs(new_delta - delta)))
        Gd, delta = (new + Gd) / 2, (new_delta + delta) / 2
        if change < 1e-11:
            return complex(-Gd[0, 0])
    raise ArithmeticError(f"no convergence at w = {w}")


def draw(n: int, seed: np.random.SeedSequence, mu1: float, sigma2: float) -> dict[str, np.ndarray]:
    """Spectra of one draw at unit ratios: (w) the weightless model with fresh queries (eigenvalues of
    Y^T Y), (b) and (f) the single head without c_0, own and fresh queries (column-centred Y, as in
    ``causal_parts.py``: tokens N(0, 1), weights N(0, 1 / width), scores / sqrt(d_k), rows / i)."""
    rng = np.random.default_rng(seed)
    rows = np.arange(1, n + 1, dtype=float)[:, None]
    X = rng.standard_normal((n, n))
    G = rng.standard_normal((n, n))
    Z = rng.standard_normal((n, n))
    W_Q, W_K, W_V = (rng.normal(0.0, n**-0.5, (n, n)) for _ in range(3))
    W_O = rng.normal(0.0, n**-0.5, (n, n))
    sigma = math.sqrt(sigma2)
    out = {}
    A = np.tril(mu1 * (G @ X.T) / n + sigma * Z / math.sqrt(n))  # entries of the normalised model
    out["w"] = np.linalg.eigvalsh(((A @ X) / math.sqrt(n) * (n / rows)).T @ ((A @ X) / math.sqrt(n) * (n / rows)))
    VW = (X @ W_V) @ W_O
    K = X @ W_K
    for name, queries in (("b", X), ("f", G)):
        S = np.tril(mu1 * (queries @ W_Q) @ K.T / math.sqrt(n) + sigma * Z)
        Y = (S @ VW) / rows
        Y -= Y.mean(axis=0)
        out[name] = np.linalg.eigvalsh(Y.T @ Y)
    return out


def distribution(system: TwoPointSystem, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """F and the density on an increasing grid of positive points, as docs/solving.md §3.11: the mass up to
    x[0] from one contour integral (a half circle through x[0], Gauss-Legendre in log theta, 8 nodes per
    decade, m constant below the last node), then the density (m at x + 1e-4 x i) integrated in log x."""
    a = max(1.0, float(x[0]))
    centre, radius = (x[0] - a) / 2, (x[0] + a) / 2
    low = np.log(1e-6 * x[0] / radius)
    edges = np.linspace(low, np.log(np.pi), int(np.ceil((np.log(np.pi) - low) / np.log(10))) + 1)
    nodes, weights = legendre.leggauss(8)
    half = np.diff(edges)[:, None] / 2
    theta = np.exp((edges[:-1, None] + half * (nodes + 1)).ravel())
    ds = (half * weights).ravel()
    on_arc = centre + radius * np.exp(1j * theta)
    m = system.stieltjes(np.r_[on_arc, x + 1e-4j * x], tol=1e-9)[0]
    dw = 1j * radius * np.exp(1j * theta) * theta * ds
    dw[0] += 1j * radius * np.exp(low)
    start = float(np.sum(m[: theta.size] * dw).imag / np.pi)
    rho = -m[theta.size:].imag / np.pi
    steps = np.diff(np.log(x))
    f = x * rho
    return start + np.r_[0.0, np.cumsum(steps * (f[1:] + f[:-1]) / 2)], rho


def compare_distribution(levels: Sequence[tuple[int, int]], n: int, draws: int, seed: int, mu1: float, sigma2: float) -> None:
    """Quantiles and KS of the single head's law (per level) against the pooled spectra of (b), and the
    floor: KS between the first draw and the others."""
    x = np.geomspace(1e-4, 1e4, 65)
    spectra = [draw(n, s, mu1, sigma2)["b"] for s in np.random.SeedSequence(seed).spawn(draws)]
    pooled = np.sort(np.concatenate(spectra))
    inside = pooled[(pooled >= x[0]) & (pooled <= x[-1])]
    empirical = np.searchsorted(pooled, inside, side="right") / pooled.size
    first, rest = np.sort(spectra[0]), np.sort(np.concatenate(spectra[1:]))
    floor = np.max(np.abs(np.searchsorted(first, pooled, side="right") / first.size
                          - np.searchsorted(rest, pooled, side="right") / rest.size))
    print(f"n = {n}, {draws} draws of (b): quantiles 0.1, 0.5, 0.9, 0.99 "
          + ", ".join(f"{np.quantile(pooled, q):.4g}" for q in (0.1, 0.5, 0.9, 0.99))
          + f"; F(1e-4) {np.mean(pooled < x[0]):.4f}; KS(one draw, the others) {floor:.4f}")
    unit = {"n": 1.0, "d": 1.0, "dk": 1.0, "dv": 1.0, "dout": 1.0}
    for order, octaves in levels:
        nodes, weights = graded_rule(order, octaves)
        start = time.perf_counter()
        F, _ = distribution(TwoPointSystem(single_head_pencil(nodes.size, unit), nodes, weights, mu1, sigma2), x)
        theory = np.interp(np.log(inside), np.log(x), F)
        ks = max(float(np.max(np.abs(theory - empirical))), abs(F[0] - float(np.mean(pooled < x[0]))))
        quantiles = np.interp([0.1, 0.5, 0.9, 0.99], np.maximum.accumulate(F), x)
        print(f"  law at {nodes.size} nodes ({time.perf_counter() - start:.0f} s): quantiles "
              + ", ".join(f"{q:.4g}" for q in quantiles) + f"; F(1e-4) {F[0]:.4f}; F(1e4) {F[-1]:.4f}; KS {ks:.4f}", flush=True)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, nargs="*", default=[1000, 2000], help="token counts (= every width) of the draws")
    parser.add_argument("--draws", type=int, default=2, help="draws per n")
    parser.add_argument("--seed", type=int, default=7, help="root of numpy's SeedSequence")
    parser.add_argument("--beta", type=float, default=1.0, help="inverse temperature of the softmax score")
    parser.add_argument("--cdf", type=int, nargs=2, action="append", metavar=("ORDER", "OCTAVES"), default=None,
                        help="instead: the distribution function at these levels against (b) at the last --n")
    args = parser.parse_args(argv)
    mu1, sigma2 = args.beta, math.exp(args.beta**2) - 1 - args.beta**2
    if args.cdf:
        compare_distribution([tuple(level) for level in args.cdf], args.n[-1], args.draws, args.seed, mu1, sigma2)
        return
    print(f"mu_1 = {mu1}, sigma^2 = {sigma2:.6f}; m(w) at w = {', '.join(f'{w:g}' for w in POINTS)}")
    for order, octaves in LEVELS:
        nodes, weights = graded_rule(order, octaves)
        K = nodes.size
        start = time.perf_counter()
        generic = TwoPointSystem(weightless_pencil(K, 1.0), nodes, weights, mu1, sigma2)
        mw = generic.stieltjes(POINTS)[0]
        hand = [weightless_by_hand(w, nodes, weights, mu1, sigma2, 1.0) for w in POINTS]
        sh = TwoPointSystem(single_head_pencil(K, {"n": 1.0, "d": 1.0, "dk": 1.0, "dv": 1.0, "dout": 1.0}), nodes, weights, mu1, sigma2)
        ms = sh.stieltjes(POINTS)[0]
        noise = TwoPointSystem(single_head_pencil(K, {"n": 1.0, "d": 1.0, "dk": 1.0, "dv": 1.0, "dout": 1.0}), nodes, weights,
                               0.0, mu1**2 + sigma2)
        mn = noise.stieltjes(POINTS)[0]
        print(f"K = {K} nodes ({time.perf_counter() - start:.1f} s): generic - by hand {max(abs(a - b) for a, b in zip(mw, hand)):.1e}")
        print("  weightless  " + "  ".join(f"{m:.5f}" for m in mw))
        print("  single head " + "  ".join(f"{m:.5f}" for m in ms))
        print("  noise only  " + "  ".join(f"{m:.5f}" for m in mn), flush=True)
    root = np.random.SeedSequence(args.seed)
    for n in args.n:
        spectra = [draw(n, s, mu1, sigma2) for s in root.spawn(args.draws)]
        for name in ("w", "b", "f"):
            ms = np.array([[np.mean(1 / (w - lam[name])) for w in POINTS] for lam in spectra])
            spread = np.max(np.abs(ms - ms.mean(0))) if args.draws > 1 else float("nan")
            print(f"n = {n} ({name}) " + "  ".join(f"{m:.5f}" for m in ms.mean(0)) + f"   spread {spread:.1e}", flush=True)


if __name__ == "__main__":
    main()
