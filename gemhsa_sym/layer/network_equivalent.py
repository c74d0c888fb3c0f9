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
  :data:`~gemhsa_sym.layer.hermite.MLP_LEVELS` Gauss-Hermite levels of b (one exact level,
  :func:`~gemhsa_sym.layer.hermite.hermite_data`, where kappa = 0); mu_0's common vector mu_0(b)^T W_2 is removed by
  the centring and counted by a post-norm.

With M = sum_k nu_1k W_1k W_2k (nu_1k = mu_1k / sqrt(v)) and E = sum_k mu_*k Z_1k W_2k: pre-norm out = R (I + alpha_mlp
M / s_U) + alpha_mlp E, s_U^2 = m_R + kappa; without a norm the same with s = 1; post-norm U = R / s_1 (s_1^2 = m_R +
kappa) and out = (U (I + alpha_mlp M) + alpha_mlp E) / s_2 with s_2^2 = m_P + kappa / s_1^2 + alpha_mlp^2 E_b mu_0(b)^2,
m_P the exact mean of the numerator's law (eq. of docs/extensions.md §8.7).

Layer 2 (docs/extensions.md §8.7, "the law after layer 2"): its tokens are out_1 = S + c, S the first block's
polynomial (mean m of its law) and c the common vector (kappa_1 per entry: the attention's and the MLP's mu_0). The norm
divides by s (s^2 = m + kappa_1; s = 1 without a norm); the centred scores are those of tokens S / sqrt(m) at inverse
temperature beta m / s^2, and the column term beta c^T W_Q W_K^T x_j / (s^2 sqrt(d_k)), a Gaussian of variance
tau^2 = beta^2 kappa_1 m / s^4, multiplies key j by e^{b_j}: softmax's row normalisation leaves the key weights
D = diag(exp(tau g - tau^2 / 2)) (a :class:`~gemhsa_sym.free.expressions.matrices.Diagonal`). So
S_2 = S + alpha sum_h (mu_1 / sqrt(r_k) Q^h K^hT D + sigma Z^h D) (S / s) W_V^h W_O^h with Q^h = S W_Q^h / sqrt(m).
After it the common vector has size sqrt(n) per entry (the uniform part averages values that carry c / s), so a
pre-norm branch after it sees that vector and a centred part of relative size n^-1/2: layer 2's MLP and every later
layer add nothing centred in the limit, and the law after layer L >= 2 is layer 2's. Centred attention adds no common
vector of its own: where kappa_1 = 0 (no MLP, or an odd activation) D = I, and layer 2's MLP is that of the first block
with its input's exact mean (the next layer would need the exact mean of a polynomial four times longer, which ran past
ten minutes, so layer 3 is refused); after a ReLU or GELU MLP (kappa_1 != 0) the keys are weighted, the centred
attention adds the key-weighted average of the values, kappa_2 = kappa_1 + alpha^2 (e^{tau^2} - 1) m / s^2, and layer 2's
MLP acts at the mean m_2 of S_2 that the positional equation gives (a decimal). After a post-norm block (out_1 of RMS 1:
m = 1 - kappa_1) layer 2's uniform part adds a common vector of size alpha sqrt(n kappa_1) per entry, which fills the norm:
the centred output is S_2 over that size, and the law is of n times the eigenvalues (``Network.collapse``), an MLP acting
on it by its slopes at the common vector's bias; every later layer's attention is the plain average to leading order, so
it divides the centred part once more by its own common vector, alpha sqrt(n) per entry, and the law after layer l is of
n^(l - 1) times the eigenvalues (the collapse of docs/extensions.md §8.7). Centred attention after a post-norm block (no
common vector) gives layer 2's stream over the square root of its law's exact mean. A causal mask (its rows do not concentrate),
values or outputs built from the keys, and the cases the recursion does not reach are refused with the reason.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

import sympy as sp
from sympy.matrices.expressions import MatrixExpr

