"""The law of a causal layer (docs/extensions.md §8.6), without its uniform causal part.

Row i of the causal Gaussian equivalent is (c_0 + mu_1 S0_ij + sigma Z_ij) / i over the keys j <= i.
In the engine's normalisation (Z of entries N(0, 1/n)) its noise is sigma Z / t with Z kept on
u <= t, t = i / n. Two models, by the score's linear coefficient:

- mu_1 = 0 (the square score): the noise alone, a Gaussian with the variance profile s(t, u) =
  1{u <= t} / t^2 of :data:`NOISE_PROFILE` (docs/equations.md §2.9) in the bidirectional layer's
  polynomial (one reading of the configuration for the law and the sampler);
- mu_1 != 0 (softmax): the masked scores mu_1 (S0 (.) M) / t are not a polynomial in Gaussian
  matrices and do not act like independent noise; they act like masked scores with fresh queries,
  whose law is the two-point Dyson equation of docs/equations.md §2.11 (:mod:`.free.two_point`, :mod:`.free.two_point_solver`),
  written for any heads (W_Q, W_K, W_V shared in groups or not), values and outputs by any rule, with
  or without the residual stream, for Gaussian tokens with a covariance or not; orthonormal tokens
  are refused naming the field. The attention matrix sqrt(n) (A - C) of one head is the same equation with
  its resolvent on the key positions (docs/equations.md §2.11, the attention matrix).

The uniform causal part c_0 C V W_O (C_ij = 1/i on j <= i) is left out of both: Monte Carlo shows its
effect on the law fading with n (docs/extensions.md §8.6).
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import sympy as sp

from gemhsa_sym.free.expressions.matrices import gaussians_of
from gemhsa_sym.free.positions.distribution_function import Distribution, distribution
from gemhsa_sym.free.positions.masked_pencil import attention_pencil, heads_pencil
from gemhsa_sym.free.positions.profiled_law import ProfiledModel, density
from gemhsa_sym.free.positions.profiles import Profile, T
from gemhsa_sym.free.positions.two_point_solver import MaskedScoresModel
from gemhsa_sym.layer.config import Config
from gemhsa_sym.layer.equivalent import MU1, SIGMA, gaussian_equivalent, head_sum
from gemhsa_sym.layer.hermite import hermite_data
from gemhsa_sym.progress import note

__all__ = ["NOISE_PROFILE", "CDF_GRID", "MASKED_CDF_GRID", "QUANTILES", "UNRESOLVED_TAIL", "causal_model",
           "causal_distribution", "causal_tail", "causal_report"]

#: The variance profile of the causal noise Z / t: s(t, u) = 1{u <= t} / t^2.
NOISE_PROFILE = Profile(row=1 / T**2, region="lower")
#: The grid of the distribution function, log-spaced (a fifth of the mass lies below 1e-4, the tail is heavy);
#: the mass below its first point is one contour integral (docs/solving.md §3.11).
CDF_GRID: tuple[float, ...] = tuple(np.geomspace(1e-4, 1e4, 257))
#: The grid of the distribution function of masked scores: 8 points per decade (each point of the two-point
#: equation costs some hundred iterations of a system with K^2 unknowns; docs/solving.md §3.13).
MASKED_CDF_GRID: tuple[float, ...] = tuple(np.geomspace(1e-4, 1e4, 65))
#: The quantiles a report gives.
QUANTILES: tuple[float, ...] = (0.1, 0.5, 0.9, 0.99)
#: Tolerance of reports (docs/solving.md §3.11): of m at every point, and of F for masked scores.
REPORT_TOL = 1e-3
#: The share of the tolerance in F that the levels of masked scores spend (the integration rule's error, about 1e-4 on
#: :data:`MASKED_CDF_GRID`, comes on top).
LEVELS_SHARE = 0.75
#: Why the law of masked scores gives no tail exponent.
UNRESOLVED_TAIL = ("the two-point levels grade the query positions over 8 octaves, and the largest eigenvalues come from the "
                   "rows of the smallest positions (variance 1 / t^2): the law's tail above about 1e3 is cut, within the "
                   "tolerance of F but not in its exponent (docs/extensions.md §8.6)")


@functools.lru_cache(maxsize=8)
def causal_model(config: Config) -> ProfiledModel | MaskedScoresModel:
    """The model whose law is the causal layer's (module docstring), one per configuration so that its
    discretised systems are built once; NotImplementedError naming the field where the masked scores of
    ``config`` have no pencil."""
    if not config.mask_rule.causal:
        raise ValueError(f"mask: the causal law is asked of a causal layer; this configuration has mask = {config.mask!r}")
    coefficients = hermite_data(config.score, config.beta * config.score_scale, config.normalisation)
    if coefficients.mu1 != 0:
        return _masked_scores(config, float(coefficients.mu1) ** 2, float(coefficients.sigma2))
    ge = gaussian_equivalent(config.replace(mask="none"))
    template = ge.template.subs({MU1: 0, SIGMA: sp.sqrt(coefficients.sigma2)}).doit()
    polynomial = template if config.heads == 1 else head_sum(config, template, ge.roles)
    tokens = ge.roles["Z"].rows
    # with mu_1 = 0 the only token-by-token Gaussians left are the heads' noises Z^h
    noise = [g for g in gaussians_of(polynomial) if g.rows == tokens and g.cols == tokens]
    return ProfiledModel(polynomial, ge.ratios, tokens, {Z: NOISE_PROFILE for Z in noise})


def _masked_scores(config: Config, mu1_squared: float, sigma2: float) -> MaskedScoresModel:
    """The two-point model of masked scores (docs/equations.md §2.11), its values and outputs by the configuration's
    rules: where heads with their own W_O share W_K or W_V only, the pencil of heads with their own projections,
    whose law that sharing does not change; where they share W_Q, or share anything with key-built outputs, every
    head written out with the configuration's groups."""
    if config.token_rule.projected:  # (Config itself refuses a causal mask with infinitely many heads)
        raise NotImplementedError(
            "tokens: the two-point equation of a causal layer's masked scores is written for Gaussian tokens (with a "
            "covariance or not), whose prefixes B_t = X^T P_t X have free increments (docs/equations.md §2.11); the "
            "prefixes of orthonormal tokens are blocks of a Haar projection, no polynomial in Gaussian matrices")
    r = {key: float(value) for key, value in config.ratios().items() if key != "n"}
    if not config.target_rule.output_side:  # the attention matrix itself, its pencil on the key side (docs/equations.md §2.11)
        return MaskedScoresModel(functools.partial(attention_pencil, ratios=r), mu1_squared / r["d_k"], sigma2)
    heads, residual = int(config.heads), config.residual is not None
    # the residual stream X + alpha Y: alpha taken into the Hermite data (docs/equations.md §2.11)
    scale = float(config.residual) ** 2 if residual else 1.0
    rules = {"residual": residual, "kv": config.kv, "rho": float(config.rho), "output": config.output,
             "levels": None if config.token_covariance is None else tuple((float(w), float(v)) for v, w in config.token_covariance)}
    groups = {x: tuple(config.group_of(x, h) for h in range(heads)) for x in "qkv"}
    # shared W_K, W_V leave the law of heads with their own W_Q and W_O unchanged (docs/equations.md §2.11): the
    # heads' own pencil, two of them standing for all
    own = len(set(groups["q"])) == heads and (config.output == "independent" or all(len(set(g)) == heads for g in groups.values()))
    pencil = (functools.partial(heads_pencil, heads=heads, ratios=r, **rules) if own else
              functools.partial(heads_pencil, heads=heads, ratios=r, reduced=False, groups=groups, **rules))
    # with a token covariance the coefficient of S0 is mu_1 / s (docs/extensions.md §8.3)
    return MaskedScoresModel(pencil, scale * mu1_squared / float(config.score_scale) ** 2 / r["d_k"], scale * sigma2)


