"""The law of a causal layer (docs/extensions.md §8.6): the noise of its Gaussian equivalent as a
variance profile over the token positions (docs/equations.md §2.9).

Row i of the causal Gaussian equivalent is (c_0 + mu_1 S0_ij + sigma Z_ij) / i over the keys j <= i.
In the engine's normalisation (Z of entries N(0, 1/n)) its noise is sigma Z / t with Z kept on
u <= t, t = i / n: the profile s(t, u) = 1{u <= t} / t^2 of :data:`NOISE_PROFILE`. The polynomial is
the bidirectional layer's with every Z^h carrying that profile (one reading of the configuration
for the law and the sampler). Two parts are not in it:

- the masked scores mu_1 (S0 (.) M) / t are not a polynomial in Gaussian matrices, and Monte Carlo
  shows that they do not act like independent noise of the same variance (they do act like masked
  scores with fresh queries, whose t-quadrature has of the order of K^2 unknowns for K nodes, beyond
  the dense Newton driver); a configuration whose score has mu_1 != 0 (softmax) is refused with that reason;
- the uniform causal part c_0 C V W_O (C_ij = 1/i on j <= i), whose effect on the law Monte Carlo
  shows fading with n (docs/extensions.md §8.6).
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import sympy as sp

from .config import Config
from .free.matrices import gaussians_of
from .free.profiled_law import Distribution, ProfiledModel, density, distribution
from .free.profiles import Profile, T
from .hermite import hermite_data
from .model import MU1, SIGMA, gaussian_equivalent, head_sum

__all__ = ["NOISE_PROFILE", "CDF_GRID", "QUANTILES", "causal_model", "causal_distribution", "causal_report"]

#: The variance profile of the causal noise Z / t: s(t, u) = 1{u <= t} / t^2.
NOISE_PROFILE = Profile(row=1 / T**2, region="lower")
#: The grid of the distribution function, log-spaced (a fifth of the mass lies below 1e-4, the tail is heavy);
#: the mass below its first point is one contour integral (docs/solving.md §3.11).
CDF_GRID: tuple[float, ...] = tuple(np.geomspace(1e-4, 1e4, 257))
#: The quantiles a report gives.
QUANTILES: tuple[float, ...] = (0.1, 0.5, 0.9, 0.99)
#: Tolerance of the level-to-level change of m (docs/solving.md §3.11) in reports.
REPORT_TOL = 1e-3


@functools.lru_cache(maxsize=8)
def causal_model(config: Config) -> ProfiledModel:
    """The profiled polynomial whose law is the causal layer's (module docstring), one per configuration so that
    its discretised systems are built once; NotImplementedError naming mu_1 for a score with a linear part."""
    if config.mask != "causal":
        raise ValueError(f"mask: the profiled law is the causal layer's; this configuration has mask = {config.mask!r}")
    coefficients = hermite_data(config.score, config.beta * config.score_scale, config.normalisation)
    if coefficients.mu1 != 0:
        raise NotImplementedError(
            f"score: the {config.score} score has mu_1 = {sp.N(coefficients.mu1, 4)} != 0 at beta = {config.beta}; the causal "
            "layer's masked scores mu_1 (S0 (.) M) / t are no polynomial in Gaussian matrices and do not act like "
            "independent noise (docs/extensions.md §8.6), so only scores with mu_1 = 0 (square) have a causal law"
        )
    ge = gaussian_equivalent(config.replace(mask="none"))
    template = ge.template.subs({MU1: 0, SIGMA: sp.sqrt(coefficients.sigma2)}).doit()
    polynomial = template if config.heads == 1 else head_sum(config, template, ge.roles)
    tokens = ge.roles["Z"].rows
    # with mu_1 = 0 the only token-by-token Gaussians left are the heads' noises Z^h
    noise = [g for g in gaussians_of(polynomial) if g.rows == tokens and g.cols == tokens]
    return ProfiledModel(polynomial, ge.ratios, tokens, {Z: NOISE_PROFILE for Z in noise})


@functools.lru_cache(maxsize=8)
def causal_distribution(config: Config, tol: float = REPORT_TOL) -> Distribution:
    """The distribution function of the causal law on :data:`CDF_GRID` (docs/solving.md §3.11)."""
    return distribution(causal_model(config), np.array(CDF_GRID), tol)


def causal_report(config: Config, grid: np.ndarray | None = None) -> dict[str, Any]:
    """What ``derive`` reports of a causal configuration, JSON-able: the model, the equation in words, the
    quantiles, the tail exponent (top fifth of the grid), the achieved error, why there are no moments and
    no P(m, w), and the density on ``grid``."""
    model = causal_model(config)
    law = causal_distribution(config)
    coefficients = hermite_data(config.score, config.beta * config.score_scale, config.normalisation)
    top = law.x[-max(2, len(law.x) // 5):]
    report: dict[str, Any] = {
        "config": config.to_dict(),
        "coefficients": {"c0": str(coefficients.c0), "mu1": "0", "sigma2": str(coefficients.sigma2)},
        "model": str(model.polynomial),
        "profile": ", ".join(f"{Z} has the variance profile 1{{u <= t}} / t^2 over the token positions t, u"
                             for Z in sorted(model.profiles, key=str)),
        "left_out": "the uniform causal part c_0 C V W_O, C_ij = 1/i on j <= i (its effect fades with n, docs/extensions.md §8.6)",
        "equation": "the Dyson equation of the pencil with g_ab(t) for the blocks on the token positions and "
                    "eta(t) = row(t) int_0^t g(u) du (docs/equations.md §2.9)",
        "nodes": law.nodes,
        "level": law.level,
        "error": law.error,
        "quantiles": {"q": list(QUANTILES), "x": law.covered_quantiles(QUANTILES)},
        "mass_below_grid": [float(law.x[0]), float(law.cdf[0])],
        "tail_exponent": law.tail_exponent(),
        "tail_range": [float(top[0]), float(top[-1])],
        "moments": "the law has a heavy tail, P(lambda > x) ~ c / x^kappa with kappa near 1 (row i of the noise has variance "
                   "n / i), so its mean and every higher moment diverge",
        "polynomial_reason": "the equation is function-valued in the positions; no finite polynomial system is eliminated",
        "cdf": {"x": law.x.tolist(), "F": law.cdf.tolist()},
    }
    if grid is not None:
        values = density(model, grid, REPORT_TOL)
        report["density"] = {"x": list(map(float, grid)), "density": (-values.m.imag / np.pi).tolist(),
                             "error": values.error.tolist()}
    return report