from gemhsa_sym.free.equations.derivation import derivation
from gemhsa_sym.free.equations.series import moment_series
from gemhsa_sym.free.expressions.matrices import NORMAL, Diagonal, Dim, Gaussian, diagonals_of
from gemhsa_sym.free.positions.profiled_law import ProfiledModel, far_mean
from gemhsa_sym.layer.equivalent import gaussian_equivalent, head_sum
from gemhsa_sym.layer.hermite import MLP_LEVELS, NeuronLevels, hermite_data, neuron_levels
from gemhsa_sym.layer.network import Network

__all__ = ["COEFFICIENT_DIGITS", "COLLAPSED_LEVELS", "NetworkEquivalent", "equivalent_of", "network_equivalent"]

#: Gauss-Hermite nodes of the bias where an MLP acts on a collapsed stream by its slopes phi'(b), which no centred input
#: smooths: 16 put E phi'(b)^2 within 2e-5 for GELU, 3e-3 for tanh (relu's and the identity's slopes are exact).
COLLAPSED_LEVELS = 16
#: Digits kept of a coefficient from quadrature: far below the levels' discretisation error (2e-8 in F with 8 levels),
#: and short enough that a record's exact moments stay within the number grammar's 200 characters.
COEFFICIENT_DIGITS = 15


@dataclass(frozen=True)
class NetworkEquivalent:
    """The polynomial of a network's block (module docstring), its ratios and parameter values, and the exact
    constants it used, by name: ``m_R``, ``kappa``, and where they occur ``s_U^2`` (pre-norm MLP), ``s_1^2``,
    ``m_P``, ``s_2^2`` (post-norm), for a later layer ``m_1``, ``kappa_1``, ``s^2`` and ``tau^2`` (the key
    weights' log-variance), and for a collapsed one ``K`` and ``s_MLP^2`` (:func:`_collapsed`); ``notes`` say what a later layer leaves out; for a later layer, ``written`` is its polynomial
    written in the symbol S and the first block's polynomial that S stands for (for display: the polynomial itself has S
    substituted, with SymPy's canonical transposes)."""

    polynomial: MatrixExpr
    ratios: dict[Dim, sp.Expr]
    values: dict[sp.Symbol, sp.Expr]
    constants: dict[str, sp.Expr]
    mlp: NeuronLevels | None
    notes: tuple[str, ...] = ()
    written: tuple[MatrixExpr, MatrixExpr] | None = None

    @property
    def exact(self) -> bool:
        """Whether every coefficient is exact: no MLP, or one level of neurons with closed-form Hermite data (otherwise
        the levels and the quadrature make the law an approximation, docs/extensions.md §8.7)."""
        return self.mlp is None or (len(self.mlp.weights) == 1 and not any(v.has(sp.Float) for v in self.mlp.data[0]))

    @property
    def key_weights(self) -> tuple[Diagonal, ...]:
        """The deterministic diagonals of key weights in the polynomial (none at layer 1)."""
        return diagonals_of(self.polynomial)


