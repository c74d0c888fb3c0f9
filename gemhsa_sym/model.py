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

import sympy as sp
from sympy.matrices.expressions import MatrixExpr

from .config import Config
from .free.exchangeable import ExchangeableSum
from .free.matrices import Dim, Gaussian
from .hermite import HermiteData, hermite_data
from .parse import to_number
from .rules import OUTPUT_RULES, VALUE_RULES

__all__ = ["MU1", "SIGMA", "GaussianEquivalent", "gaussian_equivalent"]

#: The Gaussian-equivalence coefficients as symbols of the model (docs/model.md §1.5).
MU1 = sp.Symbol("mu_1", real=True)
SIGMA = sp.Symbol("sigma", nonnegative=True)


@dataclass(frozen=True)
class GaussianEquivalent:
    """The Gaussian-equivalent model: an exchangeable head sum or an explicit polynomial in mu_1, sigma."""

    model: ExchangeableSum | MatrixExpr
    ratios: dict[Dim, sp.Expr]
    coefficients: HermiteData
    #: One head's term, and its Gaussians by role (X, W_Q, W_K, W_V, W_O, Z; None where a rule
    #: draws no matrix of its own; with orthonormal tokens X is None and W_Q, W_K, W_V stand for
    #: the projected tokens Q, K, V): what the sampler realises head by head.
    template: MatrixExpr
    roles: dict[str, Gaussian | None]

    @property
    def values(self) -> dict[sp.Symbol, sp.Expr]:
        """The values of mu_1 and sigma."""
        return {MU1: self.coefficients.mu1, SIGMA: sp.sqrt(self.coefficients.sigma2)}


def _exact(coefficient: sp.Expr) -> sp.Expr:
    """The symbolic reading of a rule's coefficient: itself."""
    return coefficient


def _level(partition: tuple[tuple[int, ...], ...]) -> tuple[str, int]:
    """('head'|'group'|'global'|'irregular', number of groups) of a sharing partition."""
    sizes = {len(g) for g in partition}
    if sizes == {1}:
        return "head", len(partition)
    if len(partition) == 1:
        return "global", 1
    return ("group", len(partition)) if len(sizes) == 1 else ("irregular", len(partition))


def gaussian_equivalent(config: Config, heads: int | sp.Symbol | None = None) -> GaussianEquivalent:
    """The polynomial of the module docstring for ``config`` (``heads`` may be a SymPy symbol)."""
    coeff = hermite_data(config.score, config.beta, config.normalisation)
    H = sp.Integer(config.heads) if heads is None else heads if isinstance(heads, sp.Expr) else to_number(heads, "heads")
    r = config.ratios()
    n, d, d_k = Dim("n"), Dim("d"), Dim("d_k")
    value_rule, output_rule = VALUE_RULES[config.kv], OUTPUT_RULES[config.output]
    d_v = d_k if value_rule.follows_keys or output_rule.from_keys else Dim("d_v")
    d_out = d if output_rule.from_keys or config.residual is not None else Dim("d_out")
    ratios = {n: sp.S.One, d: r["d"], d_k: r["d_k"], d_v: r["d_v"], d_out: r["d_out"]}
    if d_v == d_k:
        ratios[d_k] = r["d_k"]
    if heads is not None and isinstance(heads, sp.Symbol):  # per-head width follows H d_k = d
        if r["d_k"] * config.heads == r["d"]:
            ratios[d_k] = r["d"] / H
            if d_v != d_k:
                ratios[d_v] = r["d"] / H
    Z = Gaussian("Z", n, n)
    mu, sigma = MU1, SIGMA
    WO = Gaussian("W_O", d_v, d_out, 1 / (H * ratios[d_v])) if output_rule.fresh else None
    if config.tokens == "orthonormal":  # X W is iid Gaussian: Q, K, V directly (docs/extensions.md §8.2)
        X = None
        WQ, WK = Gaussian("Q", n, d_k), Gaussian("K", n, d_k)
        WV = Gaussian("V", n, d_v) if value_rule.fresh else None
        values = value_rule.make(WK, WV, config.rho, _exact)
        bracket = mu / sp.sqrt(ratios[d_k]) * WQ * WK.T + sigma * Z
        ratios = {key: value for key, value in ratios.items() if key != d}
    else:
        X = Gaussian("X", n, d)
        WQ = Gaussian("W_Q", d, d_k, 1 / ratios[d])
        WK = Gaussian("W_K", d, d_k, 1 / ratios[d])
        WV = Gaussian("W_V", d, d_v, 1 / ratios[d]) if value_rule.fresh else None
        values = X * value_rule.make(WK, WV, config.rho, _exact)
        bracket = mu / sp.sqrt(ratios[d_k]) * X * WQ * WK.T * X.T + sigma * Z
    out = output_rule.make(WK, WO, sp.sqrt(r["d"] / (H * ratios[d_v])), _exact)
    if config.target == "attention":  # sqrt(n) (A - J): the bracket itself, one head (docs/extensions.md §8.1)
        template = bracket
        WV = WO = None
        ratios = {key: value for key, value in ratios.items() if key in (n, d, d_k)}
    else:
        template = bracket * values * out
        if config.residual is not None:  # R / sqrt(n) = X + alpha Y, X shared by the heads (docs/extensions.md §8.4)
            template = X / H + config.residual * template
    roles = {"X": X, "W_Q": WQ, "W_K": WK, "W_V": WV, "W_O": WO, "Z": Z}
    lq, gq = _level(config.share_q)
    lk, gk = _level(config.share_k)
    lv, gv = _level(config.share_v)
    grouped = {(lvl, g, part) for lvl, g, part in ((lq, gq, config.share_q), (lk, gk, config.share_k), (lv, gv, config.share_v)) if lvl == "group"}
    regular = "irregular" not in (lq, lk, lv) and len({part for *_, part in grouped}) <= 1
    if not regular:
        return GaussianEquivalent(_explicit(config, template, X, WQ, WK, WV, WO, Z), ratios, coeff, template, roles)
    G = sp.Integer(next(iter(grouped))[1]) if grouped else sp.S.One
    levels = ([] if X is None else [(X, "global")]) + [(Z, "head"), (WQ, lq), (WK, lk)]
    if WV is not None:
        levels.append((WV, lv))
    if WO is not None:
        levels.append((WO, "head"))
    return GaussianEquivalent(ExchangeableSum(template, G, H / G, tuple(levels)), ratios, coeff, template, roles)


def _explicit(config: Config, template: MatrixExpr, X: Gaussian | None, WQ: Gaussian, WK: Gaussian, WV: Gaussian | None, WO: Gaussian | None, Z: Gaussian) -> MatrixExpr:
    """The head-by-head sum, one symbol per sharing group (sharing patterns without exchangeable heads)."""
    terms = []
    for h in range(config.heads):
        sub = {
            WQ: Gaussian(f"W_Q^{{({config.group_of('q', h) + 1})}}", WQ.rows, WQ.cols, WQ.scale),
            WK: Gaussian(f"W_K^{{({config.group_of('k', h) + 1})}}", WK.rows, WK.cols, WK.scale),
            Z: Gaussian(f"Z^{{({h + 1})}}", Z.rows, Z.cols, Z.scale),
        }
        if WV is not None:
            sub[WV] = Gaussian(f"W_V^{{({config.group_of('v', h) + 1})}}", WV.rows, WV.cols, WV.scale)
        if WO is not None:
            sub[WO] = Gaussian(f"W_O^{{({h + 1})}}", WO.rows, WO.cols, WO.scale)
        terms.append(template.xreplace(sub))
    return sp.MatAdd(*terms).doit()
