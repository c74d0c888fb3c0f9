"""The Gaussian equivalent of a network's first block (docs/extensions.md §8.7).

In the engine's units (the sampler's matrices over sqrt(n)), with R = X + alpha sum_h T^h the residual stream's
polynomial (docs/extensions.md §8.4) and m_R the exact mean of its law:

- a norm of tokens whose squared norms concentrate is the division by a constant: the rows of N(X) are those of X
  (Gaussian tokens have RMS 1 in the limit; LayerNorm's centring is a rank-one change of the features), and after
  the stream the row's mean square is m_R plus kappa = alpha^2 c_0^2, the squared size per entry of the common vector
  alpha sqrt(n) c_0 (1^T X / n) sum_h W_V^h W_O^h (zero for centred attention);
- the MLP's input is (R + c) / s (s = 1 without a norm, s_U before a pre-norm MLP, s_1 after a post-norm): its
  centred part has variance v = m_R / s^2 per entry, and c / s gives neuron k the bias b_k = c . w_1k / s ~
  N(0, kappa / s^2), independent of the centred part (c is one direction of W_1). phi(b_k + h) is
  mu_0k + (mu_1k / sqrt(v)) h + mu_*k z with the Hermite data of phi at the bias b_k and variance v, the neurons in
  :data:`MLP_LEVELS` Gauss-Hermite levels of b (one exact level, :func:`~gemhsa_sym.layer.hermite.hermite_data`,
  where kappa = 0); mu_0's common vector mu_0(b)^T W_2 is removed by the centring and counted by a post-norm.

With M = sum_k nu_1k W_1k W_2k (nu_1k = mu_1k / sqrt(v)) and E = sum_k mu_*k Z_1k W_2k: pre-norm out = R (I + alpha_mlp
M / s_U) + alpha_mlp E, s_U^2 = m_R + kappa; without a norm the same with s = 1; post-norm U = R / s_1 (s_1^2 = m_R +
kappa) and out = (U (I + alpha_mlp M) + alpha_mlp E) / s_2 with s_2^2 = m_P + kappa / s_1^2 + alpha_mlp^2 E_b mu_0(b)^2,
m_P the exact mean of the numerator's law (eq. of docs/extensions.md §8.7). Later layers (the common vector weights
the keys), a causal mask (its rows do not concentrate) and values or outputs built from the keys are refused with the
reason.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

import mpmath
import numpy as np
import sympy as sp
from sympy.matrices.expressions import MatrixExpr

from gemhsa_sym.free.equations.derivation import derivation
from gemhsa_sym.free.equations.series import moment_series
from gemhsa_sym.free.expressions.matrices import Dim, Gaussian
from gemhsa_sym.layer.equivalent import gaussian_equivalent, head_sum
from gemhsa_sym.layer.hermite import hermite_data
from gemhsa_sym.layer.network import Network
from gemhsa_sym.layer.scores import elementwise

__all__ = ["COEFFICIENT_DIGITS", "MLP_LEVELS", "NetworkEquivalent", "NeuronLevels", "equivalent_of", "network_equivalent", "neuron_levels"]

#: Gauss-Hermite levels of the neurons' bias where the MLP's input carries a common vector.
MLP_LEVELS = 8
#: Digits kept of a coefficient from quadrature: far below the levels' discretisation error (2e-8 in F with 8 levels),
#: and short enough that a record's exact moments stay within the number grammar's 200 characters.
COEFFICIENT_DIGITS = 15
_X = sp.Symbol("x", real=True)


@dataclass(frozen=True)
class NetworkEquivalent:
    """The polynomial of a network's first block (module docstring), its ratios and parameter values, and the exact
    constants it used, by name: ``m_R``, ``kappa``, and where they occur ``s_U^2`` (pre-norm MLP), ``s_1^2``,
    ``m_P``, ``s_2^2`` (post-norm)."""

    polynomial: MatrixExpr
    ratios: dict[Dim, sp.Expr]
    values: dict[sp.Symbol, sp.Expr]
    constants: dict[str, sp.Expr]
    mlp: NeuronLevels | None

    @property
    def exact(self) -> bool:
        """Whether every coefficient is exact: no MLP, or one level of neurons with closed-form Hermite data (otherwise
        the levels and the quadrature make the law an approximation, docs/extensions.md §8.7)."""
        return self.mlp is None or (len(self.mlp.weights) == 1 and not any(v.has(sp.Float) for v in self.mlp.data[0]))


@dataclass(frozen=True)
class NeuronLevels:
    """The MLP's neurons in levels of their bias b ~ N(0, bias variance) (Gauss-Hermite nodes and weights, one level
    without bias): per level its weight and the Hermite data (mu_0, mu_1 per unit of a standard Gaussian, mu_*^2) of
    phi(b + sqrt(v) g); ``common`` = E_b mu_0(b)^2, the squared size per entry of the common vector mu_0(b)^T W_2."""

    activation: str
    variance: sp.Expr
    bias_variance: sp.Expr
    weights: tuple[sp.Expr, ...]
    data: tuple[tuple[sp.Expr, sp.Expr, sp.Expr], ...]

    @property
    def common(self) -> sp.Expr:
        """E_b mu_0(b)^2."""
        return sum(w * mu0**2 for w, (mu0, _, _) in zip(self.weights, self.data))


def neuron_levels(activation: str, variance: sp.Expr, bias_variance: sp.Expr, levels: int = MLP_LEVELS) -> NeuronLevels:
    """:class:`NeuronLevels` of phi at input variance ``variance`` and bias variance ``bias_variance``: one exact level
    (:func:`~gemhsa_sym.layer.hermite.hermite_data`) without bias, else ``levels`` Gauss-Hermite nodes, each by mpmath
    quadrature at 30 digits."""
    if bias_variance == 0:
        data = hermite_data(activation, sp.sqrt(variance), "none")
        return NeuronLevels(activation, variance, bias_variance, (sp.Integer(1),), ((data.c0, data.mu1, data.sigma2),))
    nodes, weights = np.polynomial.hermite_e.hermegauss(levels)
    f = sp.lambdify(_X, elementwise(activation).symbolic(_X), modules="mpmath")
    out = []
    with mpmath.workdps(30):
        sd, spread = mpmath.sqrt(mpmath.mpf(str(sp.N(variance, 40)))), mpmath.sqrt(mpmath.mpf(str(sp.N(bias_variance, 40))))
        for node in nodes:
            b = spread * mpmath.mpf(float(node))
            split = [-mpmath.inf, -b / sd, mpmath.inf]  # where phi's argument crosses 0 (the kink of relu)

            def mean(h: Callable[[mpmath.mpf, mpmath.mpf], mpmath.mpf], b: mpmath.mpf = b) -> mpmath.mpf:
                return mpmath.quad(lambda g: h(g, f(b + sd * g)) * mpmath.npdf(g), split)

            mu0, mu1 = mean(lambda g, v: v), mean(lambda g, v: g * v)
            out.append(tuple(sp.Float(x, 30) for x in (mu0, mu1, mean(lambda g, v: v * v) - mu0**2 - mu1**2)))
    shares = [sp.Rational(float(w / weights.sum())).limit_denominator(10**15) for w in weights[1:]]  # exact, summing to 1
    return NeuronLevels(activation, variance, bias_variance, (1 - sum(shares), *shares), tuple(out))


def _mlp(network: Network, d: Dim, n: Dim, ratios: dict[Dim, sp.Expr], variance: sp.Expr,
         bias_variance: sp.Expr) -> tuple[MatrixExpr, MatrixExpr | None, NeuronLevels]:
    """The MLP's phi(H) W_2 less its common vector, H = (I + c) W_1 for an input I with centred variance ``variance`` and
    bias variance ``bias_variance``, as I M + E: M = sum_k nu_1k W_1k W_2k (d x d) and the noise E = sum_k nu_*k Z_1k W_2k
    (n x d; None for a linear phi), nu_1k = mu_1k / sqrt(v) and nu_*k = mu_*k over the levels k, each of d_ff times its
    weight neurons (new dimension groups added to ``ratios``); the input enters once, whatever the number of levels.
    Coefficients from quadrature are rationals of :data:`COEFFICIENT_DIGITS` digits (:func:`_coefficient`)."""
    levels = neuron_levels(network.activation, variance, bias_variance)
    single = len(levels.weights) == 1
    linear, noise = [], []
    for k, (weight, (_, mu1, sigma2)) in enumerate(zip(levels.weights, levels.data)):
        tag = "" if single else f"^{{({k + 1})}}"
        width = Dim("d_ff" if single else f"d_ff{k + 1}")
        ratios[width] = network.d_ff * weight
        W1, W2 = Gaussian(f"W_1{tag}", d, width, 1 / ratios[d]), Gaussian(f"W_2{tag}", width, d, 1 / network.d_ff)
        gain = _coefficient(mu1 / sp.sqrt(variance))
        linear.append(gain * W1 * W2)
        if sigma2 != 0:
            noise.append(_coefficient(sp.sqrt(sigma2)) * Gaussian(f"Z_1{tag}", n, width) * W2)
    return sp.MatAdd(*linear), sp.MatAdd(*noise) if noise else None, levels


def _coefficient(value: sp.Expr) -> sp.Expr:
    """``value`` itself where it is exact; where it holds floating-point numbers (quadrature), the exact rational of its
    first :data:`COEFFICIENT_DIGITS` digits, so that the series of the moments stays over Q and a record's numbers stay
    short (docs/extensions.md §8.7)."""
    return sp.Rational(str(sp.N(value, COEFFICIENT_DIGITS))) if value.has(sp.Float) else value


def _mean(polynomial: MatrixExpr, ratios: dict[Dim, sp.Expr], values: dict[sp.Symbol, sp.Expr]) -> sp.Expr:
    """The exact mean of the law of ``polynomial`` (docs/solving.md §3.1)."""
    found = derivation(polynomial, ratios, values, reduce=False)
    return sp.expand(moment_series(found.full_system, 1)[0].subs(found.values))


def _refusal(network: Network) -> str | None:
    """Why the first block of ``network`` has no equivalent here, or None."""
    layer = network.layer
    if network.read_layer != 1:
        return ("target: from layer 2 on the tokens carry a common vector c, whose column term beta c^T W_Q W_K^T x_j "
                "/ sqrt(d_k) gives the keys random weights; that equivalent is not built, only the first block's "
                "(target = 'layer:1')")
    if layer.mask_rule.causal:
        return "mask: a causal layer's equivalent is no polynomial (docs/extensions.md §8.6), and its rows do not concentrate"
    if layer.kv != "independent" or layer.output != "independent":
        return "kv: the common vector's size is derived for values and outputs with their own weights only"
    return None


def network_equivalent(network: Network) -> NetworkEquivalent:
    """The equivalent of the module docstring; NotImplementedError with the reason where it is not built."""
    reason = _refusal(network)
    if reason is not None:
        raise NotImplementedError(reason)
    layer = network.layer
    equivalent = gaussian_equivalent(layer)
    R = head_sum(layer, equivalent.template, equivalent.roles)
    ratios, values = dict(equivalent.ratios), dict(equivalent.values)
    alpha = layer.residual
    kappa = sp.Integer(0) if network.attention == "centred" else alpha**2 * equivalent.coefficients.c0**2
    m_R = _mean(R, ratios, values)
    constants = {"m_R": m_R, "kappa": kappa}
    post = network.norm != "none" and network.norm_position == "post"
    stream = R
    if post:
        constants["s_1^2"] = m_R + kappa
        stream = R / sp.sqrt(m_R + kappa)
    mlp = None
    if network.d_ff is not None:
        d = next(dim for dim in ratios if dim.name == "d")
        scale = sp.Integer(1) if network.norm == "none" else sp.sqrt(m_R + kappa)  # the MLP's input is (R + c) / scale
        if network.norm != "none" and not post:
            constants["s_U^2"] = m_R + kappa
        linear, noise, mlp = _mlp(network, d, R.rows, ratios, m_R / scale**2, kappa / scale**2)
        factor = 1 / scale if network.norm != "none" and not post else sp.Integer(1)  # the MLP's input over the stream
        stream = stream * (sp.Identity(d) + network.alpha_mlp * factor * linear)
        if noise is not None:
            stream = stream + network.alpha_mlp * noise
    if post and mlp is not None:  # the second norm (without MLP, N(U) = U)
        m_P = _mean(stream, ratios, values)
        s2 = m_P + kappa / constants["s_1^2"] + network.alpha_mlp**2 * mlp.common
        constants |= {"m_P": m_P, "s_2^2": s2}
        stream = stream * _coefficient(1 / sp.sqrt(s2))
    return NetworkEquivalent(stream, ratios, values, constants, mlp)


@functools.lru_cache(maxsize=32)
def equivalent_of(network: Network) -> NetworkEquivalent:
    """:func:`network_equivalent`, built once per network (the law and the draws of its equivalent read the same one)."""
    return network_equivalent(network)