def _mlp(network: Network, d: Dim, n: Dim, ratios: dict[Dim, sp.Expr], variance: sp.Expr, bias_variance: sp.Expr,
         layer: str = "", levels: int = MLP_LEVELS) -> tuple[MatrixExpr, MatrixExpr | None, NeuronLevels]:
    """The MLP's phi(H) W_2 less its common vector, H = (I + c) W_1 for an input I with centred variance ``variance`` and
    bias variance ``bias_variance``, as I M + E: M = sum_k nu_1k W_1k W_2k (d x d) and the noise E = sum_k nu_*k Z_1k W_2k
    (n x d; None for a linear phi), nu_1k = mu_1k / sqrt(v) and nu_*k = mu_*k over the levels k, each of d_ff times its
    weight neurons (new dimension groups added to ``ratios``, their names ending in _ and ``layer`` after layer 1); the input enters once,
    whatever the number of levels.
    Coefficients from quadrature are rationals of :data:`COEFFICIENT_DIGITS` digits (:func:`_coefficient`)."""
    neurons = neuron_levels(network.activation, variance, bias_variance, levels)
    kept = [(weight, _coefficient(mu1 if variance == 0 else mu1 / sp.sqrt(variance)), sigma2)
            for weight, (_, mu1, sigma2) in zip(neurons.weights, neurons.data)]
    kept = [level for level in kept if level[1:] != (0, 0)]  # a collapsed stream on a flat activation (relu, b < 0)
    single = len(kept) == 1
    linear, noise = [], []
    for k, (weight, gain, sigma2) in enumerate(kept):
        tag = "" if single else f"^{{({k + 1})}}"
        width = Dim(("d_ff" if single else f"d_ff{k + 1}") + (f"_{layer}" if layer else ""))
        ratios[width] = network.d_ff * weight
        W1 = Gaussian(f"{_named('W_1', layer)}{tag}", d, width, 1 / ratios[d])
        W2 = Gaussian(f"{_named('W_2', layer)}{tag}", width, d, 1 / network.d_ff)
        linear.append(gain * W1 * W2)
        if sigma2 != 0:
            noise.append(_coefficient(sp.sqrt(sigma2)) * Gaussian(f"{_named('Z_1', layer)}{tag}", n, width) * W2)
    return sp.MatAdd(*linear), sp.MatAdd(*noise) if noise else None, neurons


def _named(name: str, layer: str) -> str:
    """``name`` (``W_1``, ``W_Q``, ``Z``) of the first layer, or with the layer added to its subscript (``W_{1,2}``,
    ``Z_{2}``)."""
    if not layer:
        return name
    if "_" not in name:
        return f"{name}_{{{layer}}}"
    stem, sub = name.split("_", 1)
    return f"{stem}_{{{sub},{layer}}}"


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
    """Why ``network`` read after its layer has no equivalent here, or None (before any work)."""
    layer = network.layer
    if layer.mask_rule.causal:
        return "mask: a causal layer's equivalent is no polynomial (docs/extensions.md §8.6), and its rows do not concentrate"
    if layer.kv != "independent" or layer.output != "independent":
        return "kv: the common vector's size is derived for values and outputs with their own weights only"
    if network.read_layer == 1:
        return None
    if network.norm != "none" and network.norm_position == "post":
        if network.attention == "centred" and (network.d_ff is not None or network.read_layer > 2):
            return ("norm_position: with centred attention a post-norm stack is built up to layer 2 and without an MLP (an "
                    "MLP's common vector weights layer 2's keys, and that equivalent is written for pre-norm blocks)"
                    if network.read_layer == 2 else
                    "layers: with centred attention the law is derived up to layer 2: each layer makes the polynomial four "
                    "times longer, and the exact mean that the next layer needs ran past ten minutes at layer 3")
        if network.d_ff is not None and network.read_layer > 2:
            return ("layers: with an MLP a collapsed post-norm stack is solved after layer 2 only; after layer 3 (ReLU, "
                    "d_ff = n) the positional solve failed verification in the law's tail (w = 915, 16 nodes)")
    if layer.tokens != "gaussian" or layer.token_covariance is not None:
        return "tokens: the equivalent after layer 2 is built for Gaussian tokens"
    if not _key_weighted(network):
        return ("layers: with centred attention the law is derived up to layer 2: each layer makes the polynomial four "
                "times longer, and the exact mean that the next layer needs ran past ten minutes at layer 3"
                if network.read_layer > 2 else None)
    if layer.score != "softmax" or layer.normalisation != "row":
        return ("score: from layer 2 on the common vector's column term becomes a key weight e^{b_j} for softmax scores "
                "normalised by rows only")
    if layer.heads > 1:
        return ("heads: from layer 2 on each head's keys get weights of their own, independent between heads; the positional "
                "equation over H Gaussians per token needs a product of Gauss-Hermite rules, and its dense coefficients "
                "for two heads at 8 x 8 nodes would take 150 GiB: give one head")
    if network.attention == "centred" and (network.read_layer > 2 or network.norm == "none"):
        return ("layers: with centred attention and an MLP whose mean is not 0 the law is derived up to layer 2, with a norm: "
                "layer 3's keys would carry weights of their own beside layer 2's (a Gauss-Hermite rule over two Gaussians "
                "per token), and without a norm the MLP's input is not built"
                if network.read_layer > 2 else "norm: centred attention with an MLP whose mean is not 0 is built with a norm")
    if network.norm == "none" and (network.d_ff is not None or network.read_layer > 2):
        return ("norm: without a norm, the common vector of size sqrt(n) per entry after layer 2 enters the next branch "
                "unnormalised (the MLP's neurons and the next scores see a bias of that size): no limit law is derived")
    return None