@functools.lru_cache(maxsize=8)
def causal_distribution(config: Config, tol: float = REPORT_TOL) -> Distribution:
    """The distribution function of the causal law on :data:`CDF_GRID` (docs/solving.md §3.11): every point of m to
    ``tol``; for masked scores on :data:`MASKED_CDF_GRID`, each point by its weight in F, the levels spending
    :data:`LEVELS_SHARE` of ``tol`` in F's achieved error."""
    model = causal_model(config)
    if isinstance(model, MaskedScoresModel):
        note(f"a causal law is solved level by level to {tol:g} in F: the two-point equation of masked scores, minutes "
             "(the library's causal presets are read at once by gemhsa_sym.law(name))")
        return distribution(model, np.array(MASKED_CDF_GRID), LEVELS_SHARE * tol, weighted=True)
    note(f"a causal law is solved level by level, m(w) to {tol:g} (1 + |m|) at every point: a few minutes")
    return distribution(model, np.array(CDF_GRID), tol)


def causal_tail(config: Config, law: Distribution) -> float | None:
    """The tail exponent of ``law`` (:meth:`~.free.profiled_law.Distribution.tail_exponent`, top fifth of its grid),
    None for masked scores, whose discretisation cuts the tail (:data:`UNRESOLVED_TAIL`)."""
    return None if isinstance(causal_model(config), MaskedScoresModel) else law.tail_exponent()


