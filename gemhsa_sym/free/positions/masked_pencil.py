"""The linear pencil of a causal layer's covariance operator, with masked token occurrences
(docs/extensions.md §8.6, docs/equations.md §2.11).

Given the tokens and the weights, row t (t = i / n) of the causal Gaussian equivalent without c_0 is
a Gaussian vector (the queries fresh, which leaves the law unchanged) of covariance C_t / n with

    C_t = t^-2 [ mu_1^2 / r_k  A_t^T A_t + sigma^2 sum_h V^hT B_t V^h ],
    A_t = sum_h W_Q^h W_K^hT B_t V^h,  B_t = X^T P_t X,  V^h = W_V^h W_O^h,

X the tokens (n x d, entries N(0, 1/n)), P_t keeping the keys u <= t, r_k = d_k / n. At the nodes
t_k of a rule, H = sum_k phi_k C_k is a polynomial in Gaussian matrices in which the tokens occur
masked (X^T P_k at node k). :class:`MaskedPencil` is its linear pencil written as occurrences: the
equations L x = e, L = Lambda(w) + sum of occurrences, with Lambda = -1 on the diagonal (-w at the
output r) and the deterministic links of :attr:`MaskedPencil.links`; the Schur complement on r is
H - w. Occurrences carry a weight (1, psi_k = mu_1^2 phi_k / (r_k t_k^2) or chi_k = sigma^2 phi_k /
t_k^2) and, for X^T, the mask of their node.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

__all__ = ["WEIGHTS", "Occurrence", "MaskedPencil", "attention_pencil", "heads_pencil", "weightless_pencil"]

#: The weights an occurrence or a link may carry, of its node: 1, psi_k (the masked scores), chi_k (the noise),
#: phi_k and the score factor g_k = mu_1 / (t_k sqrt(r_k)) (the residual stream's cross term).
WEIGHTS: tuple[str, ...] = ("one", "psi", "chi", "phi", "root")


@dataclass(frozen=True)
class Occurrence:
    """A Gaussian (or its transpose) in equation ``row`` acting on variable ``col``, times ``weight`` of node
    ``node`` and the constant ``scale``; ``masked`` multiplies by P_node on the key side (which it reads or writes)."""

    gaussian: str
    transposed: bool
    row: str
    col: str
    weight: str = "one"
    node: int = -1
    masked: bool = False
    scale: float = 1.0

    def __post_init__(self) -> None:
        if self.weight not in WEIGHTS:
            raise ValueError(f"weight: unknown weight {self.weight!r}; choose one of {', '.join(WEIGHTS)}")
        if (self.weight != "one" or self.masked) and self.node < 0:
            raise ValueError(f"node: the occurrence of {self.gaussian} in row {self.row} is weighted or masked, so it needs a node")


@dataclass(frozen=True)
class MaskedPencil:
    """Variables by side (``"n"`` is the key side, where the masks act), the Gaussians (rows side, columns
    side, variance scale s: entries N(0, s / N)), the occurrences, the side ratios (size / n), the
    output variable r, the pairs (b, b') whose tau, each times the ratio of its side, sum to phi_k (1/n) tr(C_k R)
    at node k (:attr:`delta`, one tuple per node), the links (row, column, value) of Lambda off its diagonal, and
    the ``weighted`` links (row, column, value, weight, node) of Lambda whose value is times a node's weight (on the key
    side a link keeps the intervals up to its node, as a masked occurrence does). The output and the pairs may lie on the
    key side (the causal attention matrix, :func:`attention_pencil`): tau there averages the key positions. A pencil of ``exchangeable`` H >= 2 heads may be written for two of them: ``labels``
    then names the head (0 or 1) and the template of every variable and Gaussian of a head, and the equation
    counts every orbit of heads once (docs/solving.md §3.14)."""

    sides: tuple[tuple[str, tuple[str, ...]], ...]
    gaussians: tuple[tuple[str, tuple[str, str, float]], ...]
    occurrences: tuple[Occurrence, ...]
    ratios: tuple[tuple[str, float], ...]
    output: str
    delta: tuple[tuple[tuple[str, str], ...], ...]
    links: tuple[tuple[str, str, float], ...]
    exchangeable: int = 1
    labels: tuple[tuple[str, int, str], ...] = ()
    weighted: tuple[tuple[str, str, float, str, int], ...] = ()

    def __post_init__(self) -> None:
        names = [v for _, vs in self.sides for v in vs]
        if len(names) != len(set(names)):
            raise ValueError("sides: a variable appears on two sides or twice")
        known, sides = set(names), {s for s, _ in self.sides}
        if "n" not in sides:
            raise ValueError("sides: the key side 'n' is missing")
        gaussians = dict(self.gaussians)
        for o in self.occurrences:
            if o.gaussian not in gaussians or {o.row, o.col} - known:
                raise ValueError(f"occurrences: {o.gaussian} in row {o.row}, column {o.col} names an unknown matrix or variable")
            rows, cols, _ = gaussians[o.gaussian]
            want = (cols, rows) if o.transposed else (rows, cols)
            if (self.side_of(o.row), self.side_of(o.col)) != want:
                raise ValueError(f"occurrences: {o.gaussian} in row {o.row}, column {o.col} does not fit its sides")
            if o.masked and "n" not in (self.side_of(o.col), self.side_of(o.row)):
                raise ValueError(f"occurrences: {o.gaussian} in row {o.row} is masked but neither reads nor writes the key side")
        if self.output not in known or any({b, c} - known or self.side_of(b) != self.side_of(c) for pairs in self.delta for b, c in pairs):
            raise ValueError("delta: the pairs of every node must lie on one side each")
        for row, col, _, weight, node in self.weighted:
            if {row, col} - known or self.side_of(row) != self.side_of(col) or weight not in WEIGHTS or not 0 <= node < self.nodes:
                raise ValueError(f"weighted: the link ({row}, {col}) joins unknown variables or two sides, or names an "
                                 f"unknown weight or node")
        self._check_labels(known | set(gaussians))

    def _check_labels(self, names: set[str]) -> None:
        """Labels name known variables or Gaussians, heads 0 and 1 hold the same templates side by side, and an
        occurrence lies in one head."""
        if self.exchangeable < 1:
            raise ValueError(f"exchangeable: at least one head, not {self.exchangeable}")
        for name, label, _ in self.labels:
            if name not in names or label not in (0, 1):
                raise ValueError(f"labels: {name!r} with head {label!r} is no variable or Gaussian of head 0 or 1")
        if self.exchangeable >= 2:
            for side, variables in self.sides:
                heads = [{t for name, label, t in self.labels if name in variables and label == h} for h in (0, 1)]
                if heads[0] != heads[1]:
                    raise ValueError(f"labels: on side {side} the two heads written out hold different templates")
        for o in self.occurrences:
            if len({self.label(x) for x in (o.gaussian, o.row, o.col)} - {None}) > 1:
                raise ValueError(f"labels: {o.gaussian} in row {o.row}, column {o.col} joins two heads")

    @functools.cached_property
    def _labelled(self) -> dict[str, tuple[int, str]]:
        return {name: (label, template) for name, label, template in self.labels}

    def label(self, name: str) -> int | None:
        """The head label of a variable or Gaussian, None for those the heads share."""
        return self._labelled.get(name, (None, None))[0]

    def template(self, name: str) -> str | None:
        """The template a labelled variable or Gaussian copies, None for those the heads share."""
        return self._labelled.get(name, (None, None))[1]

    def side_of(self, variable: str) -> str:
        """The side of ``variable``."""
        return next(s for s, vs in self.sides if variable in vs)

    @property
    def nodes(self) -> int:
        """The number of query nodes the pencil was written for."""
        return len(self.delta)


def weightless_pencil(nodes: int, gamma: float) -> MaskedPencil:
    """H = sum_k psi_k B_k^2 + chi_k B_k on the feature side d (ratio gamma), W = V = I and r_k = 1: the model
    without weights, whose equations docs/equations.md §2.11 also writes out by hand."""
    K = range(nodes)
    d = ("r", *(f"s{k}" for k in K), *(f"b{k}" for k in K), "b")
    occ = [Occurrence("X", False, "p", "r")]
    for k in K:
        occ += [Occurrence("X", True, f"s{k}", "p", node=k, masked=True), Occurrence("X", False, f"q{k}", f"s{k}"),
                Occurrence("X", True, f"b{k}", f"q{k}", "psi", k, True), Occurrence("X", True, f"b{k}", "p", "chi", k, True)]
    return MaskedPencil((("d", d), ("n", ("p", *(f"q{k}" for k in K))),), (("X", ("n", "d", 1.0)),), tuple(occ),
                        (("d", gamma), ("n", 1.0)), "r", tuple(((f"b{k}", "b"),) for k in K),
                        (("r", "b", 1.0), *(("b", f"b{k}", 1.0) for k in K)))


def attention_pencil(nodes: int, ratios: dict[str, float]) -> MaskedPencil:
    """The pencil of H = sum_k phi_k C_k on the key side for the causal attention matrix of one head (docs/equations.md
    §2.11, the attention matrix): row t of sqrt(n) (A - C) is Gaussian given the keys (the query fresh) with covariance C_t / n,
    C_t = t^-2 P_t [mu_1^2 / r_k X W_K W_Q^T W_Q W_K^T X^T + sigma^2] P_t. ``ratios`` of the sides "d" and "d_k" to n.

    Variables, per node k: y_k = X^T P_k r, f_k = W_K^T y_k, a_k = W_Q f_k, e_k = W_Q^T a_k, o_k = W_K e_k,
    b_k = psi_k P_k X o_k + chi_k P_k r (the occurrence of X masked on the key side it writes, the link masked by its
    node), b = sum_k b_k, and in row r: b - w r; tr(C_k R) phi_k / n is tau of the block (b_k, b)."""
    if nodes < 1:
        raise ValueError("nodes: at least one")
    K = range(nodes)
    occ: list[Occurrence] = []
    for k in K:
        occ += [Occurrence("X", True, f"y{k}", "r", node=k, masked=True), Occurrence("W_K", True, f"f{k}", f"y{k}"),
                Occurrence("W_Q", False, f"a{k}", f"f{k}"), Occurrence("W_Q", True, f"e{k}", f"a{k}"),
                Occurrence("W_K", False, f"o{k}", f"e{k}"), Occurrence("X", False, f"b{k}", f"o{k}", "psi", k, True)]
    sides = (("d", tuple(f"{m}{k}" for k in K for m in ("y", "a", "o"))), ("d_k", tuple(f"{m}{k}" for k in K for m in ("f", "e"))),
             ("n", ("r", "b", *(f"b{k}" for k in K))))
    gaussians = (("X", ("n", "d", 1.0)), ("W_Q", ("d", "d_k", 1 / ratios["d"])), ("W_K", ("d", "d_k", 1 / ratios["d"])))
    links = (("r", "b", 1.0), *(("b", f"b{k}", 1.0) for k in K))
    weighted = tuple((f"b{k}", "r", 1.0, "chi", k) for k in K)
    return MaskedPencil(sides, gaussians, tuple(occ), (("d", ratios["d"]), ("d_k", ratios["d_k"]), ("n", 1.0)), "r",
                        tuple(((f"b{k}", "b"),) for k in K), links, weighted=weighted)


def heads_pencil(nodes: int, heads: int, ratios: dict[str, float], reduced: bool = True,
                 groups: dict[str, tuple[int, ...]] | None = None, residual: bool = False, kv: str = "independent",
                 rho: float = 0.0, output: str = "independent",
                 levels: tuple[tuple[float, float], ...] | None = None) -> MaskedPencil:
    """The pencil of H = sum_k phi_k C_k for ``heads`` heads (module docstring): ``ratios`` of the sides "d", "d_k",
    "d_v", "d_out" to n; weights N(0, 1 / (d N)) for W_Q, W_K, W_V and N(0, 1 / (H d_v N)) for W_O, as the
    bidirectional layer's (docs/model.md §1.1). ``groups`` gives, for "q", "k" and "v", the sharing group of each
    head: the heads of a group read one W_Q (W_K, W_V), whose occurrences then pair across them (grouped-query and
    multi-query attention); without it every head has its own.

    Variables, per head h and node k: v1 = W_O r, v = W_V v1, p = X v, s_k = X^T P_k p, f_k = W_K^T s_k;
    a_k = sum_h W_Q f_k (shared by the heads: one query per row), e_k = W_Q^T a_k, o_k = W_K e_k,
    q_k = X o_k, b_k = psi_k X^T P_k q_k + chi_k X^T P_k p, b = sum_k b_k, c = W_V^T b, and in row r:
    sum_h W_O^T c - w r.

    Values and outputs by the rules of docs/model.md §1.8: ``kv`` "tied" reads W_K for W_V, "correlated" rho W_K +
    sqrt(1 - rho^2) W_V (two occurrences of one entry, each with its scale), both with d_v = d_k (v1 and c on the
    side d_k); ``output`` "keys" reads sqrt(d / (H d_v)) W_K^T for W_O (d_out = d, r on the side d).

    ``residual``: the pencil of sum_k phi_k [(I + g_k A_k)^T (I + g_k A_k) + chi_k / phi_k sum_h V^hT B_k V^h], the
    rows' covariance of the residual stream X + alpha Y (d_out = d, r on the side d, alpha taken into the Hermite
    data; docs/equations.md §2.11): y_k = r + g_k a_k and z_k = phi_k y_k on the side d, e_k = g_k W_Q^T y_k,
    b_k = phi_k X^T P_k q_k + chi_k X^T P_k p, and in row r also sum_k z_k.

    ``levels``: token covariance Sigma of spectrum (weight w_b of d, value lambda_b) (docs/extensions.md §8.3): the
    side d splits into d_b = w_b d (sides "d0", "d1", ...), X into the Gaussians X_b of scale lambda_b and W_Q, W_K,
    W_V into their row blocks, every variable of d into its blocks; the query's covariance Sigma puts lambda_b on
    e_k = sum_b lambda_b W_Q,b^T a_k,b, so that H = sum_k psi_k A_k^T Sigma A_k + chi_k sum_h V^hT B_k V^h.

    ``reduced``: two heads written out, labelled, standing for all of them (docs/solving.md §3.14); else every head
    written out. Heads that share a projection are not exchangeable one by one, so their pencil writes every head
    out."""
    if heads < 1 or nodes < 1:
        raise ValueError("heads, nodes: at least one of each")
    group = {x: tuple(range(heads)) if groups is None else tuple(groups[x]) for x in "qkv"}
    if any(len(g) != heads for g in group.values()):
        raise ValueError(f"groups: one sharing group per head, for {heads} heads")
    shared = any(len(set(g)) < heads for g in group.values())
    if shared and reduced:
        raise ValueError("reduced: heads that share a projection are not exchangeable one by one; write every head out")
    if kv not in ("independent", "tied", "correlated") or output not in ("independent", "keys"):
        raise ValueError(f"kv, output: unknown rule {kv!r} or {output!r}")
    out = "d" if residual or output == "keys" else "d_out"
    value = "d_k" if kv != "independent" or output == "keys" else "d_v"
    if (out == "d" and ratios["d_out"] != ratios["d"]) or (value == "d_k" and ratios["d_v"] != ratios["d_k"]):
        raise ValueError("ratios: a residual stream or key-built output needs d_out = d; tied, correlated or key-built "
                         "values or outputs need d_v = d_k")
    if levels is not None and out == "d":
        raise ValueError("levels: a residual stream or key-built output needs d as one side, not split by a token covariance")
    # the blocks of d: (side, suffix of its variables and Gaussians, ratio, lambda)
    blocks = ([("d", "", ratios["d"], 1.0)] if levels is None else
              [(f"d{b}", f".{b}", weight * ratios["d"], lam) for b, (weight, lam) in enumerate(levels)])
    K, Hs = range(nodes), range(min(heads, 2) if reduced else heads)
    labelled: dict[str, tuple[int, str]] = {}

    def own(template: str, h: int) -> str:
        """The name of head h's copy of ``template`` ("{h}" marks the head), labelled for the reduction."""
        labelled[template.format(h=h)] = (h, template.format(h=""))
        return template.format(h=h)

    side_vars: dict[str, list[str]] = {side: [] for side, *_ in blocks}
    side_vars |= {"d_k": [], "n": [], value: side_vars.get(value, []), out: side_vars.get(out, [])}
    gaussians: dict[str, tuple[str, str, float]] = {}
    occ: list[Occurrence] = []
    for side, x, _, lam in blocks:
        side_vars[side] += [f"a{k}{x}" for k in K]
        gaussians[f"X{x}"] = ("n", side, lam)
    for h in Hs:
        Q, Kh, V = (f"W_{m.upper()}{group[m][h] if shared else h}" for m in "qkv")
        side_vars[value] += [own("v1{h}", h), own("c{h}", h)]
        side_vars["n"] += [own("p{h}", h)] + [own(f"q{{h}}_{k}", h) for k in K]
        side_vars["d_k"] += [own(f"{m}{{h}}_{k}", h) for k in K for m in ("f", "e")]
        if output != "keys":
            gaussians[own("W_O{h}", h)] = (value, out, 1 / (heads * ratios["d_v"]))
        for side, x, _, lam in blocks:
            side_vars[side] += [own(f"{m}{{h}}{x}", h) for m in ("v", "b")] + [own(f"{m}{{h}}_{k}{x}", h) for k in K for m in ("s", "o", "b")]
            for W in (Q, Kh) + ((V,) if kv != "tied" else ()):
                gaussians[W + x] = (side, value if W == V else "d_k", 1 / ratios["d"])
                if not shared:
                    own(W.removesuffix(str(h)) + "{h}" + x, h)
            values = {"independent": ((V + x, 1.0),), "tied": ((Kh + x, 1.0),),
                      "correlated": ((Kh + x, rho), (V + x, math.sqrt(1 - rho**2)))}[kv]
            occ += [Occurrence(W, False, f"v{h}{x}", f"v1{h}", scale=scale) for W, scale in values]
            occ += [Occurrence(W, True, f"c{h}", f"b{h}{x}", scale=scale) for W, scale in values]
            occ += [Occurrence(f"X{x}", False, f"p{h}", f"v{h}{x}")]
            for k in K:
                y = f"{h}_{k}{x}"
                query = (Occurrence(Q + x, True, f"e{h}_{k}", f"y{k}", "root", k) if residual else
                         Occurrence(Q + x, True, f"e{h}_{k}", f"a{k}{x}", scale=lam))
                occ += [Occurrence(f"X{x}", True, f"s{y}", f"p{h}", node=k, masked=True),
                        Occurrence(Kh + x, True, f"f{h}_{k}", f"s{y}"), Occurrence(Q + x, False, f"a{k}{x}", f"f{h}_{k}"), query,
                        Occurrence(Kh + x, False, f"o{y}", f"e{h}_{k}"), Occurrence(f"X{x}", False, f"q{h}_{k}", f"o{y}"),
                        Occurrence(f"X{x}", True, f"b{y}", f"q{h}_{k}", "phi" if residual else "psi", k, True),
                        Occurrence(f"X{x}", True, f"b{y}", f"p{h}", "chi", k, True)]
        outputs = ((f"W_O{h}", False, 1.0),) if output != "keys" else ((Kh, True, math.sqrt(ratios["d"] / (heads * ratios["d_v"]))),)
        occ += [Occurrence(O, t, f"v1{h}", "r", scale=scale) for O, t, scale in outputs]
        occ += [Occurrence(O, not t, "r", f"c{h}", scale=scale) for O, t, scale in outputs]
    side_vars[out] += ["r"] + ([f"{m}{k}" for k in K for m in ("y", "z")] if residual else [])
    links = tuple((f"b{h}{x}", f"b{h}_{k}{x}", 1.0) for h in Hs for k in K for _, x, _, _ in blocks)
    links += tuple(link for k in K for link in ((f"y{k}", "r", 1.0), ("r", f"z{k}", 1.0))) if residual else ()
    weighted = tuple(link for k in K for link in ((f"y{k}", f"a{k}", 1.0, "root", k), (f"z{k}", f"y{k}", 1.0, "phi", k))
                     if residual)
    # tr(C_k R) = sum over heads h, h' and blocks of d of tau of the block (b_k of h', b of h): the mu_1 part couples
    # the heads; the residual stream's phi_k (I + g_k A_k) adds tau of the block (z_k, r)
    delta = tuple(tuple((f"b{g}_{k}{x}", f"b{h}{x}") for _, x, _, _ in blocks for g in Hs for h in Hs)
                  + (((f"z{k}", "r"),) if residual else ()) for k in K)
    order = ["d_out", "d_v", *(side for side, *_ in blocks), "d_k", "n"]
    sides = tuple((side, tuple(side_vars[side])) for side in order if side_vars.get(side))
    side_ratio = {**ratios, **{side: ratio for side, _, ratio, _ in blocks}, "n": 1.0}
    side_ratios = tuple((side, side_ratio[side]) for side, _ in sides)
    if not reduced:
        return MaskedPencil(sides, tuple(gaussians.items()), tuple(occ), side_ratios, "r", delta, links, weighted=weighted)
    labels = tuple((name, h, template) for name, (h, template) in labelled.items())
    return MaskedPencil(sides, tuple(gaussians.items()), tuple(occ), side_ratios, "r", delta, links, heads, labels, weighted)