def _key_weighted(network: Network) -> bool:
    """Whether the tokens after layer 1 carry a common vector (the attention's uniform part, or an MLP whose activation
    has a mean at bias 0), so that layer 2 weights its keys."""
    return network.attention == "softmax" or (network.d_ff is not None and network.activation in ("relu", "gelu"))


def _later_symbols(index: str) -> tuple[sp.Symbol, ...]:
    """The symbols of layer l: mu_{1,l} and sigma_l of its scores, nu_l = 1 / sqrt(m) (the tokens' scale in the scores)
    and xi_l = 1 / s (the norm's): symbols with values, so that the series of the moments stays polynomial in them."""
    return (sp.Symbol(f"mu_1,{index}", real=True), sp.Symbol(f"sigma_{index}", nonnegative=True),
            sp.Symbol(f"nu_{index}", positive=True), sp.Symbol(f"xi_{index}", positive=True))


def _attention_layer(network: Network, S: MatrixExpr, m: sp.Expr, kappa: sp.Expr, ratios: dict[Dim, sp.Expr],
                     values: dict[sp.Symbol, sp.Expr], constants: dict[str, sp.Expr], index: str) -> MatrixExpr:
    """S + alpha sum_h (mu_1 / sqrt(r_k) Q^h K^hT D + sigma Z^h D) (S / s) W_V^h W_O^h of the module docstring for the
    stream S (mean m, common vector kappa per entry), with layer ``index``'s own weights (its symbols and constants are
    added to ``values`` and ``constants``); D = I where kappa = 0."""
    layer = network.layer
    dims = {str(k): k for k in ratios}
    n, d, d_k = dims["n"], dims["d"], dims["d_k"]
    d_v = dims.get("d_v", d_k)
    s2 = m + kappa if network.norm != "none" else sp.Integer(1)
    tau2 = layer.beta**2 * kappa * m / s2**2
    coefficients = hermite_data(layer.score, layer.beta * m / s2, layer.normalisation)
    mu1, sigma, nu, xi = _later_symbols(index)
    values |= {mu1: coefficients.mu1, sigma: sp.sqrt(coefficients.sigma2), nu: 1 / sp.sqrt(m), xi: 1 / sp.sqrt(s2)}
    constants |= {f"m_{int(index) - 1}": m, f"kappa_{int(index) - 1}": kappa, f"s^2 (layer {index})": s2,
                  f"tau^2 (layer {index})": tau2}
    WQ, WK = (Gaussian(_named(name, index), d, d_k, 1 / ratios[d]) for name in ("W_Q", "W_K"))
    WV = Gaussian(_named("W_V", index), d, d_v, 1 / ratios[d])
    WO = Gaussian(_named("W_O", index), d_v, d, 1 / (layer.heads * ratios[d_v]))
    Z = Gaussian(_named("Z", index), n, n)
    tokens = nu * S
    bracket = mu1 / sp.sqrt(ratios[d_k]) * (tokens * WQ) * (tokens * WK).T + sigma * Z
    if kappa != 0:
        tau = sp.sqrt(tau2)
        bracket = bracket * Diagonal(f"D_{{{index}}}", n, sp.exp(tau * NORMAL - tau2 / 2))
    template = S / layer.heads + layer.residual * bracket * (xi * S) * WV * WO
    roles = {"Z": Z, "W_Q": (WQ,), "W_K": (WK,), "W_V": (WV,), "W_O": WO}
    return template if layer.heads == 1 else head_sum(layer, template, roles)


