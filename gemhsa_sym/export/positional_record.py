"""The library records of the laws of the positional Dyson equation (docs/exports.md §5.5): a causal layer's, and a
network's read after layer 2 (key weights): what ``derive`` reports of it, its distribution function, and probes that
check the equations in seconds.

A causal law costs minutes (docs/solving.md §3.13), so a check does not recompute it. It reads
the committed table back as a distribution function (validated as a cached law is), regenerates
every other field from the configuration and that table (coefficients, equations in words,
quantiles, the mass below the grid, the tail), and solves m(w) again at the probe points on the
first level of the discretisation, where the committed values must be met to :data:`PROBE_TOL`:
a change in the equations or their solver moves them far more. A key-weighted law is checked the same way, and its
moments, contour integrals of m(w) that take seconds, are computed again.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import sympy as sp

from gemhsa_sym.export.latex import broken_sum, decimals, entry, named_terms
from gemhsa_sym.free.expressions.matrices import NORMAL
from gemhsa_sym.free.positions.distribution_function import Distribution
from gemhsa_sym.free.positions.profiled_law import LeveledModel
from gemhsa_sym.free.positions.profiles import T
from gemhsa_sym.free.positions.two_point_solver import LEVELS, MaskedScoresModel
from gemhsa_sym.laws.causal import NOISE_PROFILE, REPORT_TOL, causal_model, causal_report
from gemhsa_sym.laws.positional import validated_distribution
from gemhsa_sym.layer.config import Config
from gemhsa_sym.layer.hermite import hermite_data
from gemhsa_sym.layer.network import Network
from gemhsa_sym.layer.network_equivalent import NetworkEquivalent

__all__ = ["PROBES", "PROBE_TOL", "causal_latex", "causal_record", "key_weighted_latex", "key_weighted_record", "record_law",
           "probes", "probe_differences"]

#: Points of the upper half plane where the record keeps m(w) on the first level.
PROBES: tuple[complex, ...] = (0.2 + 0.5j, 1 + 1j, 5 + 2j, 20 + 5j)
#: Relative agreement asked of the probes (the iteration stops at a change of 1e-9).
PROBE_TOL = 1e-6


def probes(model: LeveledModel) -> dict[str, Any]:
    """m(w) at :data:`PROBES` on the first level of a positional ``model``, with that level's nodes."""
    w = np.array(PROBES)
    levels = model.levels(w, 0.0)
    _, nodes, m, _ = next(levels)
    levels.close()
    return {"w": [[z.real, z.imag] for z in w], "m": [[float(z.real), float(z.imag)] for z in m], "nodes": nodes}


