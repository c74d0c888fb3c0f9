"""From a configuration to its Gaussian-equivalent polynomial (docs/model.md §1.7).

In the engine's normalisation (every Gaussian has entries N(0, scale/N),
N = n) the centered output of docs/model.md §1.1 with n A^h replaced by
c_0 11^T + mu_1 S0^h + sigma Z^h is, up to a rank-one term,

    Y = sum_h (mu_1 / sqrt(a_dk) X W_Q^h W_K^hT X^T + sigma Z^h) X V^h W_O^h

with the symbols mu_1 and sigma (their values are the score's Hermite data)

with X (n x d, scale 1), W_Q, W_K (d x d_k, scale 1/a_d), W_V (d x d_v,
scale 1/a_d), W_O^h (d_v x d_out, scale 1/(H a_dv)), Z^h (n x n, scale 1),
and the spectral object Y_c^T Y_c / n has the law of Y^T Y. Sharing and
dependence are expressed by which symbols are the same matrix: tied
V^h = W_K^h, correlated V^h = rho W_K^h + sqrt(1 - rho^2) W'^h, key-built
output W_O^h = sqrt(a_d/(H a_dv)) W_K^hT.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import sympy as sp
from sympy.matrices.expressions import MatrixExpr

from gemhsa_sym.free.expressions.exchangeable import ExchangeableSum
from gemhsa_sym.free.expressions.matrices import Dim, Gaussian
from gemhsa_sym.layer.config import Config
from gemhsa_sym.layer.hermite import HermiteData, hermite_data
from gemhsa_sym.layer.modes import OUTPUT_RULES, VALUE_RULES
from gemhsa_sym.parse import to_number

__all__ = ["HEADS", "MU1", "SIGMA", "GaussianEquivalent", "gaussian_equivalent", "head_sum"]

#: The Gaussian-equivalence coefficients as symbols of the model (docs/model.md §1.5).
MU1 = sp.Symbol("mu_1", real=True)
SIGMA = sp.Symbol("sigma", nonnegative=True)
#: The number of heads of a configuration with infinitely many, whose value is oo (docs/extensions.md §8.5).
HEADS = sp.Symbol("H", positive=True, integer=True)


@dataclass(frozen=True)
class GaussianEquivalent:
    """The Gaussian-equivalent model: an exchangeable head sum or an explicit polynomial in mu_1, sigma."""

    model: ExchangeableSum | MatrixExpr
    ratios: dict[Dim, sp.Expr]
    coefficients: HermiteData
    #: One head's term, and its Gaussians by role: X, W_Q, W_K, W_V (tuples, one per token block;
    #: empty where a rule draws no matrix of its own; with orthonormal tokens X is empty and W_Q,
    #: W_K, W_V hold the projected tokens Q, K, V), W_O (None where the rule draws none) and Z:
    #: what the sampler realises head by head.
    template: MatrixExpr
    roles: dict[str, Any]
    #: The standard deviation of the score entries: the coefficient of S0 is mu_1 / score_scale
    #: (docs/extensions.md §8.3).
    score_scale: sp.Expr = sp.Integer(1)
    #: Whether the model is the limit of infinitely many heads: :data:`HEADS` has the value oo.
    limit: bool = False

    @property
    def values(self) -> dict[sp.Symbol, sp.Expr]:
        """The values of mu_1 and sigma (mu_1 per unit of the scores' standard deviation), and H = oo for the
        limit of infinitely many heads."""
        heads = {HEADS: sp.oo} if self.limit else {}
        return {MU1: self.coefficients.mu1 / self.score_scale, SIGMA: sp.sqrt(self.coefficients.sigma2), **heads}


def _exact(coefficient: sp.Expr) -> sp.Expr:
    """The symbolic reading of a rule's coefficient: itself."""
    return coefficient


def _level(partition: tuple[tuple[int, ...], ...] | str) -> tuple[str, int]:
    """('head'|'group'|'global'|'irregular', number of groups) of a sharing partition (or of its keyword,
    for infinitely many heads)."""
    if isinstance(partition, str):
        return ("head", 0) if partition == "independent" else ("global", 1)
    sizes = {len(g) for g in partition}
    if sizes == {1}:
        return "head", len(partition)
    if len(partition) == 1:
        return "global", 1
    return ("group", len(partition)) if len(sizes) == 1 else ("irregular", len(partition))


@dataclass(frozen=True)
class _Tokens:
    """How one head's queries, keys and values are written (docs/model.md §1.7, docs/extensions.md §8.2,
    §8.3): the Gaussians shared by every head (the tokens), the per-head Gaussians of the queries, keys
    and values (one per token block), and Q, K (n x d_k) and V (n x d_v) as expressions in them."""

    shared: tuple[Gaussian, ...]
    query: tuple[Gaussian, ...]
    key: tuple[Gaussian, ...]
    value: tuple[Gaussian, ...]
    Q: MatrixExpr
    K: MatrixExpr
    V: MatrixExpr
    #: W_K, for an output built from the keys (None where the tokens do not allow one)
    key_weight: Gaussian | None


def _tokens(config: Config, dims: dict[str, Dim], ratios: dict[Dim, sp.Expr]) -> _Tokens:
    """The :class:`_Tokens` of ``config``; new dimension groups (token blocks) are added to ``ratios``."""
    n, d, d_k, d_v = dims["n"], dims["d"], dims["d_k"], dims["d_v"]
    rule = VALUE_RULES[config.kv]
    if config.token_rule.projected:  # X W is iid Gaussian: Q, K, V directly
        Q, K = Gaussian("Q", n, d_k), Gaussian("K", n, d_k)
        V = Gaussian("V", n, d_v) if rule.fresh else None
        return _Tokens((), (Q,), (K,), () if V is None else (V,), Q, K, rule.make(K, V, config.rho, _exact), None)
    spectrum = config.token_covariance or ((sp.Integer(1), sp.Integer(1)),)
    widths = [d] if config.token_covariance is None else [Dim(f"d_{b + 1}") for b in range(len(spectrum))]
    for width, (_, weight) in zip(widths, spectrum):
        ratios[width] = weight * ratios[d]
    X = tuple(Gaussian("X" if len(widths) == 1 else f"X_{b + 1}", n, w, value)
              for b, (w, (value, _)) in enumerate(zip(widths, spectrum)))
    suffix = [""] if len(widths) == 1 else [f"_{b + 1}" for b in range(len(widths))]
    WQ = tuple(Gaussian(f"W_Q{t}", w, d_k, 1 / ratios[d]) for t, w in zip(suffix, widths))
    WK = tuple(Gaussian(f"W_K{t}", w, d_k, 1 / ratios[d]) for t, w in zip(suffix, widths))
    WV = tuple(Gaussian(f"W_V{t}", w, d_v, 1 / ratios[d]) for t, w in zip(suffix, widths)) if rule.fresh else ()
    Q = sp.Add(*[x * w for x, w in zip(X, WQ)])
    K = sp.Add(*[x * w for x, w in zip(X, WK)])
    V = sp.Add(*[x * rule.make(k, v, config.rho, _exact) for x, k, v in zip(X, WK, WV or (None,) * len(X))])
    return _Tokens(X, WQ, WK, WV, Q, K, V, WK[0] if len(widths) == 1 else None)


def gaussian_equivalent(config: Config, heads: int | sp.Symbol | None = None) -> GaussianEquivalent:
    """The polynomial of the module docstring for ``config`` (``heads`` may be a SymPy symbol; with infinitely
    many heads it is :data:`HEADS`, valued oo); a causal layer has none (docs/extensions.md §8.6) and is
    refused with the reason."""
    if config.mask_rule.causal:
        raise NotImplementedError(
            "mask: the Gaussian equivalent of a causal layer masks its scores entrywise and normalises row i by 1/i, "
            "which no polynomial in Gaussian matrices expresses; its law is a model with variance profiles "
            "(gemhsa_sym.laws.causal, built for scores with mu_1 = 0; docs/extensions.md §8.6)"
        )
    scale = config.score_scale
    coeff = hermite_data(config.score, config.beta * scale, config.normalisation)
    if config.infinite_heads and heads is None:
        heads = HEADS
    H = sp.Integer(config.heads) if heads is None else heads if isinstance(heads, sp.Expr) else to_number(heads, "heads")
    r = config.ratios()
    n, d, d_k = Dim("n"), Dim("d"), Dim("d_k")
    value_rule, output_rule = VALUE_RULES[config.kv], OUTPUT_RULES[config.output]
    d_v = d_k if value_rule.follows_keys or output_rule.from_keys else Dim("d_v")
    d_out = d if output_rule.from_keys or config.residual is not None else Dim("d_out")
    ratios = {n: sp.S.One, d: r["d"], d_k: r["d_k"], d_v: r["d_v"], d_out: r["d_out"]}
    if d_v == d_k:
        ratios[d_k] = r["d_k"]
    if config.infinite_heads:  # H d_k = H d_v = d where a per-head width is left out
        for dim, key in ((d_k, "d_k"), (d_v, "d_v")):
            if r[key] is None:
                ratios[dim] = r["d"] / H
    elif heads is not None and isinstance(heads, sp.Symbol):  # per-head width follows H d_k = d
        if r["d_k"] * config.heads == r["d"]:
            ratios[d_k] = r["d"] / H
            if d_v != d_k:
                ratios[d_v] = r["d"] / H
    tokens = _tokens(config, {"n": n, "d": d, "d_k": d_k, "d_v": d_v}, ratios)
    Z = Gaussian("Z", n, n)
    WO = Gaussian("W_O", d_v, d_out, 1 / (H * ratios[d_v])) if output_rule.fresh else None
    out = output_rule.make(tokens.key_weight, WO, sp.sqrt(r["d"] / (H * ratios[d_v])), _exact)
    bracket = MU1 / sp.sqrt(ratios[d_k]) * tokens.Q * tokens.K.T + SIGMA * Z
    values, used = tokens.value, [n, d_k, *(g.cols for g in tokens.shared)]
    if not config.target_rule.output_side:  # sqrt(n) (A - J): the bracket itself, one head (docs/extensions.md §8.1)
        template, values, WO = bracket, (), None
    else:
        template = bracket * tokens.V * out
        used += [d_v, d_out]
        if config.residual is not None:  # R / sqrt(n) = X + alpha Y, X shared by the heads (docs/extensions.md §8.4)
            template = tokens.shared[0] / H + config.residual * template
    ratios = {key: value for key, value in ratios.items() if key in used}
    roles = {"X": tokens.shared, "W_Q": tokens.query, "W_K": tokens.key, "W_V": values, "W_O": WO, "Z": Z}
    lq, gq = _level(config.share_q)
    lk, gk = _level(config.share_k)
    lv, gv = _level(config.share_v)
    grouped = {(lvl, g, part) for lvl, g, part in ((lq, gq, config.share_q), (lk, gk, config.share_k), (lv, gv, config.share_v)) if lvl == "group"}
    regular = "irregular" not in (lq, lk, lv) and len({part for *_, part in grouped}) <= 1
    if not regular:
        return GaussianEquivalent(head_sum(config, template, roles), ratios, coeff, template, roles, scale)
    limit = config.infinite_heads and heads is HEADS
    G = sp.Integer(next(iter(grouped))[1]) if grouped else sp.S.One
    levels = [(x, "global") for x in tokens.shared] + [(Z, "head")] + [(g, lq) for g in tokens.query]
    levels += [(g, lk) for g in tokens.key] + [(g, lv) for g in values] + ([] if WO is None else [(WO, "head")])
    return GaussianEquivalent(ExchangeableSum(template, G, H / G, tuple(levels)), ratios, coeff, template, roles, scale,
                              limit)


def head_sum(config: Config, template: MatrixExpr, roles: dict[str, Any]) -> MatrixExpr:
    """The head-by-head sum, one symbol per sharing group (sharing patterns without exchangeable heads)."""
    terms = []
    for h in range(config.heads):
        sub = {roles["Z"]: Gaussian(f"Z^{{({h + 1})}}", roles["Z"].rows, roles["Z"].cols, roles["Z"].scale)}
        for role, which in (("W_Q", "q"), ("W_K", "k"), ("W_V", "v")):
            group = config.group_of(which, h) + 1
            sub |= {g: Gaussian(f"{g.name}^{{({group})}}", g.rows, g.cols, g.scale) for g in roles[role]}
        if roles["W_O"] is not None:
            WO = roles["W_O"]
            sub[WO] = Gaussian(f"W_O^{{({h + 1})}}", WO.rows, WO.cols, WO.scale)
        terms.append(template.xreplace(sub))
    return sp.MatAdd(*terms).doit()