def _later_layers(network: Network, first: NetworkEquivalent) -> NetworkEquivalent:
    """The equivalent after layer ``read_layer`` >= 2 (module docstring), from the first block's: layer 2, and where the
    keys are weighted every later layer adds nothing centred; after post-norm blocks, which collapse, each layer's norm
    divides the centred part by its common vector (:func:`_collapsed`)."""
    ratios, values, constants = dict(first.ratios), dict(first.values), dict(first.constants)
    stream, mlp, notes = first.polynomial, first.mlp, []
    post = network.norm != "none" and network.norm_position == "post"
    if post:  # out_1 has RMS 1 per entry: its common vector and centred part share it
        kappa = constants["kappa"] / constants["s_1^2"]
        kappa = kappa if mlp is None else (kappa + network.alpha_mlp**2 * mlp.common) / constants["s_2^2"]
        m = 1 - kappa
        if not network.collapse:  # the norm's 1 / s_1 as a symbol with a value, so that the exact series of m_2 is polynomial
            zeta = sp.Symbol("zeta_1", positive=True)
            values[zeta] = 1 / sp.sqrt(constants["s_1^2"])
            stream = stream * sp.sqrt(constants["s_1^2"]) * zeta
    else:
        kappa = (constants["kappa"] + (network.alpha_mlp**2 * mlp.common if mlp is not None else 0)
                 if _key_weighted(network) else sp.Integer(0))
        m = constants["m_R"] if mlp is None else _mean(stream, ratios, values)
    S = sp.MatrixSymbol("S", stream.rows, stream.cols)
    written = (_attention_layer(network, S, m, kappa, ratios, dict(values), dict(constants), "2"), stream)
    stream = _attention_layer(network, stream, m, kappa, ratios, values, constants, "2")
    if network.collapse:
        notes.append("collapsed: layer 2's uniform part adds a common vector of size alpha sqrt(n kappa_1) per entry, which "
                     "fills the post-norm, so the centred output falls like n^-1/2 per entry; the law is of n times the "
                     "eigenvalues, whose scale (that vector's size) moves between draws like n^-1/2")
        if network.read_layer > 2:
            later = "layer 3 sees" if network.read_layer == 3 else f"layers 3..{network.read_layer} see"
            notes.append(f"{later} the common vector of RMS 1 plus that centred part: their "
                         "attention is the plain average to leading order, so each divides the centred part by its own "
                         "common vector, alpha sqrt(n) per entry: the law is of "
                         f"n^{network.read_layer - 1} times the eigenvalues")
        for layer in range(2, network.read_layer + 1):
            block = _collapsed(network, kappa if layer == 2 else sp.Integer(1), layer, stream.rows, ratios, constants)
            stream, written = block(stream), (block(written[0]), written[1])
    elif kappa != 0 and network.attention == "softmax":  # the sqrt(n) common vector now fills every pre-normed branch
        if network.d_ff is not None:
            notes.append("layer 2's MLP adds a common vector only: its normalised input is the common vector of size "
                         "sqrt(n) per entry plus a centred part of relative size n^-1/2")
        if network.read_layer > 2:
            notes.append(f"layers 3..{network.read_layer} add nothing centred in the limit (their branches see the "
                         "common vector): the law is layer 2's (frozen)")
    elif post:  # centred attention after a post-norm block, attention only: no common vector, the norm divides by m_2
        m2 = _mean(stream, ratios, values)
        constants["m_2"] = m2
        stream, written = stream / sp.sqrt(m2), (written[0] / sp.sqrt(m2), written[1])
    elif network.d_ff is not None:  # centred attention: the common vector stays of size 1 per entry; layer 2's MLP acts
        s2, tau2 = constants["s^2 (layer 2)"], constants["tau^2 (layer 2)"]
        m2 = _mean(stream, ratios, values) if kappa == 0 else _weighted_mean(stream, ratios, values, float(m))
        kappa2 = kappa + network.layer.residual**2 * (sp.exp(tau2) - 1) * m / s2  # the key-weighted average of the values
        scale = sp.Integer(1) if network.norm == "none" else sp.sqrt(m2 + kappa2)
        d = next(dim for dim in ratios if dim.name == "d")
        linear, noise, _ = _mlp(network, d, stream.rows, ratios, m2 / scale**2, kappa2 / scale**2, "2")
        constants |= {"m_2": m2, "kappa_2": kappa2}

        def block(x: MatrixExpr) -> MatrixExpr:
            x = x * (sp.Identity(d) + network.alpha_mlp / scale * linear)
            return x if noise is None else x + network.alpha_mlp * noise

        stream, written = block(stream), (block(written[0]), written[1])
    return NetworkEquivalent(stream, ratios, values, constants, mlp, tuple(notes), written)