def causal_report(config: Config, grid: np.ndarray | None = None, law: Distribution | None = None) -> dict[str, Any]:
    """What ``derive`` reports of a causal configuration, JSON-able: the model, the equation in words, the
    quantiles, the tail exponent (top fifth of the grid), the achieved error, why there are no moments and
    no P(m, w), the distribution function (of ``law``, computed when not given) and the density on ``grid``."""
    model = causal_model(config)
    law = causal_distribution(config) if law is None else law
    tail = causal_tail(config, law)
    coefficients = hermite_data(config.score, config.beta * config.score_scale, config.normalisation)
    top = law.x[-max(2, len(law.x) // 5):]
    report: dict[str, Any] = {
        "config": config.to_dict(),
        "statement": config.statement,
        "coefficients": {"c0": str(coefficients.c0), "mu1": str(coefficients.mu1), "sigma2": str(coefficients.sigma2)},
        **_description(model, config),
        "left_out": ("the uniform causal part c_0 C V W_O, C_ij = 1/i on j <= i (its effect fades with n, docs/extensions.md §8.6)"
                     if config.target_rule.output_side else
                     "nothing: row normalisation has c_0 = 1, so the equivalent's uniform part c_0 C is the causal average C "
                     "that the target subtracts" if coefficients.c0 == 1 else f"the uniform part (c_0 - 1) C, c_0 = {coefficients.c0}"),
        "nodes": law.nodes,
        "level": law.level,
        "error": law.error,
        "quantiles": {"q": list(QUANTILES), "x": law.covered_quantiles(QUANTILES)},
        "mass_below_grid": [float(law.x[0]), float(law.cdf[0])],
        "tail_exponent": tail,
        "tail_range": [float(top[0]), float(top[-1])],
        **({"tail_reason": UNRESOLVED_TAIL} if tail is None else {}),
        "moments": "the law has a heavy tail, P(lambda > x) ~ c / x^kappa with kappa near 1 (row i of the noise has variance "
                   "n / i), so its mean and every higher moment diverge",
        "polynomial_reason": "the equation is function-valued in the positions; no finite polynomial system is eliminated",
        "grid_points": len(law.x),
        "cdf": {"x": law.x.tolist(), "F": law.cdf.tolist(), "density": law.density.tolist()},
    }
    if grid is not None:
        values = density(model, grid, REPORT_TOL)
        report["density"] = {"x": list(map(float, grid)), "density": (-values.m.imag / np.pi).tolist(),
                             "error": values.error.tolist()}
    return report


def _value_rule(config: Config) -> str:
    """V^h = W_V^h W_O^h in words, by the configuration's value and output rules (docs/model.md §1.8)."""
    values = {"independent": "W_V^h", "tied": "W_K^h", "correlated": f"({config.rho} W_K^h + sqrt(1 - {config.rho}^2) W_V^h)"}
    return values[config.kv] + (" W_O^h" if config.output == "independent" else " sqrt(d / (H d_v)) W_K^hT")


def _description(model: ProfiledModel | MaskedScoresModel, config: Config) -> dict[str, str]:
    """The model and its equation in words, for :func:`causal_report`."""
    if isinstance(model, MaskedScoresModel) and not config.target_rule.output_side:
        return {"model": "rows given the tokens: independent Gaussian rows of sqrt(n) (A - C) over the key positions, of "
                         "covariance C_t / n, C_t = t^-2 P_t [mu_1^2 / r_k X W_K W_Q^T W_Q W_K^T X^T + sigma^2] P_t (masked "
                         "scores with fresh queries)",
                "profile": "the keys u <= t of query position t: the masks P_t at the nodes of the rule",
                "equation": "the two-point Dyson equation with its resolvent on the key positions: R = (sum_k phi_k C_k - w)^-1, "
                            "phi_k = omega_k / (1 + (1/n) tr(C_k R)), m = -tau(R) the average over the key positions "
                            "(docs/equations.md §2.11, the attention matrix)"}
    if isinstance(model, MaskedScoresModel):
        shared = [name for names in config.shared().values() for name in names]
        sharing = ("" if not shared else f"; {', '.join(shared)} shared by groups of heads: " + (
            "every head written out" if "W_Q" in shared or config.output != "independent" else
            "the law of the heads' own projections, since a symmetry of each head cancels the pairings across heads "
            "(docs/equations.md §2.11)"))
        covariance = ("t^-2 [mu_1^2 / r_k A_t^T A_t + sigma^2 sum_h V^hT B_t V^h]" if config.residual is None and
                      config.token_covariance is None else
                      f"t^-2 [mu_1^2 / (s^2 r_k) A_t^T Sigma A_t + sigma^2 sum_h V^hT B_t V^h], s = tr(Sigma) / d = "
                      f"{config.score_scale} (queries of the tokens' covariance Sigma, d split into its blocks)"
                      if config.residual is None else
                      f"(I + g_t A_t)^T (I + g_t A_t) + alpha^2 sigma^2 t^-2 sum_h V^hT B_t V^h, g_t = alpha mu_1 / (t sqrt(r_k)), "
                      f"alpha = {config.residual} (the residual stream: row t is x_t (I + g_t A_t) plus the noise, one token "
                      f"x_t as query and residual)")
        return {"model": f"rows given the tokens: independent Gaussian rows of covariance C_t / n, C_t = {covariance}, "
                         f"A_t = sum_h W_Q^h W_K^hT B_t V^h, B_t = X^T P_t X, V^h = {_value_rule(config)} (masked scores "
                         "with fresh queries)" + sharing,
                "profile": "the keys u <= t of query position t: the masks P_t at the nodes of the rule",
                "equation": "the two-point Dyson equation: R = (sum_k phi_k C_k - w)^-1, phi_k = omega_k / (1 + (1/n) tr(C_k R)), "
                            "H given phi_k by the Dyson equation of its masked pencil (docs/equations.md §2.11)"}
    return {"model": f"Y = {model.polynomial}",
            "profile": ", ".join(f"{Z} has the variance profile 1{{u <= t}} / t^2 over the token positions t, u"
                                 for Z in sorted(model.profiles, key=str)),
            "equation": "the Dyson equation of the pencil with g_ab(t) for the blocks on the token positions and "
                        "eta(t) = row(t) int_0^t g(u) du (docs/equations.md §2.9)"}