def causal_latex(config: Config) -> dict[str, list[str]]:
    """The formulas of the record, printed by SymPy: the Gaussian-equivalence coefficients, a row of the causal
    Gaussian equivalent, and the equations of its law (docs/equations.md §2.9, §2.11); and the sentences a document
    gives in words with their formulas typeset (the equation of a noise profile, why the two-point law has no tail
    exponent, why no moments)."""
    c = hermite_data(config.score, config.beta * config.score_scale, config.normalisation)
    c0, mu1, sigma, r_k, t, u, w = sp.symbols("c_0 mu_1 sigma r_k t u w", positive=True)
    i, j, k, H = sp.symbols("i j k H", integer=True, positive=True)
    S0, Z, A_ij = sp.IndexedBase("S^{0}"), sp.IndexedBase("Z"), sp.IndexedBase("A")
    row = sp.Eq(A_ij[i, j], (c0 + mu1 * S0[i, j] + sigma * Z[i, j]) / i, evaluate=False)
    coefficients = [sp.latex(sp.Eq(x, value, evaluate=False)) for x, value in ((c0, c.c0), (mu1, c.mu1), (sigma**2, c.sigma2))]
    equivalent = [sp.latex(row) + r", \quad j \le i"]
    n, d = sp.symbols("n d", integer=True, positive=True)
    if isinstance(causal_model(config), MaskedScoresModel):
        A, B, R = (sp.MatrixSymbol(x, d, d) for x in ("A_t", "B_t", "R"))
        V = sp.MatrixSymbol("V^{(h)}", d, d)
        WQ, WK, WV, WO = (sp.MatrixSymbol(f"W_{x}^{{(h)}}", d, d) for x in "QKVO")
        X, P = sp.MatrixSymbol("X", n, d), sp.MatrixSymbol("P_t", n, n)
        total = rf"\sum_{{h=1}}^{{{sp.latex(sp.Integer(config.heads))}}}"
        C = sp.MatrixSymbol("C_t", d, d)
        phi, omega, delta = (sp.IndexedBase(x) for x in (r"\phi", r"\omega", r"\delta"))
        if not config.target_rule.output_side:  # the attention matrix: rows on the key positions (docs/equations.md §2.11)
            Cn, Pn, Wn = sp.MatrixSymbol("C_t", n, n), sp.MatrixSymbol("P_t", n, n), sp.MatrixSymbol("W", d, d)
            covariance = (sp.latex(Cn) + " = " + sp.latex(1 / t**2) + sp.latex(Pn) + r"\Bigl(" + sp.latex(mu1**2 / r_k * X * Wn * X.T)
                          + " + " + sp.latex(sigma**2) + r"\Bigr)" + sp.latex(Pn) + r",\quad " + sp.latex(Wn) + " = "
                          + sp.latex(WK * WQ.T * WQ * WK.T))
            u = sp.Symbol("u", positive=True)
            keys = (sp.latex(P) + r" = \operatorname{diag}\bigl(\mathbf{1}\{u \le t\}\bigr),\quad \tau(R) = "
                    + sp.latex(sp.Integral(sp.Function("R")(u, u), (u, 0, 1))))
        elif config.token_covariance is not None:  # queries of covariance Sigma, the coefficient of S0 mu_1 / s
            Sigma, scale = sp.MatrixSymbol(r"\Sigma", d, d), sp.Symbol("s", positive=True)
            covariance = (sp.latex(C) + " = " + sp.latex(1 / t**2) + r"\Bigl(" + sp.latex(mu1**2 / (scale**2 * r_k) * A.T * Sigma * A)
                          + " + " + sp.latex(sigma**2) + total + sp.latex(V.T * B * V) + r"\Bigr),\quad "
                          + sp.latex(scale) + r" = \operatorname{tr}(\Sigma) / d = " + sp.latex(config.score_scale))
        elif config.residual is None:
            covariance = (sp.latex(C) + " = " + sp.latex(1 / t**2) + r"\Bigl(" + sp.latex(mu1**2 / r_k * A.T * A) + " + "
                          + sp.latex(sigma**2) + total + sp.latex(V.T * B * V) + r"\Bigr)")
        else:  # the residual stream X + alpha Y: rows x_t (I + alpha M_t) plus alpha times the noise
            alpha, I = sp.Symbol(r"\alpha", positive=True), sp.Identity(d)
            M = sp.MatMul(alpha * mu1 / (t * sp.sqrt(r_k)), A)
            covariance = (sp.latex(C) + " = " + sp.latex((I + M).T * (I + M)) + " + " + sp.latex(alpha**2 * sigma**2 / t**2)
                          + total + sp.latex(V.T * B * V) + r",\quad " + sp.latex(sp.Eq(alpha, config.residual)))
        if config.target_rule.output_side:
            keys = (sp.latex(A) + " = " + total + sp.latex(WQ * WK.T * B * V) + r",\quad " + sp.latex(sp.Eq(B, X.T * P * X))
                    + r",\quad " + sp.latex(sp.Eq(V, _values(config, WK, WV) * _outputs(config, WK, WO)))
                    + (r",\quad \rho = " + sp.latex(config.rho) if config.kv == "correlated" else ""))
        equations = [
            covariance,
            keys,
            sp.latex(sp.Eq(phi[k], omega[k] / (1 + delta[k]))) + r",\quad " + sp.latex(delta[k]) + " = "
            + sp.latex(1 / n) + r"\operatorname{tr}\bigl(C_{t_k} R\bigr),\quad " + sp.latex(R) + r" = \Bigl(\sum_{k} "
            + sp.latex(phi[k]) + r" C_{t_k} - w\Bigr)^{-1},\quad m(w) = -\tau(R)",
        ]
        words = []
        tail = [rf"the two-point levels grade the query positions over {LEVELS[0][1]} octaves, and the largest eigenvalues "
                rf"come from the rows of the smallest positions (variance ${sp.latex(1 / t**2)}$): the law's tail above "
                r"about $10^{3}$ is cut, within the tolerance of $F$ but not in its exponent"]
    else:
        equations = [r"s(t, u) = " + sp.latex(sp.Piecewise((NOISE_PROFILE.row.subs(T, t), u <= t), (0, True)))]
        words = [r"the Dyson equation of the pencil with $g_{ab}(t)$ for the blocks on the token positions and "
                 r"$\eta(t) = \mathrm{row}(t) \int_0^t g(u)\, du$"]
        tail = []
    moments = [r"the law has a heavy tail, $P(\lambda > x) \sim c\, x^{-\kappa}$ with $\kappa$ near 1 (row $i$ of the "
               r"noise has variance $n / i$), so its mean and every higher moment diverge"]
    return {"coefficients": coefficients, "equivalent": equivalent, "equations": equations, "equation": words,
            "tail": tail, "moments": moments}