def _collapsed(network: Network, kappa: sp.Expr, layer: int, n: Dim, ratios: dict[Dim, sp.Expr],
               constants: dict[str, sp.Expr]) -> Callable[[MatrixExpr], MatrixExpr]:
    """The post-norm block of ``layer`` >= 2 on the centred part of its stream, read as n times the eigenvalues per layer
    (module docstring): the first norm divides by the common vector's size per entry, K = alpha^2 kappa (times n;
    kappa = kappa_1 at layer 2, 1 after); an MLP acts on the centred part by its slopes phi'(b) at the bias b ~ N(0, 1)
    of the normalised common vector, and the second norm divides by s^2 = 1 + alpha_mlp^2 E phi(b)^2."""
    K = network.layer.residual**2 * kappa
    constants[f"K (layer {layer})"] = K
    if network.d_ff is None:
        return lambda x: x * _coefficient(1 / sp.sqrt(K))
    d = next(dim for dim in ratios if dim.name == "d")
    linear, _, levels = _mlp(network, d, n, ratios, sp.Integer(0), sp.Integer(1), str(layer), COLLAPSED_LEVELS)
    s2 = 1 + network.alpha_mlp**2 * levels.common
    constants[f"s_MLP^2 (layer {layer})"] = s2
    return lambda x: x * (sp.Identity(d) + network.alpha_mlp * linear) * _coefficient(1 / sp.sqrt(K * s2))


def _weighted_mean(polynomial: MatrixExpr, ratios: dict[Dim, sp.Expr], values: dict[sp.Symbol, sp.Expr],
                   scale: float) -> sp.Expr:
    """The mean of the law of a polynomial with key weights, from m(w) far out on its positional equation
    (:func:`~gemhsa_sym.free.positions.profiled_law.far_mean`; to about 1e-10), as a decimal of
    :data:`COEFFICIENT_DIGITS` digits."""
    numeric = polynomial.xreplace({symbol: sp.N(value, 30) for symbol, value in values.items()})
    positions = next(dim for dim in ratios if dim.name == "n")
    model = ProfiledModel(numeric, dict(ratios), positions, {})
    return sp.Float(far_mean(model, scale), COEFFICIENT_DIGITS)


def network_equivalent(network: Network) -> NetworkEquivalent:
    """The equivalent of the module docstring; NotImplementedError with the reason where it is not built."""
    reason = _refusal(network)
    if reason is not None:
        raise NotImplementedError(reason)
    first = _first_block(network)
    return first if network.read_layer == 1 else _later_layers(network, first)


def _first_block(network: Network) -> NetworkEquivalent:
    """The first block's equivalent (module docstring)."""
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