def _values(config: Config, WK: sp.MatrixSymbol, WV: sp.MatrixSymbol) -> sp.MatrixExpr:
    """W_V^h by the configuration's value rule (docs/model.md §1.8)."""
    rho = sp.Symbol(r"\rho", real=True)
    return {"independent": WV, "tied": WK, "correlated": rho * WK + sp.sqrt(1 - rho**2) * WV}[config.kv]


def _outputs(config: Config, WK: sp.MatrixSymbol, WO: sp.MatrixSymbol) -> sp.MatrixExpr:
    """W_O^h by the configuration's output rule (docs/model.md §1.8)."""
    d, H, d_v = sp.symbols("d H d_v", positive=True)
    return WO if config.output == "independent" else sp.sqrt(d / (H * d_v)) * WK.T


def causal_record(config: Config, law: Distribution, name: str | None = None) -> dict[str, Any]:
    """The record of ``config``'s law (:func:`~gemhsa_sym.laws.causal.causal_report` of ``law``), named ``name``, with the
    configuration as TOML, its formulas printed (:func:`causal_latex`) and the probes."""
    return {"name": name, "kind": "causal", "tol": REPORT_TOL, **causal_report(config, law=law),
            "config_toml": config.to_toml(), "latex": causal_latex(config), "probes": probes(causal_model(config))}


def key_weighted_latex(equivalent: NetworkEquivalent) -> dict[str, list[str]]:
    """The formulas of a key-weighted record, printed by SymPy (docs/extensions.md §8.7): the model Y in the first block's
    polynomial S and S itself as ``align*`` blocks (:func:`~gemhsa_sym.export.latex.broken_sum`), their wide sums named
    F_1, F_2, ... in one sequence, the key weights, and the values and constants of the equivalent."""
    model, stream = (equivalent.polynomial, None) if equivalent.written is None else equivalent.written
    terms, factors = named_terms(decimals(model, 15))
    first, first_factors = ([], []) if stream is None else named_terms(decimals(stream, 15), first=len(factors) + 1)
    g = sp.Symbol("g_j", real=True)
    weights = [rf"{sp.latex(D)} = \operatorname{{diag}}_j\bigl({sp.latex(D.entry.subs(NORMAL, g))}\bigr)"
               for D in equivalent.key_weights]
    constants = [entry(sp.latex(symbol), value) for symbol, value in equivalent.values.items()]
    constants += [entry(sp.latex(sp.Symbol(name.partition(" ")[0])), value) for name, value in equivalent.constants.items()]
    return {"model": [broken_sum("Y", terms)], "first": [broken_sum("S", first)] if first else [],
            "factors": [broken_sum(name, rows) for name, rows in factors + first_factors],
            "key_weights": weights, "constants": constants}


def key_weighted_record(network: Network, equivalent: NetworkEquivalent, report: dict[str, Any], model: LeveledModel,
                        tol: float, name: str | None = None) -> dict[str, Any]:
    """The record of a key-weighted law: its ``report`` (:meth:`~gemhsa_sym.laws.key_weighted.KeyWeightedLaw.report`,
    without a density), named ``name``, with the network as TOML, its formulas printed
    (:func:`key_weighted_latex`) and the probes of ``model``."""
    return {"name": name, "kind": "key-weighted", "tol": tol,
            **{key: value for key, value in report.items() if key != "density"},
            "moments": [{"float": value} for value in report["moments"]],
            "config_toml": network.to_toml(), "latex": key_weighted_latex(equivalent), "probes": probes(model)}


def record_law(record: dict[str, Any], source: Config | Network, tol: float = REPORT_TOL) -> Distribution:
    """The distribution function a causal or key-weighted record holds, for ``source`` at ``tol``, validated (ValueError
    saying what is wrong)."""
    try:
        table = record["cdf"]
        entry = {"config": record["config" if isinstance(source, Config) else "network"], "tol": record["tol"],
                 "x": table["x"], "cdf": table["F"], "density": table["density"], "error": record["error"],
                 "level": record["level"], "nodes": record["nodes"]}
    except (KeyError, TypeError):
        raise ValueError("its distribution function is missing a field") from None
    return validated_distribution(entry, source, tol)


def probe_differences(committed: Any, regenerated: dict[str, Any]) -> list[str]:
    """Where the committed probes differ from the regenerated ones: their points and nodes exactly, m(w) to
    :data:`PROBE_TOL` relative."""
    try:
        old = np.array(committed["m"], dtype=float) @ [1, 1j]
        if committed["w"] != regenerated["w"] or committed["nodes"] != regenerated["nodes"] or old.shape != (len(PROBES),):
            return ["points or nodes"]
    except (KeyError, TypeError, ValueError):
        return ["not a table of probes"]
    new = np.array(regenerated["m"]) @ [1, 1j]
    return [f"m({w[0]:g}{w[1]:+g}i)" for w, a, b in zip(regenerated["w"], old, new) if abs(a - b) > PROBE_TOL * abs(b)]
